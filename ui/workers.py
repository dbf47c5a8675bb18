"""RecorderWorker (drains a bounded queue of frames and poses into a SessionRecorder) and OfflineWorker
(one-shot whole-file processing with progress and cancel), each run in its own QThread by PipelineController.
The capture and inference workers: ``capture_worker.py``, ``inference_worker.py``.

Every worker has ``stop()`` (thread-safe) and emits ``finished`` when ``run`` returns; errors go out as
``failed(str)``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from posetracker.recording import RecordingError, SessionRecorder
from posetracker.types import Frame, PoseFrame, PoseSequence
from .capture_worker import SourceOpener
from .packets import RecordingSummary, describe_error


class RecorderWorker(QObject):
    failed = Signal(str)
    stopped = Signal(object)  # RecordingSummary
    finished = Signal()

    def __init__(self, make_recorder: Callable[[], SessionRecorder], capacity: int = 96):
        super().__init__()
        self._make = make_recorder
        self._queue: queue.Queue[Frame | PoseFrame] = queue.Queue(maxsize=capacity)
        self._stop = threading.Event()
        self._accepting = True
        self.dropped = 0

    def offer(self, item: Frame | PoseFrame) -> None:
        """Any thread: queue a frame or a pose (dropped and counted if the queue is full)."""
        if not self._accepting:
            return
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1

    def stop(self) -> None:
        self._stop.set()

    @Slot()
    def run(self) -> None:
        rec: SessionRecorder | None = None
        error: str | None = None
        try:
            rec = self._make()
            self._drain(rec)
            rec.close()
        except RecordingError as exc:
            error = describe_error(exc)
            self.failed.emit(error)
        finally:
            self._accepting = False
            if rec is not None:
                self.stopped.emit(RecordingSummary(rec.folder, rec.frames_written, rec.poses_written, self.dropped, error))
            self.finished.emit()

    def _drain(self, rec: SessionRecorder) -> None:
        deadline: float | None = None
        while True:
            if self._stop.is_set() and deadline is None:
                self._accepting = False
                deadline = time.monotonic() + 1.2  # finish queued frames, but stop within the 2 s budget
            if deadline is not None and (self._queue.empty() or time.monotonic() > deadline):
                return
            try:
                item = self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(item, Frame):
                rec.write(item)
            else:
                rec.write_pose(item)


class OfflineWorker(QObject):
    progress = Signal(int, int)  # frames done, total (0 = unknown)
    done = Signal(object)  # PoseSequence
    failed = Signal(str)
    finished = Signal()

    def __init__(self, opener: SourceOpener, factory: Callable[[], Any]):
        super().__init__()
        self._opener, self._factory = opener, factory
        self._stop = threading.Event()
        self._last = 0.0

    def stop(self) -> None:
        self._stop.set()

    @Slot()
    def run(self) -> None:
        try:
            seq = self._process()
            if seq is not None and not self._stop.is_set():
                if skipped := seq.metadata.get("skipped"):
                    more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
                    self.failed.emit(f"Skipped: {skipped[0]}{more}")
                self.done.emit(seq)
        except Exception as exc:  # noqa: BLE001 - reported, the app stays usable
            self.failed.emit(f"Processing the file failed: {describe_error(exc)}")
        finally:
            self.finished.emit()

    def _process(self) -> PoseSequence | None:
        from posetracker.analysis.camera_fov import auto_camera

        session = self._factory()
        with self._opener() as source:
            total = source.frame_count
            seq = session.run(source, fps=source.fps, total=total, progress=self._report,
                              cancel=self._stop.is_set, metadata={"source": source.name, "size": list(source.size)})
        if self._stop.is_set():
            return seq
        seq, camera = auto_camera(seq, getattr(source, "path", None), session.config.fov_deg,
                                  session.config.rigid_bones)  # the camera as posetracker process --fov auto finds it
        seq.metadata["camera"] = camera.as_dict()
        return seq

    def _report(self, done: int, total: int | None) -> None:
        t = time.monotonic()
        if t - self._last >= 0.1 or (total and done >= total):
            self._last = t
            self.progress.emit(done, total or 0)
