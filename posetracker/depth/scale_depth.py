"""Root depth from a person's size in the image, for models without a trained depth head.

With a pinhole camera of focal length f (pixels), a body segment of real
length L metres seen as l pixels (roughly facing the camera) lies at depth
z = f * L / l. For human18 the segment is the torso (mid-shoulder to
mid-hip, ~0.50 m for adults); when either end is not confident, the
shoulder width (~0.38 m) or the hip width (~0.30 m). Other skeletons have no
known scale and get ``DEFAULT_DEPTH_M``. The estimate gives every joint of
a person that person's root depth (a flat figure at the right distance); a
trained depth head replaces it.
"""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import SkeletonSpec

DEFAULT_DEPTH_M = 3.0
TORSO_M = 0.50
SHOULDER_WIDTH_M = 0.38
HIP_WIDTH_M = 0.30


def root_depth_from_scale(xy: np.ndarray, confidence: np.ndarray, spec: SkeletonSpec, focal_px: float,
                          min_confidence: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """xy (P, K, 2) px, confidence (P, K) -> (depth (P,) metres, cue (P,) int).

    cue: the cue used, 0 torso, 1 shoulder width, 2 hip width, -1 none (depth ``DEFAULT_DEPTH_M``).
    """
    p, k = confidence.shape
    z = np.full(p, DEFAULT_DEPTH_M)
    cue = np.full(p, -1)
    names = spec.joint_names
    if {"left_shoulder", "right_shoulder", "left_hip", "right_hip"} <= set(names) and p:
        ls, rs, lh, rh = (spec.index(n) for n in ("left_shoulder", "right_shoulder", "left_hip", "right_hip"))
        ok = confidence >= min_confidence
        sh_mid, hip_mid = (xy[:, ls] + xy[:, rs]) / 2, (xy[:, lh] + xy[:, rh]) / 2
        d = np.stack([sh_mid - hip_mid, xy[:, ls] - xy[:, rs], xy[:, lh] - xy[:, rh]])  # (3, P, 2)
        torso, shoulders, hips = np.sqrt(np.add.reduce(d * d, axis=-1))  # (P,) px each
        cues = [  # (pixel length, real length, usable) in order of preference
            (torso, TORSO_M, ok[:, ls] & ok[:, rs] & ok[:, lh] & ok[:, rh]),
            (shoulders, SHOULDER_WIDTH_M, ok[:, ls] & ok[:, rs]),
            (hips, HIP_WIDTH_M, ok[:, lh] & ok[:, rh]),
        ]
        for i, (length_px, real_m, usable) in enumerate(cues):
            use = usable & (cue < 0) & (length_px > 2.0)
            z[use] = focal_px * real_m / length_px[use]
            cue[use] = i
    return np.minimum(np.maximum(z, 0.3), 50.0), cue  # (np.clip's cost; z is never nan)


def depth_from_scale(xy: np.ndarray, confidence: np.ndarray, spec: SkeletonSpec, focal_px: float,
                     min_confidence: float = 0.2) -> np.ndarray:
    """xy (P, K, 2) px, confidence (P, K) -> depth (P, K) metres (each person flat at its root depth)."""
    z, _ = root_depth_from_scale(xy, confidence, spec, focal_px, min_confidence)
    return np.repeat(z[:, None], confidence.shape[1], axis=1).astype(np.float32)
