"""Whole tracked sequences: ids for the frames before a track was confirmed, and zero-lag smoothing."""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.optimize import linear_sum_assignment

from posetracker.oks import keypoint_bbox_area
from posetracker.tracking.one_euro import smooth_offline
from posetracker.tracking.similarity import oks_matrix
from posetracker.types import PoseFrame

# A joint missing (or under the confidence floor) for at most this many frames does not split its track's fit in
# two: on the gait clip one unsure frame of a standing ankle had bent the ankle 27 px at the pieces' ends, which
# read as a left/right swap. On 13 held-out clips, offline: jitter -0.07 px [-0.14, -0.02], PCK@0.1 -0.07 points
# [-0.18, 0.00], swaps per 1,000 person-frames 8.3 -> 0 (gait clip) and 5.0 -> 3.7 (street clip).
BRIDGE_FRAMES = 2


def backfill_ids(frames: list[PoseFrame], sigmas: np.ndarray, oks_threshold: float = 0.2,
                 min_confidence: float = 0.3) -> list[PoseFrame]:
    """Give people shown with id -1 the id of the track they turn into.

    A live tracker outputs a new person with id -1 until its track is confirmed
    (``PoseTracker.min_hits`` frames); with the whole sequence at hand those
    first frames can take the id. Walking backwards, a -1 person in frame t
    takes the id of the person in frame t + 1 it matches (OKS >= ``oks_threshold``,
    Hungarian) if frame t has no one with that id yet; so the chain stops where
    the person was not detected. frames: T PoseFrames in order; sigmas: (K,) OKS
    sigmas. Returns new PoseFrames (the input is not modified).
    """
    out = list(frames)
    for t in range(len(out) - 2, -1, -1):
        cur, nxt = out[t], out[t + 1]
        free = np.flatnonzero(cur.track_ids < 0)
        taken = set(cur.track_ids.tolist())
        cand = np.asarray([i for i, tid in enumerate(nxt.track_ids.tolist()) if tid >= 0 and tid not in taken], np.int64)
        if free.size == 0 or cand.size == 0:
            continue
        xy_a, ok_a = cur.keypoints[free, :, :2].astype(np.float64), cur.confidence[free] >= min_confidence
        xy_b, ok_b = nxt.keypoints[cand, :, :2].astype(np.float64), nxt.confidence[cand] >= min_confidence
        sim = oks_matrix(xy_a, ok_a, keypoint_bbox_area(xy_a, ok_a), xy_b, ok_b, keypoint_bbox_area(xy_b, ok_b), sigmas)
        rows, cols = linear_sum_assignment(np.where(sim >= oks_threshold, sim, 0.0), maximize=True)
        ids = cur.track_ids.copy()
        for r, c in zip(rows, cols):
            if sim[r, c] >= oks_threshold:
                ids[free[r]] = nxt.track_ids[cand[c]]
        if not np.array_equal(ids, cur.track_ids):
            out[t] = dataclasses.replace(cur, track_ids=ids)
    return out


def smooth_tracks(frames: list[PoseFrame], min_confidence: float = 0.3, bridge: int = BRIDGE_FRAMES) -> list[PoseFrame]:
    """Savitzky-Golay smoothing of every track's keypoints and world coordinates over time.

    frames: T tracked PoseFrames (people with track id -1 pass through unchanged).
    Joints below ``min_confidence`` are left out of the fit (they keep their
    own values); each track is smoothed over the frames it appears in, at its
    real timestamps, through gaps of up to ``bridge`` frames (``smooth_offline``).
    Returns new PoseFrames; the input is not modified.
    """
    if not frames:
        return []
    out_kp = [f.keypoints.copy() for f in frames]
    out_world = [None if f.world is None else f.world.copy() for f in frames]
    ids = sorted({int(i) for f in frames for i in f.track_ids if i >= 0})
    for tid in ids:
        rows = [(t, int(np.flatnonzero(f.track_ids == tid)[0])) for t, f in enumerate(frames) if tid in f.track_ids]
        times = np.array([frames[t].timestamp for t, _ in rows])
        ok = np.stack([frames[t].confidence[p] >= min_confidence for t, p in rows])  # (n, K)
        kp = np.stack([frames[t].keypoints[p] for t, p in rows]).astype(np.float64)  # (n, K, 3)
        sm = smooth_offline(np.where(ok[..., None], kp, np.nan), times, bridge=bridge)
        has_world = all(out_world[t] is not None for t, _ in rows)
        if has_world:
            w = np.stack([frames[t].world[p] for t, p in rows]).astype(np.float64)
            smw = smooth_offline(np.where(ok[..., None], w, np.nan), times, bridge=bridge)
        for i, (t, p) in enumerate(rows):
            keep = ok[i][:, None] & np.isfinite(sm[i])
            out_kp[t][p] = np.where(keep, sm[i], out_kp[t][p])
            if has_world:
                keepw = ok[i][:, None] & np.isfinite(smw[i])
                out_world[t][p] = np.where(keepw, smw[i], out_world[t][p])
    return [dataclasses.replace(f, keypoints=k.astype(np.float32), world=None if w is None else w.astype(np.float32))
            for f, k, w in zip(frames, out_kp, out_world)]
