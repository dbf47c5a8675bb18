"""Tools > Calibrate cameras from a board: clips of a printed ChArUco board or checkerboard, one per camera and
recorded together, calibrated as ``posetracker calibrate --board ... cam1.mp4 cam2.mp4 --out FILE`` does.

The dialog lists the clips (each one's camera is named after its file, its frames and size), takes the board as
printed (kind, squares, square and marker sides in mm), runs ``posetracker.calibration.calibrate_board`` (the
CLI's library call) in a worker thread with a progress bar and Cancel, shows the report per camera
(``posetracker.calibration.summary.camera_lines``: reprojection error, focal length, centre) and whether a floor
was found, and saves the calibration as a Pose2Sim / anipose TOML (``summary.save_calibration``). The saved file
can then be used for the window's current source (``use_for_source``) or in Open several cameras
(``use_for_views``).
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QListWidget,
    QListWidgetItem, QPlainTextEdit, QProgressBar, QPushButton, QSpinBox, QVBoxLayout, QWidget,
)

from posetracker.calibration import Board, BoardCalibrationError, BoardError, calibrate_board
from posetracker.calibration.board import DEFAULT_DICTIONARY
from posetracker.calibration.summary import NO_FLOOR, camera_lines, save_calibration
from .multicamera_dialog import VIDEO_FILTER
from .packets import describe_error
from .worker_dialog import StoppableWorker, WorkerDialog

DICTIONARIES = (DEFAULT_DICTIONARY, "DICT_4X4_100", "DICT_5X5_50", "DICT_5X5_100", "DICT_6X6_50", "DICT_6X6_250",
                "DICT_7X7_50", "DICT_ARUCO_ORIGINAL")


class _Cancelled(Exception):
    """Raised from the progress callback to stop ``calibrate_board`` between two frames."""


class BoardWorker(StoppableWorker):
    """Runs ``calibrate_board`` on the clips and saves the result; ``progress(done, total)`` counts frames read
    over every clip."""

    progress = Signal(int, int)
    status = Signal(str)
    done = Signal(object)  # posetracker.calibration.BoardCalibration, saved to ``out``
    failed = Signal(str)

    def __init__(self, clips: list[str], board: Board, out: str, frames: list[int | None]):
        super().__init__()
        self.clips, self.board, self.out = clips, board, out
        self.frames = [max(int(f or 0), 0) for f in frames]
        self.names = [Path(c).stem for c in clips]
        self._clip = -1
        self._last = 0.0

    @Slot()
    def run(self) -> None:
        from posetracker.capture import CaptureError

        try:
            result = calibrate_board(self.clips, self.board, progress=self._report)
            if self.stopping():
                raise _Cancelled
            save_calibration(result, self.out, made_by="PoseTracker (Tools > Calibrate cameras from a board)")
            self.done.emit(result)
        except _Cancelled:
            self.failed.emit("Cancelled: no calibration was made.")
        except (BoardCalibrationError, BoardError, CaptureError, OSError) as exc:
            text = describe_error(exc)
            self.failed.emit(text[:1].upper() + text[1:])
        except Exception as exc:  # noqa: BLE001 - reported in the dialog, the app stays usable
            self.failed.emit(f"The calibration failed: {describe_error(exc)}")
        finally:
            self.finished.emit()

    def _report(self, name: str, done: int, total: int | None) -> None:
        if self.stopping():
            raise _Cancelled
        clip = self.names.index(name)
        if clip != self._clip:
            self._clip = clip
            self.status.emit(f"Looking for the board in {name} (clip {clip + 1} of {len(self.clips)})…")
        t = time.monotonic()
        last = clip == len(self.clips) - 1 and total and done >= total
        if t - self._last >= 0.1 or last:
            self._last = t
            self.progress.emit(sum(self.frames[:clip]) + done, sum(self.frames))
        if last:
            self.status.emit("Calibrating: each camera's lens, then the cameras placed together (bundle "
                             "adjustment) and the floor…")


class BoardDialog(WorkerDialog):
    """Clips (add, remove), the board as printed, the file to save, Calibrate / Cancel / Close, a progress bar,
    the report, and Use for this source / Use in Open several cameras once a calibration is saved."""

    use_for_source = Signal(str)  # the saved calibration's path
    use_for_views = Signal(str)
    cancelling = "Cancelling: the clip being searched stops…"

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Calibrate cameras from a board")
        self.setObjectName("boardDialog")
        self.result = None  # the last run's BoardCalibration
        self.saved: str | None = None  # where it was saved
        self._frames: dict[str, int | None] = {}
        self._build()
        self._set_running(False)
        self.refresh()

    # ------------------------------------------------------------------ construction

    def _build(self) -> None:
        intro = QLabel("Clips of a printed board, one per camera and recorded together (frame i of each is the same "
                       "instant), each named after its camera (cam1.mp4: camera cam1), as <tt>posetracker calibrate"
                       "</tt> takes them. Move the board around, tilting it towards and away from the cameras, then "
                       "lay it on the floor for a second: that sets the floor (z = 0, metres).")
        intro.setWordWrap(True)
        self.clips = QListWidget()
        self.clips.setMinimumHeight(90)
        self.add_clips = QPushButton("Add clips…")
        self.remove = QPushButton("Remove")
        side = QVBoxLayout()
        for b in (self.add_clips, self.remove):
            side.addWidget(b)
        side.addStretch(1)
        clips_box = QGroupBox("Board clips (one per camera)")
        row = QHBoxLayout(clips_box)
        row.addWidget(self.clips, 1)
        row.addLayout(side)
        self.kind = QComboBox()
        self.kind.addItem("ChArUco", "charuco")
        self.kind.addItem("Checkerboard", "checkerboard")
        self.columns = QSpinBox(minimum=2, maximum=40, value=7, suffix=" across")
        self.rows = QSpinBox(minimum=2, maximum=40, value=5, suffix=" down")
        squares = QHBoxLayout()
        squares.addWidget(self.columns)
        squares.addWidget(self.rows)
        self.square_mm = QDoubleSpinBox(minimum=1.0, maximum=1000.0, value=40.0, decimals=1, suffix=" mm")
        self.marker_mm = QDoubleSpinBox(minimum=1.0, maximum=1000.0, value=30.0, decimals=1, suffix=" mm")
        self.dictionary = QComboBox()
        self.dictionary.addItems(DICTIONARIES)
        self.out = QLineEdit()
        self.out.setPlaceholderText("calibration.toml (Pose2Sim / anipose TOML)")
        self.browse = QPushButton("Save as…")
        out_row = QHBoxLayout()
        out_row.addWidget(self.out, 1)
        out_row.addWidget(self.browse)
        form = QFormLayout()
        form.addRow("Board", self.kind)
        form.addRow("Squares", squares)
        form.addRow("Square side", self.square_mm)
        form.addRow("Marker side", self.marker_mm)
        form.addRow("ArUco dictionary", self.dictionary)
        form.addRow("Save to", out_row)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("not started")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.report = QPlainTextEdit()
        self.report.setReadOnly(True)
        self.report.setPlaceholderText("The report: per camera the frames with the board, focal length, "
                                       "reprojection error and position; the floor")
        self.report.setMinimumHeight(110)
        self.use_source = QPushButton("Use for this video / camera")
        self.use_source.setToolTip("Track the window's current source with this calibration (File > Camera "
                                   "calibration)")
        self.use_views = QPushButton("Use in Open several cameras…")
        use_row = QHBoxLayout()
        use_row.addWidget(self.use_source)
        use_row.addWidget(self.use_views)
        use_row.addStretch(1)
        self.button_row()
        self.start.setText("Calibrate")
        layout = QVBoxLayout(self)
        for w in (intro, clips_box):
            layout.addWidget(w)
        layout.addLayout(form)
        for w in (self.message, self.progress, self.status, self.report):
            layout.addWidget(w)
        layout.addLayout(use_row)
        layout.addWidget(self.buttons)
        self.resize(720, 640)
        self.add_clips.clicked.connect(self.ask_clips)
        self.remove.clicked.connect(self.remove_selected)
        self.browse.clicked.connect(self.ask_out)
        self.kind.currentIndexChanged.connect(self.refresh)
        self.out.textEdited.connect(lambda _text: self.refresh())
        self.start.clicked.connect(self.start_run)
        self.use_source.clicked.connect(lambda: self.saved and self.use_for_source.emit(self.saved))
        self.use_views.clicked.connect(lambda: self.saved and self.use_for_views.emit(self.saved))

    # ------------------------------------------------------------------ inputs

    def clip_paths(self) -> list[str]:
        return [self.clips.item(r).data(Qt.ItemDataRole.UserRole) for r in range(self.clips.count())]

    def set_clips(self, paths: list[str]) -> None:
        """Replace the clips; each is opened once to show its camera, frames and size."""
        self.clips.clear()
        for path in map(str, paths):
            self._add(path)
        if paths and not self.out.text().strip():
            self.out.setText(str(Path(paths[0]).parent / "calibration.toml"))
        self.refresh()

    def _add(self, path: str) -> None:
        from posetracker.capture import CaptureError, open_source

        if path in self.clip_paths():
            return
        try:
            with open_source(path) as source:
                frames, size = source.frame_count, source.size
            text = f"{Path(path).name}: camera {Path(path).stem}, {frames or '?'} frames, {size[0]}x{size[1]}"
        except (CaptureError, OSError, ValueError) as exc:
            frames, text = None, f"{Path(path).name}: cannot be read ({describe_error(exc)})"
        self._frames[path] = frames
        item = QListWidgetItem(text)
        item.setData(Qt.ItemDataRole.UserRole, path)
        item.setToolTip(path)
        self.clips.addItem(item)

    def ask_clips(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Add the board clips (one per camera)", "", VIDEO_FILTER)
        if paths:
            self.set_clips([*self.clip_paths(), *paths])

    def ask_out(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save the calibration", self.out.text() or "calibration.toml",
                                              "Pose2Sim / anipose calibration (*.toml)")
        if path:
            self.out.setText(path if path.lower().endswith(".toml") else path + ".toml")
            self._replace = self.out.text()  # the save dialog asked before replacing it
            self.refresh()

    _replace: str | None = None  # a file the user chose to replace (Save as…)

    def remove_selected(self) -> None:
        for item in self.clips.selectedItems():
            self.clips.takeItem(self.clips.row(item))
        self.refresh()

    def set_board(self, spec: tuple[str, int, int, float, float | None]) -> None:
        """Fill the board's fields from (kind, columns, rows, square mm, marker mm or None) (``main.py --board``)."""
        kind, cols, rows, square_mm, marker_mm = spec
        self.kind.setCurrentIndex(max(0, self.kind.findData(kind)))
        self.columns.setValue(cols)
        self.rows.setValue(rows)
        self.square_mm.setValue(square_mm)
        if marker_mm is not None:
            self.marker_mm.setValue(marker_mm)
        self.refresh()

    def board(self) -> Board:
        """The board as the fields describe it (BoardError: what is wrong with it)."""
        charuco = self.kind.currentData() == "charuco"
        return Board(self.kind.currentData(), (self.columns.value(), self.rows.value()), self.square_mm.value() / 1000,
                     self.marker_mm.value() / 1000 if charuco else None, self.dictionary.currentText())

    def problem(self) -> str:
        """What stops a calibration, in words ("" when it can run)."""
        clips = self.clip_paths()
        if not clips:
            return "Add the board clips, one per camera."
        bad = [Path(c).name for c in clips if self._frames.get(c) is None and not Path(c).is_file()]
        if bad:
            return f"{', '.join(bad)}: not found."
        out = self.out.text().strip()
        if not out:
            return "Choose where to save the calibration (.toml)."
        if Path(out).exists() and out != self._replace:
            return f"{Path(out).name} exists: Save as… to replace it, or give another name."
        return ""

    def refresh(self) -> None:
        """The inputs changed: enable Calibrate and say what stops it, or that it is ready."""
        self._set_running(self.running())
        if not self.running():
            problem = self.problem()
            self.show_message(problem or f"Ready: {self.clips.count()} clip(s).", error=bool(problem))

    def _set_running(self, busy: bool) -> None:
        super()._set_running(busy)
        for w in (self.add_clips, self.remove, self.kind, self.columns, self.rows, self.square_mm, self.out,
                  self.browse, self.use_source, self.use_views):
            w.setEnabled(not busy)
        if not busy:  # the run's message stays
            self.use_source.setEnabled(self.saved is not None)
            self.use_views.setEnabled(self.saved is not None)
            self.start.setEnabled(not self.problem())
        charuco = self.kind.currentData() == "charuco"
        self.marker_mm.setEnabled(charuco and not busy)
        self.dictionary.setEnabled(charuco and not busy)

    def _show_status(self, text: str) -> None:
        self.status.setText(text)

    # ------------------------------------------------------------------ run

    def start_run(self) -> bool:
        """Calibrate in a worker thread (False, with the reason shown, when it cannot run)."""
        problem = self.problem()
        try:
            board = self.board()
        except BoardError as exc:
            problem = problem or f"The board: {exc}"
        if self.running() or problem:
            if problem:
                self.show_message(problem, error=True)
            return False
        clips = self.clip_paths()
        frames = [self._frames.get(c) for c in clips]
        self.result, self.saved = None, None
        self.report.clear()
        self.launch_frames(BoardWorker(clips, board, self.out.text().strip(), frames), frames, "board-calibration",
                           f"Calibrating {len(clips)} camera(s) from the {board.describe()}…")
        return True

    @Slot(object)
    def _on_done(self, result) -> None:
        self.result, self.saved = result, self.sender().out
        self._replace = self.saved  # calibrating again replaces this run's own file
        self.progress.setValue(self.progress.maximum())
        floor = f"Floor: {result.floor} (z = 0, z up, metres)." if result.floor else f"Floor: {NO_FLOOR}."
        self.report.setPlainText("\n".join([*camera_lines(result), floor]))
        self.status.setText("")
        cams = ", ".join(c.name for c in result.cameras)
        self.show_message(f"Saved {len(result.cameras)} camera(s) ({cams}) to {self.saved}"
                          + ("" if result.floor else "; no floor was found") + ".")
