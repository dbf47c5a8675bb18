"""Method A step 8: several people share one heatmap per joint.

Each joint's heatmap holds one peak per person. A person scores every candidate
peak of that joint against the position predicted from *its own* centre/parent,
and two people never take the same peak: conflicts are resolved by score.

Score of person p for candidate c::

    score = heat(c) * exp(-0.5 * (d / tau_p) ** 2),   tau_p = window_p / 2
    score = 0 when d > window_p

with d the distance (cells) between the candidate and the person's prediction.
A Gaussian weight is used (not ``heat / (1 + d / s)``) because it is flat near
the prediction, so a correct peak with a small prediction error keeps nearly its
full heatmap value as confidence, and it falls off fast, so a peak far from this
person's prediction (most likely someone else's joint) scores little. At the
window edge the weight is exp(-2) ~ 0.14.

Functions work on J joints at once (one score matrix per joint).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment


def score_matrix(
    pred: np.ndarray, window: np.ndarray, cand_xy: np.ndarray, cand_heat: np.ndarray, cand_valid: np.ndarray
) -> np.ndarray:
    """People x candidates scores, per joint.

    pred: (J, P, 2) predicted positions (cells); window: (P,) search radius (cells);
    cand_xy: (J, C, 2) candidate positions; cand_heat, cand_valid: (J, C) -> (J, P, C).
    """
    dx = pred[:, :, None, 0] - cand_xy[:, None, :, 0]
    dy = pred[:, :, None, 1] - cand_xy[:, None, :, 1]
    d2 = dx * dx + dy * dy
    win2 = (window * window)[None, :, None]
    s = cand_heat[:, None, :] * np.exp(-2.0 * d2 / win2)  # tau = window / 2
    s[(d2 > win2) | ~cand_valid[:, None, :]] = 0.0
    return s


def assign_greedy(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Greedy one-to-one assignment by descending score, per joint.

    scores: (J, P, C) -> (J, P) int64 candidate index per person, -1 where the
    person's candidates are all taken or below ``threshold``.

    Fast path: when every person's best candidate also has that person as its best
    (no conflicts), greedy reduces to "each takes its best". Otherwise rounds: each
    round gives every joint's best remaining (person, candidate) pair, then removes both.
    """
    n_j, n_p, n_c = scores.shape
    out = np.full((n_j, n_p), -1, dtype=np.int64)
    if n_j == 0 or n_p == 0 or n_c == 0:
        return out
    s = np.where(scores >= threshold, scores, -1.0)
    best_c = s.argmax(axis=2)  # (J, P)
    ok = np.take_along_axis(s, best_c[..., None], axis=2)[..., 0] >= threshold
    best_p = s.argmax(axis=1)  # (J, C)
    mutual = np.take_along_axis(best_p, best_c, axis=1) == np.arange(n_p)[None, :]
    if np.all(mutual | ~ok):
        return np.where(ok, best_c, -1)
    rows = np.arange(n_j)
    for _ in range(min(n_p, n_c)):
        flat = s.reshape(n_j, n_p * n_c)
        best = flat.argmax(axis=1)
        ok = flat[rows, best] >= threshold
        if not ok.any():
            break
        j, best = rows[ok], best[ok]
        p, c = np.divmod(best, n_c)
        out[j, p] = c
        s[j, p, :] = -1.0
        s[j, :, c] = -1.0
    return out


def assign_hungarian(scores: np.ndarray, threshold: float) -> np.ndarray:
    """One-to-one assignment maximising the total score (scipy linear_sum_assignment), per joint.

    scores: (J, P, C) -> (J, P) int64 candidate index per person, -1 where unassigned
    or the assigned score is below ``threshold``.
    """
    out = np.full(scores.shape[:2], -1, dtype=np.int64)
    if scores.size == 0:
        return out
    for j in range(scores.shape[0]):
        s = scores[j]
        rows, cols = linear_sum_assignment(np.where(s >= threshold, s, 0.0), maximize=True)
        ok = s[rows, cols] >= threshold
        out[j, rows[ok]] = cols[ok]
    return out


ASSIGNERS = {"greedy": assign_greedy, "hungarian": assign_hungarian}

__all__ = ["score_matrix", "assign_greedy", "assign_hungarian", "ASSIGNERS"]
