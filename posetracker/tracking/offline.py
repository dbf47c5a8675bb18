"""Whole tracked sequences: ids for the frames before a track was confirmed, and the tracks never read as a likely
person left out (the motion solve: ``posetracker.motion``)."""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.optimize import linear_sum_assignment

from posetracker.oks import keypoint_bbox_area
from posetracker.tracking.similarity import oks_matrix
from posetracker.types import PoseFrame


def backfill_ids(frames: list[PoseFrame], sigmas: np.ndarray, oks_threshold: float = 0.2,
                 min_confidence: float = 0.3) -> list[PoseFrame]:
    """Give people shown with id -1 the id of the track they turn into.

    A live tracker outputs a new person with id -1 until its track is confirmed
    (``PoseTracker.min_hits`` frames); with the whole sequence at hand those
    first frames can take the id. Walking backwards, a -1 person in frame t
    takes the id of the person in frame t + 1 it matches (OKS >= ``oks_threshold``,
    Hungarian) if frame t has no one with that id yet; so the chain stops where
    the person was not detected. frames: T PoseFrames in order; sigmas: (K,) OKS
    sigmas. Returns new PoseFrames (the input is not modified).
    """
    out = list(frames)
    for t in range(len(out) - 2, -1, -1):
        cur, nxt = out[t], out[t + 1]
        free = np.flatnonzero(cur.track_ids < 0)
        taken = set(cur.track_ids.tolist())
        cand = np.asarray([i for i, tid in enumerate(nxt.track_ids.tolist()) if tid >= 0 and tid not in taken], np.int64)
        if free.size == 0 or cand.size == 0:
            continue
        xy_a, ok_a = cur.keypoints[free, :, :2].astype(np.float64), cur.confidence[free] >= min_confidence
        xy_b, ok_b = nxt.keypoints[cand, :, :2].astype(np.float64), nxt.confidence[cand] >= min_confidence
        sim = oks_matrix(xy_a, ok_a, keypoint_bbox_area(xy_a, ok_a), xy_b, ok_b, keypoint_bbox_area(xy_b, ok_b), sigmas)
        rows, cols = linear_sum_assignment(np.where(sim >= oks_threshold, sim, 0.0), maximize=True)
        ids = cur.track_ids.copy()
        for r, c in zip(rows, cols):
            if sim[r, c] >= oks_threshold:
                ids[free[r]] = nxt.track_ids[cand[c]]
        if not np.array_equal(ids, cur.track_ids):
            out[t] = dataclasses.replace(cur, track_ids=ids)
    return out


SURE_QUANTILE = 0.9  # drop_unsure_tracks: the share of a track's frames a person may score under the threshold


def drop_unsure_tracks(frames: list[PoseFrame], min_probability: float,
                       quantile: float = SURE_QUANTILE) -> tuple[list[PoseFrame], list[int]]:
    """Leave out the tracks never read as a likely person: those whose person scores (probabilities of a real
    person, ``decoding.person_scores``) reach ``min_probability`` in less than 1 - ``quantile`` of their frames
    (the ``quantile`` of the track's scores is under it). The street crowd clip: 25 -> 8 tracks, the 17 left out
    2-4-joint readings of blurred background people, for a median of 8 -> 6 people a frame. People without a
    track (id -1) stay. Returns the new frames and the ids left out."""
    scores: dict[int, list[float]] = {}
    for f in frames:
        for i, s in zip(f.track_ids.tolist(), f.scores.tolist()):
            if i >= 0:
                scores.setdefault(i, []).append(s)
    unsure = sorted(i for i, s in scores.items() if np.quantile(s, quantile) < min_probability)
    if not unsure:
        return list(frames), []
    return [f.select(~np.isin(f.track_ids, unsure)) for f in frames], unsure
