"""``posetracker process SRC1 SRC2 ... --mode live --calibration FILE [--paced]``: several calibrated cameras, live.

Each source (``camera:N``, a video file, ``lavfi:GRAPH``) is tracked by its own live session, its frames paired
with the others' by time (``posetracker.multiview.live_sources``; cameras always, files with ``--paced``: played
at their frame rate, the frames the model cannot keep up with dropped; without it files go in lock step, every
frame), each instant's people matched across the views, triangulated and solved live
(``posetracker.multiview.live``), then finished and written as ``process`` writes one view (the work:
``posetracker.multiview.live_run.run_live_sources``, which the app runs too). A source takes the
calibration's camera named in its name (``cam01`` for ``cam01.mp4``) when every source names one, else the
calibration's cameras in order (as many as the sources); ``--cameras NAME ...`` names each source's camera.
Here: the options, the console lines and the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from posetracker.multiview.live_check import cameras_for_sources  # the app's live check takes the same rule


def process_live_views(args: argparse.Namespace) -> int:
    from functools import partial

    from posetracker.cli.options import InterruptFlag, calibration_error
    from posetracker.cli.views_output import views_target, write_views
    from posetracker.multiview.calibration import CalibrationError, read_calibrations, unit_note
    from posetracker.multiview.live_run import run_live_sources
    from posetracker.multiview.process import ViewsError

    sources = list(args.input)
    try:
        cameras = cameras_for_sources(read_calibrations(args.calibration), sources, args.cameras)
    except (CalibrationError, OSError, ValueError) as exc:
        print(calibration_error(args.calibration, exc), file=sys.stderr)
        return 2
    if unit_note(cameras):
        print(f"warning: {unit_note(cameras)}", file=sys.stderr)
    stem = Path(sources[0]).stem.replace(":", "_")
    exporter, out = views_target(args, stem)
    interrupted = InterruptFlag()
    print(f"tracking {len(sources)} sources live: "
          + ", ".join(f"{s} -> {c.name}" for s, c in zip(sources, cameras))
          + "; Ctrl-C writes what was tracked", file=sys.stderr, flush=True)
    try:
        with interrupted:
            result = run_live_sources(sources, cameras, partial(_session, args),
                                      calibration_name=Path(args.calibration[0]).name, paced=args.paced,
                                      smoothing=not args.raw, rigid_bones=not (args.raw or args.raw_bones),
                                      heights=args.height, repair_swaps=args.repair_swaps, cancel=interrupted,
                                      keep_frames=args.keep_frames)
    except ViewsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    files = write_views(result.sequence, result.lines[:-1], result.warnings, exporter, out, args.force)
    if files is None:
        return 1
    print(f"{result.lines[-1]} -> {', '.join(map(str, files))}")
    if result.kept:
        print("frames kept: " + ", ".join(p for p in result.kept if p))
    if "failure" in result.sequence.metadata:  # a source stopped part-way: written, then said (as for one source)
        print(f"error: {result.sequence.metadata['incomplete']}", file=sys.stderr)
        return 1
    return 130 if interrupted.hit else 0


def _session(args: argparse.Namespace, fov_deg: float):
    """A live TrackingSession of :func:`view_config` (the app's Live box opens the same)."""
    from posetracker.session import TrackingSession

    return TrackingSession.open(args.skeleton, args.weights, view_config(args, fov_deg))


def view_config(args: argparse.Namespace, fov_deg: float):
    """The ``SessionConfig`` of each source's live session: ``process``'s options for a camera of ``fov_deg``
    degrees across the long side (no --refiners: the live mode's defaults), its 2-D not smoothed (the fused
    people are, in 3-D)."""
    import dataclasses

    from posetracker.cli.options import session_config

    config = session_config(args, fov_deg)
    return dataclasses.replace(config, motion=dataclasses.replace(config.motion, smoothing=False))
