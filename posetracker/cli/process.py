"""``posetracker process INPUT [--out FILE] [--mode offline|live] ...``: track every person in a video,
an image folder or a camera, and write the poses (tidy CSV or JSON)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from posetracker.cli.options import (InterruptFlag, add_crop_budget_argument, add_height_argument,
                                     add_refiners_argument, add_tiles_argument, calibration_error, progress_bar,
                                     session_config)
from posetracker.defaults import DEFAULT_LOOKAHEAD, DEFAULT_MAX_PEOPLE


def _rescue(seq, out: Path) -> Path | None:
    """Write ``seq`` as JSON where it fits (beside ``out``, else the temporary folder); its path, or None."""
    import tempfile

    from posetracker.export import ExportError, get_exporter

    for folder in (out.parent, Path(tempfile.gettempdir())):
        target = folder / f"{out.stem}.partial.poses.json"
        try:
            return get_exporter("json").write(seq, target, force=True)[0]
        except (ExportError, OSError):
            continue
    return None


def fov_argument(text: str) -> float | str:
    """``--fov``: ``auto`` or degrees in (0, 180)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected degrees or auto, got {text!r}") from None
    if not 0.0 < value < 180.0:
        raise argparse.ArgumentTypeError(f"a field of view is between 0 and 180 degrees, got {value:g}")
    return value


def _cmd_process(args: argparse.Namespace) -> int:
    if len(args.input) > 1:  # several synchronised calibrated cameras
        from posetracker.cli.process_views import process_views

        return process_views(args)
    if args.cameras:
        print("error: --cameras names the calibrated camera of each of several videos or live sources", file=sys.stderr)
        return 2
    args.input = args.input[0]
    from posetracker.capture import CaptureError, open_source
    from posetracker.export import ExportError, exporter_for_path, write_reporting
    from posetracker.export.registry import check_target
    from posetracker.refiners import RefinerError
    from posetracker.session import TrackingSession

    if args.format:  # a named format: its default suffix, and the suffix added to --out if it has none of it
        from posetracker.export import default_name_suffix, get_exporter, with_suffix

        exporter = get_exporter(args.format)
        stem = Path(args.input.rstrip("/")).stem
        out = with_suffix(args.out, exporter) if args.out else Path(stem + default_name_suffix(args.format))
    else:
        out = Path(args.out) if args.out else Path(Path(args.input.rstrip("/")).stem + ".poses.csv")
        exporter = exporter_for_path(out)
    check_target(out, args.force)
    from posetracker.motion.finish import camera_before, finish_sequence, fov_to_track, source_metadata

    camera = camera_before(args.input, args.fov)  # given, or the file's tag; None: from the people, after tracking
    view = None
    if args.calibration:  # one calibrated camera: its focal length and its floor (posetracker.multiview.one_view)
        from posetracker.multiview.calibration import CalibrationError, unit_note
        from posetracker.multiview.one_view import read_view

        try:
            view = read_view(args.calibration, args.input)
        except CalibrationError as exc:
            print(calibration_error(args.calibration, exc), file=sys.stderr)
            return 2
        camera = view.camera_fov()
        if unit_note([view.camera]):
            print(f"warning: {unit_note([view.camera])}", file=sys.stderr)
    if args.animals is not None and (args.animals < 1 or args.mode != "offline"):
        print("error: --animals needs a count of at least 1 and offline mode", file=sys.stderr)
        return 2
    try:  # the input first: a video that cannot be read, or another camera's, is refused before a model loads
        source = open_source(args.input)
    except CaptureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        note = "" if view is None else view.check_size(source.size)
    except ValueError as exc:  # CalibrationError: the video's frames are not the calibrated camera's
        source.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if note:
        print(f"warning: {note}", file=sys.stderr)
    config = session_config(args, fov_to_track(camera))
    try:
        session = TrackingSession.open(args.skeleton, args.weights, config)
    except RefinerError as exc:
        source.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for notice in session.notices:
        print(f"warning: {notice}", file=sys.stderr)
    bar, update = progress_bar(source.frame_count, f"{args.mode} tracking")
    interrupted = InterruptFlag()
    try:
        with source, interrupted:
            print(f"tracking {args.input} ({args.mode}); Ctrl-C writes the frames tracked so far", file=sys.stderr,
                  flush=True)
            seq = session.run(source, fps=source.fps, total=source.frame_count, progress=update, cancel=interrupted,
                              metadata=source_metadata(args.input, source.size, session))
    finally:
        bar.close()
    if interrupted.hit:
        seq.metadata["incomplete"] = f"interrupted (Ctrl-C) after {len(seq)} frames"
    if view is not None:  # the exports and the feet stand people on the calibration's floor
        seq = view.with_floor(seq)
    seq, warnings = finish_sequence(seq, camera, rigid_bones=config.motion.rigid_bones, repair_swaps=args.repair_swaps,
                                    fix_legs=config.motion.fix_legs, heights=args.height)
    used = seq.metadata["camera"]
    print(f"field of view: {used['fov_deg']:.1f} deg across the long side ({used['source']}: {used['detail']})",
          file=sys.stderr)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        files, warned = write_reporting(exporter, seq, out, force=args.force)
    except ExportError as exc:  # e.g. the disk filled up during a long run: keep the work somewhere
        print(f"error: {exc}", file=sys.stderr)
        rescue = _rescue(seq, out)
        if rescue is not None:
            print(f"the {len(seq)} frames tracked are kept in {rescue} (posetracker export {rescue} --format ...)",
                  file=sys.stderr)
        return 1
    for message in warned:  # a person the format could not take (BVH: joints never seen), as export says it
        print(f"warning: {message}", file=sys.stderr)
    for message in seq.metadata.get("skipped", []):
        print(f"warning: skipped: {message}", file=sys.stderr)
    if "incomplete" in seq.metadata:  # keep what was read, then say why it stopped
        print(f"error: {seq.metadata['incomplete']}", file=sys.stderr)
        stop = "the interrupt" if interrupted.hit else "the failure"
        print(f"wrote the {len(seq)} frames read before {stop} to {', '.join(map(str, files))}", file=sys.stderr)
        return 130 if interrupted.hit else 1
    people = len(seq.track_ids())
    print(f"{len(seq)} frames, {people} tracked {'person' if people == 1 else 'people'} -> {', '.join(map(str, files))}")
    return 0


