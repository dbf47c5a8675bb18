"""Tools > Train animal mode: a new animal mode from the user's own labels (a SLEAP .slp file or a DeepLabCut
project folder), trained in a worker thread with progress and cancel; the held-out report at the end.

The work is ``Services.train_mode`` (posetracker.train.user_mode.create_user_mode: import the labels, train
the detector and its graph refiner, score both on the held-out frames, install the mode into the user modes
folder); tests inject a fake. A mode trained here is listed in the Mode and model panel at once
(``mode_trained`` -> MainWindow.refresh_model_options).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit,
    QProgressBar, QPushButton, QSpinBox, QVBoxLayout, QWidget,
)

from posetracker.train.user_mode import TrainingCancelled, TrainingError, format_report, mode_name
from .packets import describe_error
from .worker_dialog import StoppableWorker, WorkerDialog

log = logging.getLogger(__name__)

# Minutes -> steps. Measured: 1.31 steps/s (78 a minute) for `train detector`'s step (batch 16, FPN + heads +
# graph refiner) on one torch thread of this project's 2-core Xeon while another training job shared it;
# models/refiners-and-animals.md has 1,500 steps in 14.7 min (mouse4) and studies/fly13.md 1,500 in
# 17.7 min (85-100 a minute). Assumed: the user's machine is about as fast (a faster one finishes early), the
# training runs on one thread (TRAIN_THREADS) and the config's batch is 16. The budget counts training steps
# only: reading the labelled frames (8 warped copies each), the heatmap refiner (the import's 800 steps per 1,500,
# ~1.5 steps/s beside another training job on the same VM, 2026-12-07: ~0.47 x the detector's time) and scoring the
# held-out frames come on top.
STEPS_PER_MINUTE = 78
TRAIN_THREADS = 1  # one thread, like the app's live session: the app stays responsive while it trains
DEFAULT_MINUTES = 5  # a short first run (~390 steps); the shipped mouse mode had 1,500
MIN_STEPS = 10
UNITS = ("minutes", "steps")

Trainer = Callable[..., object]  # (project, name, steps=, progress=, cancel=, log=, threads=) -> UserModeResult


def minutes_to_steps(minutes: float) -> int:
    return max(MIN_STEPS, int(round(minutes * STEPS_PER_MINUTE)))


def suggested_name(project: str) -> str:
    """A mode name from the project: a .slp file's stem, a DeepLabCut folder's task (``openfield-me-2024``)."""
    p = Path(project.strip())
    if not project.strip():
        return ""
    if p.name == "config.yaml":
        p = p.parent
    if p.suffix.lower() == ".slp":
        return p.name[: -len(".pkg.slp")] if p.name.lower().endswith(".pkg.slp") else p.stem
    return p.name.split("-")[0]


class TrainWorker(StoppableWorker):
    """Runs ``trainer`` once in its QThread; ``stop()`` (thread-safe) asks it to cancel between steps."""

    progress = Signal(int, int, str)  # done, total (0 = unknown), stage text
    done = Signal(object)  # the trainer's result (UserModeResult)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, trainer: Trainer, project: str, name: str, steps: int):
        super().__init__()
        self._trainer, self._project, self._name, self._steps = trainer, project, name, steps
        self._last = (0.0, "")

    def _report(self, done: int, total: int, message: str) -> None:
        """At most ~10 updates a second, but every change of stage and every stage's end."""
        now, stage = time.monotonic(), message.split(":")[0]
        last_t, last_stage = self._last
        if stage != last_stage or now - last_t >= 0.1 or (total and done >= total):
            self._last = (now, stage)
            self.progress.emit(int(done), int(total or 0), message)

    @Slot()
    def run(self) -> None:
        try:
            result = self._trainer(self._project, self._name, steps=self._steps, progress=self._report,
                                   cancel=self._stop.is_set, log=log.info, threads=TRAIN_THREADS)
        except TrainingCancelled:
            self.cancelled.emit()
        except (TrainingError, FileExistsError, FileNotFoundError) as exc:  # the user can fix these: say what
            self.failed.emit(describe_error(exc))
        except Exception as exc:  # noqa: BLE001 - shown as a message, never a traceback
            log.exception("training the mode %s failed", self._name)
            self.failed.emit(f"Training failed: {describe_error(exc)}")
        else:
            if self._stop.is_set():  # finished as Cancel was pressed: it is made, say so
                log.info("mode %s finished while cancelling", self._name)
            self.done.emit(result)
        finally:
            self.finished.emit()


