"""Does the set of people a user sees mean something? One skeleton per real person, sure scores, no duplicates.

:func:`posetracker.evaluation.metrics.summarize`'s PCK matches each labelled person to its best candidate among
*every* prediction (Hungarian, maximum OKS): a wrong skeleton scored 0.9 on a person is forgiven when a junk one
scored 0.01 happens to lie better, so extra low-score skeletons inflate it. These metrics read the predictions as
a user does, strongest first:

- ``pck_first@<alpha>``: PCK with one skeleton per real person: predictions in score order each claim the
  unclaimed labelled person they overlap most (OKS >= ``claim_oks``); a person's joints are scored on the skeleton
  that claimed it, so a duplicate or a junk skeleton never stands in for the person's real reading.
- ``duplicates``: predictions whose OKS with a higher-scored prediction is at least 0.5 (over the joints both
  predict with confidence >= 0.1; area: the stronger one's keypoint box): the same person shown twice.
- ``sure_share``: of the labelled people found (their claiming skeleton at OKS >= 0.5), the share whose skeleton
  scores at least ``sure_score`` (0.25): visible people that a score threshold would not hide.
- ``weak_skeletons``: predictions scoring under 0.02 (junk a user must filter).

Shapes as in :mod:`posetracker.evaluation.metrics` (pred (P, K, 2), pred_conf (P, K), scores (P,), gt (G, K, 3),
boxes (G, 4)).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from posetracker.evaluation.metrics import ImageEval, oks_matrix, pck_joint_counts
from posetracker.oks import keypoint_bbox_area, oks

SURE_SCORE = 0.25  # a person score a user can trust (sure_share)
WEAK_SCORE = 0.02  # under it a skeleton is junk (weak_skeletons)
CLAIM_OKS = 0.1  # least OKS for a skeleton to claim a labelled person (pck_first)
DUPLICATE_OKS = 0.5


def claim_people(oks_pg: np.ndarray, scores: np.ndarray, claim_oks: float = CLAIM_OKS) -> np.ndarray:
    """Predictions in score order claim labelled people: oks_pg (P, G), scores (P,) -> (G,) int64 index of the
    prediction that claimed each person (-1: none); each prediction claims the unclaimed person it overlaps most,
    if at that OKS >= ``claim_oks``."""
    p, g = oks_pg.shape
    owner = np.full(g, -1, np.int64)
    for i in np.argsort(-np.asarray(scores), kind="stable"):
        free = np.where(owner < 0, oks_pg[i], -1.0)
        if g and free.max() >= claim_oks:
            owner[int(free.argmax())] = i
    return owner


def duplicate_count(pred: np.ndarray, pred_conf: np.ndarray, scores: np.ndarray, sigmas: np.ndarray,
                    threshold: float = DUPLICATE_OKS, min_confidence: float = 0.1) -> int:
    """Predictions whose OKS with a higher-scored one is >= ``threshold`` (joints confident in both; area: the
    higher-scored one's keypoint box, floored at 1 px^2)."""
    n = len(scores)
    if n < 2:
        return 0
    sigmas = np.where(np.isfinite(sigmas), sigmas, np.nanmean(sigmas))
    ok = (np.asarray(pred_conf) >= min_confidence) & np.isfinite(pred).all(-1)
    xy = np.nan_to_num(np.asarray(pred, np.float64))
    area = np.maximum(keypoint_bbox_area(xy, ok), 1.0)
    order = np.argsort(-np.asarray(scores), kind="stable")
    count = 0
    for rank, i in enumerate(order[1:], 1):
        stronger = order[:rank]
        d2 = ((xy[stronger] - xy[i]) ** 2).sum(-1)  # (S, K)
        both = ok[stronger] & ok[i]
        if (oks(d2, area[stronger], sigmas, both) >= threshold).any():
            count += 1
    return count


def people_set_metrics(images: Sequence[ImageEval], sigmas: np.ndarray, pck_alphas: Sequence[float] = (0.1,),
                       area_factor: float = 1.0) -> dict[str, float | int]:
    """``pck_first@<alpha>``, ``duplicates``, ``sure_share``, ``found_first``, ``weak_skeletons`` over ``images``
    (module docstring); labelled people without a labelled joint are left out, as in COCO."""
    hits = {a: 0 for a in pck_alphas}
    labelled = found = sure = duplicates = weak = 0
    for im in images:
        keep = ~im.gt_ignored
        gt, boxes = im.gt[keep], im.boxes[keep]
        o = oks_matrix(im.pred, im.pred_conf, gt, area_factor * boxes[:, 2] * boxes[:, 3], sigmas)
        owner = claim_people(o, im.scores)
        pairs = np.array([(p, g) for g, p in enumerate(owner) if p >= 0], np.int64).reshape(-1, 2)
        for a in pck_alphas:
            hits[a] += int(pck_joint_counts(im.pred, im.pred_conf, gt, boxes, pairs, a)[0].sum())
        labelled += int((gt[..., 2] > 0).sum())
        good = [(p, g) for p, g in pairs if o[p, g] >= 0.5]
        found += len(good)
        sure += sum(1 for p, _ in good if im.scores[p] >= SURE_SCORE)
        duplicates += duplicate_count(im.pred, im.pred_conf, im.scores, sigmas)
        weak += int((np.asarray(im.scores) < WEAK_SCORE).sum())
    out: dict[str, float | int] = {f"pck_first@{a:g}": hits[a] / labelled if labelled else float("nan")
                                   for a in pck_alphas}
    out.update(duplicates=duplicates, found_first=found, sure_share=sure / found if found else float("nan"),
               weak_skeletons=weak)
    return out
