"""Person scores: read from the final pose (after every refiner), as probabilities.

The raw score is the decoder's formula (:mod:`posetracker.decoding.tree`): the root's confidence (its centre
peak) x the mean confidence of the other joints, computed again on the *final* joints (:func:`pose_scores`),
so a precision stage that finds a person's joints raises the person's score and one that finds nothing lowers
it (the decoder's own score of a first reading is only used to rank centre peaks). It ranks people well but
reads 0.1-0.4 for clearly visible ones, being a product of two probabilities. A skeleton may name
``score_calibration: [slope, offset]``, fitted by ``posetracker train score-calibration`` on labelled sets; the output
score is then ``1 / (1 + exp(-(slope * ln(max(raw, 1e-4)) + offset)))``, the probability that the reading
is a real person. The map is monotone (slope > 0), so the ranking and OKS AP stay as they are; the decoder's
and the refiners' thresholds keep working on the raw score, before the map.
"""

from __future__ import annotations

import numpy as np

FLOOR = 1e-4  # raw scores below it map as it does


def pose_scores(confidence: np.ndarray, root: int) -> np.ndarray:
    """Raw person scores (P,) float64 of final poses: confidence (P, K) in [0, 1] -> the root's confidence x
    the mean of the other joints' (K == 1: the root's alone)."""
    confidence = np.asarray(confidence, np.float64)
    if confidence.shape[1] == 1:
        return confidence[:, 0].copy()
    others = np.delete(confidence, root, axis=1)
    return np.clip(confidence[:, root] * others.mean(axis=1), 0.0, 1.0)


def calibrated(scores: np.ndarray, calibration: tuple[float, float] | None) -> np.ndarray:
    """Raw person scores (P,) -> calibrated (P,) float32; ``calibration`` None: the raw scores."""
    scores = np.asarray(scores, np.float32)
    if calibration is None:
        return scores
    slope, offset = calibration
    z = slope * np.log(np.maximum(scores.astype(np.float64), FLOOR)) + offset
    return (1.0 / (1.0 + np.exp(-z))).astype(np.float32)
