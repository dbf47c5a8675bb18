"""The Batch dialog's run view (a mixin of ``ui.batch_dialog.BatchDialog``): the videos and frames bars, the
status line, the per-file table and the summary line, filled from the worker's signals (``record``, ``frames``,
``done``, ``failed``: ``ui.batch_worker.BatchWorker``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QHeaderView, QLabel, QProgressBar, QStyledItemDelegate, QTableWidget, QTableWidgetItem,
)

from posetracker.batch import MANIFEST
from .worker_dialog import ERROR_COLOR

COLUMNS = ("File", "Status", "Frames", "Seconds", "Error")
FAILED_COLOR = ERROR_COLOR
NOTE_COLOR = "#666666"


class _ElideRight(QStyledItemDelegate):
    """The Error column keeps the start of a message (the table elides paths in the middle)."""

    def initStyleOption(self, option, index) -> None:  # noqa: N802 - Qt's name
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideRight


class BatchProgress:
    """Progress, status, table and summary of :class:`ui.batch_dialog.BatchDialog` (it sets ``_worker``,
    ``_out``; this part keeps ``_rows``, ``_total`` and ``summary``).

    The ``_on_*`` handlers take the worker's signals. They carry no ``@Slot``: PySide6 6.11 crashes when a
    signal from the worker thread reaches a ``@Slot`` declared on a mixin that is not a QObject; connected as
    the dialog's bound methods they are still queued to the GUI thread."""

    def _build_progress(self) -> None:
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

    def _reset_progress(self) -> None:
        """A new run: empty table, no summary, the bars waiting for the first report."""
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

    def _on_record(self, rec: dict, done: int, total: int) -> None:
        self._total = total
        self._add_row(rec)
        self.table.scrollToBottom()
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(min(done, total))
        if self._worker is None or not self._worker.stopping():  # "Cancelling…" stays up
            self.status.setText(f"{done} of {total} videos finished; last: {rec.get('rel', '')} ({rec.get('status', '')})")

    def _on_frames(self, done: int, total: int) -> None:
        self.frames_bar.setRange(0, max(total, done, 1))
        self.frames_bar.setValue(done)

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

    def _on_failed(self, message: str) -> None:
        self.status.setText("Stopped.")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.show_message(message, error=True)
