"""Pose metrics on one common joint set: OKS, person matching, PCK, COCO keypoint AP, recall.

Every function works on ``K`` joints that both sides share (the runner slices
human18 predictions and mapped ground truth down to the set's mapped joints).

Shapes:

- ``pred``       (P, K, 2) predicted x, y in px
- ``pred_conf``  (P, K)    joint confidence; a joint with confidence <= 0 or a
  non-finite coordinate counts as *not predicted* (OKS term 0, PCK miss)
- ``scores``     (P,)      person scores (order of detections for AP)
- ``gt``         (G, K, 3) ground-truth x, y, v (v > 0 = labelled)
- ``boxes``      (G, 4)    ground-truth person box x, y, w, h in px (annotation
  bbox, or the bbox of the labelled keypoints when the annotation has none)
- ``sigmas``     (K,)      COCO OKS sigmas

Scale: COCO divides by the person's *segmentation* area, which these sets do
not have; here ``s^2 = area = area_factor * w * h`` of the ground-truth box,
``area_factor = 1`` by default (the full box area, so OKS is somewhat more
lenient than COCO's, whose segment areas are about half the box area).

Ground-truth people with no labelled joint among the K are *ignored* as in
COCO (``num_keypoints == 0``): they count neither as people to find nor as
misses, and a detection matched to one is neither a TP nor an FP.

OKS, the matching of people and the PCK counts are in :mod:`posetracker.evaluation.person_matching` (re-exported
here); this module adds COCO's AP and the summary over images.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from posetracker.evaluation.person_matching import (  # noqa: F401 (pck_counts: re-exported, see __all__)
    EPS, PeopleMatch, match_people, oks_matrix, pck_counts, pck_joint_counts, predicted_joints)

__all__ = [
    "COCO_OKS_THRESHOLDS",
    "ImageEval",
    "PeopleMatch",
    "coco_ap",
    "paired_bootstrap",
    "match_people",
    "oks_matrix",
    "pck_counts",
    "pck_joint_counts",
    "people_recall",
    "summarize",
]

COCO_OKS_THRESHOLDS: np.ndarray = np.linspace(0.5, 0.95, 10)  # 0.50:0.05:0.95
_RECALL_POINTS = np.linspace(0.0, 1.0, 101)  # COCO's 101-point interpolation


@dataclass(frozen=True)
class ImageEval:
    """Predictions and ground truth of one image over the K evaluated joints (shapes: module docstring)."""

    pred: np.ndarray
    pred_conf: np.ndarray
    scores: np.ndarray
    gt: np.ndarray
    boxes: np.ndarray
    image_height: float = 0.0  # px; 0 = unknown (no "tall people" recall)
    # False where the source labels one person at a time (MPII's single-person annotation): a prediction that
    # matches no labelled person and whose joints' box overlaps no labelled person's box is on someone the set
    # does not label, and AP leaves it out (neither true nor false positive), as COCO does with crowd regions.
    every_person_labelled: bool = True

    def __post_init__(self) -> None:
        p, g = len(self.scores), len(self.boxes)
        k = self.gt.shape[1] if self.gt.ndim == 3 else self.pred.shape[1]
        for name, arr, shape in (("pred", self.pred, (p, k, 2)), ("pred_conf", self.pred_conf, (p, k)),
                                 ("gt", self.gt, (g, k, 3)), ("boxes", self.boxes, (g, 4))):
            if tuple(arr.shape) != shape:
                raise ValueError(f"ImageEval.{name}: expected shape {shape}, got {tuple(arr.shape)}")

    @property
    def gt_ignored(self) -> np.ndarray:
        """(G,) bool: ground truth without any labelled joint (ignored, as in COCO)."""
        return ~(self.gt[..., 2] > 0).any(axis=1)

    def areas(self, area_factor: float = 1.0) -> np.ndarray:
        """(G,) OKS scale s^2 = area_factor * w * h of the ground-truth boxes."""
        return area_factor * self.boxes[:, 2] * self.boxes[:, 3]


def _greedy_match(oks: np.ndarray, gt_ignored: np.ndarray, thr: float) -> tuple[np.ndarray, np.ndarray]:
    """COCOeval.evaluateImg for one threshold: detections (rows, already score-sorted) take, in order,
    the unmatched ground truth with the highest OKS >= thr, non-ignored ones first.
    Returns ``(dt_matched (D,) bool, dt_ignored (D,) bool)``."""
    d, g = oks.shape
    g_order = np.argsort(gt_ignored, kind="stable")  # non-ignored first
    gt_taken = np.zeros(g, dtype=bool)
    dt_matched = np.zeros(d, dtype=bool)
    dt_ignored = np.zeros(d, dtype=bool)
    for i in range(d):
        best, m = min(thr, 1 - 1e-10), -1
        for j in g_order:
            if gt_taken[j]:
                continue
            if m > -1 and not gt_ignored[m] and gt_ignored[j]:
                break  # a real match beats any ignored one
            if oks[i, j] < best:
                continue
            best, m = oks[i, j], j
        if m > -1:
            gt_taken[m] = True
            dt_matched[i] = True
            dt_ignored[i] = gt_ignored[m]
    return dt_matched, dt_ignored


def _average_precision(scores: np.ndarray, tp: np.ndarray, fp: np.ndarray, num_gt: int) -> float:
    """COCO 101-point interpolated AP of pooled detections (``tp``/``fp`` exclude ignored ones)."""
    order = np.argsort(-scores, kind="mergesort")
    tps = np.cumsum(tp[order]).astype(np.float64)
    fps = np.cumsum(fp[order]).astype(np.float64)
    nd = len(tps)
    rc = tps / num_gt
    pr = tps / (fps + tps + EPS)
    for i in range(nd - 1, 0, -1):  # precision envelope: non-increasing in recall
        pr[i - 1] = max(pr[i - 1], pr[i])
    q = np.zeros(len(_RECALL_POINTS))
    inds = np.searchsorted(rc, _RECALL_POINTS, side="left")
    ok = inds < nd
    q[ok] = pr[inds[ok]]
    return float(q.mean())


def _ranked_matches(im: ImageEval, sigmas: np.ndarray, thresholds: np.ndarray, area_factor: float, max_dets: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One image's ``max_dets`` highest-scored predictions, greedily matched at each OKS threshold (T,):
    ``(scores (D,), matched (T, D) bool, matched an ignored person (T, D) bool)``, in score order."""
    order = np.argsort(-np.asarray(im.scores, dtype=np.float64), kind="mergesort")[:max_dets]
    oks = oks_matrix(im.pred[order], im.pred_conf[order], im.gt, im.areas(area_factor), sigmas, im.boxes)
    pairs = [_greedy_match(oks, im.gt_ignored, float(thr)) for thr in thresholds]
    d = len(order)
    matched = np.array([m for m, _ in pairs], bool).reshape(len(thresholds), d)
    ignored = np.array([i for _, i in pairs], bool).reshape(len(thresholds), d)
    if not im.every_person_labelled:
        ignored |= ~matched & _apart_from(im.pred[order], im.pred_conf[order], im.boxes)[None]
    return np.asarray(im.scores, dtype=np.float64)[order], matched, ignored


