"""Root depth from a person's size in the image, for models without a trained depth head.

With a pinhole camera of focal length f (pixels), a body segment of real
length L metres seen as l pixels (roughly facing the camera) lies at depth
z = f * L / l. For human18 the segment is the torso (mid-shoulder to
mid-hip, ~0.50 m for adults); when either end is not confident, the
shoulder width (~0.38 m) or the hip width (~0.30 m). Other skeletons have no
known scale and get ``DEFAULT_DEPTH_M``. The estimate gives every joint of
a person that person's root depth (a flat figure at the right distance); a
trained depth head replaces it, except for people smaller than it was trained
on (:func:`guard_far_people`).
"""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import SkeletonSpec

DEFAULT_DEPTH_M = 3.0
TORSO_M = 0.50
SHOULDER_WIDTH_M = 0.38
HIP_WIDTH_M = 0.30
# Torso length (mid-shoulder to mid-hip) at the 256-px network input below which the shipped depth head
# extrapolates: the 5th percentile over the people of its training clips (18.6 px; median 39 px, root depth
# 1.1-5.7 m from the 5th to the 95th percentile). Smaller people are farther than it has seen: on a sprint
# 12-13 m away (torso ~10 px) its body-centre depth was 7.3 m off where body scale was 1.5 m off.
MIN_TORSO_INPUT_PX = 18.0


def depth_from_scale(xy: np.ndarray, confidence: np.ndarray, spec: SkeletonSpec, focal_px: float,
                     min_confidence: float = 0.2) -> np.ndarray:
    """xy (P, K, 2) px, confidence (P, K) -> depth (P, K) metres (each person flat at its root depth)."""
    p, k = confidence.shape
    z = np.full(p, DEFAULT_DEPTH_M)
    names = spec.joint_names
    if {"left_shoulder", "right_shoulder", "left_hip", "right_hip"} <= set(names) and p:
        ls, rs, lh, rh = (spec.index(n) for n in ("left_shoulder", "right_shoulder", "left_hip", "right_hip"))
        ok = confidence >= min_confidence
        torso = torso_length(xy, confidence, spec, min_confidence)
        cues = [  # (pixel length, real length, usable) in order of preference
            (np.nan_to_num(torso), TORSO_M, np.isfinite(torso)),
            (np.linalg.norm(xy[:, ls] - xy[:, rs], axis=-1), SHOULDER_WIDTH_M, ok[:, ls] & ok[:, rs]),
            (np.linalg.norm(xy[:, lh] - xy[:, rh], axis=-1), HIP_WIDTH_M, ok[:, lh] & ok[:, rh]),
        ]
        done = np.zeros(p, bool)
        for length_px, real_m, usable in cues:
            use = usable & ~done & (length_px > 2.0)
            z[use] = focal_px * real_m / length_px[use]
            done |= use
    return np.repeat(np.clip(z, 0.3, 50.0)[:, None], k, axis=1).astype(np.float32)


def torso_length(xy: np.ndarray, confidence: np.ndarray, spec: SkeletonSpec, min_confidence: float = 0.2) -> np.ndarray:
    """xy (P, K, 2) px, confidence (P, K) -> (P,) mid-shoulder to mid-hip length in px (nan if not all four seen)."""
    names = spec.joint_names
    if not {"left_shoulder", "right_shoulder", "left_hip", "right_hip"} <= set(names):
        return np.full(confidence.shape[0], np.nan)
    ls, rs, lh, rh = (spec.index(n) for n in ("left_shoulder", "right_shoulder", "left_hip", "right_hip"))
    seen = (confidence[:, [ls, rs, lh, rh]] >= min_confidence).all(1)
    length = np.linalg.norm((xy[:, ls] + xy[:, rs]) / 2 - (xy[:, lh] + xy[:, rh]) / 2, axis=-1)
    return np.where(seen, length, np.nan)


def guard_far_people(head_depth: np.ndarray, xy_input: np.ndarray, xy_source: np.ndarray, confidence: np.ndarray,
                     spec: SkeletonSpec, focal_px: float, min_torso_px: float = MIN_TORSO_INPUT_PX) -> np.ndarray:
    """Trained head depths with body-scale root depths for people smaller than the head was trained on.

    head_depth (P, K) m; xy_input (P, K, 2) network-input px; xy_source (P, K, 2) source px (``focal_px``
    is the source camera's); confidence (P, K) -> (P, K) m. A person whose torso at the input is shorter
    than ``min_torso_px`` keeps the head's depths relative to its root, placed at :func:`depth_from_scale`.
    """
    small = torso_length(xy_input, confidence, spec) < min_torso_px  # nan (torso unseen) -> False
    if not small.any():
        return head_depth
    out = head_depth.copy()
    scale = depth_from_scale(xy_source[small], confidence[small], spec, focal_px)[:, spec.root]
    out[small] = head_depth[small] - head_depth[small, spec.root, None] + scale[:, None]
    return out
