"""The Batch dialog's worker: ``Services.run_batch`` (posetracker.batch.run_batch) once in a QThread, its
progress records and frame counts out as signals, Cancel as the runner's ``cancel()``, and rows for the inputs
the run did not report (skipped as done earlier, or not processed when cancelled)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal, Slot

from posetracker.batch import BatchError, BatchSettings, collect_inputs, read_manifest
from .packets import describe_error
from .worker_dialog import StoppableWorker

log = logging.getLogger(__name__)

Runner = Callable[..., object]  # (inputs, out_dir, settings, workers=, progress=, cancel=) -> BatchSummary


class BatchWorker(StoppableWorker):
    """Runs ``runner`` once in its QThread; ``stop()`` (thread-safe) makes the runner's ``cancel()`` True."""

    record = Signal(object, int, int)  # a finished input's manifest record, finished so far, to do
    frames = Signal(int, int)  # frames tracked so far, frames of all the videos (their headers' counts)
    done = Signal(object, object)  # the BatchSummary; rows (dicts) for the inputs no record came for
    failed = Signal(str)

    def __init__(self, runner: Runner, inputs: list[str], out: str, settings: BatchSettings, workers: int):
        super().__init__()
        self._runner, self._inputs, self._out, self._settings, self._workers = runner, inputs, out, settings, workers
        self._reported: set[str] = set()

    def _progress(self, rec: dict[str, Any], done: int, total: int) -> None:
        self._reported.add(str(rec.get("input", "")))
        self.record.emit(dict(rec), int(done), int(total))

    @Slot()
    def run(self) -> None:
        try:
            summary = self._runner(self._inputs, self._out, self._settings, workers=self._workers,
                                   progress=self._progress, cancel=self._stop.is_set,
                                   frame_progress=lambda done, total: self.frames.emit(int(done), int(total)))
        except BatchError as exc:  # no inputs, no video, Ray missing, folder unusable: the user can fix these
            self.failed.emit(describe_error(exc))
        except PermissionError as exc:
            self.failed.emit(f"Cannot write to the output folder: {describe_error(exc)}")
        except Exception as exc:  # noqa: BLE001 - shown as a message, never a traceback
            log.exception("the batch into %s failed", self._out)
            self.failed.emit(f"The batch failed: {describe_error(exc)}")
        else:
            self.done.emit(summary, self._unreported(bool(getattr(summary, "cancelled", False))))
        finally:
            self.finished.emit()

    def _unreported(self, cancelled: bool) -> list[dict[str, Any]]:
        """Rows for the inputs no progress record came for: skipped (done by an earlier run, per the manifest),
        or, in a cancelled run, not processed. Only the driver appends to the manifest and it reports every
        record it appends, so a record of an unreported input is from an earlier run."""
        try:
            items = collect_inputs(self._inputs)
            last = read_manifest(self._out)
        except (BatchError, OSError):
            return []
        rows = []
        for item in items:
            if str(item.path) in self._reported:
                continue
            rec = last.get(str(item.path)) or {}
            earlier = rec.get("status") == "done" and rec.get("settings") == self._settings.key()
            status = "skipped" if earlier or not cancelled else "not processed"
            rows.append({"input": str(item.path), "rel": str(item.rel), "status": status,
                         "frames": rec.get("frames", "") if status == "skipped" else "", "seconds": "",
                         "error": "already done by an earlier run" if status == "skipped" else ""})
        return rows
