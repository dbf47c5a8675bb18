"""OKS between detected people and predicted tracks (the formula: :mod:`posetracker.oks`).

Over the joints that are confident in the detection and known in the track;
the area ``s^2`` is the mean of the two keypoint bounding-box areas (detection
and track; a partly visible detection alone would give a too small, too
strict scale), floored at ``min_area``. Joints whose sigma is nan (virtual
joints such as the body centre) use the mean sigma (:func:`posetracker.oks.joint_sigmas`).
No common joint: 0.
"""

from __future__ import annotations

import numpy as np

from posetracker.oks import oks


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
    d2 = np.add.reduce((trk_xy[:, None] - det_xy[None]) ** 2, axis=-1)  # (T, D, K)
    s2 = np.maximum(0.5 * (trk_area[:, None] + det_area[None]), min_area)  # (T, D)
    return oks(d2, s2, sigmas, trk_ok[:, None] & det_ok[None])
