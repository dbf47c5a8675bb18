"""Each wrist and ankle pair hangs from its own elbows and knees: a pair read on each other's limbs, exchanged back.

The network may read a wrist or ankle on the other limb for a few frames while the trunk and the elbows / knees
are read right (the SLEAP dancer seen from behind, frames 294-298: her raised fist labelled the right wrist and her
right hand the left one). The motion solve then follows the wrong labels where they outnumber the right ones
nearby, and the forearm swings across the body and back (30-40 degrees a frame in the BVH).

A bone is never longer in the image than it is: per track and bone, its image length's ``REACH_PERCENTILE``
percentile over the track is its reach. In a frame, a pair of :data:`PAIRS` is exchanged where (1) as read its
two bones overreach by ``MIN_EXCESS`` of the reach or more in all, (2) exchanged they overreach by at most
``MAX_EXCESS`` and by ``MIN_EXCESS`` less than as read, and (3) exchanged, the pair also joins its positions in the
last frame it was seen (as decided) better than as read. (3) leaves a pair that follows its own motion alone where
the parents' labels jumped (the pose2sim man's elbows read the other way round for four frames: his wrists stay);
elbows and knees are not judged from shoulders and hips, whose labels slide with the trunk's (``motion.sides``).
Joints under ``min_confidence`` are not judged.

Shapes: T frames of one track, K joints; xy (T, K, 2) px.
"""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.mirror import reorder_rows, track_ids, track_rows
from posetracker.types import PoseFrame

#: (pair, parent pair) judged
PAIRS = (("wrist", "elbow"), ("ankle", "knee"))
REACH_PERCENTILE = 90.0  # a bone's image length over the track at this percentile: its reach
MIN_EXCESS = 0.5  # the pair's two bones overreach by this share of their reach in all: read on the other limb
MAX_EXCESS = 0.15  # ... and exchanged they overreach by at most this


def _pair(spec: SkeletonSpec, name: str) -> tuple[int, int]:
    return spec.index(f"left_{name}"), spec.index(f"right_{name}")


def _dist(xy: np.ndarray, a: int, b: int) -> np.ndarray:
    """(T,) image distance of joints a and b of xy (T, K, 2)."""
    return np.linalg.norm(xy[:, a] - xy[:, b], axis=-1)


def _over(length: np.ndarray, reach: float) -> np.ndarray:
    """(T,) how far a bone's image ``length`` (T,) exceeds its ``reach``, as a share of it (0 within)."""
    return np.maximum(length / reach - 1.0, 0.0)


def applies(spec: SkeletonSpec) -> bool:
    """Whether the skeleton has every joint of :data:`PAIRS`."""
    return all(f"{s}_{n}" in spec.joint_names for pair in PAIRS for n in pair for s in ("left", "right"))


def pair_orders(xy: np.ndarray, seen: np.ndarray, spec: SkeletonSpec) -> np.ndarray:
    """(T, K) joint order per frame of one track: identity except where a pair of :data:`PAIRS` hangs from its
    parents and joins its last frame only exchanged (module docstring). xy: (T, K, 2) px; seen: (T, K) bool."""
    t_len, k = seen.shape
    order = np.tile(np.arange(k), (t_len, 1))
    pos = xy.copy()
    for name, parent in PAIRS:
        (li, ri), (lp, rp) = _pair(spec, name), _pair(spec, parent)
        both = seen[:, [li, ri, lp, rp]].all(1)
        read_l, read_r = _dist(pos, li, lp), _dist(pos, ri, rp)
        reach = [np.percentile(v[both], REACH_PERCENTILE) if both.sum() >= 10 else np.nan for v in (read_l, read_r)]
        reach = np.nanmax(reach) if np.isfinite(reach).any() else np.nan
        if not np.isfinite(reach) or reach <= 0:
            continue
        as_read = _over(read_l, reach) + _over(read_r, reach)
        exchanged = _over(_dist(pos, ri, lp), reach) + _over(_dist(pos, li, rp), reach)
        fits = both & (as_read >= MIN_EXCESS) & (exchanged <= MAX_EXCESS) & (as_read - exchanged >= MIN_EXCESS)
        last = None  # the pair's (left, right) positions as decided in the last frame both were seen
        for t in range(t_len):
            here = (pos[t, li], pos[t, ri])
            if fits[t] and last is not None:  # exchanged, the pair must also join its last frame better
                kept = np.linalg.norm(here[0] - last[0]) + np.linalg.norm(here[1] - last[1])
                crossed = np.linalg.norm(here[1] - last[0]) + np.linalg.norm(here[0] - last[1])
                if crossed < kept:
                    order[t, li], order[t, ri] = ri, li
                    pos[t, li], pos[t, ri] = xy[t, ri], xy[t, li]
            if seen[t, li] and seen[t, ri]:
                last = (pos[t, li].copy(), pos[t, ri].copy())
    return order


def limbs_from_parents(frames: list[PoseFrame], spec: SkeletonSpec, min_confidence: float = 0.1
                       ) -> tuple[list[PoseFrame], dict[int, int]]:
    """Each track's wrist and ankle pairs read on each other's limbs exchanged back (module docstring).
    frames: T tracked PoseFrames in order (people with id -1 pass through) -> (new frames, {track id: frames
    changed}); the input is not changed."""
    out = list(frames)
    report: dict[int, int] = {}
    if not frames or not applies(spec):
        return out, report
    for tid in track_ids(frames):
        rows = track_rows(frames, tid)
        xy = np.stack([frames[t].keypoints[p, :, :2] for t, p in rows]).astype(np.float64)
        conf = np.stack([frames[t].confidence[p] for t, p in rows]).astype(np.float64)
        orders = pair_orders(xy, (conf >= min_confidence) & np.isfinite(xy).all(-1), spec)
        changed = reorder_rows(out, rows, orders)
        if changed:
            report[tid] = changed
    return out, report


__all__ = ["PAIRS", "limbs_from_parents", "pair_orders"]
