"""Application entry: argument parsing and the QApplication (``python main.py``, ``posetracker-gui``).

    python main.py [--source PATH|camera:N] [--mode live|offline] [--calibration FILE]
                   [--views CAM1.mp4 CAM2.mp4 ... --calibration FILE [--views-live]]
                   [--cameras NAME ...] [--stand-in-cameras SOURCE ...]
                   [--calibrate-board CLIP1.mp4 ... --board charuco:7x5:40:30]
                   [--screenshot OUT.png --quit-after SECONDS]

Without --source the bundled sample clip opens (no camera needed). --screenshot saves
OUT.png (window), OUT-3d.png (3-D scene) and OUT-plots.png after --quit-after seconds (and OUT-setup.png, the
several-camera dialog, and OUT-board.png, the board calibration dialog, when they are open), then quits. --views
fills File > Open several cameras and processes them; --calibration alone is the source's (File > Camera
calibration); --calibrate-board fills Tools > Calibrate cameras from a board and runs it. --stand-in-cameras makes
the given sources the connected cameras (``camera:N``), for demos and screenshots without hardware.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from posetracker.cli.options import RefinerKinds


def board_spec(text: str) -> tuple[str, int, int, float, float | None]:
    """``--board charuco:7x5:40:30`` -> (kind, columns, rows, square mm, marker mm or None)."""
    parts = text.split(":")
    try:
        cols, rows = (int(v) for v in parts[1].lower().split("x"))
        return parts[0], cols, rows, float(parts[2]), float(parts[3]) if len(parts) > 3 else None
    except (IndexError, ValueError):
        raise argparse.ArgumentTypeError(f"expected KIND:CxR:SQUARE_MM[:MARKER_MM] such as charuco:7x5:40:30, "
                                         f"got {text!r}") from None


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="posetracker-gui", description="PoseTracker desktop application")
    parser.add_argument("--source", help="video file, recording folder or camera:N (default: the bundled sample clip)")
    parser.add_argument("--mode", choices=("live", "offline"), default="live",
                        help="live: causal tracking while playing; offline: process the whole file first (bidirectional)")
    parser.add_argument("--views", nargs="+", metavar="VIDEO",
                        help="several synchronised videos of calibrated cameras (needs --calibration): File > Open "
                             "several cameras, filled and processed")
    parser.add_argument("--views-live", action="store_true",
                        help="with --views: tick the dialog's Live (the videos played as cameras, each instant "
                             "triangulated as it comes, as process --mode live --paced)")
    parser.add_argument("--calibration", metavar="FILE", action="append",
                        help="the cameras' calibration for --views (.qca.txt, .toml; again for each OpenCV .yml / "
                             ".xml); without --views, the calibration of --source's camera (File > Camera "
                             "calibration: the camera named in its file name, or the only one)")
    parser.add_argument("--calibrate-board", nargs="+", metavar="CLIP",
                        help="clips of a calibration board, one per camera: Tools > Calibrate cameras from a board, "
                             "filled and run (the calibration saved beside the first clip)")
    parser.add_argument("--board", type=board_spec, default="charuco:7x5:40:30",
                        metavar="KIND:CxR:SQUARE_MM[:MARKER_MM]",
                        help="the board of --calibrate-board (default charuco:7x5:40:30)")
    parser.add_argument("--cameras", nargs="+", metavar="NAME",
                        help="with --views, live: each view's camera in the calibration, in order (as process "
                             "--cameras; the dialog's Camera column)")
    parser.add_argument("--stand-in-cameras", nargs="+", metavar="SOURCE",
                        help="demos and screenshots without a camera: the connected cameras are these sources "
                             "(camera:0 the first; lavfi:testsrc2=size=640x480:rate=30, or videos), in the Cameras "
                             "list and Open several cameras' Add camera (--views camera:0 camera:1 takes them)")
    parser.add_argument("--skeleton", help="skeleton / animal mode to start with (e.g. human18, mouse4)")
    parser.add_argument("--refiners", nargs="*", default=None, choices=RefinerKinds(), metavar="KIND",
                        help="refiners to switch on (those trained for the skeleton); registered: %(choices)s")
    parser.add_argument("--person", type=int, metavar="ID",
                        help="pick the person with this track id (as a click on them does): plotted, followed by "
                             "the 3-D view, the others faded there")
    parser.add_argument("--height", metavar="M | ID=M,...",
                        help="people's standing heights in metres, as the Heights panel takes them: one for everyone "
                             "(1.72) or per track id (0=1.72,1=1.40); the whole-file result and exports are scaled")
    parser.add_argument("--screenshot", type=Path, metavar="OUT.png", help="save screenshots, then quit (needs --quit-after)")
    parser.add_argument("--quit-after", type=float, metavar="SECONDS", help="quit after this many seconds")
    args = parser.parse_args(argv)
    from posetracker.motion.heights import HeightError, parse_heights

    try:
        args.height = parse_heights(args.height)
    except HeightError as exc:
        parser.error(f"--height: {exc}")
    if args.views and (args.calibration is None or args.source):
        parser.error("--views needs --calibration (and no --source)")
    if args.cameras and (not args.views or len(args.cameras) != len(args.views)):
        parser.error("--cameras names one camera of the calibration per --views source")
    if args.screenshot is not None and args.quit_after is None:
        parser.error("--screenshot needs --quit-after SECONDS")
    return args


def _make_app():
    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtWidgets import QApplication

    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("PoseTracker")
    app.setApplicationName("PoseTracker")
    return app


def _mean_rate(window) -> str:
    """', mean N fps since the first pose' (the status bar's rates are over the last 2 s)."""
    first, n = window.first_pose_at, window.poses_received
    if first is None or n < 2:
        return ""
    import time

    return f", {(n - 1) / max(time.monotonic() - first, 1e-6):.1f} fps since the first pose"


def _schedule_quit(window, seconds: float, screenshot: Path | None) -> None:
    from PySide6.QtCore import QTimer

    def finish() -> None:
        if screenshot is not None:
            saved = window.save_screenshots(screenshot)
            for dialog, name in ((window.views_dialog, "setup"), (window.board_dialog, "board")):
                shot = screenshot.with_name(f"{screenshot.stem}-{name}.png")
                if dialog is not None and dialog.isVisible() and dialog.grab().save(str(shot)):
                    saved.append(shot)
            stats = window.controller.snapshot()
            print(f"saved {', '.join(map(str, saved))}")
            print(f"source {stats.source_fps:.1f} fps, inference {stats.inference_fps:.1f} fps, "
                  f"latency {stats.latency_ms:.0f} ms, dropped {stats.dropped}, poses {window.poses_received}"
                  f"{_mean_rate(window)}")
        window.close()

    QTimer.singleShot(int(seconds * 1000), finish)


def console_logging() -> None:
    """The app's INFO lines on the console; PyOpenGL's only from WARNING up (it logs at INFO each GL library it
    tries, "Failed to load library ('libOpenGL.so.0')" on a system without libopengl0, then uses libGL)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("OpenGL").setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from .platform_check import check_platform

    if (problem := check_platform()) is not None:  # before Qt, which aborts the process instead
        print(problem, file=sys.stderr)
        return 2
    # (ONNX Runtime's quantiser, the first start's model preparation, stays quiet: posetracker.model.int8)
    console_logging()
    import torch

    torch.set_num_threads(1)  # inference gets one core; the GUI and decoding keep the other
    import posetracker.session  # noqa: F401 - import here once, so the worker only loads weights

    app = _make_app()
    from .main_window import MainWindow
    from .services import SAMPLE_CLIP

    settings = None
    if args.screenshot is not None:  # reproducible screenshots: default layout and options, nothing saved
        from PySide6.QtCore import QSettings

        scratch = tempfile.mkdtemp(prefix="posetracker-shot-")
        settings = QSettings(str(Path(scratch) / "settings.ini"), QSettings.Format.IniFormat)
    services = None
    if args.stand_in_cameras:
        from .services import Services, stand_in_cameras

        services = stand_in_cameras(Services(), args.stand_in_cameras)
    window = MainWindow(services=services, settings=settings)
    window.show()
    if args.skeleton or args.refiners is not None:
        window.select_model(args.skeleton or window.state.skeleton,
                            tuple(args.refiners) if args.refiners is not None else window.state.refiners)
    if args.person is not None:
        window.plots.select_person(args.person)
        window.on_person_changed(args.person)
    if args.views:
        window.ask_open_views(args.views, args.calibration, start=True, live=args.views_live, cameras=args.cameras,
                              heights=args.height)
    else:
        source = args.source or str(SAMPLE_CLIP)
        if args.calibration:  # before opening: its tracking starts with the calibrated camera
            window.load_calibration(args.calibration, source=source)
        window.open_source(source, mode=args.mode)
    if args.calibrate_board:
        window.ask_calibrate_board(args.calibrate_board)
        window.board_dialog.set_board(args.board)
        window.board_dialog.start_run()
    if args.height and not args.views:  # --views: given to the result when it comes (ask_open_views)
        window.set_heights(args.height)  # after opening: a new source starts with no heights
    if args.quit_after is not None:
        _schedule_quit(window, args.quit_after, args.screenshot)
    return app.exec()


if __name__ == "__main__":
    raise SystemExit(main())
