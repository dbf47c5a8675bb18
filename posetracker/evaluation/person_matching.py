"""Predicted people against labelled ones: OKS, the one-to-one matching of people, PCK counts of the matches.

The building blocks of :mod:`posetracker.evaluation.metrics` (which re-exports them and whose docstring gives
the shapes and the OKS scale): ``pred`` (P, K, 2) px, ``pred_conf`` (P, K), ``gt`` (G, K, 3) x, y, v,
``boxes`` (G, 4) x, y, w, h, ``sigmas`` (K,).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from posetracker.oks import oks

EPS = np.spacing(1)  # keeps an OKS scale (area) and a precision's denominator off zero


def predicted_joints(pred: np.ndarray, pred_conf: np.ndarray) -> np.ndarray:
    """(P, K) bool: the joint was predicted (confidence > 0 and finite x, y)."""
    return (np.asarray(pred_conf) > 0) & np.isfinite(pred).all(axis=-1)


def oks_matrix(
    pred: np.ndarray,
    pred_conf: np.ndarray,
    gt: np.ndarray,
    areas: np.ndarray,
    sigmas: np.ndarray,
    boxes: np.ndarray | None = None,
) -> np.ndarray:
    """COCO object keypoint similarity (:func:`posetracker.oks.oks`), ``(P, G)`` float64 in [0, 1].

    For a ground truth with ``n > 0`` labelled joints:
    ``OKS = sum_labelled exp(-d^2 / (2 * area * (2 sigma)^2)) / n``; a joint
    that is not predicted contributes 0. For one with no labelled joint the
    COCO fallback applies (distance of the predicted joints outside the box
    grown by its size on every side; needs ``boxes``, else 0).
    """
    pred = np.asarray(pred, dtype=np.float64)
    gt = np.asarray(gt, dtype=np.float64)
    p, g = len(pred), len(gt)
    out = np.zeros((p, g), dtype=np.float64)
    if p == 0 or g == 0:
        return out
    valid = predicted_joints(pred, np.asarray(pred_conf))
    sigmas = np.asarray(sigmas, dtype=np.float64)  # (K,)
    areas = np.asarray(areas, dtype=np.float64).reshape(g)
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(g):
            lab = gt[j, :, 2] > 0
            area = areas[j] + EPS
            if lab.any():
                d2 = np.where(valid, ((pred - gt[j, None, :, :2]) ** 2).sum(-1), np.inf)  # (P, K)
                out[:, j] = oks(d2[:, lab], area, sigmas[lab])
            elif boxes is not None:
                bx, by, bw, bh = np.asarray(boxes[j], dtype=np.float64)
                x0, x1, y0, y1 = bx - bw, bx + 2 * bw, by - bh, by + 2 * bh
                dx = np.maximum(0, x0 - pred[..., 0]) + np.maximum(0, pred[..., 0] - x1)
                dy = np.maximum(0, y0 - pred[..., 1]) + np.maximum(0, pred[..., 1] - y1)
                out[:, j] = oks(np.where(valid, dx**2 + dy**2, np.inf), area, sigmas)
    return out


@dataclass(frozen=True)
class PeopleMatch:
    """One-to-one matching of predictions to ground-truth people.

    pairs: (M, 2) int64 rows (prediction index, ground-truth index)
    oks:   (P, G) float64 OKS of every prediction against every ground truth
    """

    pairs: np.ndarray
    oks: np.ndarray

    def matched_oks(self) -> np.ndarray:
        """(M,) OKS of the matched pairs."""
        return self.oks[self.pairs[:, 0], self.pairs[:, 1]] if len(self.pairs) else np.zeros(0)

    def gt_oks(self, num_gt: int) -> np.ndarray:
        """(G,) OKS of each ground truth with its matched prediction, 0 if none."""
        out = np.zeros(num_gt)
        out[self.pairs[:, 1]] = self.matched_oks()
        return out

    def gt_to_pred(self, num_gt: int) -> np.ndarray:
        """(G,) index of the prediction matched to each ground truth, -1 if none."""
        out = np.full(num_gt, -1, dtype=np.int64)
        out[self.pairs[:, 1]] = self.pairs[:, 0]
        return out


def match_people(
    pred: np.ndarray,
    pred_conf: np.ndarray,
    gt: np.ndarray,
    areas: np.ndarray,
    sigmas: np.ndarray,
    min_oks: float = 0.0,
) -> PeopleMatch:
    """Hungarian matching (max total OKS) of ``pred (P, K, 2)`` to ``gt (G, K, 3)``.

    Pairs with OKS == 0 or below ``min_oks`` are dropped (those people stay unmatched).
    """
    oks = oks_matrix(pred, pred_conf, gt, areas, sigmas)
    if oks.size == 0:
        return PeopleMatch(np.zeros((0, 2), np.int64), oks)
    rows, cols = linear_sum_assignment(oks, maximize=True)
    keep = (oks[rows, cols] > 0) & (oks[rows, cols] >= min_oks)
    pairs = np.stack([rows[keep], cols[keep]], axis=1).astype(np.int64)
    return PeopleMatch(pairs, oks)


def pck_joint_counts(
    pred: np.ndarray,
    pred_conf: np.ndarray,
    gt: np.ndarray,
    boxes: np.ndarray,
    pairs: np.ndarray,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``(hits, labelled)``, (K,) int each, for PCK@alpha per joint, threshold ``alpha * box diagonal`` per person.

    ``labelled`` counts every labelled joint of every ground truth in ``gt``;
    joints of unmatched people and joints not predicted are misses.
    """
    gt = np.asarray(gt, dtype=np.float64)
    lab = gt[..., 2] > 0
    labelled = lab.sum(axis=0).astype(np.int64).reshape(gt.shape[1])
    hits = np.zeros(gt.shape[1], np.int64)
    if len(pairs):
        pred = np.asarray(pred, dtype=np.float64)
        valid = predicted_joints(pred, np.asarray(pred_conf))
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        for pi, gi in np.asarray(pairs, dtype=np.int64):
            thr = alpha * float(np.hypot(boxes[gi, 2], boxes[gi, 3]))
            d = np.linalg.norm(pred[pi] - gt[gi, :, :2], axis=-1)
            hits += lab[gi] & valid[pi] & (d <= thr)
    return hits, labelled


def pck_counts(
    pred: np.ndarray,
    pred_conf: np.ndarray,
    gt: np.ndarray,
    boxes: np.ndarray,
    pairs: np.ndarray,
    alpha: float,
) -> tuple[int, int]:
    """``(hits, labelled)`` for PCK@alpha over all joints (:func:`pck_joint_counts` summed)."""
    hits, labelled = pck_joint_counts(pred, pred_conf, gt, boxes, pairs, alpha)
    return int(hits.sum()), int(labelled.sum())
