"""File > Open several cameras: synchronised videos of the same people from calibrated cameras, triangulated into
one result in the calibration's metres, as ``posetracker process cam1.mp4 cam2.mp4 ... --calibration FILE`` does.

The dialog lists the videos (each one's camera in the calibration, frames, rate, size, and what is wrong with it),
says in words what stops the set-up (``posetracker.multiview.process.check_views``), and runs
``posetracker.multiview.process.process_views`` (the CLI's library call) in a worker thread with a progress bar and
Cancel. With Live ticked the videos are played at their frame rate as cameras deliver and each instant is
triangulated as it comes (``posetracker.multiview.live_run.run_live_sources``, what ``process ... --mode live
--paced`` runs). The result goes out as ``result_ready(ViewsResult)``; the window shows it (``ui.window_views``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
    QProgressBar, QPushButton, QStyledItemDelegate, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from posetracker.multiview.process import ViewsCheck, check_views
from .packets import describe_error
from .worker_dialog import ERROR_COLOR, StoppableWorker, WorkerDialog

COLUMNS = ("Video", "Camera", "Frames", "FPS", "Size", "Check")
NOTE_COLOR = "#8a6d00"
VIDEO_FILTER = "Videos (*.mp4 *.avi *.mov *.mkv *.webm *.m4v *.mpg *.ts);;All files (*)"
CALIBRATION_FILTER = ("Calibrations (*.qca.txt *.qca *.toml *.yml *.yaml *.xml);;Qualisys (*.qca.txt *.qca);;"
                      "Pose2Sim / anipose / FreeMoCap (*.toml);;OpenCV (*.yml *.yaml *.xml);;All files (*)")
CALIBRATION_SEPARATOR = ";"  # between several calibration files in the field
SessionMaker = Callable[[float], Any]  # fov_deg -> a tracking session (ui.services.with_camera)


class _ElideRight(QStyledItemDelegate):
    """The Check column keeps the start of a message (the table elides file names in the middle)."""

    def initStyleOption(self, option, index) -> None:  # noqa: N802 - Qt's name
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideRight


class ViewsWorker(StoppableWorker):
    """Runs ``process_views`` on the set-up; ``progress(done, total)`` counts frames over every view."""

    progress = Signal(int, int)
    status = Signal(str)
    done = Signal(object)  # posetracker.multiview.process.ViewsResult
    failed = Signal(str)

    def __init__(self, views: list[str], calibration: list[str], make_session: SessionMaker,
                 frames: list[int | None], live: bool = False):
        super().__init__()
        self.views, self.calibration, self.make_session, self.live = views, calibration, make_session, live
        self.frames = [max(int(f or 0), 0) for f in frames]
        self._view = -1
        self._last = 0.0
        self.seconds = 0.0  # how long the run took, when it is done

    @Slot()
    def run(self) -> None:
        from posetracker.multiview.calibration import CalibrationError, read_calibrations
        from posetracker.multiview.process import ViewsError, cameras_for_views, process_views

        t0 = time.monotonic()
        try:
            cameras = cameras_for_views(read_calibrations(self.calibration), self.views)
            self.cameras = [c.name for c in cameras]
            if self.live:  # the videos played as cameras, each instant triangulated as it comes
                from posetracker.multiview.live_run import run_live_sources

                self.status.emit(f"Playing {len(self.views)} videos as cameras, live…")
                result = run_live_sources(self.views, cameras, self.make_session,
                                          calibration_name=Path(self.calibration[0]).name, paced=True,
                                          cancel=self.stopping, progress=self._live_report)
            else:
                result = process_views(self.views, cameras, self.make_session,
                                       calibration_name=Path(self.calibration[0]).name, progress=self._report,
                                       cancel=self.stopping, say=self.status.emit)
            if result is None:  # offline cancelled; live gives the instants tracked so far (as Ctrl-C writes them)
                self.failed.emit("Cancelled: nothing was processed.")
            else:
                self.seconds = time.monotonic() - t0
                self.done.emit(result)
        except (CalibrationError, ViewsError) as exc:
            self.failed.emit(describe_error(exc)[:1].upper() + describe_error(exc)[1:])
        except Exception as exc:  # noqa: BLE001 - shown in the dialog, the app stays usable
            self.failed.emit(f"Processing the cameras failed: {describe_error(exc)}")
        finally:
            self.finished.emit()

    def _live_report(self, stats, seconds: float) -> None:
        """Live: the first video's frames played (``live_sources.PairStats``) and the instants tracked per second."""
        t = time.monotonic()
        if t - self._last >= 0.1:
            self._last = t
            self.progress.emit(stats.read[0], self.frames[0])
            self.status.emit(f"Live: {stats.instants} instants triangulated, {stats.instants / max(seconds, 1e-6):.1f}"
                             f" per s; frames dropped per camera {stats.dropped}")

    def _report(self, view: int, done: int, total: int | None) -> None:
        if view != self._view:
            self._view = view
            self.status.emit(f"Tracking {self.cameras[view]} (view {view + 1} of {len(self.views)})…")
        before = sum(self.frames[:view])
        t = time.monotonic()
        last = view == len(self.views) - 1 and total and done >= total
        if t - self._last >= 0.1 or last:
            self._last = t
            self.progress.emit(before + done, sum(self.frames))
        if last:
            self.status.emit("Matching the people across the views, triangulating, solving their motion…")


