"""A live frame in two stages, and the two-stage pipeline that overlaps them.

``TrackingSession.step`` is three calls of the session (``posetracker.session``):

    prepare(frame)  Frame (H, W, 3) uint8 RGB -> Prepared: network input (1, 3, h, w) float 0..255, its letterbox
    infer(prepared) -> Inferred of the frame ``lookahead`` pushes ago (None while the look-ahead fills):
                    heads' outputs (1, 1, C, h/4, w/4) each; the only call that touches the temporal state
    finish(inferred) -> PoseFrame: people decoding, refiners, 3-D, tracking, smoothing, bone lengths

``prepare`` is pure; ``finish`` keeps the tracker's, smoother's and depth's state, so it must see the frames
in order, one at a time; ``infer`` keeps the network's. :func:`live_poses` runs ``infer`` on the calling
thread and ``prepare`` (with the reading of the source) and ``finish`` on one helper thread: while ONNX
Runtime runs frame t+1 (it releases the GIL), the helper decodes, tracks and smooths frame t and reads and
letterboxes frame t+2. The poses are the sequential path's, bit for bit, in the same order
(tests/test_pipeline_live.py), where the precision stage's time budget picks the same people (it counts crops
at their measured cost, so with several people waiting the two paths may refine different ones).
:func:`poses` picks one of the two: two stages only where the process may run on more than one CPU (on one
core the helper thread only adds switching: 1-3 % slower, measured).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from posetracker.model.preprocess import Letterbox
    from posetracker.session import TrackingSession
    from posetracker.types import Frame, PoseFrame

Progress = Callable[[int, int | None], None]
IN_FLIGHT = 2  # frames past the network whose finish() may wait on the helper before the network waits for it


@dataclass
class StageTimes:
    """Milliseconds spent in each stage for the last frame (network includes pre-processing)."""

    network_ms: float = 0.0
    decode_ms: float = 0.0
    track_ms: float = 0.0
    history: deque = field(default_factory=lambda: deque(maxlen=120))

    @property
    def total_ms(self) -> float:
        return self.network_ms + self.decode_ms + self.track_ms


@dataclass(frozen=True)
class Pending:
    """What the decoding of a frame needs besides the network's outputs."""

    index: int
    timestamp: float
    box: Letterbox
    image: torch.Tensor | None = None  # network input, kept only for a maps-stage refiner
    frame: np.ndarray | None = None  # source frame, kept only for a frame-stage refiner, tiles or top-down
    tiles: int = 1  # tile grid of this frame (1: the whole frame only)


@dataclass(frozen=True)
class Prepared:
    """A frame letterboxed for the network: ``x`` its input, ``meta`` the rest, ``ms`` the time it took."""

    x: torch.Tensor
    meta: Pending
    ms: float


@dataclass(frozen=True)
class Inferred:
    """The network's outputs of one frame (``out``) with what its decoding needs; ``network_ms``: its
    preparation and network time."""

    out: dict[str, torch.Tensor]
    meta: Pending
    network_ms: float


class torch_threads:
    """Context manager: run torch with ``n`` threads, then restore."""

    def __init__(self, n: int):
        self.n = n

    def __enter__(self) -> None:
        self.prev = torch.get_num_threads()
        if self.n and self.n != self.prev:
            torch.set_num_threads(self.n)

    def __exit__(self, *exc) -> None:
        if self.n and self.n != self.prev:
            torch.set_num_threads(self.prev)


