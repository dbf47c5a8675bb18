"""Tools > Batch process videos: every video of some files and folders tracked into an output folder, as
``posetracker batch`` does, in a worker thread with progress, a per-file status table and cancel.

The work is ``Services.run_batch`` (posetracker.batch.run_batch, the CLI verb's library call: a local Ray
cluster of ``workers`` CPUs, the output tree mirroring the inputs, ``manifest.jsonl``, a re-run skipping what
is done); tests inject a fake. Its ``progress(record, done, total)`` callback fills the table and the bar; its
``cancel`` callable is this dialog's Cancel button.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QComboBox, QFileDialog, QFormLayout, QGridLayout,
    QGroupBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QListWidget, QProgressBar, QPushButton, QSpinBox,
    QStyledItemDelegate, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from posetracker.batch import MANIFEST, VIDEO_SUFFIXES, BatchSettings
from posetracker.export import default_name_suffix, exporters
from .batch_worker import BatchWorker, Runner
from .services import ModelOption
from .worker_dialog import ERROR_COLOR, WorkerDialog

DEFAULT_WORKERS = 1  # one video at a time: the app (its GUI thread, a live session) keeps a core
DEFAULT_FORMATS = ("csv",)
MODES = ("offline", "live")  # offline first: the CLI's default, and the better result for whole files
COLUMNS = ("File", "Status", "Frames", "Seconds", "Error")
FAILED_COLOR = ERROR_COLOR
NOTE_COLOR = "#666666"
WORKERS_TIP = ("Videos processed at the same time, each on one CPU core (a local Ray cluster of this many CPUs). "
               f"{DEFAULT_WORKERS} by default so the app keeps a core for itself; `posetracker batch` on the "
               "command line uses every core.")


def batch_skeletons(options: Sequence[ModelOption]) -> list[ModelOption]:
    """The shipped skeletons with weights, in the Mode and model panel's order (user-trained modes are left
    out: run_batch takes a shipped skeleton's name)."""
    return [o for o in options if o.has_weights and not o.user]


def _nearest_existing(path: Path) -> Path:
    for p in (path, *path.parents):
        if p.exists():
            return p
    return Path(".")


class _ElideRight(QStyledItemDelegate):
    """The Error column keeps the start of a message (the table elides paths in the middle)."""

    def initStyleOption(self, option, index) -> None:  # noqa: N802 - Qt's name
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideRight


