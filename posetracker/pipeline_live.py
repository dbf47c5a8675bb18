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
(tests/session/test_pipeline_live.py), where the precision stage's time budget picks the same people (it counts crops
at their measured cost, so with several people waiting the two paths may refine different ones).
:func:`poses` picks one of the two: two stages only where the process may run on more than one CPU (on one
core the helper thread only adds switching: 1-3 % slower, measured).

The values passed between the stages live in ``posetracker.stages`` and the CPU and thread helpers in
``posetracker.cpu_threads`` (re-exported here); the drivers take any session with the stages
(``stages.LiveStages``), so this module imports nothing of ``posetracker.session``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from posetracker.cpu_threads import limit_blas_threads, torch_threads, usable_cpus  # noqa: F401 (re-exported)
from posetracker.stages import Inferred, LiveStages, Pending, Prepared, Progress, StageTimes  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from posetracker.types import Frame, PoseFrame

IN_FLIGHT = 2  # frames past the network whose finish() may wait on the helper before the network waits for it


def use_two_stages(two_stage: bool | None) -> bool:
    """``NetworkSettings.two_stage`` resolved: None -> two stages where more than one CPU is usable."""
    return usable_cpus() > 1 if two_stage is None else two_stage


def poses(session: LiveStages, frames: Iterable[Frame], total: int | None = None,
          progress: Callable[[int, int | None], None] | None = None, cancel: Callable[[], bool] | None = None,
          on_finish: Callable[[PoseFrame], None] | None = None) -> Iterator[PoseFrame]:
    """Live poses of ``frames`` in one or two stages, as ``session.config.network.two_stage`` says (see :func:`use_two_stages`)."""
    run = live_poses if use_two_stages(session.config.network.two_stage) else sequential_poses
    return run(session, frames, total, progress, cancel, on_finish=on_finish)


def sequential_poses(session: LiveStages, frames: Iterable[Frame], total: int | None = None,
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


def live_poses(session: LiveStages, frames: Iterable[Frame], total: int | None = None,
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

    def __init__(self, session: LiveStages, on_pose: Callable[[PoseFrame, object], None],
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