class MultiCameraDialog(WorkerDialog):
    """Videos (add, remove, move up: the first is shown), calibration file, a check per video and for the set-up,
    Live, Process / Cancel / Close, a progress bar. ``sessions()`` gives, at Process, the session maker of the
    model settings of the moment (fov_deg -> session); ``live_sessions()`` the same for Live."""

    result_ready = Signal(object)  # ViewsResult
    cancelling = "Cancelling: the view being tracked stops…"

    def __init__(self, sessions: Callable[[], SessionMaker], parent: QWidget | None = None,
                 live_sessions: Callable[[], SessionMaker] | None = None):
        super().__init__(parent)
        self.sessions = sessions
        self.live_sessions = live_sessions or sessions  # Live: live sessions, 2-D not smoothed
        self.setWindowTitle("Open several cameras")
        self.setObjectName("multiCameraDialog")
        self.check: ViewsCheck = check_views([], [])
        self.result = None  # the last run's ViewsResult
        self._build()
        self._set_running(False)
        self.refresh()

    # ------------------------------------------------------------------ construction

    def _build(self) -> None:
        intro = QLabel("Synchronised videos of the same people, each from a calibrated camera, are tracked, "
                       "matched and triangulated into one result in the calibration's metres, as "
                       "<tt>posetracker process cam1.mp4 cam2.mp4 … --calibration FILE</tt> does. Each video's "
                       "file name names its camera (cam01.mp4: camera cam01). The first video is shown in the "
                       "window with the people reprojected into it.")
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
        self.table.setColumnWidth(0, 160)
        self.add_videos = QPushButton("Add videos…")
        self.remove = QPushButton("Remove")
        self.move_up = QPushButton("Move up")
        self.move_up.setToolTip("The first video is the reference: the result is in its camera's frame and shown "
                                "over its video")
        side = QVBoxLayout()
        side.setContentsMargins(0, 0, 0, 0)
        for b in (self.add_videos, self.remove, self.move_up):
            side.addWidget(b)
        side.addStretch(1)
        videos_box = QGroupBox("Videos (one per camera)")
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
        self.live = QCheckBox("Live: play the videos at their frame rate as cameras and triangulate each instant as "
                              "it comes (frames the model cannot keep up with are dropped)")
        self.live.setToolTip("As posetracker process cam1.mp4 cam2.mp4 --mode live --paced --calibration FILE: one "
                             "live session per camera, the people matched and triangulated instant by instant")
        form.addRow("", self.live)
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
        for path in (str(p) for p in paths):
            if path in have:
                continue
            have.add(path)
            row = self.table.rowCount()
            self.table.insertRow(row)
            item = QTableWidgetItem(Path(path).name)
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

    def refresh(self) -> None:
        """Check the set-up again (``check_views``): fill the table, say what stops it, enable Process."""
        self.check = check_views(self.views(), self.calibration_files())
        for row, info in enumerate(self.check.views):
            fps = f"{info.fps:g}" if info.fps else "?"
            size = f"{info.size[0]}x{info.size[1]}" if info.size else "?"
            frames = str(info.frames) if info.frames else "?"
            verdict = info.problem or info.note or ("ok" if info.camera else "")
            cells = (info.camera or "—", frames, fps, size, verdict)
            for col, text in enumerate(cells, start=1):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if col == 5 and (info.problem or info.note):
                    item.setForeground(QBrush(QColor(ERROR_COLOR if info.problem else NOTE_COLOR)))
                self.table.setItem(row, col, item)
        if self.check.problem:
            self.show_message(self.check.problem, error=True)
        else:
            frames = [i.frames for i in self.check.views]
            cams = ", ".join(i.camera for i in self.check.views if i.camera)
            self.show_message(f"Ready: {len(frames)} videos, cameras {cams} of {len(self.check.cameras)} in the "
                              f"calibration; {min((f or 0) for f in frames)} frames in the shortest.")
        self._set_running(self.running())

    def _set_running(self, busy: bool) -> None:
        super()._set_running(busy)
        self.start.setEnabled(not busy and self.check.ready)
        for w in (self.add_videos, self.remove, self.move_up, self.calibration, self.browse, self.live):
            w.setEnabled(not busy)

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
        worker = ViewsWorker(self.views(), self.calibration_files(), (self.live_sessions if live else self.sessions)(),
                             frames, live)
        self.launch_frames(worker, frames[:1] if live else frames, "multicamera",
                           f"Playing {len(frames)} views live…" if live else f"Processing {len(frames)} views…")
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
        done = "Cancelled, kept what was tracked" if "incomplete" in seq.metadata else "Done"
        self.show_message(f"{done} in {seconds:.0f} s: {len(seq)} frames, {who} in 3-D, in the calibration's metres; "
                          f"shown in the window over {Path(result.views[0]).name}."
                          + "".join(f" Warning: {w}" for w in result.warnings))
        self.result_ready.emit(result)
