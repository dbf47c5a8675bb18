"""Worker QObjects, each run in its own QThread by PipelineController.

- CaptureWorker: reads a FrameSource, paces files at fps x speed, publishes
  frames into latest-wins slots (and to the recorder tap).
- InferenceWorker: builds the session (weights load + warm-up here, off the GUI
  thread), takes the newest frame, emits PoseResult.
- RecorderWorker: drains a bounded queue of frames and poses into a SessionRecorder.
- OfflineWorker: one-shot whole-file processing with progress and cancel.

Every worker has ``stop()`` (thread-safe) and emits ``finished`` when ``run`` returns;
errors go out as ``failed(str)``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot

from posetracker.capture import CaptureError, FrameSource, PendingFrame, UnreadableImageError
from posetracker.recording import RecordingError, SessionRecorder
from posetracker.types import Frame, PoseFrame, PoseSequence
from .packets import (
    Captured, LatestSlot, MeanMeter, ModelInfo, PoseResult, PoseSession, RateMeter,
    RecordingSummary, SourceInfo, describe_error,
)

SourceOpener = Callable[[], FrameSource]
SessionFactory = Callable[[], PoseSession]
# No new frame for this long (paused, stepped, seeked, at the end): hand out the poses a look-ahead holds back.
FLUSH_AFTER_S = 0.25
NO_IMAGE = np.zeros((1, 1, 3), np.uint8)  # stands in for a buffered result's image once it is too old to be drawn


def _ready(frame: Frame | None) -> PendingFrame | None:
    return None if frame is None else PendingFrame.ready(frame)


def source_info(src: FrameSource) -> SourceInfo:
    return SourceInfo(src.name, float(src.fps), src.frame_count, src.size, src.is_live, src.seekable)


class CaptureWorker(QObject):
    opened = Signal(object)  # SourceInfo
    ended = Signal()
    failed = Signal(str)
    finished = Signal()

    def __init__(self, opener: SourceOpener, slots: Sequence[LatestSlot[Captured]], paused: bool = False):
        super().__init__()
        self._opener, self._slots = opener, tuple(slots)
        self._stop, self._wake = threading.Event(), threading.Event()
        self._commands: queue.SimpleQueue[tuple[str, float]] = queue.SimpleQueue()
        self.paused, self.speed, self.loop, self.at_end = paused, 1.0, False, False
        self._single = paused  # read one frame even when paused (first frame, seek, step)
        self._epoch = 0
        self._anchor: tuple[float, float] | None = None  # (monotonic, frame timestamp)
        self.tap: Callable[[Frame], None] | None = None
        self.meter = RateMeter()
        self.position = -1

    def command(self, kind: str, value: float = 0.0) -> None:
        """Thread-safe: 'play', 'pause', 'seek' (index), 'step' (+-n), 'speed', 'loop'."""
        self._commands.put((kind, value))
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    @Slot()
    def run(self) -> None:
        try:
            try:
                source = self._opener()
            except Exception as exc:  # noqa: BLE001 - any opener failure is reported, never raised
                self.failed.emit(describe_error(exc))
                return
            try:
                self.opened.emit(source_info(source))
                self._serve(source)
            finally:
                source.close()
        finally:
            self.finished.emit()

    def _serve(self, source: FrameSource) -> None:
        while not self._stop.is_set():
            self._handle_commands(source)
            if self.paused and not self._single:
                self._wake.wait(0.05)
                self._wake.clear()
                continue
            single, self._single = self._single, False
            try:
                frame = source.read_pending() if hasattr(source, "read_pending") else _ready(source.read())
            except UnreadableImageError as exc:  # one bad image of a folder: say so, play on
                self.failed.emit(describe_error(exc))
                continue
            except CaptureError as exc:
                self.failed.emit(describe_error(exc))
                if source.is_live:
                    return
                frame = None
            if frame is None:
                if source.is_live:
                    self.ended.emit()
                    return
                self._at_end(source)
                continue
            if not single:
                self._pace(frame, source)
            self._publish(frame)

    def _at_end(self, source: FrameSource) -> None:
        if self.loop and source.seekable and self.position > 0:
            self._seek(source, 0, single=False)
            return
        self.paused, self.at_end, self._anchor = True, True, None
        self.ended.emit()

    def _pace(self, frame: PendingFrame, source: FrameSource) -> None:
        """Files: wait until the frame is due at fps x speed (live-like playback)."""
        if source.is_live:
            return
        t = time.monotonic()
        if self._anchor is None:
            self._anchor = (t, frame.timestamp)
        delay = self._anchor[0] + (frame.timestamp - self._anchor[1]) / self.speed - t
        if delay > 0:
            self._stop.wait(delay)
        elif delay < -0.5:  # far behind (slow decode): re-anchor instead of racing
            self._anchor = None

    def _publish(self, frame: PendingFrame) -> None:
        item = Captured(frame, time.monotonic(), self._epoch)
        for slot in self._slots:
            slot.put(item)
        self.position = frame.index
        self.meter.tick()
        # converted here, after it is offered: this thread then waits for the next frame's time anyway, and a model
        # that takes the frame meanwhile waits for this conversion instead of making its own (PendingFrame's lock).
        # Converting on the inference thread took 20% of it (py-spy, 120 fps source, 2 cores).
        converted = frame.frame()
        tap = self.tap
        if tap is not None:  # recording: every frame
            tap(converted)

    def _handle_commands(self, source: FrameSource) -> None:
        while True:
            try:
                kind, value = self._commands.get_nowait()
            except queue.Empty:
                return
            if kind == "play":
                if self.at_end and source.seekable:
                    self._seek(source, 0, single=False)
                self.paused, self._anchor = False, None
            elif kind == "pause":
                self.paused, self._anchor = True, None
            elif kind == "speed":
                self.speed, self._anchor = max(0.05, float(value)), None
            elif kind == "loop":
                self.loop = bool(value)
            elif kind == "seek":
                self._seek(source, int(value))
            elif kind == "step":
                self._step(source, int(value))

    def _step(self, source: FrameSource, n: int) -> None:
        if n > 0 and not self.at_end:
            self.paused, self._single = True, True
        elif n < 0:
            self.paused = True
            self._seek(source, max(0, self.position + n))

    def _seek(self, source: FrameSource, index: int, single: bool = True) -> None:
        if not source.seekable:
            return
        try:
            source.seek(index)
        except (IndexError, CaptureError) as exc:
            self.failed.emit(f"Cannot seek to frame {index}: {describe_error(exc)}")
            return
        self._epoch += 1
        self.at_end, self._anchor = False, None
        self._single = self._single or single


class InferenceWorker(QObject):
    """Runs the session on the newest captured frame. Every pose goes to the GUI thread, in order, through a
    buffer drained in batches (:meth:`take_poses`): ``poses_ready`` is emitted once when the buffer fills from
    empty, so a GUI thread that falls behind gets one event for many poses instead of one queued event per
    pose. Once more than ``FRAMES_KEPT`` results wait, the older ones give up their image (``frame.image``
    becomes a 1 x 1 stand-in; the video view draws only the newest result), and at ``MAX_WAITING`` the worker
    waits for the GUI before it takes the next frame (the capture's latest-wins slot drops frames meanwhile,
    counted as dropped): a source faster than the GUI costs frames, never memory or a pose already made."""

    ready = Signal(object)  # ModelInfo
    poses_ready = Signal()  # the buffer has poses for take_poses()
    failed = Signal(str)
    finished = Signal()
    FRAMES_KEPT = 16
    MAX_WAITING = 256

    def __init__(self, frames: LatestSlot[Captured], display: LatestSlot[PoseResult], factory: SessionFactory):
        super().__init__()
        self._frames, self._display, self._factory = frames, display, factory
        self._stop = threading.Event()
        self.tap: Callable[[PoseFrame], None] | None = None
        self.meter = RateMeter()
        self.latency = MeanMeter()
        self.ready_flag = False
        self._pending: deque[PoseResult] = deque()
        self._pending_lock = threading.Condition()

    def stop(self) -> None:
        self._stop.set()

    def take_poses(self) -> list[PoseResult]:
        """Any thread (the GUI's): the results waiting, oldest first; the next result emits ``poses_ready`` again."""
        with self._pending_lock:
            out = list(self._pending)
            self._pending.clear()
            self._pending_lock.notify_all()
        return out

    def _deliver(self, result: PoseResult) -> None:
        with self._pending_lock:
            notify = not self._pending
            self._pending.append(result)
            if len(self._pending) > self.FRAMES_KEPT:
                old = self._pending[-self.FRAMES_KEPT - 1]
                if old.frame.image is not NO_IMAGE:
                    self._pending[-self.FRAMES_KEPT - 1] = replace(old, frame=replace(old.frame, image=NO_IMAGE))
        if notify:
            self.poses_ready.emit()
        with self._pending_lock:  # the GUI is far behind: let it catch up before the next frame
            while len(self._pending) >= self.MAX_WAITING and not self._stop.is_set():
                self._pending_lock.wait(0.05)

    @Slot()
    def run(self) -> None:
        try:
            session = self._load()
            if session is not None and not self._stop.is_set():
                self._serve(session)
        finally:
            self.finished.emit()

    def _load(self) -> PoseSession | None:
        t0 = time.perf_counter()
        try:
            session = self._factory()
            session.step(Frame(0, 0.0, np.zeros((64, 64, 3), np.uint8)))  # warm-up
            session.reset()
        except Exception as exc:  # noqa: BLE001 - missing/corrupt weights etc. must not kill the app
            self.failed.emit(f"Could not load the model: {describe_error(exc)}")
            return None
        name = getattr(session.spec, "name", "?")
        self.ready_flag = True
        refiners = tuple(getattr(getattr(session, "refiners", None), "names", ()) or ())
        self.ready.emit(ModelInfo(name, type(session).__name__, time.perf_counter() - t0, getattr(session, "seq", None),
                                  refiners, tuple(getattr(session, "notices", ()))))
        return session

    def _serve(self, session: PoseSession) -> None:
        """A TrackingSession runs in two stages (``posetracker.pipeline_live``): the network here, on the newest
        frame, and each pose's decoding, 3-D, tracking and smoothing on a helper thread (a ``Finisher``, which
        also hands the pose on), so the network takes the next frame meanwhile. Other sessions (replay, test
        fakes) ``step`` here."""
        recent: deque[Captured] = deque(maxlen=64)
        epoch: int | None = None
        held, last_frame = False, time.monotonic()  # held: the session may hold poses back (look-ahead)
        finisher = None
        if all(hasattr(session, k) for k in ("prepare", "infer", "infer_flush", "finish")):
            from posetracker.pipeline_live import Finisher

            finisher = Finisher(session, lambda pose, tag: self._emit(pose, *tag))
        try:
            while not self._stop.is_set():
                item = self._frames.take(timeout=0.05)
                if item is None:
                    if held and time.monotonic() - last_frame > FLUSH_AFTER_S:  # paused, stepped or at the end
                        held = False
                        try:
                            self._flush(session, finisher, recent)
                        except Exception as exc:  # noqa: BLE001
                            self.failed.emit(f"Inference stopped: {describe_error(exc)}")
                            return
                    continue
                held, last_frame = True, time.monotonic()
                try:
                    if item.epoch != epoch:  # a seek or a loop: the same source, so ids go on (unique in a recording)
                        if finisher is not None:
                            finisher.drain()  # the poses before it, with the tracks before the reset
                        session.reset(keep_ids=epoch is not None)
                        recent.clear()
                        epoch = item.epoch
                    recent.append(item)
                    if finisher is None:
                        pose = session.step(item.frame)
                        self.meter.tick()
                        if pose is not None:
                            self._emit(pose, _captured(pose.index, recent))
                        continue
                    got = session.infer(session.prepare(item.frame))
                    self.meter.tick()
                    if got is not None:
                        finisher.submit(got, (_captured(got.meta.index, recent),))
                except Exception as exc:  # noqa: BLE001
                    self.failed.emit(f"Inference stopped: {describe_error(exc)}")
                    return
        finally:
            if finisher is not None:
                finisher.close()

    def _flush(self, session: PoseSession, finisher, recent: deque[Captured]) -> None:
        """The poses a look-ahead holds back (their latency is the user's pause: not timed)."""
        if finisher is None:
            for pose in session.flush():
                self._emit(pose, _captured(pose.index, recent), timed=False)
            return
        for got in session.infer_flush():
            finisher.submit(got, (_captured(got.meta.index, recent), False))
        finisher.drain()

    def _emit(self, pose: PoseFrame, cap: Captured, timed: bool = True) -> None:
        """Any thread (the finisher's). timed: count the latency (not for poses handed out after a pause: that
        wait is the user's)."""
        latency = (time.monotonic() - cap.t_read) * 1000.0
        if timed:
            self.latency.add(latency)
        result = PoseResult(cap.frame, pose, latency, cap.epoch)
        self._display.put(result)
        self._deliver(result)
        tap = self.tap
        if tap is not None:
            tap(pose)


def _captured(index: int, recent: deque[Captured]) -> Captured:
    """The captured frame of a pose (by index; the newest if it has gone)."""
    return next((c for c in reversed(recent) if c.index == index), recent[-1])


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
