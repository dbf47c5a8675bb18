"""The Batch dialog's settings form (a mixin of ``ui.batch_dialog.BatchDialog``): the inputs list (files and
folders, Add / Remove), the output folder, the format boxes, mode, skeleton and workers, and what they read back
as (``inputs()``, ``formats()``, ``settings()``: a ``posetracker.batch.BatchSettings``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QComboBox, QFileDialog, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel,
    QLineEdit, QListWidget, QPushButton, QSpinBox, QVBoxLayout,
)

from posetracker.batch import VIDEO_SUFFIXES, BatchSettings
from posetracker.export import default_name_suffix, exporters
from .services import ModelOption

DEFAULT_WORKERS = 1  # one video at a time: the app (its GUI thread, a live session) keeps a core
DEFAULT_FORMATS = ("csv",)
MODES = ("offline", "live")  # offline first: the CLI's default, and the better result for whole files
WORKERS_TIP = ("Videos processed at the same time, each on one CPU core (a local Ray cluster of this many CPUs). "
               f"{DEFAULT_WORKERS} by default so the app keeps a core for itself; `posetracker batch` on the "
               "command line uses every core.")


def batch_skeletons(options: Sequence[ModelOption]) -> list[ModelOption]:
    """The shipped skeletons with weights, in the Mode and model panel's order (user-trained modes are left
    out: run_batch takes a shipped skeleton's name)."""
    return [o for o in options if o.has_weights and not o.user]


class BatchForm:
    """The inputs and settings of :class:`ui.batch_dialog.BatchDialog` (its ``_set_running`` locks them)."""

    def _build_form(self, skeletons: list[ModelOption]) -> tuple[QGroupBox, QFormLayout]:
        """The inputs box and the output / formats / mode form, as the dialog lays them out."""
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
        return inputs_box, form

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
