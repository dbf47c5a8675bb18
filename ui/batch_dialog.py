"""Tools > Batch process videos: every video of some files and folders tracked into an output folder, as
``posetracker batch`` does, in a worker thread with progress, a per-file status table and cancel.

The work is ``Services.run_batch`` (posetracker.batch.run_batch, the CLI verb's library call: a local Ray
cluster of ``workers`` CPUs, the output tree mirroring the inputs, ``manifest.jsonl``, a re-run skipping what
is done); tests inject a fake. Its ``progress(record, done, total)`` callback fills the table and the bar; its
``cancel`` callable is this dialog's Cancel button.

The dialog is three parts: the settings form (``ui.batch_form.BatchForm``), the run view
(``ui.batch_progress.BatchProgress``) and, here, the layout, the checks before a start and the start itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from .batch_form import DEFAULT_WORKERS, BatchForm, batch_skeletons
from .batch_progress import BatchProgress
from .batch_worker import BatchWorker, Runner
from .services import ModelOption
from .worker_dialog import WorkerDialog

__all__ = ["DEFAULT_WORKERS", "BatchDialog", "batch_skeletons"]  # the names the app and the tests take from here


def _nearest_existing(path: Path) -> Path:
    for p in (path, *path.parents):
        if p.exists():
            return p
    return Path(".")


class BatchDialog(BatchForm, BatchProgress, WorkerDialog):
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
        inputs_box, form = self._build_form(skeletons)
        self._build_progress()
        self.message = QLabel("")  # what stops a start, a failed run (WorkerDialog.show_message)
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
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
        self._reset_progress()
        self._worker = BatchWorker(self.runner, self.inputs(), self._out, self.settings(), self.workers.value())
        self._worker.record.connect(self._on_record)
        self._worker.frames.connect(self._on_frames)
        self._worker.done.connect(self._on_done)
        self._worker.failed.connect(self._on_failed)
        self.launch(self._worker, "batch")
