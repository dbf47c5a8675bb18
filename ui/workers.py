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

    def __init__(self, opener: SourceOpener, factory: Callable[[float], Any], calibration: Any = None):
        """factory(fov_deg): a session tracking with a camera of ``fov_deg`` degrees across the long side;
        calibration: the source's calibrated camera (``posetracker.multiview.one_view.CalibratedView``) or None."""
        super().__init__()
        self._opener, self._factory, self._calibration = opener, factory, calibration
        self._stop = threading.Event()
        self._last = 0.0

    def stop(self) -> None:
        self._stop.set()

    @Slot()
    def run(self) -> None:
        try:
            seq, warnings = self._process()
            if seq is not None and not self._stop.is_set():
                if skipped := seq.metadata.get("skipped"):
                    more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
                    self.failed.emit(f"Skipped: {skipped[0]}{more}")
                for warning in warnings:  # e.g. ids that may have swapped: shown, the result still plays
                    self.failed.emit(warning[:1].upper() + warning[1:])
                self.done.emit(seq)
        except Exception as exc:  # noqa: BLE001 - reported, the app stays usable
            self.failed.emit(f"Processing the file failed: {describe_error(exc)}")
        finally:
            self.finished.emit()

    def _process(self) -> tuple[PoseSequence | None, list[str]]:
        """Track the whole file and finish it as ``posetracker process`` (``--calibration``) and a batch do (the
        camera: the calibration's, else the file's tag, else the people's estimate; the calibration's floor;
        ``motion.finish``) -> (sequence, warnings); cancelled: not finished."""
        from posetracker.motion.finish import camera_before, finish_sequence, fov_to_track, source_metadata

        view = self._calibration
        with self._opener() as source:
            path = getattr(source, "path", None)
            if view is not None:
                view.check_size(source.size)  # CalibrationError: another camera's frames (the window checks first)
            # the app has no field-of-view setting: the calibration's, else auto (the others' default)
            camera = view.camera_fov() if view is not None else camera_before(path, "auto")
            session = self._factory(fov_to_track(camera))
            seq = session.run(source, fps=source.fps, total=source.frame_count, progress=self._report,
                              cancel=self._stop.is_set,
                              metadata=source_metadata(source.name if path is None else path, source.size, session))
        if self._stop.is_set():
            return seq, []
        if view is not None:
            seq = view.with_floor(seq)  # people stood on the calibration's floor, sized by it
        motion = session.config.motion
        return finish_sequence(seq, camera, rigid_bones=motion.rigid_bones, fix_legs=motion.fix_legs)

    def _report(self, done: int, total: int | None) -> None:
        t = time.monotonic()
        if t - self._last >= 0.1 or (total and done >= total):
            self._last = t
            self.progress.emit(done, total or 0)
