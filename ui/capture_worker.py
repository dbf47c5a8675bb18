"""CaptureWorker: reads a FrameSource in its own QThread (run by PipelineController), paces files at fps x
speed, publishes frames into latest-wins slots (and to the recorder tap), and converts each to RGB just after
offering it. ``stop()`` is thread-safe; ``finished`` is emitted when ``run`` returns, errors go out as
``failed(str)``."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, Signal, Slot

from posetracker.capture import CaptureError, FrameSource, PendingFrame, UnreadableImageError
from posetracker.types import Frame
from .packets import Captured, LatestSlot, RateMeter, SourceInfo, describe_error

SourceOpener = Callable[[], FrameSource]


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
        # converted here, as it is offered: this thread then waits for the next frame's time anyway, and a model
        # that takes the frame meanwhile waits for this conversion instead of making its own (the conversion is
        # held before the frame is offered, so no model can start one first). Converting on the inference thread
        # took 20% of it (py-spy, 120 fps source, 2 cores).
        with frame.converting():
            item = Captured(frame, time.monotonic(), self._epoch)
            for slot in self._slots:
                slot.put(item)
            self.position = frame.index
            self.meter.tick()
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
