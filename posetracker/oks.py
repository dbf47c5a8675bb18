"""Object keypoint similarity (OKS): the one formula, used by every caller.

COCO's definition, per pair of people::

    OKS = sum_{j in mask} exp(-d_j^2 / (2 s^2 k_j^2)) / |mask|,   k_j = 2 sigma_j

- ``d_j^2``: squared pixel distance of joint j between the two people;
- ``sigma_j``: the skeleton's per-joint OKS sigma (COCO's for the COCO joints;
  :func:`joint_sigmas` fills the undefined ones with the mean, or uses
  :data:`DEFAULT_SIGMA` for a skeleton without sigmas); so ``k_j = 2 sigma_j``;
- ``s^2``: the *area*, in px^2, given by the caller (COCO divides by the
  ground truth's segmentation area);
- ``mask``: the joints that count; a joint in the mask that should score 0
  (e.g. labelled but not predicted) is given ``d_j^2 = inf``. An empty mask
  gives 0.

The area conventions of the callers (each keeps its own, so its numbers do
not change):

- evaluation (:func:`posetracker.evaluation.metrics.oks_matrix`):
  ``area_factor * w * h`` of the ground truth's box (plus machine epsilon),
  mask = the ground truth's labelled joints;
- tracking (:func:`posetracker.tracking.similarity.oks_matrix`): the mean of
  the two :func:`keypoint_bbox_area` (track and detection), floored at
  ``32^2``, mask = joints known in the track and confident in the detection;
- training labels (``PipelineTeacher``/``TeacherEnsemble`` agreement): the
  :func:`keypoint_bbox_area` of the pipeline's person, floored at ``32^2``;
- duplicate people (:mod:`posetracker.decoding.duplicates`): the
  :func:`keypoint_bbox_area` of the stronger person's confident joints,
  floored at 1, mask = joints confident in both.
"""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import SkeletonSpec

#: Sigma used for every joint when a skeleton defines none (about COCO's mean).
DEFAULT_SIGMA = 0.07


def oks(d2: np.ndarray, area: np.ndarray | float, sigmas: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """(...) OKS of pairs of people (see the module docstring).

    d2: (..., K) squared distances in px^2 (inf: the joint scores 0); area: (...) s^2 in px^2;
    sigmas: (K,) finite; mask: (..., K) bool joints that count (None: all K).
    """
    var = (2.0 * sigmas) ** 2  # (K,) k^2
    e = np.exp(-d2 / (2.0 * np.asarray(area)[..., None] * var))
    if mask is None:  # no masking copy: the terms are summed in the caller's memory order, as before
        n = e.shape[-1]
        return e.sum(axis=-1) / n if n else np.zeros(e.shape[:-1])
    n = mask.sum(axis=-1)
    return np.where(n > 0, np.where(mask, e, 0.0).sum(axis=-1) / np.maximum(n, 1), 0.0)


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


def joint_sigmas(spec: SkeletonSpec) -> np.ndarray:
    """(K,) OKS sigmas of ``spec``; nan entries replaced by the mean of the defined ones."""
    k = spec.num_joints
    if spec.sigmas is None or not np.any(np.isfinite(spec.sigmas)):
        return np.full(k, DEFAULT_SIGMA)
    s = np.asarray(spec.sigmas, np.float64)
    return np.where(np.isfinite(s), s, float(np.nanmean(s)))