def _format_names() -> list[str]:
    from posetracker.export import exporters

    return list(exporters())


def add_process_parser(sub) -> None:
    pr = sub.add_parser("process", help="track every person in a video file or image folder")
    pr.add_argument("input", nargs="+", help="video file, image folder, camera:N or lavfi:GRAPH; or several "
                    "synchronised videos of calibrated cameras with --calibration (named after their cameras)")
    pr.add_argument("--calibration", action="append", default=None, metavar="FILE",
                    help="calibration of the input's camera or of the cameras of several inputs (Qualisys "
                         ".qca.txt, Pose2Sim / anipose / FreeMoCap .toml, OpenCV .yml/.xml; give it again for one "
                         "file per camera). One input: tracked with its camera's focal length (the camera named in "
                         "its file name, or the only one), people stood on its floor (posetracker.multiview."
                         "one_view). Several: each view is tracked, each person matched across the views and "
                         "triangulated, and the outputs are in metres in the first camera's frame "
                         "(posetracker.multiview.fuse)")
    pr.add_argument("--out", help="output file, .csv (tidy) or .json (default: INPUT.poses.csv here)")
    pr.add_argument("--format", "-f", choices=sorted(_format_names()),
                    help="export format by name (e.g. angles, gait); default: from the --out suffix")
    pr.add_argument("--mode", choices=["live", "offline"], default="offline",
                    help="offline: bidirectional, zero-lag smoothing (default); live: causal, as the webcam runs")
    pr.add_argument("--skeleton", default="human18")
    pr.add_argument("--weights", default=None, help="weights file (default: the shipped model for the skeleton)")
    pr.add_argument("--max-people", type=int, default=DEFAULT_MAX_PEOPLE,
                    help=f"most people (or animals) per frame (default {DEFAULT_MAX_PEOPLE}; 1 for one subject)")
    pr.add_argument("--animals", type=int, default=None, metavar="N",
                    help="offline: exactly N animals are in every frame: the N surest readings are kept however "
                         "faint, each animal keeps one id throughout, the pieces of its track joined (sets "
                         "--max-people N; tracking.known_count); a top-down mode looks for 2N centres and keeps "
                         "the N crop readings surest of their joints")
    pr.add_argument("--paced", action="store_true",
                    help="live mode, several sources: play video files at their frame rate as cameras deliver "
                         "(frames paired by time, those the model cannot keep up with dropped); default: every "
                         "frame in lock step. Cameras are always paired by time")
    pr.add_argument("--cameras", nargs="+", metavar="NAME",
                    help="several videos or sources: each one's camera in the calibration, in their order "
                         "(GX01.MP4 GX02.MP4 --cameras cam03 cam01); default: the camera a file's name names (live "
                         "sources: else the calibration's cameras in order)")
    pr.add_argument("--keep-frames", metavar="DIR", default=None,
                    help="live mode, several sources: keep each connected camera's frames as DIR/CAMERA.mp4 (frame "
                         "i = the result's frame i), to play the result over them later")
    pr.add_argument("--lookahead", type=int, default=DEFAULT_LOOKAHEAD,
                    help=f"live mode: look-ahead frames of the backward GRU (default {DEFAULT_LOOKAHEAD}; 0 = lowest latency)")
    pr.add_argument("--fov", type=fov_argument, default="auto",
                    help="field of view of the camera across the long side of the frame (portrait: its height), "
                         "degrees; auto (default): the file's focal-length tag, else estimated from the people "
                         "(upright bodies), else 60. The one used and its source are in the JSON metadata (camera)")
    add_height_argument(pr)
    pr.add_argument("--force", action="store_true", help="overwrite an existing output file")
    pr.add_argument("--repair-swaps", action="store_true",
                    help="swap back the ids of two tracks where a close encounter suggests they changed hands "
                         "(motion before and after it; always listed in the JSON metadata as encounters)")
    pr.add_argument("--keep-unconfirmed", action="store_true",
                    help="also write detections never confirmed as a track (person_id -1; left out by default)")
    pr.add_argument("--raw", action="store_true",
                    help="write the readings as the network and refiners gave them: no motion solve (smoothing), "
                         "bone lengths as estimated, left and right as read (the default output is the solved "
                         "motion every export reads)")
    pr.add_argument("--raw-bones", action="store_true",
                    help="metric 3-D as estimated, bone lengths varying (default: one length per bone and person)")
    pr.add_argument("--no-facing-repair", action="store_true",
                    help="keep left and right as the network read them where a person seen from behind "
                         "seems read as facing the camera (default: exchanged back; offline listed as "
                         "facing_repairs; live, frame by frame, where the labels jump while the face is not seen)")
    pr.add_argument("--no-leg-repair", action="store_true",
                    help="keep the legs as read: offline, knees and ankles that, seen from the side, sit on the "
                         "other leg by depth (listed as leg_repairs), and (offline and live) the legs from where the "
                         "feet's left / right labels swap (listed as feet_swaps); default: exchanged back")
    pr.add_argument("--no-low-light", action="store_true",
                    help="read dark frames as they are (default: frames whose brightest pixels are under 32 of 255 "
                         "are stretched before the network reads them; posetracker.model.low_light)")
    add_refiners_argument(pr, "switch on trained refiners")
    add_tiles_argument(pr)
    add_crop_budget_argument(pr)
    pr.set_defaults(func=_cmd_process)