def limit_blas_threads(n: int) -> None:
    """Cap numpy's BLAS (OpenBLAS) at ``n`` threads for the whole process (threadpoolctl).

    By default it starts a thread per CPU for any product large enough (e.g. the sparse heads of
    :mod:`posetracker.model.heads_at_cells` over a few hundred cells), and those threads keep spinning after
    the call, taking the CPU from the network: live on the openpose street clip on two CPUs that cost a
    third of the frame rate (docs/experiments/offset-vote.md). Set once, not per call: the live pipeline's
    two threads share the setting, and restoring it from one of them would race with the other.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=max(1, int(n)), user_api="blas")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, e.g. under ``taskset``; else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity API (macOS, Windows)
        return os.cpu_count() or 1


def use_two_stages(two_stage: bool | None) -> bool:
    """``SessionConfig.two_stage`` resolved: None -> two stages where more than one CPU is usable."""
    return usable_cpus() > 1 if two_stage is None else two_stage


def poses(session: TrackingSession, frames: Iterable[Frame], total: int | None = None,
          progress: Callable[[int, int | None], None] | None = None, cancel: Callable[[], bool] | None = None,
          on_finish: Callable[[PoseFrame], None] | None = None) -> Iterator[PoseFrame]:
    """Live poses of ``frames`` in one or two stages, as ``session.config.two_stage`` says (see :func:`use_two_stages`)."""
    run = live_poses if use_two_stages(session.config.two_stage) else sequential_poses
    return run(session, frames, total, progress, cancel, on_finish=on_finish)


def sequential_poses(session: TrackingSession, frames: Iterable[Frame], total: int | None = None,
                     progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
                     on_finish: Callable[[PoseFrame], None] | None = None) -> Iterator[PoseFrame]:
    """Every frame's PoseFrame, in order, one ``step`` at a time on the calling thread; ``cancel()`` is asked
    after each frame is read (True: stop, then the look-ahead's poses), ``progress(frames pushed, total)``,
    ``on_finish(pose)`` as each pose is done."""
    for i, frame in enumerate(frames):
        if cancel and cancel():
            break
        pose = session.step(frame)
        if pose is not None:
            if on_finish is not None:
                on_finish(pose)
            yield pose
        if progress:
            progress(i + 1, total)
    for pose in session.flush():
        if on_finish is not None:
            on_finish(pose)
        yield pose


_END = object()


def live_poses(session: TrackingSession, frames: Iterable[Frame], total: int | None = None,
               progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
               on_finish: Callable[[PoseFrame], None] | None = None) -> Iterator[PoseFrame]:
    """:func:`sequential_poses` in two stages: the network on the calling thread, the reading of ``frames``
    (with the letterbox) and each frame's ``finish`` on one helper thread, the next frame's network
    overlapping the last one's decoding and tracking. Same poses, same order; ``cancel`` and ``progress``
    are called on the calling thread as there (``cancel`` after each frame is read, before the next read
    starts). An error reading a frame or finishing one is raised here after the poses finished before it; a
    source that ends (a ``guarded`` capture failure included) ends the stream after the look-ahead's poses.
    ``on_finish(pose)``: called on the helper thread as each pose is done (before it is yielded here). The
    helper thread is gone when the generator is done or closed."""
    it = iter(frames)

    def read() -> Prepared | object:
        frame = next(it, _END)
        return frame if frame is _END else session.prepare(frame)

    def finish(item: Inferred) -> PoseFrame:
        pose = session.finish(item)
        if on_finish is not None:
            on_finish(pose)
        return pose

    helper = ThreadPoolExecutor(1, thread_name_prefix="posetracker-live")
    posts: deque[Future] = deque()  # finish() of the frames past the network, oldest first
    try:
        nxt = helper.submit(read)
        i = 0
        while True:
            try:
                prepared = nxt.result()
            except BaseException:
                while posts:  # the frames before the failure first, as the sequential path
                    yield posts.popleft().result()
                raise
            if prepared is _END or (cancel and cancel()):
                break
            nxt = helper.submit(read)  # the helper reads frame t+1 once it has finished the older frames
            item = session.infer(prepared)
            if item is not None:
                posts.append(helper.submit(finish, item))
            i += 1
            if progress:
                progress(i, total)
            while posts and (posts[0].done() or len(posts) > IN_FLIGHT):
                yield posts.popleft().result()
        for item in session.infer_flush():
            posts.append(helper.submit(finish, item))
        while posts:
            yield posts.popleft().result()
    finally:
        helper.shutdown(wait=True, cancel_futures=True)


class Finisher:
    """``session.finish`` of inferred frames on one helper thread, in the order submitted, for a caller that
    runs the network itself on frames it picks (the app's inference worker, ``bench --paced``): ``on_pose(pose,
    tag)`` is called on the helper thread as each pose is done, ``tag`` being what :meth:`submit` got with
    its frame. At most ``limit`` frames wait; :meth:`submit` then waits for the oldest. An error of
    ``finish`` or ``on_pose`` is raised by the next :meth:`submit` or :meth:`drain` (the frames after it
    are dropped)."""

    def __init__(self, session: TrackingSession, on_pose: Callable[[PoseFrame, object], None],
                 limit: int = IN_FLIGHT):
        self.session, self.on_pose, self.limit = session, on_pose, limit
        self._helper = ThreadPoolExecutor(1, thread_name_prefix="posetracker-finish")
        self._posts: deque[Future] = deque()
        self._error: BaseException | None = None

    def _run(self, item: Inferred, tag: object) -> None:
        if self._error is None:
            try:
                self.on_pose(self.session.finish(item), tag)
            except BaseException as exc:  # kept for the caller's thread
                self._error = exc

    def _check(self) -> None:
        while self._posts and self._posts[0].done():
            self._posts.popleft()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def submit(self, item: Inferred, tag: object = None) -> None:
        self._check()
        while len(self._posts) >= self.limit:
            self._posts[0].result()
            self._check()
        self._posts.append(self._helper.submit(self._run, item, tag))

    def drain(self) -> None:
        """Wait until every frame submitted is finished (e.g. before ``session.reset``)."""
        while self._posts:
            self._posts.popleft().result()
        self._check()

    def close(self) -> None:
        """Finish what was submitted, then stop the helper thread (errors are dropped)."""
        self._helper.shutdown(wait=True)
        self._posts.clear()
