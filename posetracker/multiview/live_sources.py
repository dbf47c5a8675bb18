"""Frames of several sources paired by time, for :mod:`.live` (one frame per source per instant).

:func:`paired_frames` reads V sources (cameras, files, lavfi graphs: ``capture.open_source``) two ways:

- ``paced=False``: in lock step, frame i of every source together, every frame (files only: what ``process
  --mode live`` does with one file, as fast as the model goes);
- ``paced=True``: as cameras are read live. One reader thread per source keeps its last ``KEEP`` frames with
  their arrival time; a file (or any source whose frames come sooner) is released at its timestamps from one
  shared start, so synchronised files play together at their frame rate, as cameras deliver. Each instant takes
  the newest frame of the source whose newest frame came last, and from every other source its frame that
  arrived nearest that time; frames no instant took are dropped (the model is slower than the cameras), as the
  app drops them for one camera. :class:`PairStats` counts them.

A frame's RGB conversion is left to the instant that takes it (``FrameSource.read_pending``), so dropped frames
of a video file are decoded but never converted. A source that fails ends the pairing; its error is raised
after the instants before it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from posetracker.capture import FrameSource, PendingFrame
from posetracker.types import Frame

KEEP = 8  # frames each paced source keeps for pairing (at 60 fps: 0.13 s)


@dataclass
class PairStats:
    """What :func:`paired_frames` did: ``read`` frames per source, ``dropped`` per source (read, no instant
    took them), ``instants`` paired, and ``spread_ms`` each instant's arrival spread (newest - oldest frame)."""

    read: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    instants: int = 0
    spread_ms: list[float] = field(default_factory=list)


def paired_frames(sources: Sequence[FrameSource], paced: bool, stats: PairStats | None = None) -> Iterator[list[Frame]]:
    """Instants of ``sources`` (module docstring): lists of V Frames, one per source, in the sources' order."""
    stats = stats if stats is not None else PairStats()
    stats.read, stats.dropped = [0] * len(sources), [0] * len(sources)
    if not paced:
        yield from _lock_step(sources, stats)
    else:
        yield from _by_time(sources, stats)


def _lock_step(sources: Sequence[FrameSource], stats: PairStats) -> Iterator[list[Frame]]:
    its = [iter(s) for s in sources]
    while True:
        frames = [next(it, None) for it in its]
        for v, f in enumerate(frames):
            stats.read[v] += f is not None
        if any(f is None for f in frames):
            return
        stats.instants += 1
        stats.spread_ms.append(0.0)
        yield frames


class _Reader:
    """One paced source on its own thread: ``frames`` its last KEEP (arrival time, PendingFrame, number)."""

    def __init__(self, source: FrameSource, start: float, changed: threading.Condition):
        self.source, self.start, self.changed = source, start, changed
        self.frames: deque[tuple[float, PendingFrame, int]] = deque(maxlen=KEEP)
        self.count = 0
        self.ended = False
        self.error: BaseException | None = None
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"posetracker-read-{source.name}")
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop:
                pending = self.source.read_pending()
                if pending is None:
                    break
                wait = self.start + pending.timestamp - time.monotonic()
                if wait > 0:  # a file (or a source ahead of its clock): released at its timestamp
                    time.sleep(wait)
                with self.changed:
                    self.frames.append((time.monotonic(), pending, self.count))
                    self.count += 1
                    self.changed.notify_all()
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer's thread
            self.error = exc
        with self.changed:
            self.ended = True
            self.changed.notify_all()


def _by_time(sources: Sequence[FrameSource], stats: PairStats) -> Iterator[list[Frame]]:
    changed = threading.Condition()
    start = time.monotonic()  # one shared start: synchronised files play together
    readers = [_Reader(s, start, changed) for s in sources]
    taken = [-1] * len(sources)  # the number of each source's last frame taken
    try:
        while (picks := _next_instant(readers, taken, changed, stats)) is not None:
            yield [p.frame() for p in picks]
    finally:
        for r in readers:
            r.stop = True
        for r in readers:
            r.thread.join(timeout=5)
        stats.read = [r.count for r in readers]
    error = next((r.error for r in readers if r.error is not None), None)
    if error is not None:
        raise error


def _next_instant(readers: list[_Reader], taken: list[int], changed: threading.Condition,
                  stats: PairStats) -> list[PendingFrame] | None:
    """The next instant's frames (module docstring), waiting for every source to have a new one; None once a
    source has ended with none."""
    with changed:
        while True:
            fresh = [[f for f in r.frames if f[2] > taken[v]] for v, r in enumerate(readers)]
            if all(fresh):
                break
            if any(r.ended and not f for r, f in zip(readers, fresh)):
                return None
            changed.wait()
        at = max(f[-1][0] for f in fresh)  # the newest frame of the source whose newest came last
        picks = [min(f, key=lambda item: abs(item[0] - at)) for f in fresh]
        for v, (_, _, n) in enumerate(picks):
            stats.dropped[v] += n - taken[v] - 1
            taken[v] = n
        stats.read = [r.count for r in readers]
    arrivals = [p[0] for p in picks]
    stats.spread_ms.append(1000 * (max(arrivals) - min(arrivals)))
    stats.instants += 1
    return [p[1] for p in picks]


__all__ = ["KEEP", "PairStats", "paired_frames"]
