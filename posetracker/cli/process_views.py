"""``posetracker process cam1.mp4 cam2.mp4 ... --calibration FILE``: several synchronised calibrated cameras.

Each view is tracked as ``process`` tracks one video (the same options, with the field of view of its camera's
calibration), views not started together are aligned by the people's motion (``posetracker.multiview.sync``),
the people are matched across the views and triangulated (``posetracker.multiview.fuse``), and
the fused sequence is finished (``motion.finish``: bones, heights, encounters) and written like a single view's.
Each view's file is named after its camera in the calibration (its stem contains the camera's name).
The work is ``posetracker.multiview.process.process_views``, which the app's File > Open several cameras runs too;
here: the options, the console's progress bars and lines, and the output file. With ``--mode live`` the sources
are tracked live instead, each instant triangulated as it comes (``posetracker.cli.process_live_views``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def process_views(args: argparse.Namespace) -> int:
    from functools import partial

    from posetracker.cli.options import calibration_error, progress_bar
    from posetracker.cli.views_output import views_target, write_views
    from posetracker.multiview.calibration import CalibrationError, read_calibrations, unit_note
    from posetracker.multiview.process import ViewsError, cameras_for_views, process_views as run_views

    views = list(args.input)
    if len(views) < 2 or not args.calibration:
        print("error: several cameras need at least two videos and their --calibration", file=sys.stderr)
        return 2
    if args.animals:
        print("error: several cameras track people only (no --animals)", file=sys.stderr)
        return 2
    if args.mode == "live":  # live sources paired by time, each instant triangulated as it comes
        from posetracker.cli.process_live_views import process_live_views as run_live

        return run_live(args)
    try:
        cameras = cameras_for_views(read_calibrations(args.calibration), views, args.cameras)
    except (CalibrationError, OSError, ValueError) as exc:
        print(calibration_error(args.calibration, exc), file=sys.stderr)
        return 2
    if unit_note(cameras):
        print(f"warning: {unit_note(cameras)}", file=sys.stderr)
    stem = Path(views[0]).stem
    exporter, out = views_target(args, stem)
    bars: dict[int, tuple] = {}  # view -> its tqdm bar and update

    def progress(view: int, done: int, total: int | None) -> None:
        if view not in bars:
            for bar, _ in bars.values():
                bar.close()
            bars[view] = progress_bar(total, cameras[view].name)
        bars[view][1](done, total)

    t0 = time.perf_counter()
    try:
        result = run_views(views, cameras, partial(_session, args), calibration_name=Path(args.calibration[0]).name,
                           solve=not args.raw, rigid_bones=not (args.raw or args.raw_bones), heights=args.height,
                           repair_swaps=args.repair_swaps, progress=progress,
                           say=lambda line: print(line, file=sys.stderr))
    except ViewsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:  # unlike one view's run, no part of it can be kept
        print(f"\ninterrupted: nothing was written to {out} (the views are matched and triangulated once every one "
              "is tracked whole)", file=sys.stderr)
        return 130
    finally:
        for bar, _ in bars.values():
            bar.close()
    seq = result.sequence
    seq.metadata["multiview"]["seconds"] = round(time.perf_counter() - t0, 2)
    files = write_views(seq, result.lines, result.warnings, exporter, out, args.force)
    if files is None:
        return 1
    people = len(seq.track_ids())
    print(f"{len(seq)} frames, {len(views)} views, {people} {'person' if people == 1 else 'people'} in 3-D -> "
          f"{', '.join(map(str, files))}")
    return 0


def _session(args: argparse.Namespace, fov_deg: float):
    """A TrackingSession of ``process``'s options for a camera of ``fov_deg`` degrees across the long side."""
    from posetracker.cli.options import session_config
    from posetracker.session import TrackingSession

    return TrackingSession.open(args.skeleton, args.weights, session_config(args, fov_deg))

