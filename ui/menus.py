"""The window's menu bar: File (open, recent, export by registered suffix, quit), Record, View."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence

from posetracker.export import exporters

if TYPE_CHECKING:
    from ui.main_window import MainWindow


def build_menus(win: MainWindow) -> None:
    bar = win.menuBar()
    file_menu = bar.addMenu("&File")
    open_video = QAction("Open video…", win, shortcut=QKeySequence.StandardKey.Open)
    open_video.triggered.connect(win._ask_open_file)
    open_rec = QAction("Open recording…", win)
    open_rec.triggered.connect(win._ask_open_recording)
    file_menu.addActions([open_video, open_rec])
    export_menu = file_menu.addMenu("Export poses")
    for name, exporter in sorted(exporters().items()):
        suffixes = ", ".join(exporter.suffixes)
        action = QAction(f"{name.upper()} ({suffixes})…", win)
        action.setToolTip(exporter.description)
        action.triggered.connect(partial(win.ask_export, name))
        export_menu.addAction(action)
    win.export_menu = export_menu
    file_menu.addSeparator()
    quit_action = QAction("Quit", win, shortcut=QKeySequence.StandardKey.Quit)
    quit_action.triggered.connect(win.close)
    file_menu.addAction(quit_action)
    play_menu = bar.addMenu("&Playback")
    for text, keys, slot in (("Play / pause", "Space", win.toggle_play),
                             ("Next frame", "Right", lambda: win.controller.step(1)),
                             ("Previous frame", "Left", lambda: win.controller.step(-1))):
        action = QAction(text, win, shortcut=QKeySequence(keys))
        action.triggered.connect(slot)
        play_menu.addAction(action)
    record_menu = bar.addMenu("&Record")
    record_menu.addAction(win.record_action)
    view_menu = bar.addMenu("&View")
    for dock in (win.source_dock, win.model_dock, win.view3d_dock, win.plots_dock):
        view_menu.addAction(dock.toggleViewAction())
