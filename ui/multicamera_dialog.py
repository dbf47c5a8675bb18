"""File > Open several cameras: synchronised videos, or connected cameras, of the same people from calibrated
cameras, triangulated into one result in the calibration's metres, as ``posetracker process cam1.mp4 cam2.mp4 ...
--calibration FILE`` (or ``process camera:0 camera:1 --mode live --calibration FILE``) does.

The dialog lists the sources (each one's camera in the calibration, frames, rate, size, and what is wrong with it),
says in words what stops the set-up (``posetracker.multiview.process.check_views``; Live:
``posetracker.multiview.live_check.check_sources``, which opens each connected camera and reads a frame), and runs
the CLI's library call in a worker thread (``ui.views_worker``) with a progress bar and Cancel. With Live ticked
the sources are tracked live, each instant triangulated as it comes (``posetracker.multiview.live_run``, what
``process ... --mode live --paced`` runs); a connected camera ticks Live and locks it (a camera cannot be processed
offline). The result goes out as ``result_ready(ViewsResult)``; the window shows it (``ui.window_views``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
    QMenu, QProgressBar, QPushButton, QStyledItemDelegate, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from posetracker.capture import CameraInfo
from posetracker.multiview.live_check import check_sources, is_camera
from posetracker.multiview.process import ViewsCheck, check_views

from .multicamera_views import CameraViews
from .views_worker import SessionMaker, SourceOpener, ViewsWorker
from .worker_dialog import ERROR_COLOR, WorkerDialog

COLUMNS = ("Source", "Camera", "Frames", "FPS", "Size", "Check")
NOTE_COLOR = "#8a6d00"
VIDEO_FILTER = "Videos (*.mp4 *.avi *.mov *.mkv *.webm *.m4v *.mpg *.ts);;All files (*)"
CALIBRATION_FILTER = ("Calibrations (*.qca.txt *.qca *.toml *.yml *.yaml *.xml);;Qualisys (*.qca.txt *.qca);;"
                      "Pose2Sim / anipose / FreeMoCap (*.toml);;OpenCV (*.yml *.yaml *.xml);;All files (*)")
CALIBRATION_SEPARATOR = ";"  # between several calibration files in the field
CAMERA_LIVE_NOTE = "Live is on and stays on: a connected camera cannot be processed offline."


class _ElideRight(QStyledItemDelegate):
    """The Check column keeps the start of a message (the table elides file names in the middle)."""

    def initStyleOption(self, option, index) -> None:  # noqa: N802 - Qt's name
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideRight


class MultiCameraDialog(CameraViews, WorkerDialog):
    """Videos and connected cameras (add, remove, move up: the first is shown), calibration file, a check per
    source and for the set-up, Live, Process / Cancel / Close, a progress bar. ``sessions()`` gives, at Process,
    the session maker of the model settings of the moment (fov_deg -> session); ``live_sessions()`` the same for
    Live. ``cameras()`` lists the connected cameras (``ui.services.Services.list_cameras``); ``opener`` opens a
    source for the checks and the live run (None: ``capture.open_source``; the window passes its services');
    ``free(cameras)`` is called with the cameras chosen before they are opened (the window closes one it shows)."""

    result_ready = Signal(object)  # ViewsResult
    cancelling = "Cancelling: the view being tracked stops…"

    def __init__(self, sessions: Callable[[], SessionMaker], parent: QWidget | None = None,
                 live_sessions: Callable[[], SessionMaker] | None = None,
                 cameras: Callable[[], list[CameraInfo]] | None = None, opener: SourceOpener | None = None,
                 free: Callable[[list[str]], None] | None = None, keep_folder: Callable[[], Path] | None = None):
        super().__init__(parent)
        self.keep_folder = keep_folder  # a new folder for a live run's camera frames (None: not kept)
        self.cameras = cameras or list
        self.opener = opener
        self.free = free
        self.sessions = sessions
        self.live_sessions = live_sessions or sessions  # Live: live sessions, 2-D not smoothed
        self.setWindowTitle("Open several cameras")
        self.setObjectName("multiCameraDialog")
        self.check: ViewsCheck = check_views([], [])
        self.result = None  # the last run's ViewsResult
        self._labels: dict[str, str] = {}  # camera:N -> what the table shows ("camera:0 (HD Webcam)")
        self._opened: dict = {}  # camera:N -> its ViewInfo once it opened (not opened again by each check)
        self.picked: dict[str, str] = {}  # Live: view -> its calibrated camera, as picked in the Camera column
        self._picked_for: list[str] = []  # the calibration files the picks were made with
        self._build()
        self._set_running(False)
        self.refresh()

    # ------------------------------------------------------------------ construction

    def _build(self) -> None:
        intro = QLabel("Synchronised videos, or connected cameras, of the same people, each from a calibrated camera, "
                       "are tracked, matched and triangulated into one result in the calibration's metres, as "
                       "<tt>posetracker process cam1.mp4 cam2.mp4 … --calibration FILE</tt> does. Each video's "
                       "file name names its camera (cam01.mp4: camera cam01); connected cameras (Live) take the "
                       "calibration's cameras in order, as <tt>process camera:0 camera:1 --mode live</tt> does, or "
                       "those picked in the Camera column (<tt>--cameras NAME …</tt>). "
                       "The first source is shown in the window with the people reprojected into it.")
        intro.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.setMinimumHeight(150)
        self._check_delegate = _ElideRight(self.table)
        self.table.setItemDelegateForColumn(5, self._check_delegate)
        header = self.table.horizontalHeader()
        for col in range(1, 5):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(5, QHeaderView.ResizeMode.Stretch)
        self.table.setColumnWidth(0, 220)
        self.add_videos = QPushButton("Add videos…")
        self.add_camera_button = QPushButton("Add camera")
        self.add_camera_button.setToolTip("A connected camera as one view: tracked live (camera:N)")
        self.camera_menu = QMenu(self.add_camera_button)
        self.camera_menu.aboutToShow.connect(self._fill_camera_menu)
        self.add_camera_button.setMenu(self.camera_menu)
        self.remove = QPushButton("Remove")
        self.move_up = QPushButton("Move up")
        self.move_up.setToolTip("The first video is the reference: the result is in its camera's frame and shown "
                                "over its video")
        side = QVBoxLayout()
        side.setContentsMargins(0, 0, 0, 0)
        for b in (self.add_videos, self.add_camera_button, self.remove, self.move_up):
            side.addWidget(b)
        side.addStretch(1)
        videos_box = QGroupBox("Videos or connected cameras (one per calibrated camera)")
        videos_row = QHBoxLayout(videos_box)
        videos_row.addWidget(self.table, 1)
        videos_row.addLayout(side)
        self.calibration = QLineEdit()
        self.calibration.setPlaceholderText("Qualisys .qca.txt, Pose2Sim / anipose / FreeMoCap .toml, or OpenCV "
                                            ".yml / .xml files (one per camera, separated by ;)")
        self.browse = QPushButton("Browse…")
        calib_row = QHBoxLayout()
        calib_row.setContentsMargins(0, 0, 0, 0)
        calib_row.addWidget(self.calibration, 1)
        calib_row.addWidget(self.browse)
        form = QFormLayout()
        form.addRow("Calibration", calib_row)
        self.live = QCheckBox("Live: track the cameras (videos played at their frame rate) and triangulate each "
                              "instant as it comes (frames the model cannot keep up with are dropped)")
        self.live.setToolTip("As posetracker process camera:0 camera:1 (or cam1.mp4 cam2.mp4 --paced) --mode live "
                             "--calibration FILE: one live session per camera, the people matched and triangulated "
                             "instant by instant")
        self.live_note = QLabel("")
        self.live_note.setStyleSheet(f"color: {NOTE_COLOR};")
        self.live_note.setVisible(False)
        form.addRow("", self.live)
        form.addRow("", self.live_note)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("not started")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.button_row()
        self.start.setText("Process")
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(videos_box, 1)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self.resize(760, 520)
        self.add_videos.clicked.connect(self.ask_videos)
        self.remove.clicked.connect(self.remove_selected)
        self.move_up.clicked.connect(self.move_selected_up)
        self.browse.clicked.connect(self.ask_calibration)
        self.calibration.editingFinished.connect(self.refresh)
        self.live.toggled.connect(self._live_toggled)
        self.start.clicked.connect(self.start_run)

    # ------------------------------------------------------------------ inputs

    def views(self) -> list[str]:
        return [self.table.item(r, 0).data(Qt.ItemDataRole.UserRole) for r in range(self.table.rowCount())]

    def calibration_files(self) -> list[str]:
        """The calibration field's files: one, or several separated by ";" (OpenCV: one camera a file)."""
        return [p.strip() for p in self.calibration.text().split(CALIBRATION_SEPARATOR) if p.strip()]

    def set_inputs(self, views: list[str] | None = None, calibration: str | list[str] | None = None) -> None:
        """Replace the videos and / or the calibration file(s) (None: kept) and check them again."""
        if calibration is not None:
            files = [calibration] if isinstance(calibration, str) else list(calibration)
            self.calibration.setText(f"{CALIBRATION_SEPARATOR} ".join(map(str, files)))
        if views is not None:
            self.table.setRowCount(0)
            self._append(views)
        self.refresh()

    def _append(self, paths: list[str]) -> None:
        have = set(self.views())
        if any(is_camera(str(p)) and str(p) not in self._labels for p in paths):  # named as the Add camera menu
            self._labels.update({f"camera:{c.index}": f"camera:{c.index} ({c.name})" for c in self._listed()})
        for path in (str(p) for p in paths):
            if path in have:
                continue
            have.add(path)
            row = self.table.rowCount()
            self.table.insertRow(row)
            item = QTableWidgetItem(self._labels.get(path, path) if is_camera(path) else Path(path).name)
            item.setData(Qt.ItemDataRole.UserRole, path)
            item.setToolTip(path)
            self.table.setItem(row, 0, item)

    def ask_videos(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Add the cameras' videos", "", VIDEO_FILTER)
        if paths:
            self._append(paths)
            self.refresh()

    def ask_calibration(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Calibration of the cameras (OpenCV: one file per camera)", "",
                                                CALIBRATION_FILTER)
        if paths:
            self.set_inputs(calibration=paths)

    def remove_selected(self) -> None:
        for row in sorted({i.row() for i in self.table.selectedIndexes()}, reverse=True):
            self.table.removeRow(row)
        self.refresh()

    def move_selected_up(self) -> None:
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        if not rows or rows[0] == 0:
            return
        views = self.views()
        r = rows[0]
        views[r - 1], views[r] = views[r], views[r - 1]
        self.set_inputs(views)
        self.table.selectRow(r - 1)

    # ------------------------------------------------------------------ checks

    def _live_toggled(self, _on: bool) -> None:
        if not self.running():
            self.refresh()  # Live matches the sources as the CLI's --mode live does

    def refresh(self) -> None:
        """Check the set-up again (``check_views``; Live: ``check_sources``, each camera opened and a frame read):
        fill the table, say what stops it, enable Process. A connected camera ticks Live and locks it."""
        cameras = self.cameras_chosen()
        if cameras and not self.live.isChecked():
            self.live.blockSignals(True)
            self.live.setChecked(True)
            self.live.blockSignals(False)
        self.live_note.setText(CAMERA_LIVE_NOTE if cameras else "")
        self.live_note.setVisible(cameras)
        live = self.live.isChecked()
        if self.calibration_files() != self._picked_for:  # another calibration: its own cameras
            self.picked, self._picked_for = {}, self.calibration_files()
        if live:
            if cameras and self.free is not None:  # a camera is opened by one program at a time
                self.free([v for v in self.views() if is_camera(v)])
            self.check = check_sources(self.views(), self.calibration_files(), self.opener, self._opened,
                                       self.camera_names())
            self._opened.update({i.path: i for i in self.check.views if is_camera(i.path) and i.size and not i.problem})
        else:
            self.check = check_views(self.views(), self.calibration_files())
        for row, info in enumerate(self.check.views):
            fps = f"{info.fps:g}" if info.fps else "?"
            size = f"{info.size[0]}x{info.size[1]}" if info.size else "?"
            frames = str(info.frames) if info.frames else ("live" if is_camera(info.path) else "?")
            verdict = info.problem or info.note or ("ok" if info.camera else "")
            cells = (info.camera or "—", frames, fps, size, verdict)
            for col, text in enumerate(cells, start=1):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if col == 5 and (info.problem or info.note):
                    item.setForeground(QBrush(QColor(ERROR_COLOR if info.problem else NOTE_COLOR)))
                self.table.setItem(row, col, item)
        self.show_camera_pickers(live)
        if self.check.problem:
            self.show_message(self.check.problem, error=True)
        else:
            frames = [i.frames for i in self.check.views if not is_camera(i.path)]
            cams = ", ".join(i.camera for i in self.check.views if i.camera)
            connected = len(self.check.views) - len(frames)
            what = (f"{len(frames)} videos" if not connected else f"{connected} connected cameras" if not frames else
                    f"{connected} connected cameras and {len(frames)} videos")
            self.show_message(f"Ready: {what}, cameras {cams} of {len(self.check.cameras)} in the calibration"
                              + (f"; {min((f or 0) for f in frames)} frames in the shortest video." if frames else
                                 ": tracked live until Cancel.")
                              + (f" Note: {self.check.note}." if self.check.note else ""))
        self._set_running(self.running())

    def _set_running(self, busy: bool) -> None:
        super()._set_running(busy)
        self.start.setEnabled(not busy and self.check.ready)
        for w in (self.add_videos, self.add_camera_button, self.remove, self.move_up, self.calibration, self.browse):
            w.setEnabled(not busy)
        self.live.setEnabled(not busy and not self.cameras_chosen())
        self.lock_camera_pickers(busy)
        if not busy and self.progress.maximum() == 0:  # a camera's busy bar: stopped
            self.progress.setRange(0, 1)
            self.progress.setValue(1 if self.result is not None else 0)
            if self.result is not None:
                self.progress.setFormat("tracked until stopped")

    def _show_status(self, text: str) -> None:
        self.status.setText(text)

    # ------------------------------------------------------------------ run

    def start_run(self) -> bool:
        """Process the set-up in a worker thread (False, with the reason shown, when it cannot run)."""
        self.refresh()
        if self.running() or not self.check.ready:
            return False
        frames = [i.frames for i in self.check.views]
        self.result = None
        self.status.setText("Loading the model…")
        live = self.live.isChecked()
        keep = self.keep_folder() if live and self.keep_folder and any(map(is_camera, self.views())) else None
        worker = ViewsWorker(self.views(), self.calibration_files(), (self.live_sessions if live else self.sessions)(),
                             frames, live, self.opener, self.camera_names() if live else None, keep)
        self.launch_frames(worker, frames[:1] if live else frames, "multicamera",
                           f"Tracking {len(frames)} views live… (Cancel stops them and keeps what was tracked)"
                           if live else f"Processing {len(frames)} views…")
        if is_camera(self.views()[0]):  # a camera has no end: a busy bar
            self.progress.setRange(0, 0)
        return True

    @Slot(object)
    def _on_done(self, result) -> None:
        self.result = result
        seq = result.sequence
        people = len(seq.track_ids())
        self.progress.setValue(self.progress.maximum())
        aligned = [f"{c.name} {o:+d}" for c, o in zip(result.cameras[1:], result.offsets[1:])]
        lines = [*result.lines, *([f"Views aligned by the people's motion: frames against {result.cameras[0].name}: "
                                   + ", ".join(aligned)] if any(result.offsets) else [])]
        self.status.setText("\n".join(lines))
        seconds = getattr(self.sender(), "seconds", 0.0)
        who = f"{people} {'person' if people == 1 else 'people'}"
        done = ("Stopped: a source failed, kept what was tracked" if "failure" in seq.metadata else
                "Cancelled, kept what was tracked" if "incomplete" in seq.metadata else "Done")
        unit = "instants" if seq.metadata.get("mode") == "live" else "frames"  # live: one per pairing of the views
        self.show_message(f"{done} in {seconds:.0f} s: {len(seq)} {unit}, {who} in 3-D, in the calibration's metres; "
                          f"shown in the window over {self._shown_over(result, 0)}."
                          + "".join(f" Warning: {w}" for w in result.warnings)
                          + (f" Note: {self.check.note}." if self.check.note else "")
                          + (f" Error: {seq.metadata['failure']}" if "failure" in seq.metadata else ""),
                          error="failure" in seq.metadata)
        self.result_ready.emit(result)

    @staticmethod
    def _shown_over(result, view: int) -> str:
        """What view ``view`` of ``result`` plays: its kept frames, its file, or grey frames."""
        kept, name = (result.kept or [None] * len(result.views))[view], result.views[view]
        if kept:
            return f"{name}'s frames, kept in {Path(kept).parent}"
        return f"grey frames of {name} (its frames were not kept)" if is_camera(name) else Path(name).name
