"""Person-score calibration: fit and check the map from the raw person score to P(a real person).

    posetracker train score-calibration --data ../shared/data/human ../shared/data/video/sleap_dance_human

The raw score (centre peak x mean joint confidence of the final pose, a product of two probabilities) ranks
people well but reads 0.1-0.4 for clearly visible people. The shipped model runs as ``posetracker eval`` runs it (offline
defaults: tiles and precision stage), with the skeleton's calibration switched off so the scores are raw.
Each predicted person of each labelled set is labelled as COCO's AP counts it at OKS 0.5
(``evaluation.metrics.detection_outcomes``): 1 = matched a labelled person, 0 = not; a match to an ignored
person is left out. The calibration is a logistic map of the log score
(:mod:`posetracker.decoding.person_scores`): monotone, so the ranking (and OKS AP) is unchanged. It is checked
leaving one whole set out at a time (fitted on the others, scored on that set): Brier score and log loss
against the raw score read as a probability, and where true and false people land. The last line is the fit
on every set, for the skeleton YAML's ``score_calibration: [slope, offset]``.

Sets that do not label every person (MPII, JHMDB, MHP label some) count an unlabelled real person as a false
one, as OKS AP does; so the fitted probabilities are, if anything, low.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from posetracker.decoding.person_scores import FLOOR, calibrated
from posetracker.evaluation.metrics import detection_outcomes


def features(s: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(s, FLOOR))


def fit(s: np.ndarray, y: np.ndarray, ridge: float = 0.1, steps: int = 50) -> tuple[float, float]:
    """Logistic regression of y (D,) on ln(s) (D,) by Newton's method -> (slope, offset). The sets nearly separate
    real from false people, so an unpenalised slope runs steep (9.9: a step, overconfident on a set left out);
    ``ridge`` 0.1 on the slope gave the lowest log loss with each set left out of its fit (0.205; 1e-3: 0.260,
    1: 0.263; 2026-12-06)."""
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


def calibrate(paths: Sequence[str | Path], threads: int = 1) -> tuple[list[str], tuple[float, float]]:
    """The shipped human18 model run as ``posetracker eval`` runs it (offline defaults) on the labelled sets
    ``paths`` (normalized.json files), raw scores -> (the report's lines, (slope, offset) fitted on every set)."""
    from posetracker.evaluation import evaluate_set, load_labelled_set
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession

    session = TrackingSession.open(config=SessionConfig(mode="offline", network=NetworkSettings(threads=threads)))
    session.spec = replace(session.spec, score_calibration=None)  # raw scores
    per_set: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for path in paths:
        ls = load_labelled_set(path)
        try:
            r = evaluate_set(ls, session.process_image, keep_predictions=False, keep_images=True)
        except FileNotFoundError as exc:  # as eval: a set whose images are missing is skipped
            print(f"{ls.name}: skipped ({exc})", file=sys.stderr)
            continue
        per_set[ls.name] = detection_outcomes(r["image_evals"], r["sigmas"])
    if len(per_set) < 2:
        raise ValueError("score calibration needs at least two labelled sets (each is left out of its own fit)")
    lines = ["set | people (real / false) | slope, offset fitted without it"]
    raw, cal, ys = [], [], []
    for name, (s, y) in per_set.items():
        rest_s = np.concatenate([v[0] for k, v in per_set.items() if k != name])
        rest_y = np.concatenate([v[1] for k, v in per_set.items() if k != name])
        slope, offset = fit(rest_s, rest_y.astype(np.float64))
        raw.append(s), cal.append(calibrated(s, (slope, offset))), ys.append(y)
        lines.append(f"{name} | {int(y.sum())} / {int((~y).sum())} | {slope:.3f}, {offset:.3f}")
    raw_all, cal_all, y_all = np.concatenate(raw), np.concatenate(cal), np.concatenate(ys)
    lines.append(describe("raw score", raw_all, y_all))
    lines.append(describe("calibrated, each set left out of its own fit", cal_all, y_all))
    slope, offset = fit(raw_all, y_all.astype(np.float64))
    lines.append(f"fit on every set: score_calibration: [{slope:.4f}, {offset:.4f}]")
    return lines, (slope, offset)
