"""Typed packets passed between the pipeline threads and the GUI (frozen dataclasses),
the latest-wins mailbox and a rate meter. No widgets here."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from posetracker.capture import PendingFrame
from posetracker.skeletons import SkeletonSpec
from posetracker.types import Frame, PoseFrame, PoseSequence

T = TypeVar("T")


class PoseSession(Protocol):
    """What the inference worker needs: TrackingSession, ReplaySession or a test fake."""

    spec: SkeletonSpec

    def step(self, frame: Frame) -> PoseFrame | None: ...

    def flush(self) -> list[PoseFrame]: ...  # the poses a look-ahead still holds back

    def reset(self, keep_ids: bool = False) -> None: ...  # keep_ids: a seek in the same source


@dataclass(frozen=True)
class Captured:
    """A frame as read by the capture thread, converted to RGB when first asked for (``frame``: the frames
    a busy model skips are never converted). epoch changes at every seek (discontinuity)."""

    pending: PendingFrame
    t_read: float  # time.monotonic() when read
    epoch: int

    @property
    def frame(self) -> Frame:
        return self.pending.frame()

    @property
    def index(self) -> int:
        return self.pending.index


@dataclass(frozen=True)
class PoseResult:
    """The poses of one frame, with that frame (so overlays line up with the image)."""

    frame: Frame
    pose: PoseFrame
    latency_ms: float  # capture read -> pose ready
    epoch: int


@dataclass(frozen=True)
class SourceInfo:
    name: str
    fps: float
    frame_count: int | None
    size: tuple[int, int]
    is_live: bool
    seekable: bool


@dataclass(frozen=True)
class ModelInfo:
    skeleton: str
    description: str
    load_s: float
    sequence: PoseSequence | None = None  # replay sessions: the whole sequence they play
    refiners: tuple[str, ...] = ()  # kinds of the session's refiner chain, in the order they run
    notices: tuple[str, ...] = ()  # problems the session worked around (e.g. an unreadable optional weights file)


@dataclass(frozen=True)
class PipelineStats:
    """What the status bar shows; a snapshot taken in the GUI thread."""

    source_fps: float = 0.0
    inference_fps: float = 0.0
    latency_ms: float = 0.0
    dropped: int = 0
    position: int = -1
    playing: bool = False


@dataclass(frozen=True)
class RecordingSummary:
    folder: Path
    frames: int
    poses: int
    dropped: int
    error: str | None = None


class LatestSlot(Generic[T]):
    """One-item mailbox: the newest item wins; an unread item that is replaced counts as a drop."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._item: T | None = None
        self.dropped = 0
        self.delivered = 0
        self.waiting = 0  # consumers blocked in take() for lack of an item

    def put(self, item: T) -> bool:
        """Store ``item``; True if an unread item was replaced (dropped)."""
        with self._cond:
            replaced = self._item is not None
            if replaced:
                self.dropped += 1
            self._item = item
            self._cond.notify()
        return replaced

    def take(self, timeout: float = 0.0) -> T | None:
        """Remove and return the item, waiting up to ``timeout`` s for one; None if none."""
        with self._cond:
            if self._item is None and timeout > 0:
                self.waiting += 1
                try:
                    self._cond.wait(timeout)
                finally:
                    self.waiting -= 1
            item, self._item = self._item, None
            if item is not None:
                self.delivered += 1
            return item

    def clear(self) -> None:
        with self._cond:
            self._item = None


class RateMeter:
    """Events per second over the last ``window`` seconds; safe to read from another thread."""

    def __init__(self, window: float = 2.0) -> None:
        self.window = window
        self._times: deque[float] = deque(maxlen=512)

    def tick(self) -> None:
        self._times.append(time.monotonic())

    def rate(self) -> float:
        times = tuple(self._times)  # atomic copy under the GIL
        if len(times) < 2:
            return 0.0
        now = time.monotonic()
        recent = [t for t in times if now - t <= self.window]
        if len(recent) < 2 or now - recent[-1] > self.window:
            return 0.0
        return (len(recent) - 1) / max(recent[-1] - recent[0], 1e-6)


class MeanMeter:
    """Mean of the last ``n`` values; safe to read from another thread."""

    def __init__(self, n: int = 30) -> None:
        self._values: deque[float] = deque(maxlen=n)

    def add(self, value: float) -> None:
        self._values.append(value)

    def mean(self) -> float:
        values = tuple(self._values)
        return sum(values) / len(values) if values else 0.0

    def clear(self) -> None:
        self._values.clear()


def describe_error(exc: BaseException) -> str:
    """A one-line message for the user (capture/weights errors already read well)."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    return text

