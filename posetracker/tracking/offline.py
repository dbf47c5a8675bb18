"""Zero-lag smoothing of whole tracked sequences (offline mode)."""

from __future__ import annotations

import dataclasses

import numpy as np

from posetracker.tracking.one_euro import smooth_offline
from posetracker.types import PoseFrame


def smooth_tracks(frames: list[PoseFrame], min_confidence: float = 0.3) -> list[PoseFrame]:
    """Savitzky-Golay smoothing of every track's keypoints and world coordinates over time.

    frames: T tracked PoseFrames (people with track id -1 pass through unchanged).
    Joints below ``min_confidence`` are left out of the fit (they keep their
    own values); each track is smoothed over the frames it appears in, at its
    real timestamps. Returns new PoseFrames; the input is not modified.
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
        sm = smooth_offline(np.where(ok[..., None], kp, np.nan), times)
        has_world = all(out_world[t] is not None for t, _ in rows)
        if has_world:
            w = np.stack([frames[t].world[p] for t, p in rows]).astype(np.float64)
            smw = smooth_offline(np.where(ok[..., None], w, np.nan), times)
        for i, (t, p) in enumerate(rows):
            keep = ok[i][:, None] & np.isfinite(sm[i])
            out_kp[t][p] = np.where(keep, sm[i], out_kp[t][p])
            if has_world:
                keepw = ok[i][:, None] & np.isfinite(smw[i])
                out_world[t][p] = np.where(keepw, smw[i], out_world[t][p])
    return [dataclasses.replace(f, keypoints=k.astype(np.float32), world=None if w is None else w.astype(np.float32))
            for f, k, w in zip(frames, out_kp, out_world)]
