"""Person-level non-maximum suppression: one person found twice is kept once.

Two centre peaks can fall on one body (a wide person, a person split by an
occluder); the tree walk then lands both on the same joints. People are
taken strongest first and one is dropped when its keypoint similarity (OKS,
over joints confident in both; area: the kept person's keypoint box, see
:mod:`posetracker.oks`) with a kept person exceeds ``threshold``.

A weak person (score below ``weak_score``) is compared over *all* joints: a
weak second centre peak on one body walks onto that body's joints with
confidences under ``min_confidence`` almost everywhere, so the confident-in-both
test has only a joint or two to go on and lets it through (the pose2sim
two-person clip: a second copy of the nearer woman scoring 0.01-0.02, most of
its joints within 10 px of hers, kept for 16 frames as a second track). Real
people this weak are rare (the street crowd clip: 20 of 1,370 person-frames)
and keep their place unless their whole skeleton lies on a stronger person.
"""

from __future__ import annotations

import numpy as np

from posetracker.decoding.people import DecodedPeople
from posetracker.oks import keypoint_bbox_area, oks


def keypoint_similarity(a: np.ndarray, b: np.ndarray, ok: np.ndarray, sigmas: np.ndarray, area: float) -> float:
    """OKS of two (K, 2) people over the joints where ``ok`` (K,) is True; ``area`` floored at 1 px^2."""
    d2 = ((a - b) ** 2).sum(-1)
    return float(oks(d2[ok], max(area, 1.0), sigmas[ok]))


def suppress_duplicates(people: DecodedPeople, sigmas: np.ndarray, threshold: float = 0.5,
                        min_confidence: float = 0.1, weak_score: float = 0.05,
                        weak_threshold: float = 0.3) -> DecodedPeople:
    """``people`` without those that repeat a stronger one, strongest first (:func:`distinct_people`)."""
    if people.num_people < 2:
        return people
    keep = distinct_people(people, sigmas, threshold, min_confidence, weak_score, weak_threshold)
    return people if len(keep) == people.num_people else people.take(keep)


def distinct_people(people: DecodedPeople, sigmas: np.ndarray, threshold: float = 0.5,
                    min_confidence: float = 0.1, weak_score: float = 0.05,
                    weak_threshold: float = 0.3) -> np.ndarray:
    """(N,) int64 indices of the people that repeat no stronger one, strongest first. sigmas: (K,) per-joint OKS
    sigmas (nan -> mean).

    Every pair's similarity is computed at once, (P, P): entry (i, j) is the OKS of person i against
    person j over the joints confident in both (all joints when i scores below ``weak_score``), with
    j's keypoint-box area (floored at 1 px^2)."""
    if people.num_people < 2:
        return np.arange(people.num_people)
    sig = np.where(np.isfinite(sigmas), sigmas, np.nanmean(sigmas))
    xy = people.keypoints.astype(np.float64)
    ok = people.confidence >= min_confidence  # (P, K)
    area = np.maximum(keypoint_bbox_area(xy, ok), 1.0)  # (P,)
    d2 = ((xy[:, None] - xy[None]) ** 2).sum(-1)  # (P, P, K)
    both = ok[:, None] & ok[None, :]  # (P, P, K)
    both[people.scores < weak_score] = True  # a weak person: every joint counts
    sim = oks(d2, np.broadcast_to(area[None, :], d2.shape[:2]), sig, both)
    order = np.argsort(-people.scores, kind="stable")
    keep: list[int] = []
    limit = np.where(people.scores < weak_score, weak_threshold, threshold)  # (P,)
    for i in order:
        if not any(sim[i, j] > limit[i] for j in keep):
            keep.append(int(i))
    return np.array(sorted(keep, key=lambda i: -people.scores[i]), np.int64)
