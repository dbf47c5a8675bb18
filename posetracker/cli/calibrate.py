"""``posetracker calibrate --board charuco --squares 7x5 --square-mm 40 --marker-mm 30 cam1.mp4 [cam2.mp4 ...]
--out calibration.toml``: cameras calibrated from clips of a printed board (``posetracker.calibration``), written
as a Pose2Sim / anipose TOML that ``process --calibration`` reads; each camera is named after its clip."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def squares_argument(text: str) -> tuple[int, int]:
    """``7x5`` -> (7, 5): the board's squares across and down."""
    try:
        cols, rows = (int(v) for v in text.lower().replace("*", "x").split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected COLUMNSxROWS of squares such as 7x5, got {text!r}") from None
    return cols, rows


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from posetracker.calibration import Board, BoardCalibrationError, BoardError, calibrate_board
    from posetracker.capture import CaptureError
    from posetracker.cli.options import calibration_error, progress_bar
    from posetracker.calibration.summary import NO_FLOOR, camera_lines, save_calibration

    out = Path(args.out)
    missing = [v for v in args.videos if not Path(v).exists()]
    if missing:
        print(f"error: not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    if out.exists() and not args.force:
        print(f"error: {out} exists (--force overwrites it)", file=sys.stderr)
        return 2
    try:
        board = Board(args.board, args.squares, args.square_mm / 1000.0,
                      None if args.marker_mm is None else args.marker_mm / 1000.0, args.dictionary)
    except BoardError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    intrinsics = None
    if args.intrinsics:
        from posetracker.multiview.calibration import CalibrationError, camera_of_video, read_calibrations

        try:
            known = read_calibrations(args.intrinsics)
            intrinsics = [known[0] if len(known) == 1 and len(args.videos) == 1 else camera_of_video(known, v)
                          for v in args.videos]
        except (CalibrationError, OSError, ValueError) as exc:
            print(calibration_error(args.intrinsics, exc, "--intrinsics"), file=sys.stderr)
            return 2
    bars: dict[str, tuple] = {}

    def progress(name: str, done: int, total: int | None) -> None:
        if name not in bars:
            for bar, _ in bars.values():
                bar.close()
            bars[name] = progress_bar(total, f"board in {name}")
        bars[name][1](done, total)

    try:
        result = calibrate_board(args.videos, board, step=args.step, max_frames=args.max_frames,
                                 floor_frame=args.floor_frame, intrinsics=intrinsics, progress=progress)
    except (BoardCalibrationError, CaptureError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        for bar, _ in bars.values():
            bar.close()
    for line in camera_lines(result):
        print(line, file=sys.stderr)
    if result.floor is None:
        print(f"warning: {NO_FLOOR}; or give --floor-frame N", file=sys.stderr)
    save_calibration(result, out)
    print(f"{len(result.cameras)} camera(s) -> {out}")
    return 0


def add_calibrate_parser(sub) -> None:
    from posetracker.calibration.board import DEFAULT_DICTIONARY, KINDS

    p = sub.add_parser("calibrate", help="calibrate cameras from clips of a ChArUco board or a checkerboard")
    p.add_argument("videos", nargs="+", help="one clip per camera, recorded together (frame i = the same instant), "
                   "each named after its camera (cam1.mp4 -> camera cam1)")
    p.add_argument("--board", choices=KINDS, required=True, help="the printed board's kind")
    p.add_argument("--squares", type=squares_argument, required=True, metavar="CxR",
                   help="squares across x down, e.g. 7x5 (several checkerboard cameras: one odd, one even)")
    p.add_argument("--square-mm", type=float, required=True, help="side of a square as printed, mm")
    p.add_argument("--marker-mm", type=float, default=None, help="ChArUco: side of a marker as printed, mm")
    p.add_argument("--dictionary", default=DEFAULT_DICTIONARY, help=f"ChArUco: ArUco dictionary (default "
                   f"{DEFAULT_DICTIONARY})")
    p.add_argument("--floor-frame", type=int, default=None, metavar="N",
                   help="the frame in which the board lies on the floor (default: the longest run of frames in which "
                        "it lies still); the floor is then z = 0, z up, metres")
    p.add_argument("--intrinsics", action="append", default=None, metavar="FILE",
                   help="the cameras' intrinsics already calibrated (any --calibration format; cameras named after "
                        "the clips): kept, so clips of the board lying on the floor are enough for the poses")
    p.add_argument("--step", type=int, default=None, help="look for the board in every STEP-th frame (default: "
                   "spread --max-frames over the clip)")
    p.add_argument("--max-frames", type=int, default=200, help="frames searched per clip when --step is not given")
    p.add_argument("--out", "-o", default="calibration.toml", help="calibration file to write (Pose2Sim / anipose "
                   "TOML; default calibration.toml)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out")
    p.set_defaults(func=_cmd_calibrate)
