"""``posetracker process cam1.mp4 cam2.mp4 ... --calibration FILE``: several synchronised calibrated cameras.

Each view is tracked as ``process`` tracks one video (the same options, with the field of view of its camera's
calibration), views not started together are aligned by the people's motion (``posetracker.multiview.sync``),
the people are matched across the views and triangulated (``posetracker.multiview.fuse``), and
the fused sequence is finished (``motion.finish``: bones, heights, encounters) and written like a single view's.
Each view's file is named after its camera in the calibration (its stem contains the camera's name).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def process_views(args: argparse.Namespace) -> int:
    from posetracker.capture import CaptureError, open_source
    from posetracker.cli.options import progress_bar, session_config
    from posetracker.depth.camera_meta import CameraFov
    from posetracker.export import ExportError, exporter_for_path, get_exporter, with_suffix
    from posetracker.export.registry import check_target
    from posetracker.motion.finish import finish_sequence, source_metadata
    from posetracker.multiview.calibration import CalibrationError, camera_named, read_calibrations
    from posetracker.multiview.fuse import calibrated_fov, fuse_views
    from posetracker.multiview.sync import align, frame_offsets
    from posetracker.refiners import RefinerError
    from posetracker.session import TrackingSession

    views = list(args.input)
    if len(views) < 2 or not args.calibration:
        print("error: several cameras need at least two videos and their --calibration", file=sys.stderr)
        return 2
    if args.mode != "offline" or args.animals:
        print("error: several cameras are tracked offline, people only (no --mode live, no --animals)", file=sys.stderr)
        return 2
    try:
        cameras = [camera_named(read_calibrations(args.calibration), Path(v).stem) for v in views]
    except (CalibrationError, OSError, ValueError) as exc:
        print(f"error: {', '.join(args.calibration)}: {exc}", file=sys.stderr)
        return 2
    stem = Path(views[0]).stem
    exporter = get_exporter(args.format) if args.format else exporter_for_path(args.out or f"{stem}.poses.csv")
    out = with_suffix(args.out, exporter) if args.out else Path(f"{stem}.multiview.poses.csv")
    check_target(out, args.force)
    sequences = []
    t0 = time.perf_counter()
    for view, camera in zip(views, cameras):
        config = session_config(args, calibrated_fov(camera))
        try:
            session = TrackingSession.open(args.skeleton, args.weights, config)
            source = open_source(view)
        except (RefinerError, CaptureError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        bar, update = progress_bar(source.frame_count, f"{camera.name}")
        try:
            with source:
                seq = session.run(source, fps=source.fps, total=source.frame_count, progress=update,
                                  metadata=source_metadata(view, source.size, session))
        finally:
            bar.close()
        if "incomplete" in seq.metadata:
            print(f"error: {view}: {seq.metadata['incomplete']}", file=sys.stderr)
            return 1
        sequences.append(seq)
    offsets = frame_offsets(cameras, sequences)  # views not started together: aligned by the people's motion
    try:
        aligned = align(sequences, offsets)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if any(offsets) or len({len(s) for s in sequences}) > 1:
        print(f"views aligned: frame offsets against {cameras[0].name} "
              + ", ".join(f"{c.name} {o:+d}" for c, o in zip(cameras[1:], offsets[1:]))
              + f"; {len(aligned[0])} frames every view saw", file=sys.stderr)
    fused = fuse_views(cameras, aligned, solve=not args.raw)
    fused.metadata["multiview"]["frame_offsets"] = dict(zip([c.name for c in cameras], offsets))
    fov = calibrated_fov(cameras[0])
    seq, warnings = finish_sequence(fused, CameraFov(fov, "user", f"calibration {Path(args.calibration[0]).name}, "
                                                     f"camera {cameras[0].name}"),
                                    rigid_bones=not (args.raw or args.raw_bones), heights=args.height,
                                    repair_swaps=args.repair_swaps)
    seq.metadata["multiview"]["seconds"] = round(time.perf_counter() - t0, 2)
    for line in describe(seq.metadata["multiview"]):
        print(line, file=sys.stderr)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        files = exporter.write(seq, out, force=args.force)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    people = len(seq.track_ids())
    print(f"{len(seq)} frames, {len(views)} views, {people} {'person' if people == 1 else 'people'} in 3-D -> "
          f"{', '.join(map(str, files))}")
    return 0


def calibrated_camera(calibration: list[str], video: str):
    """One video's camera from its calibration file(s) as a ``CameraFov`` (its focal length across the long side;
    the camera named after the video, or the only one), or None after printing why it cannot be read."""
    from posetracker.depth.camera_meta import CameraFov
    from posetracker.multiview.calibration import CalibrationError, camera_named, read_calibrations
    from posetracker.multiview.fuse import calibrated_fov

    try:
        cameras = read_calibrations(calibration)
        camera = cameras[0] if len(cameras) == 1 else camera_named(cameras, Path(video).stem)
    except (CalibrationError, OSError, ValueError) as exc:
        print(f"error: {', '.join(calibration)}: {exc}", file=sys.stderr)
        return None
    return CameraFov(calibrated_fov(camera), "user", f"calibration {Path(calibration[0]).name}, camera {camera.name}")


def describe(report: dict) -> list[str]:
    """Lines for the console: per person, the median reprojection error per view and the joints triangulated."""
    lines = []
    for n, person in enumerate(report["people"]):
        errors = ", ".join(f"{v} {e:.1f}" for v, e in person["reprojection_px"].items() if e == e)
        lines.append(f"person {n}: {person['triangulated']:.0%} of joints triangulated; median reprojection px: "
                     f"{errors}")
    return lines