def _apart_from(pred: np.ndarray, pred_conf: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(D,) bool: the box of each prediction's joints (pred (D, K, 2), pred_conf (D, K)) overlaps none of
    ``boxes`` (G, 4) x, y, w, h; a prediction without a joint is apart."""
    ok = predicted_joints(pred, pred_conf)
    inf = np.where(ok[..., None], pred, np.inf).min(axis=1)  # (D, 2)
    sup = np.where(ok[..., None], pred, -np.inf).max(axis=1)
    lo, hi = boxes[None, :, :2], boxes[None, :, :2] + boxes[None, :, 2:]  # (1, G, 2)
    overlaps = ((inf[:, None] <= hi) & (sup[:, None] >= lo)).all(-1)  # (D, G)
    return ~overlaps.any(axis=1)


def detection_outcomes(images: Sequence[ImageEval], sigmas: np.ndarray, threshold: float = 0.5,
                       area_factor: float = 1.0, max_dets: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Every prediction as COCO's AP counts it at one OKS threshold, images pooled: ``(scores (D,), real (D,)
    bool)``, real = matched a labelled person; predictions matched to an ignored person are left out."""
    scores, real = [np.zeros(0)], [np.zeros(0, bool)]
    for im in images:
        s, matched, ignored = _ranked_matches(im, sigmas, np.array([threshold]), area_factor, max_dets)
        scores.append(s[~ignored[0]])
        real.append(matched[0][~ignored[0]])
    return np.concatenate(scores), np.concatenate(real)


def coco_ap(
    images: Sequence[ImageEval],
    sigmas: np.ndarray,
    thresholds: np.ndarray = COCO_OKS_THRESHOLDS,
    area_factor: float = 1.0,
    max_dets: int = 20,
) -> dict[str, float | list[float]]:
    """COCO keypoint AP (area range "all"), images pooled.

    Per image the ``max_dets`` highest-scored predictions are greedily matched at
    each OKS threshold; the detections of all images are then ranked by score
    and AP is the mean of the 101-point interpolated precision, averaged over
    ``thresholds``. Returns ``{"ap", "ap50", "ap75", "ap_per_threshold"}``; nan
    when there is no (non-ignored) ground-truth person.
    """
    thresholds = np.asarray(thresholds, dtype=np.float64)
    num_gt = 0
    all_scores: list[np.ndarray] = []
    tp: list[list[np.ndarray]] = [[] for _ in thresholds]
    fp: list[list[np.ndarray]] = [[] for _ in thresholds]
    for im in images:
        num_gt += int((~im.gt_ignored).sum())
        scores, matched, ignored = _ranked_matches(im, sigmas, thresholds, area_factor, max_dets)
        all_scores.append(scores)
        for t in range(len(thresholds)):
            tp[t].append(matched[t] & ~ignored[t])
            fp[t].append(~matched[t] & ~ignored[t])
    if num_gt == 0:
        nan = float("nan")
        return {"ap": nan, "ap50": nan, "ap75": nan, "ap_per_threshold": [nan] * len(thresholds)}
    scores = np.concatenate(all_scores) if all_scores else np.zeros(0)
    per = [_average_precision(scores, np.concatenate(tp[t]) if tp[t] else np.zeros(0, bool),
                              np.concatenate(fp[t]) if fp[t] else np.zeros(0, bool), num_gt)
           for t in range(len(thresholds))]

    def at(v: float) -> float:
        hit = np.flatnonzero(np.isclose(thresholds, v))
        return per[int(hit[0])] if len(hit) else float("nan")

    return {"ap": float(np.mean(per)), "ap50": at(0.5), "ap75": at(0.75), "ap_per_threshold": per}


def people_recall(matches: Sequence[PeopleMatch], num_gt: int, min_oks: float = 0.5) -> float:
    """Fraction of ``num_gt`` ground-truth people whose Hungarian match has OKS >= ``min_oks``."""
    if num_gt == 0:
        return float("nan")
    found = sum(int((m.matched_oks() >= min_oks).sum()) for m in matches)
    return found / num_gt


def summarize(
    images: Sequence[ImageEval],
    sigmas: np.ndarray,
    pck_alphas: Sequence[float] = (0.1, 0.2),
    area_factor: float = 1.0,
    recall_oks: float = 0.5,
) -> dict[str, float | int | list[float]]:
    """Every metric over ``images``: ``pck@<alpha>``, ``ap``, ``ap50``, ``ap75``, ``recall``,
    ``recall_tall`` (recall of the people whose box is at least 1/8 of the image's height, nan when no
    image height is known), counts (``tall_people`` among them).

    PCK and recall use a per-image Hungarian matching on OKS over the
    non-ignored ground truth; AP uses COCO's greedy per-threshold matching.
    """
    hits = {a: 0 for a in pck_alphas}
    labelled = 0
    joint_hits = joint_labelled = None  # (K,) PCK@pck_alphas[0] per joint
    people = ignored = tall_people = tall_found = 0
    matches: list[PeopleMatch] = []
    for im in images:
        keep = ~im.gt_ignored
        ignored += int((~keep).sum())
        people += int(keep.sum())
        gt, boxes = im.gt[keep], im.boxes[keep]
        m = match_people(im.pred, im.pred_conf, gt, area_factor * boxes[:, 2] * boxes[:, 3], sigmas)
        matches.append(m)
        if im.image_height > 0:
            tall = boxes[:, 3] >= im.image_height / 8
            tall_people += int(tall.sum())
            tall_found += int((m.gt_oks(len(gt))[tall] >= recall_oks).sum())
        for a in pck_alphas:
            h, lab = pck_joint_counts(im.pred, im.pred_conf, gt, boxes, m.pairs, a)
            hits[a] += int(h.sum())
            if a == pck_alphas[0]:
                joint_hits = h if joint_hits is None else joint_hits + h
                joint_labelled = lab if joint_labelled is None else joint_labelled + lab
        labelled += int((gt[..., 2] > 0).sum())
    out: dict[str, float | int | list[float]] = {}
    for a in pck_alphas:
        out[f"pck@{a:g}"] = hits[a] / labelled if labelled else float("nan")
    out.update(coco_ap(images, sigmas, area_factor=area_factor))
    out["recall"] = people_recall(matches, people, recall_oks)
    out["recall_tall"] = tall_found / tall_people if tall_people else float("nan")
    out["tall_people"] = tall_people
    out["images"] = len(images)
    out["people"] = people
    out["ignored_people"] = ignored
    out["labelled_joints"] = labelled
    if joint_hits is not None:  # per joint, in the order of the images' K joints
        out[f"joint_hits@{pck_alphas[0]:g}"] = joint_hits.tolist()
        out["joint_labelled"] = joint_labelled.tolist()
    out["predicted_people"] = int(sum(len(im.scores) for im in images))
    return out


def paired_bootstrap(ours: Sequence[float], theirs: Sequence[float], resamples: int = 10_000,
                     seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``ours - theirs`` (paired, e.g. per set) and its 95% percentile bootstrap interval
    -> (difference, low, high)."""
    d = np.asarray(ours, np.float64) - np.asarray(theirs, np.float64)
    if d.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, (resamples, d.size))].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))
