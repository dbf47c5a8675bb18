"""The offline driver of a ``TrackingSession`` (``posetracker.session``): a whole source in bidirectional chunks,
then the tracking and the motion solve over each whole track.

    frames -> TrackingSession._prepare -> PoseNet.features, one frame at a time
          -> every ``chunk + overlap`` frames: the temporal stage over the window (forward state carried from the
             last chunk, the backward direction seeing ``overlap`` further frames) -> the heads of its first
             ``chunk`` frames -> each frame's people (``TrackingSession._people``, ``posetracker.frame_people``)
          -> ids (``TrackingSession._track``), frame by frame as they come
          -> top-down: a track missing an animal for a few frames between two readings searched there
             (``track_gaps.TrackGaps``: a crop at the track's interpolated pose)
          -> ids backfilled over the whole source (``tracking.offline``)
          -> the motion solve per track (``motion.whole_track``)

The live drivers are in ``posetracker.pipeline_live``; like them, this module imports nothing of
``posetracker.session`` (it takes the session as an argument).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from posetracker.cpu_threads import torch_threads as _threads
from posetracker.motion.whole_track import whole_track_motion
from posetracker.stages import Pending, Progress
from posetracker.track_gaps import TrackGaps, wanted
from posetracker.tracking.offline import backfill_ids
from posetracker.types import Frame, PoseFrame


def run_offline(session, frames: Iterable[Frame], total: int | None, progress: Progress | None,
                cancel: Callable[[], bool] | None, fps: float = 30.0) -> list[PoseFrame]:
    """Every frame's PoseFrame of ``frames`` in order, read by ``session`` (an offline ``TrackingSession``); with
    ``config.people.track`` tracked and solved per whole track (the report in ``session.whole_track_report``)."""
    cfg = session.config
    feats: list[torch.Tensor] = []
    metas: list[Pending] = []
    raw: list[PoseFrame] = []
    h_fwd = None
    gaps = TrackGaps(session) if wanted(session) else None  # tracked as they come, with the frames' images
    session.track_gaps = gaps

    def emit(n: int) -> None:
        nonlocal h_fwd, feats, metas
        window = torch.stack(feats, 1)
        target, h_fwd = session.net.temporal(window, h_fwd, emit=n)
        out = session.net.decode_heads(target)
        for t in range(n):
            pose = session._people({k: v[:, t : t + 1] for k, v in out.items()}, metas[t])
            raw.extend([pose] if gaps is None else gaps.push(session._track(pose), metas[t].frame))
        feats, metas = feats[n:], metas[n:]

    with torch.inference_mode(), _threads(cfg.network.threads):
        for i, frame in enumerate(frames):
            if cancel and cancel():
                break
            x, meta = session._prepare(frame)
            feats.append(session.net.features(x[:, None])[:, 0])
            metas.append(meta)
            if len(feats) >= cfg.network.chunk + cfg.network.overlap:
                emit(cfg.network.chunk)
            if progress:
                progress(i + 1, total)
        while feats:
            emit(min(cfg.network.chunk, len(feats)))
    if not cfg.people.track:
        return raw
    tracked = raw + gaps.flush() if gaps is not None else [session._track(p) for p in raw]
    tracked, session.whole_track_report = whole_track_motion(backfill_ids(tracked, session.sigmas), session.spec,
                                                             cfg, fps)
    return tracked
