"""Person-score calibration: fit and check the map from the decoder's raw person score to P(a real person).

    posetracker eval --data ../shared/data/human ../shared/data/video/sleap_dance_human/normalized.json \
        --predictions-out preds.json
    python tools/score_calibration.py preds.json --data ../shared/data/human \
        ../shared/data/video/sleap_dance_human/normalized.json

The raw score (centre peak x mean joint confidence, a product of two probabilities) ranks people well but
reads 0.1-0.4 for clearly visible people. Each predicted person of each labelled set is labelled as COCO's
evaluation does at OKS 0.5 (score order, greedy; a match to an ignored person is left out): 1 = matched a
labelled person, 0 = not. The calibration is a logistic map of the log score,
``p = 1 / (1 + exp(-(slope * ln(max(s, 1e-4)) + offset)))``: monotone, so the ranking (and OKS AP) is unchanged.
It is checked leaving one whole set out at a time (fitted on the others, scored on that set): Brier score and
log loss against the raw score read as a probability, and where true and false people land. The last line
is the fit on every set, for the skeleton YAML's ``score_calibration: [slope, offset]``
(:mod:`posetracker.decoding.person_scores`). Predictions made with a calibration in place are mapped back to
raw scores first (``--skeleton``'s calibration inverted; exact to float32 above the map's 1e-4 floor).

Sets that do not label every person (MPII, JHMDB, MHP label some) count an unlabelled real person as a false
one, as OKS AP does; so the fitted probabilities are, if anything, low.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from posetracker.decoding.person_scores import FLOOR, calibrated
from posetracker.evaluation.datasets import load_labelled_set
from posetracker.evaluation.mapping import detect_layout
from posetracker.evaluation.metrics import _greedy_match, oks_matrix
from posetracker.evaluation.runner import human18_sigmas
from posetracker.skeletons import load_skeleton


def labelled_scores(labelled_set, records: list[dict], thr: float = 0.5, max_dets: int = 20
                    ) -> tuple[np.ndarray, np.ndarray]:
    """One set's predictions -> (raw scores (D,), real person (D,) bool), ignored matches left out."""
    lay = detect_layout(labelled_set.keypoint_names)
    h_idx, s_idx = lay.indices()
    sigmas = human18_sigmas()[h_idx]
    if len(records) != len(labelled_set.items):
        raise SystemExit(f"{labelled_set.name}: {len(records)} prediction records for {len(labelled_set.items)} items")
    scores, real = [], []
    for item, rec in zip(labelled_set.items, records):
        people = rec["people"]
        if not people:
            continue
        s = np.array([p["score"] for p in people], np.float64)
        order = np.argsort(-s, kind="mergesort")[:max_dets]
        kp = np.array([[[np.nan if v is None else v for v in row[:2]] for row in p["keypoints"]] for p in people])
        conf = np.array([[0.0 if v is None else v for v in p["confidence"]] for p in people])
        gt = np.array([inst.keypoints[s_idx] for inst in item.instances], np.float64).reshape(-1, len(s_idx), 3)
        boxes = np.array([inst.box() if inst.box() is not None else (0, 0, 0, 0) for inst in item.instances],
                         np.float64).reshape(-1, 4)
        oks = oks_matrix(kp[order][:, h_idx], conf[order][:, h_idx], gt, boxes[:, 2] * boxes[:, 3], sigmas, boxes)
        ignored = ~(gt[..., 2] > 0).any(axis=1)
        matched, ignored_match = _greedy_match(oks, ignored, thr)
        keep = ~ignored_match
        scores.append(s[order][keep])
        real.append(matched[keep])
    if not scores:
        return np.zeros(0), np.zeros(0, bool)
    return np.concatenate(scores), np.concatenate(real)


def features(s: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(s, FLOOR))


def fit(s: np.ndarray, y: np.ndarray, ridge: float = 1e-3, steps: int = 50) -> tuple[float, float]:
    """Logistic regression of y (D,) on ln(s) (D,) by Newton's method -> (slope, offset)."""
    x = np.stack([features(s), np.ones_like(s)], 1)
    w = np.zeros(2)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (p - y) + ridge * np.array([w[0], 0.0])
        hess = (x * (p * (1 - p))[:, None]).T @ x + ridge * np.diag([1.0, 0.0])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(w[0]), float(w[1])


def uncalibrated(p: np.ndarray, calibration: tuple[float, float] | None) -> np.ndarray:
    """The inverse of :func:`calibrated` (scores at the floor stay there)."""
    if calibration is None:
        return p
    slope, offset = calibration
    p = np.clip(p.astype(np.float64), 1e-12, 1 - 1e-12)
    return np.exp((np.log(p / (1 - p)) - offset) / slope)


def brier(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((p - y) ** 2))


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def describe(name: str, p: np.ndarray, y: np.ndarray) -> str:
    t, f = p[y], p[~y]
    return (f"{name}: Brier {brier(p, y):.3f}, log loss {log_loss(p, y):.3f}; real people median {np.median(t):.2f}, "
            f"{np.mean(t < 0.3):.0%} below 0.3; false ones median {np.median(f) if len(f) else float('nan'):.2f}, "
            f"{np.mean(f >= 0.5) if len(f) else float('nan'):.0%} at 0.5 or more")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("predictions", type=Path, help="posetracker eval --predictions-out")
    ap.add_argument("--data", nargs="+", required=True, help="the labelled sets eval ran on (files or folders)")
    ap.add_argument("--skeleton", default="human18", help="whose score_calibration the predictions carry")
    args = ap.parse_args(argv)
    shipped = load_skeleton(args.skeleton).score_calibration
    from posetracker.cli.evaluate import find_sets

    preds = json.loads(args.predictions.read_text())
    per_set: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for path in find_sets(args.data):
        ls = load_labelled_set(path)
        if ls.name not in preds:  # eval skips a set whose images are missing
            print(f"{ls.name}: not in {args.predictions}, left out", file=sys.stderr)
            continue
        s, y = labelled_scores(ls, preds[ls.name])
        per_set[ls.name] = uncalibrated(s, shipped), y
    print("set | people (real / false) | slope, offset fitted without it")
    raw, cal, ys = [], [], []
    for name, (s, y) in per_set.items():
        rest_s = np.concatenate([v[0] for k, v in per_set.items() if k != name])
        rest_y = np.concatenate([v[1] for k, v in per_set.items() if k != name])
        slope, offset = fit(rest_s, rest_y.astype(np.float64))
        raw.append(s), cal.append(calibrated(s, (slope, offset))), ys.append(y)
        print(f"{name} | {int(y.sum())} / {int((~y).sum())} | {slope:.3f}, {offset:.3f}")
    raw_all, cal_all, y_all = np.concatenate(raw), np.concatenate(cal), np.concatenate(ys)
    print(describe("raw score", raw_all, y_all))
    print(describe("calibrated, each set left out of its own fit", cal_all, y_all))
    slope, offset = fit(raw_all, y_all.astype(np.float64))
    print(f"fit on every set: score_calibration: [{slope:.4f}, {offset:.4f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
