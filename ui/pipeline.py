"""PipelineController: owns the worker threads and the slots between them.

    CaptureWorker --Captured--> [frames slot] --> InferenceWorker --PoseResult--> [display slot] --> GUI timer
                  \\-> [preview slot] --------------------------------------------------------------/
    taps (while recording): CaptureWorker frames and InferenceWorker poses --> RecorderWorker queue

One QThread per worker: ``thread.started -> worker.run``, ``worker.finished -> thread.quit``.
``stop()`` sets every stop event, quits and waits (2 s in all). Worker signals are re-emitted
only if they come from the current workers (``sender()``), so a replaced worker's queued
signals are ignored. Workers are not ``deleteLater``'d when their thread finishes: a worker's
last signal (e.g. ``failed`` just before ``finished``) may still be queued and must find its
sender alive; the controller keeps each worker with its thread and lets Python free both once
the thread has finished and the worker is no longer current.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from posetracker.recording import SessionRecorder
from .packets import Captured, LatestSlot, PipelineStats, PoseResult
from .capture_worker import CaptureWorker, SourceOpener
from .inference_worker import InferenceWorker, SessionFactory
from .workers import OfflineWorker, RecorderWorker

log = logging.getLogger(__name__)
STOP_TIMEOUT_S = 2.0


class PipelineController(QObject):
    source_opened = Signal(object)  # SourceInfo
    source_ended = Signal()
    model_ready = Signal(object)  # ModelInfo
    pose_ready = Signal(object)  # PoseResult
    failed = Signal(str)
    model_failed = Signal(str)  # the inference worker stopped (weights not loaded, or an error while tracking)
    recording_stopped = Signal(object)  # RecordingSummary
    processing_progress = Signal(int, int)
    processing_done = Signal(object)  # PoseSequence
    processing_finished = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.frames: LatestSlot[Captured] = LatestSlot()
        self.preview: LatestSlot[Captured] = LatestSlot()
        self.display: LatestSlot[PoseResult] = LatestSlot()
        self._threads: list[tuple[QThread, QObject]] = []  # each thread with its worker
        self.capture: CaptureWorker | None = None
        self.inference: InferenceWorker | None = None
        self.recorder: RecorderWorker | None = None
        self.offline: OfflineWorker | None = None
        self._autoplay = False

    # ------------------------------------------------------------------ threads

    def _spawn(self, worker: QObject, name: str) -> QThread:
        thread = QThread()
        thread.setObjectName(name)
        worker.moveToThread(thread)
        thread.started.connect(worker.run)
        worker.finished.connect(thread.quit, Qt.ConnectionType.DirectConnection)
        worker.qthread = thread  # type: ignore[attr-defined]
        self._prune()
        self._threads.append((thread, worker))
        thread.start()
        return thread

    def _prune(self) -> None:
        current = (self.capture, self.inference, self.recorder, self.offline)
        self._threads = [(t, w) for t, w in self._threads if not t.isFinished() or any(w is c for c in current)]

    def threads(self) -> list[QThread]:
        """Every thread started and not yet collected (finished ones included until the next start)."""
        return [t for t, _ in self._threads]

    def running_threads(self) -> list[QThread]:
        return [t for t, _ in self._threads if t.isRunning()]

    def _wait(self, threads: list[QThread], deadline: float) -> bool:
        ok = True
        for thread in threads:
            thread.quit()
        for thread in threads:
            left_ms = max(0, int((deadline - time.monotonic()) * 1000))
            if not thread.wait(left_ms):
                log.warning("thread %s did not stop within %.1f s", thread.objectName(), STOP_TIMEOUT_S)
                ok = False
        return ok

    # ------------------------------------------------------------------ start / stop

    def start(self, opener: SourceOpener, factory: SessionFactory | None, autoplay: bool = True) -> None:
        """Open a source (in the capture thread) and, if ``factory``, run inference on it.

        Files start paused and begin to play once the model is ready (or failed to load).
        """
        self.stop()
        for slot in (self.frames, self.preview, self.display):
            slot.clear()
        self.frames.dropped = 0
        self._autoplay = autoplay
        self.capture = CaptureWorker(opener, (self.frames, self.preview), paused=factory is not None or not autoplay)
        self.capture.opened.connect(self._on_capture_opened)
        self.capture.ended.connect(self._on_capture_ended)
        self.capture.failed.connect(self._on_worker_failed)
        self._spawn(self.capture, "capture")
        if factory is not None:
            self.start_inference(factory)

    def start_inference(self, factory: SessionFactory) -> None:
        """(Re)start inference on the current source with a new session (model, look-ahead, replay); its dropped
        frames are counted from zero (a replay after live tracking does not inherit live's count)."""
        self._stop_workers([self.inference])
        self.frames.dropped = 0
        self.inference = InferenceWorker(self.frames, self.display, factory)
        self.inference.ready.connect(self._on_model_ready)
        self.inference.failed.connect(self._on_inference_failed)
        self.inference.poses_ready.connect(self._on_poses_ready)
        if self.recorder is not None:
            self.inference.tap = self.recorder.offer
        self._spawn(self.inference, "inference")

    def stop_inference(self) -> None:
        self._stop_workers([self.inference])
        self.inference = None

    def _stop_workers(self, workers: list) -> bool:
        targets = [w for w in workers if w is not None]
        for w in targets:
            w.stop()
        return self._wait([w.qthread for w in targets], time.monotonic() + STOP_TIMEOUT_S)

    def stop(self) -> bool:
        """Stop every worker and wait for every thread (2 s in all). True if all stopped."""
        if self.capture is not None:
            self.capture.tap = None
        for w in (self.capture, self.inference, self.offline, self.recorder):
            if w is not None:
                w.stop()
        ok = self._wait(self.threads(), time.monotonic() + STOP_TIMEOUT_S)
        self.capture = self.inference = self.offline = self.recorder = None
        return ok

    def wait_all(self, seconds: float) -> bool:
        """Wait for every thread (after a stop() that timed out)."""
        return self._wait(self.threads(), time.monotonic() + seconds)

    @property
    def running(self) -> bool:
        return bool(self.running_threads())

    # ------------------------------------------------------------------ playback

    def play(self) -> None:
        self._command("play")

    def pause(self) -> None:
        self._command("pause")

    def seek(self, index: int) -> None:
        self._command("seek", index)

    def step(self, n: int) -> None:
        self._command("step", n)

    def set_speed(self, speed: float) -> None:
        self._command("speed", speed)

    def set_loop(self, loop: bool) -> None:
        self._command("loop", float(loop))

    def _command(self, kind: str, value: float = 0.0) -> None:
        if self.capture is not None:
            self.capture.command(kind, value)

    def snapshot(self) -> PipelineStats:
        cap, inf = self.capture, self.inference
        return PipelineStats(
            source_fps=cap.meter.rate() if cap else 0.0,
            inference_fps=inf.meter.rate() if inf else 0.0,
            latency_ms=inf.latency.mean() if inf else 0.0,
            dropped=self.frames.dropped,
            position=cap.position if cap else -1,
            playing=bool(cap and not cap.paused),
        )

    # ------------------------------------------------------------------ recording

    def start_recording(self, make_recorder: Callable[[], SessionRecorder]) -> None:
        self.stop_recording()
        self.recorder = RecorderWorker(make_recorder)
        self.recorder.failed.connect(self._on_recorder_failed)
        self.recorder.stopped.connect(self._on_recording_stopped)
        self._spawn(self.recorder, "recorder")
        if self.capture is not None:
            self.capture.tap = self.recorder.offer
        if self.inference is not None:
            self.inference.tap = self.recorder.offer

    def stop_recording(self) -> None:
        if self.recorder is None:
            return
        for w in (self.capture, self.inference):
            if w is not None:
                w.tap = None
        self._stop_workers([self.recorder])
        self.recorder = None

    @property
    def recording(self) -> bool:
        return self.recorder is not None

    # ------------------------------------------------------------------ offline

    def process_file(self, opener: SourceOpener, factory: Callable, calibration=None) -> None:
        """Run a whole-file (bidirectional) pass in its own thread (with the source's calibrated camera, if any:
        ``OfflineWorker``); see processing_* signals."""
        self.cancel_processing()
        self.offline = OfflineWorker(opener, factory, calibration)
        self.offline.progress.connect(self._on_offline_progress)
        self.offline.done.connect(self._on_offline_done)
        self.offline.failed.connect(self._on_worker_failed)
        self.offline.finished.connect(self._on_offline_finished)
        self._spawn(self.offline, "offline")

    def cancel_processing(self) -> None:
        if self.offline is not None:
            self._stop_workers([self.offline])
            self.offline = None
            self.processing_finished.emit()

    # ------------------------------------------------------------------ worker signals (GUI thread)

    def _current(self, worker: QObject | None) -> bool:
        return worker is not None and self.sender() is worker

    @Slot(object)
    def _on_capture_opened(self, info) -> None:
        if self._current(self.capture):
            self.source_opened.emit(info)

    @Slot()
    def _on_capture_ended(self) -> None:
        if self._current(self.capture):
            self.source_ended.emit()

    @Slot(str)
    def _on_worker_failed(self, message: str) -> None:
        if self._current(self.capture) or self._current(self.offline):
            self.failed.emit(message)

    @Slot(object)
    def _on_model_ready(self, info) -> None:
        if self._current(self.inference):
            self._start_playing()
            self.model_ready.emit(info)

    @Slot(str)
    def _on_inference_failed(self, message: str) -> None:
        if self._current(self.inference):
            self._start_playing()
            self.failed.emit(message)
            self.model_failed.emit(message)

    def _start_playing(self) -> None:
        if self._autoplay:
            self._autoplay = False
            self.play()

    @Slot()
    def _on_poses_ready(self) -> None:
        if self._current(self.inference):
            for result in self.inference.take_poses():  # every pose, in order; one event for all that waited
                self.pose_ready.emit(result)

    @Slot(str)
    def _on_recorder_failed(self, message: str) -> None:
        if self._current(self.recorder):
            for w in (self.capture, self.inference):
                if w is not None:
                    w.tap = None
            self.failed.emit(f"Recording stopped: {message}")

    @Slot(object)
    def _on_recording_stopped(self, summary) -> None:
        self.recording_stopped.emit(summary)
        if self._current(self.recorder):
            self.recorder = None

    @Slot(int, int)
    def _on_offline_progress(self, done: int, total: int) -> None:
        if self._current(self.offline):
            self.processing_progress.emit(done, total)

    @Slot(object)
    def _on_offline_done(self, seq) -> None:
        if self._current(self.offline):
            self.processing_done.emit(seq)

    @Slot()
    def _on_offline_finished(self) -> None:
        if self._current(self.offline):
            self.offline = None
            self.processing_finished.emit()
