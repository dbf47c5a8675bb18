"""Held-out video frames scored through the live path as a stream, not as stills.

``posetracker train held-out-eval --mode live`` reads each held-out frame as a still (``process_image``); what
a live session does between frames (the network's temporal state, the tracker, the smoother, crops placed
where the last frame's animals were) it does not see. Here each run of labelled frames of one video is played
to a live session frame by frame (``pipeline_live.sequential_poses``, the one-core path of the product), from
``warmup`` frames before its first labelled frame to its last, and the PoseFrame the session outputs for a
labelled frame is what is scored (``held_out.evaluate_items``): the product's live output, smoothed and
tracked, people with id -1 included (a viewer sees them).

Offline (``--mode offline --sequence``, :func:`offline_poses_at`): each run, from ``context`` frames before its
first labelled frame to ``context`` after its last, is processed as the offline session processes a video
(``TrackingSession.run``: the whole-file path, bidirectional chunks, tracking, the motion solve per track, the
unconfirmed and unsure tracks left out), and its PoseFrame of a labelled frame is what is scored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from posetracker.evaluation.datasets import FrameCache, LabelledItem
from posetracker.types import Frame, PoseFrame

RUN_GAP = 30  # labelled frames of one video more than this many frames apart are played as separate runs


def frame_runs(items: list[LabelledItem], warmup: int = 10, gap: int = RUN_GAP,
               after: int = 0) -> list[tuple[Path, int, int]]:
    """(video, first, last) frame ranges (inclusive) to play: each run of the items' labelled frames of one video
    whose neighbours lie at most ``gap`` frames apart, from ``warmup`` frames before its first (not before 0) to
    ``after`` frames after its last (the caller's frame source stops at the video's end)."""
    by_video: dict[Path, list[int]] = {}
    for it in items:
        if it.video is None or it.frame_idx is None:
            raise ValueError(f"{it.key}: a still image; a live sequence needs video frames")
        by_video.setdefault(it.video, []).append(int(it.frame_idx))
    runs = []
    for video, frames in by_video.items():
        frames = sorted(set(frames))
        start = frames[0]
        for a, b in zip(frames, frames[1:] + [None]):
            if b is None or b - a > gap:
                runs.append((video, max(0, start - warmup), a + after))
                start = b
    return runs


def live_poses_at(session, items: list[LabelledItem], warmup: int = 10,
                  progress: Callable[[int, int], None] | None = None) -> dict[tuple[Path, int], PoseFrame]:
    """{(video, frame index): the live session's PoseFrame} for every frame of :func:`frame_runs` of ``items``;
    ``session`` (a live ``TrackingSession``) is reset before each run. ``progress(done, total)`` in frames."""
    from posetracker.pipeline_live import sequential_poses

    runs = frame_runs(items, warmup)
    total, done = sum(b - a + 1 for _, a, b in runs), 0
    out: dict[tuple[Path, int], PoseFrame] = {}
    with FrameCache(keep=2) as cache:
        for video, first, last in runs:
            session.reset()

            def frames(video=video, first=first, last=last, fps=cache.fps(video)) -> Iterator[Frame]:
                for i in range(first, last + 1):
                    yield Frame(i, i / fps, cache.frame(video, i))

            for pose in sequential_poses(session, frames()):
                out[(video, pose.index)] = pose
                done += 1
                if progress:
                    progress(done, total)
    return out


def offline_poses_at(session, items: list[LabelledItem], context: int = 10,
                     progress: Callable[[int, int], None] | None = None) -> dict[tuple[Path, int], PoseFrame]:
    """{(video, frame index): the offline session's PoseFrame} for every frame of each run of ``items``'
    labelled frames with ``context`` frames either side (:func:`frame_runs`), each run processed as one video
    by ``session.run`` (an offline ``TrackingSession``: reset, read in bidirectional chunks, tracked, solved per
    track); a frame past the video's end ends its run. ``progress(done, total)`` in frames."""
    runs = frame_runs(items, context, after=context)
    total, done = sum(b - a + 1 for _, a, b in runs), 0
    out: dict[tuple[Path, int], PoseFrame] = {}
    with FrameCache(keep=2) as cache:
        for video, first, last in runs:
            fps = cache.fps(video)

            def frames(video=video, first=first, last=last, fps=fps) -> Iterator[Frame]:
                for i in range(first, last + 1):
                    try:
                        image = cache.frame(video, i)
                    except IndexError:  # past the video's end: the context after the last labelled frame ends there
                        if i <= last - context:
                            raise
                        return
                    yield Frame(i, i / fps, image)

            for pose in session.run(frames(), fps=fps, total=last - first + 1).frames:
                out[(video, pose.index)] = pose
                done += 1
                if progress:
                    progress(done, total)
    return out


def sequence_predictor(poses: dict[tuple[Path, int], PoseFrame], items: list[LabelledItem]):
    """A ``predict(image)`` for ``held_out.evaluate_items`` that hands out, call by call, the stream's PoseFrame of
    each of ``items`` in their order (the image is not read again: the stream already was)."""
    order = iter(items)

    def predict(_image) -> PoseFrame:
        it = next(order)
        return poses[(it.video, int(it.frame_idx))]

    return predict


__all__ = ["RUN_GAP", "frame_runs", "live_poses_at", "offline_poses_at", "sequence_predictor"]
