"""Person scores as probabilities: the calibration map applied to every output PoseFrame's ``scores``.

The decoder's raw score (centre peak x mean joint confidence, :mod:`posetracker.decoding.tree`) ranks people
well but reads 0.1-0.4 for clearly visible ones, being a product of two probabilities. A skeleton may name
``score_calibration: [slope, offset]``, fitted by ``tools/score_calibration.py`` on labelled sets; the output
score is then ``1 / (1 + exp(-(slope * ln(max(raw, 1e-4)) + offset)))``, the probability that the reading
is a real person. The map is monotone (slope > 0), so the ranking and OKS AP stay as they are; the decoder's
and the refiners' thresholds keep working on the raw score, before the map.
"""

from __future__ import annotations

import numpy as np

FLOOR = 1e-4  # raw scores below it map as it does


def calibrated(scores: np.ndarray, calibration: tuple[float, float] | None) -> np.ndarray:
    """Raw person scores (P,) -> calibrated (P,) float32; ``calibration`` None: the raw scores."""
    scores = np.asarray(scores, np.float32)
    if calibration is None:
        return scores
    slope, offset = calibration
    z = slope * np.log(np.maximum(scores.astype(np.float64), FLOOR)) + offset
    return (1.0 / (1.0 + np.exp(-z))).astype(np.float32)