class TrainDialog(WorkerDialog):
    """Project, mode name, training length; Start / Cancel; a progress bar with its stage; the report."""

    mode_trained = Signal(object)  # UserModeResult: the new mode is installed
    cancelling = "Cancelling after the current step…"

    def __init__(self, trainer: Trainer | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        if trainer is None:
            from posetracker.train.user_mode import create_user_mode

            trainer = create_user_mode
        self.trainer = trainer
        self.setWindowTitle("Train animal mode")
        self.setObjectName("trainDialog")
        self._worker: TrainWorker | None = None
        self.trained = None  # the last run's result
        self._auto_name = ""
        self._build()
        self._connect()
        self._set_running(False)

    # ------------------------------------------------------------------ construction

    def _build(self) -> None:
        intro = QLabel("Train a new animal mode from your own labels. The last fifth of the labelled frames is "
                       "held out: the mode is scored on them at the end.")
        intro.setWordWrap(True)
        self.project = QLineEdit()
        self.project.setPlaceholderText("a SLEAP .slp file or a DeepLabCut project folder")
        self.browse_slp = QPushButton("SLEAP file…")
        self.browse_dlc = QPushButton("DeepLabCut folder…")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.project, 1)
        row.addWidget(self.browse_slp)
        row.addWidget(self.browse_dlc)
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. openfield_mouse")
        self.length = QSpinBox()
        self.length.setMinimumWidth(90)
        self.unit = QComboBox()
        self.unit.addItems(UNITS)
        self.length_hint = QLabel("")
        self.length_hint.setWordWrap(True)
        self._set_unit("minutes", DEFAULT_MINUTES)
        length = QHBoxLayout()
        length.setContentsMargins(0, 0, 0, 0)
        length.addWidget(self.length)
        length.addWidget(self.unit)
        length.addStretch(1)
        form = QFormLayout()
        form.addRow("Project", row)
        form.addRow("Mode name", self.name)
        form.addRow("Training", length)
        form.addRow("", self.length_hint)
        self.stage = QLabel("")
        self.stage.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.report = QPlainTextEdit()
        self.report.setReadOnly(True)
        self.report.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)  # a table: scroll, never wrap
        self.report.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.report.setMinimumHeight(150)
        self.report.setPlaceholderText("The held-out report appears here when training ends.")
        self.button_row()
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.stage)
        layout.addWidget(self.progress)
        layout.addWidget(self.message)
        layout.addWidget(self.report, 1)
        layout.addWidget(self.buttons)
        self.resize(640, 480)

    def _connect(self) -> None:
        self.browse_slp.clicked.connect(self.ask_slp)
        self.browse_dlc.clicked.connect(self.ask_dlc)
        self.project.textChanged.connect(self._on_project_changed)
        self.length.valueChanged.connect(self._update_hint)
        self.unit.currentTextChanged.connect(self._on_unit_changed)
        self.start.clicked.connect(self.start_training)

    # ------------------------------------------------------------------ inputs

    def ask_slp(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "SLEAP project", self._browse_dir(),
                                              "SLEAP labels (*.slp);;All files (*)")
        if path:
            self.project.setText(path)

    def ask_dlc(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "DeepLabCut project folder (with config.yaml)",
                                                self._browse_dir())
        if path:
            self.project.setText(path)

    def _browse_dir(self) -> str:
        text = self.project.text().strip()
        return str(Path(text).parent) if text else str(Path.home())

    def _on_project_changed(self, text: str) -> None:
        """Suggest a name from the project, unless the user typed their own."""
        if not self.name.text().strip() or self.name.text() == self._auto_name:
            self._auto_name = suggested_name(text)
            self.name.setText(self._auto_name)

    def _set_unit(self, unit: str, value: int) -> None:
        self.length.blockSignals(True)
        if unit == "minutes":
            self.length.setRange(1, 24 * 60)
        else:
            self.length.setRange(MIN_STEPS, 1_000_000)
        self.length.setValue(value)
        self.length.blockSignals(False)
        self.unit.blockSignals(True)
        self.unit.setCurrentText(unit)
        self.unit.blockSignals(False)
        self._update_hint()

    def _on_unit_changed(self, unit: str) -> None:
        value = self.length.value()  # in the other unit: convert
        self._set_unit(unit, minutes_to_steps(value) if unit == "steps" else max(1, math.ceil(value / STEPS_PER_MINUTE)))

    def set_length(self, value: int, unit: str = "minutes") -> None:
        self._set_unit(unit, value)

    def steps(self) -> int:
        """The training length in steps (minutes at STEPS_PER_MINUTE)."""
        if self.unit.currentText() == "minutes":
            return minutes_to_steps(self.length.value())
        return self.length.value()

    def _update_hint(self) -> None:
        steps = self.steps()
        if self.unit.currentText() == "minutes":
            text = f"≈ {steps} training steps at ~{STEPS_PER_MINUTE} steps a minute on one CPU thread"
        else:
            text = f"≈ {max(1, round(steps / STEPS_PER_MINUTE))} min of training on one CPU thread"
        self.length_hint.setText(text + "; the heatmap refiner (about half as long again), reading the frames and "
                                        "scoring come on top.")

    # ------------------------------------------------------------------ running

    def _set_running(self, busy: bool) -> None:
        super()._set_running(busy)
        for w in (self.project, self.browse_slp, self.browse_dlc, self.name, self.length, self.unit):
            w.setEnabled(not busy)

    def start_training(self) -> None:
        if self.running():
            return
        project = self.project.text().strip()
        if not project:
            self.show_message("Choose a project: a SLEAP .slp file or a DeepLabCut project folder.", error=True)
            return
        if not Path(project).expanduser().exists():
            self.show_message(f"Project not found: {project}", error=True)
            return
        try:
            name = mode_name(self.name.text())
        except TrainingError as exc:
            self.show_message(str(exc), error=True)
            return
        self.trained = None
        self.report.clear()
        self.show_message("")
        self.progress.setRange(0, 0)
        self.progress.setValue(0)
        self.stage.setText("Starting…")
        self._worker = TrainWorker(self.trainer, project, name, self.steps())
        self._worker.progress.connect(self._on_progress)
        self._worker.done.connect(self._on_done)
        self._worker.failed.connect(self._on_failed)
        self._worker.cancelled.connect(self._on_cancelled)
        self.launch(self._worker, "train-mode")

    def _show_status(self, text: str) -> None:
        self.stage.setText(text)

    @Slot(int, int, str)
    def _on_progress(self, done: int, total: int, message: str) -> None:
        if self._worker is not None and self._worker.stopping():
            return  # "Cancelling…" stays up
        self.progress.setRange(0, total if total > 0 else 0)
        self.progress.setValue(min(done, total) if total > 0 else 0)
        self.stage.setText(message)

    @Slot(object)
    def _on_done(self, result) -> None:
        self.trained = result
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        name = getattr(result, "name", "")
        self.stage.setText(f"Done: mode {name!r} is installed.")
        self.report.setPlainText(format_report(getattr(result, "report", {}) or {}))
        self.show_message(f"Choose \u201cAnimal ({name}, user-trained)\u201d under Mode and model to track with it.")
        self.mode_trained.emit(result)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.stage.setText("Stopped.")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.show_message(message, error=True)

    @Slot()
    def _on_cancelled(self) -> None:
        self.stage.setText("Cancelled.")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.show_message("Training cancelled: no mode was made.")
