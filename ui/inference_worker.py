"""InferenceWorker: builds the session in its own QThread (weights load and warm-up off the GUI thread), takes
the newest captured frame, and hands every pose to the GUI thread in order (``take_poses``), each finished on a
helper thread while the network takes the next frame (``pipeline_live.Finisher``). ``stop()`` is thread-safe;
``finished`` is emitted when ``run`` returns, errors go out as ``failed(str)``."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot

from posetracker.types import Frame, PoseFrame
from .packets import Captured, LatestSlot, MeanMeter, ModelInfo, PoseResult, PoseSession, RateMeter, describe_error

SessionFactory = Callable[[], PoseSession]
# No new frame for this long (paused, stepped, seeked, at the end): hand out the poses a look-ahead holds back.
FLUSH_AFTER_S = 0.25
NO_IMAGE = np.zeros((1, 1, 3), np.uint8)  # stands in for a buffered result's image once it is too old to be drawn


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
        described = getattr(session, "description", None) or "pose session"
        self.ready.emit(ModelInfo(name, described, time.perf_counter() - t0, getattr(session, "seq", None),
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
