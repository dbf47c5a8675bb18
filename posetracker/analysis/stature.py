"""A person's standing height from their 3-D joints: the check on metric scale.

The ankle -> knee -> hip -> shoulder -> ear chain of a standing adult is about
0.90 of their height (segment lengths as fractions of stature, Drillis and
Contini 1966: lower leg 0.246, thigh 0.245, hip to shoulder 0.288, shoulder
to ear 0.118; the ankle's height and the head above the ear make up the
rest). Each frame where one whole leg, both hips, both shoulders and an ear
are known gives ``chain / CHAIN_FRACTION``; a track's stature is the median
over its frames, so bent knees and a bowed head in some frames move it little.

Works on any skeleton with the COCO joint names (human18).
"""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import SkeletonSpec

CHAIN_FRACTION = 0.897  # (ankle-knee + knee-hip + hip-shoulder + shoulder-ear) / stature
MIN_FRAMES = 5


def _mid(world: np.ndarray, ok: np.ndarray, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Midpoint of joints a and b: (T, 3) and where both are known (T,)."""
    return 0.5 * (world[:, a] + world[:, b]), ok[:, a] & ok[:, b]


def stature_per_frame(world: np.ndarray, ok: np.ndarray, spec: SkeletonSpec) -> np.ndarray:
    """world (T, K, 3) m, ok (T, K) -> (T,) stature estimate m per frame (nan where the chain is incomplete)."""
    j = spec.index
    ok = ok & np.isfinite(world).all(-1)
    legs = []
    for side in ("left", "right"):
        ankle, knee, hip = j(f"{side}_ankle"), j(f"{side}_knee"), j(f"{side}_hip")
        leg = (np.linalg.norm(world[:, ankle] - world[:, knee], axis=-1)
               + np.linalg.norm(world[:, knee] - world[:, hip], axis=-1))
        legs.append(np.where(ok[:, ankle] & ok[:, knee] & ok[:, hip], leg, np.nan))
    legs = np.stack(legs)  # (2, T)
    count = np.isfinite(legs).sum(axis=0)
    leg = np.where(count > 0, np.nansum(legs, axis=0) / np.maximum(count, 1), np.nan)  # (T,) mean of whole legs
    hips, hips_ok = _mid(world, ok, j("left_hip"), j("right_hip"))
    shoulders, shoulders_ok = _mid(world, ok, j("left_shoulder"), j("right_shoulder"))
    ears, ears_ok = _mid(world, ok, j("left_ear"), j("right_ear"))
    for side in ("left_ear", "right_ear"):  # side-on: one ear is enough
        one = ~ears_ok & ok[:, j(side)]
        ears[one], ears_ok = world[one, j(side)], ears_ok | one
    trunk = np.linalg.norm(shoulders - hips, axis=-1) + np.linalg.norm(ears - shoulders, axis=-1)
    chain = np.where(hips_ok & shoulders_ok & ears_ok, leg + trunk, np.nan)
    return chain / CHAIN_FRACTION


def stature(world: np.ndarray, ok: np.ndarray, spec: SkeletonSpec, min_frames: int = MIN_FRAMES) -> float:
    """world (T, K, 3) m, ok (T, K) of one track -> median stature estimate m (nan if fewer than
    ``min_frames`` frames have the whole chain)."""
    per_frame = stature_per_frame(world, ok, spec)
    per_frame = per_frame[np.isfinite(per_frame)]
    return float(np.median(per_frame)) if len(per_frame) >= min_frames else float("nan")


def track_statures(world: np.ndarray, ok: np.ndarray, spec: SkeletonSpec) -> list[tuple[int, float]]:
    """world (T, N, K, 3), ok (T, N, K) -> [(frames with the whole chain, stature m)] per track n."""
    out = []
    for n in range(world.shape[1]):
        per_frame = stature_per_frame(world[:, n], ok[:, n], spec)
        good = per_frame[np.isfinite(per_frame)]
        out.append((len(good), float(np.median(good)) if len(good) >= MIN_FRAMES else float("nan")))
    return out