class BatchDialog(WorkerDialog):
    """Inputs, output folder, formats, mode, skeleton, workers; Start / Cancel / Close; an overall bar, a per-file
    table and a summary line."""

    cancelling = "Cancelling: the videos not finished yet are stopped…"

    def __init__(self, runner: Runner | None = None, skeletons: Sequence[ModelOption] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        if runner is None:
            from posetracker.batch import run_batch

            runner = run_batch
        if skeletons is None:
            from .services import model_options

            skeletons = batch_skeletons(model_options())
        self.runner = runner
        self.setWindowTitle("Batch process videos")
        self.setObjectName("batchDialog")
        self._worker: BatchWorker | None = None
        self._rows: dict[str, int] = {}  # input path -> table row
        self._total = 0
        self._out = ""
        self.summary = None  # the last run's BatchSummary
        self._build(list(skeletons))
        self._connect()
        self._set_running(False)

    # ------------------------------------------------------------------ construction

    def _build(self, skeletons: list[ModelOption]) -> None:
        intro = QLabel("Track every video of some files and folders (searched recursively) into an output folder, "
                       "as <tt>posetracker batch</tt> does: the outputs mirror the input tree, manifest.jsonl "
                       "records each video, and a re-run skips the videos already done.")
        intro.setWordWrap(True)
        self.input_list = QListWidget()
        self.input_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.input_list.setMinimumHeight(70)
        self.input_list.setMaximumHeight(120)  # the table below gets the room
        self.add_files = QPushButton("Add files…")
        self.add_folder = QPushButton("Add folder…")
        self.remove = QPushButton("Remove")
        side = QVBoxLayout()
        side.setContentsMargins(0, 0, 0, 0)
        for b in (self.add_files, self.add_folder, self.remove):
            side.addWidget(b)
        side.addStretch(1)
        inputs_box = QGroupBox("Inputs (videos and folders)")
        inputs_row = QHBoxLayout(inputs_box)
        inputs_row.addWidget(self.input_list, 1)
        inputs_row.addLayout(side)

        self.output = QLineEdit()
        self.output.setPlaceholderText("where the poses and manifest.jsonl go")
        self.browse_output = QPushButton("Browse…")
        out_row = QHBoxLayout()
        out_row.setContentsMargins(0, 0, 0, 0)
        out_row.addWidget(self.output, 1)
        out_row.addWidget(self.browse_output)
        self.format_boxes: dict[str, QCheckBox] = {}
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        for i, (name, exporter) in enumerate(sorted(exporters().items())):
            box = QCheckBox(f"{name} (.poses{default_name_suffix(name).removeprefix('.poses')})")  # as batch names it
            box.setToolTip(exporter.description)
            box.setChecked(name in DEFAULT_FORMATS)
            box.setProperty("format", name)
            self.format_boxes[name] = box
            grid.addWidget(box, i // 4, i % 4)
        self.mode = QComboBox()
        self.mode.addItems(MODES)
        self.mode.setToolTip("offline: each file in both directions (the better result); live: causal, as a "
                             "camera is tracked")
        self.skeleton = QComboBox()
        for opt in skeletons:
            self.skeleton.addItem(opt.label, opt.skeleton)
        self.workers = QSpinBox()
        self.workers.setRange(1, max(1, os.cpu_count() or 1))
        self.workers.setValue(DEFAULT_WORKERS)
        self.workers.setToolTip(WORKERS_TIP)
        self.workers.setMinimumWidth(70)
        model_row = QHBoxLayout()
        model_row.setContentsMargins(0, 0, 0, 0)
        model_row.addWidget(self.mode)
        model_row.addSpacing(12)
        model_row.addWidget(QLabel("Skeleton"))
        model_row.addWidget(self.skeleton, 1)
        model_row.addSpacing(12)
        workers_label = QLabel("Workers")
        workers_label.setToolTip(WORKERS_TIP)
        model_row.addWidget(workers_label)
        model_row.addWidget(self.workers)
        form = QFormLayout()
        form.addRow("Output folder", out_row)
        form.addRow("Formats", grid)
        form.addRow("Mode", model_row)

        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("not started")  # Start sets "%v / %m videos"
        self.frames_bar = QProgressBar()  # frames tracked, from the tasks' reports (posetracker.batch.run_batch)
        self.frames_bar.setTextVisible(True)
        self.frames_bar.setRange(0, 1)
        self.frames_bar.setValue(0)
        self.frames_bar.setFormat("frames")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.summary_label = QLabel("")
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # paths: keep the folder and the name
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self._error_delegate = _ElideRight(self.table)
        self.table.setItemDelegateForColumn(4, self._error_delegate)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        for col in (1, 2, 3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.table.setColumnWidth(0, 220)
        self.table.setMinimumHeight(140)

        self.button_row()
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(inputs_box)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.frames_bar)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.summary_label)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)
        self.resize(760, 640)

    def _connect(self) -> None:
        self.add_files.clicked.connect(self.ask_files)
        self.add_folder.clicked.connect(self.ask_folder)
        self.remove.clicked.connect(self.remove_selected)
        self.browse_output.clicked.connect(self.ask_output)
        self.start.clicked.connect(self.start_batch)

    # ------------------------------------------------------------------ inputs

    def ask_files(self) -> None:
        patterns = " ".join(f"*{s}" for s in VIDEO_SUFFIXES)
        paths, _ = QFileDialog.getOpenFileNames(self, "Videos to process", self._browse_dir(),
                                                f"Videos ({patterns});;All files (*)")
        self.add_inputs(paths)

    def ask_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "A folder of videos (searched recursively)", self._browse_dir())
        if path:
            self.add_inputs([path])

    def ask_output(self) -> None:
        start = self.output.text().strip() or self._browse_dir()
        path = QFileDialog.getExistingDirectory(self, "Output folder", start)
        if path:
            self.output.setText(path)

    def _browse_dir(self) -> str:
        items = self.inputs()
        if items:
            last = Path(items[-1])
            return str(last if last.is_dir() else last.parent)
        return str(Path.home())

    def add_inputs(self, paths: Sequence[str | Path]) -> None:
        """Add files or folders to the list (each once)."""
        present = set(self.inputs())
        for p in paths:
            text = str(p).strip()
            if text and text not in present:
                self.input_list.addItem(text)
                present.add(text)
        self._set_running(self.running())  # Remove's state

    def remove_selected(self) -> None:
        for item in self.input_list.selectedItems():
            self.input_list.takeItem(self.input_list.row(item))
        self._set_running(self.running())

    def inputs(self) -> list[str]:
        return [self.input_list.item(i).text() for i in range(self.input_list.count())]

    def set_formats(self, names: Sequence[str]) -> None:
        for name, box in self.format_boxes.items():
            box.setChecked(name in names)

    def formats(self) -> tuple[str, ...]:
        return tuple(name for name, box in self.format_boxes.items() if box.isChecked())

    def settings(self) -> BatchSettings:
        """What every video is processed with (the rest as `posetracker batch`'s defaults)."""
        return BatchSettings(formats=self.formats(), mode=self.mode.currentText(),
                             skeleton=self.skeleton.currentData() or "human18")

    # ------------------------------------------------------------------ running

    def _set_running(self, busy: bool) -> None:
        super()._set_running(busy)
        for w in (self.input_list, self.add_files, self.add_folder, self.output, self.browse_output, self.mode,
                  self.skeleton, self.workers, *self.format_boxes.values()):
            w.setEnabled(not busy)
        self.remove.setEnabled(not busy and self.input_list.count() > 0)

    def _check(self) -> str | None:
        """What stops a start, said for the user (None: go)."""
        if not self.inputs():
            return "Add videos or folders to process."
        out = self.output.text().strip()
        if not out:
            return "Choose an output folder."
        if not self.formats():
            return "Choose at least one output format."
        if self.skeleton.count() == 0:
            return "No skeleton has model weights: nothing can be tracked."
        path = Path(out).expanduser()
        if path.exists() and not path.is_dir():
            return f"The output is not a folder: {path}"
        existing = _nearest_existing(path)
        if not os.access(existing, os.W_OK):
            return f"The output folder is not writable: {existing}"
        return None

    def start_batch(self) -> None:
        if self.running():
            return
        problem = self._check()
        if problem:
            self.show_message(problem, error=True)
            return
        self._out = str(Path(self.output.text().strip()).expanduser())
        self.summary = None
        self._rows.clear()
        self._total = 0
        self.table.setRowCount(0)
        self.summary_label.setText("")
        self.show_message("")
        self.progress.setFormat("%v / %m videos")
        self.progress.setRange(0, 0)  # busy until the first video finishes (the driver hashes the inputs first)
        self.progress.setValue(0)
        self.frames_bar.setFormat("%v / %m frames")
        self.frames_bar.setRange(0, 1)
        self.frames_bar.setValue(0)
        self.status.setText("Starting: reading the inputs, then starting Ray…")
        self._worker = BatchWorker(self.runner, self.inputs(), self._out, self.settings(), self.workers.value())
        self._worker.record.connect(self._on_record)
        self._worker.frames.connect(self._on_frames)
        self._worker.done.connect(self._on_done)
        self._worker.failed.connect(self._on_failed)
        self.launch(self._worker, "batch")

    def _show_status(self, text: str) -> None:
        self.status.setText(text)

    def _add_row(self, rec: dict[str, Any]) -> None:
        key = str(rec.get("input", ""))
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = self.table.rowCount()
            self.table.insertRow(row)
        seconds = rec.get("seconds", "")
        cells = (str(rec.get("rel") or Path(key).name), str(rec.get("status", "")), str(rec.get("frames", "")),
                 f"{float(seconds):.1f}" if isinstance(seconds, (int, float)) else str(seconds),
                 str(rec.get("error", "")))
        for col, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(key if col == 0 else text)
            if col in (2, 3):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if rec.get("status") == "failed" and col in (1, 4):
                item.setForeground(QBrush(QColor(FAILED_COLOR)))
            elif rec.get("status") != "done" and col == 4:  # a note (skipped), not an error
                item.setForeground(QBrush(QColor(NOTE_COLOR)))
            self.table.setItem(row, col, item)

    @Slot(object, int, int)
    def _on_record(self, rec: dict, done: int, total: int) -> None:
        self._total = total
        self._add_row(rec)
        self.table.scrollToBottom()
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(min(done, total))
        if self._worker is None or not self._worker.stopping():  # "Cancelling…" stays up
            self.status.setText(f"{done} of {total} videos finished; last: {rec.get('rel', '')} ({rec.get('status', '')})")

    @Slot(int, int)
    def _on_frames(self, done: int, total: int) -> None:
        self.frames_bar.setRange(0, max(total, done, 1))
        self.frames_bar.setValue(done)

    @Slot(object, object)
    def _on_done(self, summary, rows: list) -> None:
        self.summary = summary
        for rec in rows:
            self._add_row(rec)
        failed = len(summary.failed)
        finished = summary.done + failed
        manifest = Path(self._out) / MANIFEST
        counts = f"{summary.done} done, {summary.skipped} skipped (already done), {failed} failed"
        if summary.cancelled:
            left = max(0, self._total - finished)
            head = f"Cancelled: {counts}" + (f", {left} not processed" if left else "")
            self.status.setText("Cancelled: a re-run processes the videos left.")
        else:
            head = f"Finished: {counts}"
            self.status.setText("Finished." if finished or not summary.skipped else "Every video was done already.")
        frames = f"; {summary.frames} frames in {summary.seconds:.1f} s" if finished else ""
        self.summary_label.setText(f"{head}{frames}.\nManifest: {manifest}")
        total = max(self._total, finished)
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(finished)
        if not total:  # nothing was processed: all skipped, or cancelled before any video was submitted
            self.progress.setFormat("cancelled" if summary.cancelled else "all already done")
            self.progress.setValue(0 if summary.cancelled else 1)
        if failed:
            self.show_message(f"{failed} video{'s' if failed > 1 else ''} failed: see the Error column "
                              "(a re-run retries them).", error=True)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.status.setText("Stopped.")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.show_message(message, error=True)
