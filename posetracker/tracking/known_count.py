"""A known number of animals: join the tracker's fragments into exactly that many identities (offline).

With two flies in an arena, an animal the detector misses for a few frames, or one read at a jump, comes
back under a new track id: on the SLEAP two-fly clip the tracker handed out 20 ids for 2 flies. When the
user says how many animals the video holds (``--animals N``), every track id is a fragment of one of N
identities, and fragments seen in the same frame are different animals. So, fragments in order of their
first frame:

- a fragment goes to an identity none of whose fragments is seen in any of its frames;
- among those, to the one whose last position before the fragment starts (the root joint) is nearest its
  first position, in units of the animals' size (median keypoint-box diagonal) per second of gap, so a
  long absence allows a longer way;
- a fragment no identity is free for (more animals seen at once than said) keeps an id above the N
  identities, and is counted in the report.

The ids 0..N-1 are the identities in order of appearance. Shapes: P people in a frame, K joints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from posetracker.types import PoseFrame


@dataclass
class _Fragment:
    tid: int
    frames: np.ndarray  # (F,) sequence positions where the track is seen, ascending
    xy: np.ndarray  # (F, 2) its root's image position there (px)


def _root_xy(frame: PoseFrame, p: int, root: int) -> np.ndarray:
    xy = frame.keypoints[p, root, :2].astype(np.float64)
    if np.isfinite(xy).all():
        return xy
    return np.nanmean(frame.keypoints[p, :, :2].astype(np.float64), axis=0)


def _size(frames: list[PoseFrame]) -> float:
    diag = [float(np.hypot(*np.ptp(k[np.isfinite(k).all(-1)], axis=0)))
            for f in frames for k in f.keypoints[:, :, :2].astype(np.float64) if np.isfinite(k).all(-1).sum() >= 2]
    return float(np.median(diag)) if diag else 1.0


def join_fragments(frames: list[PoseFrame], animals: int, root: int) -> tuple[list[PoseFrame], dict]:
    """Relabel the tracks of ``frames`` (T tracked PoseFrames, ids >= 0) into ``animals`` identities (module
    docstring). root: the skeleton's root joint. Returns new frames and a report {"fragments", "identities",
    "extra"} (track ids before, identities used, fragments left over)."""
    if animals < 1:
        raise ValueError(f"animals must be at least 1, got {animals}")
    seen: dict[int, list[int]] = {}
    for t, f in enumerate(frames):
        for tid in f.track_ids.tolist():
            if tid >= 0:
                seen.setdefault(int(tid), []).append(t)
    frags = []
    for tid, ts in seen.items():
        xy = [_root_xy(frames[t], int(np.flatnonzero(frames[t].track_ids == tid)[0]), root) for t in ts]
        frags.append(_Fragment(tid, np.asarray(ts), np.asarray(xy)))
    frags.sort(key=lambda fr: (fr.frames[0], fr.tid))
    size = _size(frames)
    times = np.array([f.timestamp for f in frames])
    owner: list[list[_Fragment]] = []  # identity -> its fragments
    new_id: dict[int, int] = {}
    extra = 0
    for fr in frags:
        best, best_cost = -1, np.inf
        for i, own in enumerate(owner):
            if any(np.intersect1d(o.frames, fr.frames, assume_unique=True).size for o in own):
                continue
            t_prev, xy_prev = -1, None  # the identity's last sighting before the fragment starts
            for o in own:
                k = int(np.searchsorted(o.frames, fr.frames[0])) - 1
                if k >= 0 and o.frames[k] > t_prev:
                    t_prev, xy_prev = int(o.frames[k]), o.xy[k]
            if xy_prev is None:
                continue
            gap_s = max(times[fr.frames[0]] - times[t_prev], 1e-3)
            cost = float(np.linalg.norm(fr.xy[0] - xy_prev)) / size / gap_s
            if cost < best_cost:
                best, best_cost = i, cost
        if best < 0 and len(owner) < animals:
            owner.append([fr])
            new_id[fr.tid] = len(owner) - 1
        elif best >= 0:
            owner[best].append(fr)
            new_id[fr.tid] = best
        else:
            new_id[fr.tid] = animals + extra
            extra += 1
    out = [dataclasses.replace(f, track_ids=np.array([new_id.get(int(i), int(i)) if i >= 0 else int(i)
                                                      for i in f.track_ids], np.int64)) for f in frames]
    return out, {"fragments": len(frags), "identities": len(owner), "extra": extra}


__all__ = ["join_fragments"]
