"""``posetracker process SRC1 SRC2 ... --mode live --calibration FILE [--paced]``: several calibrated cameras, live.

Each source (``camera:N``, a video file, ``lavfi:GRAPH``) is tracked by its own live session, its frames paired
with the others' by time (``posetracker.multiview.live_sources``; cameras always, files with ``--paced``: played
at their frame rate, the frames the model cannot keep up with dropped; without it files go in lock step, every
frame), each instant's people matched across the views, triangulated and solved live
(``posetracker.multiview.live``), then finished and written as ``process`` writes one view. A source takes the
calibration's camera named in its name (``cam01`` for ``cam01.mp4``) when every source names one, else the
calibration's cameras in order (as many as the sources). Here: the options, the console lines and the file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def cameras_for_sources(cameras: list, sources: list[str]) -> list:
    """Each source's camera: the one its name names (a file's stem, ``cam01`` for ``cam01.mp4``; any other
    source's whole text, ``lavfi:movie=cam01.mp4``) when every source names a different one, else the
    calibration's cameras in order when there are as many; CalibrationError otherwise."""
    from posetracker.multiview.calibration import CalibrationError, camera_named

    keys = [Path(s).stem if Path(s).is_file() else s for s in sources]
    try:
        chosen = [camera_named(cameras, k) for k in keys]
        if len({c.name for c in chosen}) == len(chosen):
            return chosen
    except CalibrationError:
        pass
    if len(cameras) != len(sources):
        raise CalibrationError(f"the calibration has {len(cameras)} cameras ({', '.join(c.name for c in cameras)}) "
                               f"for {len(sources)} sources: name each source's camera in it (cam01.mp4) or give a "
                               "calibration of as many cameras as sources (taken in order)")
    return list(cameras)


def process_live_views(args: argparse.Namespace) -> int:
    import dataclasses

    from posetracker.capture import CaptureError, open_source
    from posetracker.cli.options import InterruptFlag
    from posetracker.export import ExportError, exporter_for_path, get_exporter, with_suffix
    from posetracker.export.registry import check_target
    from posetracker.multiview.calibration import CalibrationError, read_calibrations
    from posetracker.multiview.live import LiveViews, describe_live, live_sequence, run_live_views
    from posetracker.multiview.live_sources import PairStats, paired_frames
    from posetracker.refiners import RefinerError

    sources_in = list(args.input)
    try:
        cameras = cameras_for_sources(read_calibrations(args.calibration), sources_in)
    except (CalibrationError, OSError, ValueError) as exc:
        print(f"error: {', '.join(args.calibration)}: {exc}", file=sys.stderr)
        return 2
    stem = Path(sources_in[0]).stem.replace(":", "_")
    exporter = get_exporter(args.format) if args.format else exporter_for_path(args.out or f"{stem}.poses.csv")
    out = with_suffix(args.out, exporter) if args.out else Path(f"{stem}.multiview.poses.csv")
    check_target(out, args.force)
    sources = []
    try:
        for spec in sources_in:
            sources.append(open_source(spec))
        sessions = [_session(args, cam) for cam in cameras]
    except (CaptureError, RefinerError) as exc:
        for s in sources:
            s.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for src, cam in zip(sources, cameras):
        if tuple(src.size) != tuple(cam.image_size):
            print(f"warning: {src.name} is {src.size[0]}x{src.size[1]}, camera {cam.name} was calibrated at "
                  f"{cam.image_size[0]}x{cam.image_size[1]}", file=sys.stderr)
    paced = args.paced or any(s.is_live for s in sources)
    views = LiveViews(sessions, cameras, smoothing=not args.raw, rigid_bones=not (args.raw or args.raw_bones))
    views.warm_up([s.size for s in sources])
    stats = PairStats()
    interrupted = InterruptFlag()
    print(f"tracking {len(sources)} sources live ({'paired by time' if paced else 'in lock step'}): "
          + ", ".join(f"{s.name} -> {c.name}" for s, c in zip(sources, cameras))
          + "; Ctrl-C writes what was tracked", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        with interrupted:
            poses = run_live_views(views, paired_frames(sources, paced, stats), cancel=interrupted)
    except CaptureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        for s in sources:
            s.close()
    seconds = time.perf_counter() - t0
    if not poses:
        print("error: no frame was tracked", file=sys.stderr)
        return 1
    span = poses[-1].timestamp - poses[0].timestamp
    fps = (len(poses) - 1) / span if paced and span > 0 else float(sources[0].fps or 30.0)
    pairing = {**dataclasses.asdict(stats), "paced": paced, "seconds": round(seconds, 2),
               "instants_per_s": round(stats.instants / seconds, 2)}
    spread = sorted(stats.spread_ms)
    pairing["spread_ms"] = round(float(spread[len(spread) // 2]), 2) if spread else 0.0  # the median instant's
    seq, warnings = live_sequence(poses, views, fps=fps, sources=sources_in,
                                  calibration_name=Path(args.calibration[0]).name, pairing=pairing,
                                  rigid_bones=not (args.raw or args.raw_bones), heights=args.height,
                                  repair_swaps=args.repair_swaps)
    if interrupted.hit:
        seq.metadata["incomplete"] = f"interrupted (Ctrl-C) after {len(seq)} instants"
    for line in describe_live(seq.metadata["multiview"]["people"]):
        print(line, file=sys.stderr)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        files = exporter.write(seq, out, force=args.force)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    people = len(seq.track_ids())
    print(f"{len(seq)} instants in {seconds:.1f} s ({stats.instants / seconds:.1f} per s; frames dropped per source "
          f"{stats.dropped}), {len(sources)} views, {people} {'person' if people == 1 else 'people'} in 3-D -> "
          f"{', '.join(map(str, files))}")
    return 130 if interrupted.hit else 0


def _session(args: argparse.Namespace, camera):
    """A live TrackingSession of ``process``'s options for ``camera`` (its calibrated field of view), its 2-D not
    smoothed (the fused people are, in 3-D)."""
    import dataclasses

    from posetracker.cli.options import session_config
    from posetracker.multiview.fuse import calibrated_fov
    from posetracker.session import TrackingSession

    config = session_config(args, calibrated_fov(camera))
    config = dataclasses.replace(config, motion=dataclasses.replace(config.motion, smoothing=False))
    return TrackingSession.open(args.skeleton, args.weights, config)
