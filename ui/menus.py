"""The window's menu bar: File (open, several calibrated cameras, the source's camera calibration, export by
registered suffix, quit), Playback, Record, View, Tools (train an animal mode from the user's labels,
batch-process videos, calibrate cameras from a board)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu

from posetracker.export import exporters


@dataclass(frozen=True)
class MenuActions:
    """What the menus trigger (the window's public slots) and the window's shared actions and docks."""

    open_video: Callable[[], None]
    open_folder: Callable[[], None]  # a folder of images, played as a video
    open_recording: Callable[[], None]
    export: Callable[[str], None]  # exporter name -> ask where, then export
    toggle_play: Callable[[], None]
    step: Callable[[int], None]  # +1 / -1 frame
    record: QAction
    docks: Sequence[QDockWidget]  # shown / hidden from the View menu, in this order
    train_mode: Callable[[], None] | None = None  # open the Train animal mode dialog (None: the entry is disabled)
    batch: Callable[[], None] | None = None  # open the Batch process videos dialog (None: the entry is disabled)
    open_views: Callable[[], None] | None = None  # File > Open several cameras (None: the entry is disabled)
    calibration: Callable[[], None] | None = None  # File > Camera calibration: the current source's (None: disabled)
    calibrate_board: Callable[[], None] | None = None  # Tools > Calibrate cameras from a board (None: disabled)


def build_menus(win: QMainWindow, actions: MenuActions) -> QMenu:
    """Fill ``win``'s menu bar; returns the Export poses menu."""
    bar = win.menuBar()
    file_menu = bar.addMenu("&File")
    open_video = QAction("Open video…", win, shortcut=QKeySequence.StandardKey.Open)
    open_video.triggered.connect(actions.open_video)
    open_folder = QAction("Open image folder…", win)
    open_folder.triggered.connect(actions.open_folder)
    open_rec = QAction("Open recording…", win)
    open_rec.triggered.connect(actions.open_recording)
    file_menu.addActions([open_video, open_folder, open_rec])
    _tool(file_menu, win, "Open several cameras…", "open_views_action", actions.open_views,
          "Synchronised videos from calibrated cameras, triangulated into one result in metres "
          "(as posetracker process cam1.mp4 cam2.mp4 ... --calibration FILE)")
    _tool(file_menu, win, "Camera calibration…", "calibration_action", actions.calibration,
          "The calibration of this video's or camera's camera: tracked with its focal length, people stood on its "
          "floor (as posetracker process clip.mp4 --calibration FILE)")
    export_menu = file_menu.addMenu("Export poses")
    for name, exporter in sorted(exporters().items()):
        suffixes = ", ".join(exporter.suffixes)
        action = QAction(f"{name.upper()} ({suffixes})…", win)
        action.setToolTip(exporter.description)
        action.triggered.connect(partial(actions.export, name))
        export_menu.addAction(action)
    file_menu.addSeparator()
    quit_action = QAction("Quit", win, shortcut=QKeySequence.StandardKey.Quit)
    quit_action.triggered.connect(win.close)
    file_menu.addAction(quit_action)
    play_menu = bar.addMenu("&Playback")
    for text, keys, slot in (("Play / pause", "Space", actions.toggle_play),
                             ("Next frame", "Right", lambda: actions.step(1)),
                             ("Previous frame", "Left", lambda: actions.step(-1))):
        action = QAction(text, win, shortcut=QKeySequence(keys))
        action.triggered.connect(slot)
        play_menu.addAction(action)
    record_menu = bar.addMenu("&Record")
    record_menu.addAction(actions.record)
    view_menu = bar.addMenu("&View")
    for dock in actions.docks:
        view_menu.addAction(dock.toggleViewAction())
    tools_menu = bar.addMenu("&Tools")
    _tool(tools_menu, win, "Train animal mode…", "train_mode_action", actions.train_mode,
          "Train a new animal mode from your own labels (a SLEAP .slp file or a DeepLabCut project)")
    _tool(tools_menu, win, "Batch process videos…", "batch_action", actions.batch,
          "Track every video of some files and folders into an output folder (as posetracker batch)")
    _tool(tools_menu, win, "Calibrate cameras from a board…", "calibrate_board_action", actions.calibrate_board,
          "Cameras calibrated from clips of a ChArUco board or checkerboard, saved as a .toml (as posetracker "
          "calibrate)")
    return export_menu


def _tool(menu: QMenu, win: QMainWindow, text: str, name: str, slot: Callable[[], None] | None, tip: str) -> None:
    """A menu entry calling ``slot`` (disabled when there is none)."""
    action = QAction(text, win)
    action.setObjectName(name)
    action.setToolTip(tip)
    action.setEnabled(slot is not None)
    if slot is not None:
        action.triggered.connect(slot)
    menu.addAction(action)
