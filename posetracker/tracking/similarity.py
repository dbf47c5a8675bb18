"""OKS-like similarity between detected people and predicted tracks.

COCO object keypoint similarity (OKS)::

    OKS = sum_j exp(-d_j^2 / (2 s^2 k_j^2)) / n,   k_j = 2 sigma_j

over the joints ``j`` that are confident in the detection and known in the
track (``n`` of them), with ``d_j`` the pixel distance and ``s^2`` an area.
Here ``s^2`` is the mean of the two keypoint bounding-box areas (detection
and track; a partly visible detection alone would give a too small, too
strict scale), floored at ``min_area``. Joints whose sigma is nan (virtual
joints such as the body centre) use the mean sigma. No common joint: 0.
"""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import SkeletonSpec

#: Sigma used for every joint when a skeleton defines none (about COCO's mean).
DEFAULT_SIGMA = 0.07


def joint_sigmas(spec: SkeletonSpec) -> np.ndarray:
    """(K,) OKS sigmas of ``spec``; nan entries replaced by the mean of the defined ones."""
    k = spec.num_joints
    if spec.sigmas is None or not np.any(np.isfinite(spec.sigmas)):
        return np.full(k, DEFAULT_SIGMA)
    s = np.asarray(spec.sigmas, np.float64)
    return np.where(np.isfinite(s), s, float(np.nanmean(s)))


def keypoint_bbox_area(xy: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """(N,) area in px^2 of the bounding box of each person's ``ok`` joints; 0 if none.

    xy: (N, K, 2) pixels; ok: (N, K) bool.
    """
    if xy.shape[0] == 0:
        return np.zeros(0)
    big = np.where(ok[..., None], xy, np.inf)
    small = np.where(ok[..., None], xy, -np.inf)
    span = small.max(axis=1) - big.min(axis=1)  # (N, 2)
    area = span[:, 0] * span[:, 1]
    return np.where(ok.any(axis=1), area, 0.0)


def oks_matrix(
    trk_xy: np.ndarray,
    trk_ok: np.ndarray,
    trk_area: np.ndarray,
    det_xy: np.ndarray,
    det_ok: np.ndarray,
    det_area: np.ndarray,
    sigmas: np.ndarray,
    min_area: float = 32.0**2,
) -> np.ndarray:
    """(T, D) OKS between T predicted tracks and D detections.

    trk_xy: (T, K, 2) px; trk_ok: (T, K) bool joints known in the track;
    trk_area: (T,) px^2; det_xy: (D, K, 2); det_ok: (D, K) confident joints;
    det_area: (D,); sigmas: (K,) finite.
    """
    n_t, n_d = trk_xy.shape[0], det_xy.shape[0]
    if n_t == 0 or n_d == 0:
        return np.zeros((n_t, n_d))
    d2 = np.sum((trk_xy[:, None] - det_xy[None]) ** 2, axis=-1)  # (T, D, K)
    s2 = np.maximum(0.5 * (trk_area[:, None] + det_area[None]), min_area)  # (T, D)
    var = (2.0 * sigmas) ** 2  # (K,)
    e = np.exp(-d2 / (2.0 * s2[..., None] * var))
    both = trk_ok[:, None] & det_ok[None]  # (T, D, K)
    e = np.where(both, e, 0.0)
    n = both.sum(axis=-1)
    return np.where(n > 0, e.sum(axis=-1) / np.maximum(n, 1), 0.0)
