"""Per-person arrays pulled out of a PoseSequence (one entry per track id).

Every exporter that writes one file or one column block per person (BVH,
TRC, DeepLabCut, joint angles) starts from :func:`person_tracks`: for each
track id it stacks the person's keypoints over *all* T frames of the
sequence, with nan (and confidence 0) where the person is absent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.types import PoseSequence


class TrackError(ValueError):
    """The sequence has no usable person for the request."""


@dataclass(frozen=True)
class PersonTrack:
    """One person over the whole sequence.

    track_id:   the tracker's id (>= 0)
    frames:     (T,) int64 source frame index of each sequence frame
    times:      (T,) float64 timestamps in seconds
    present:    (T,) bool, the person is in the frame
    keypoints:  (T, K, 3) float64 image x, y (px), depth (m); nan where absent
    confidence: (T, K) float64, 0 where absent
    world:      (T, K, 3) float64 camera-space metres (x right, y down, z forward); nan where absent/unknown
    """

    track_id: int
    frames: np.ndarray
    times: np.ndarray
    present: np.ndarray
    keypoints: np.ndarray
    confidence: np.ndarray
    world: np.ndarray

    @property
    def num_frames(self) -> int:
        return int(self.times.shape[0])

    def valid_world(self, min_confidence: float = 0.0) -> np.ndarray:
        """(T, K) bool: world position finite and confidence >= min_confidence."""
        return valid_points(self.world, self.confidence, min_confidence)

    def valid_image(self, min_confidence: float = 0.0) -> np.ndarray:
        """(T, K) bool: image x, y finite and confidence >= min_confidence."""
        return valid_points(self.keypoints[..., :2], self.confidence, min_confidence)


def valid_points(points: np.ndarray, confidence: np.ndarray, min_confidence: float = 0.0) -> np.ndarray:
    """(..., K) bool: the (..., K, D) points are finite and their (..., K) confidence >= min_confidence."""
    ok = np.isfinite(points).all(axis=-1)
    if min_confidence > 0:
        ok &= confidence >= min_confidence
    return ok


def person_tracks(seq: PoseSequence, person: int | None = None) -> dict[int, PersonTrack]:
    """{track id: PersonTrack} for every tracked person (id >= 0), or only ``person``.

    Raises TrackError for an empty sequence, a sequence without tracked
    people, or an unknown ``person``; the message lists the ids present.
    """
    if len(seq) == 0:
        raise TrackError("the sequence has no frames")
    ids = seq.track_ids()
    if person is not None:
        if int(person) not in ids:
            raise TrackError(f"no person with track id {person}; ids in the sequence: {ids or 'none'}")
        ids = [int(person)]
    if not ids:
        raise TrackError("the sequence has no tracked person (every track id is -1)")
    t, k = len(seq), seq.skeleton.num_joints
    frames = np.array([f.index for f in seq.frames], np.int64)
    times = np.array([f.timestamp for f in seq.frames], np.float64)
    out: dict[int, PersonTrack] = {}
    for tid in ids:
        present = np.zeros(t, bool)
        kp = np.full((t, k, 3), np.nan)
        conf = np.zeros((t, k))
        world = np.full((t, k, 3), np.nan)
        for i, f in enumerate(seq.frames):
            hits = np.flatnonzero(f.track_ids == tid)
            if hits.size == 0:
                continue
            p = int(hits[0])
            present[i] = True
            kp[i] = f.keypoints[p]
            conf[i] = np.nan_to_num(f.confidence[p], nan=0.0)
            if f.world is not None:
                world[i] = f.world[p]
        out[tid] = PersonTrack(tid, frames, times, present, kp, conf, world)
    return out


def describe_contents(seq: PoseSequence) -> str:
    """What an export of ``seq`` holds, in words: its tracked people (ids) and frames, e.g. "2 people (ids 0, 1),
    frames 0-99 (100 frames, 1.7 s)"."""
    ids = seq.track_ids()
    if not ids:
        people = "no tracked person"
    else:
        shown = ", ".join(str(i) for i in ids[:8]) + (f", ... {ids[-1]}" if len(ids) > 8 else "")
        people = f"{len(ids)} {'person' if len(ids) == 1 else 'people'} (id{'s' if len(ids) > 1 else ''} {shown})"
    if len(seq) == 0:
        return f"{people}, no frames"
    first, last = seq.frames[0], seq.frames[-1]
    span = last.timestamp - first.timestamp + 1.0 / seq.fps
    return f"{people}, frames {first.index}-{last.index} ({len(seq)} frames, {span:.1f} s)"


def frame_time(times: np.ndarray, fps: float) -> float:
    """Seconds between frames: median step of the timestamps (T,), else 1 / fps."""
    steps = np.diff(np.asarray(times, np.float64))
    steps = steps[np.isfinite(steps) & (steps > 0)]
    return float(np.median(steps)) if steps.size else 1.0 / float(fps)


def fill_gaps(values: np.ndarray, valid: np.ndarray, max_gap: int) -> tuple[np.ndarray, np.ndarray]:
    """Linearly interpolate interior gaps of at most ``max_gap`` frames.

    values: (T, ..., D) samples; valid: (T, ...) bool. Returns (filled values,
    filled mask); gaps longer than max_gap, and gaps at either end, stay invalid.
    """
    v = np.array(values, np.float64, copy=True)
    ok = np.array(valid, bool, copy=True)
    t = v.shape[0]
    flat_v = v.reshape(t, -1, v.shape[-1])
    flat_ok = ok.reshape(t, -1)
    for j in range(flat_ok.shape[1]):
        idx = np.flatnonzero(flat_ok[:, j])
        if idx.size < 2:
            continue
        for a, b in zip(idx[:-1], idx[1:]):
            gap = b - a - 1
            if 0 < gap <= max_gap:
                w = (np.arange(a + 1, b) - a)[:, None] / (b - a)
                flat_v[a + 1 : b, j] = (1 - w) * flat_v[a, j] + w * flat_v[b, j]
                flat_ok[a + 1 : b, j] = True
    return flat_v.reshape(v.shape), flat_ok.reshape(ok.shape)


def hold_limbs(values: np.ndarray, valid: np.ndarray, parents: list[int] | tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Carry each missing joint with its parent: where joint k is missing and its parent is there, k sits at
    the parent plus k's offset from it in the nearest earlier frame where both were seen (the first such frame
    before any). Joints are filled parents first, so a missing forearm follows the elbow, a missing arm the
    shoulder, and the rest of the body moves on: a gap holds one limb, never the whole body.

    values: (T, K, D); valid: (T, K) bool; parents: (K,) parent index (-1 at the root).
    Returns (values, valid, held (T, K) bool: the joints filled here).
    """
    v = np.array(values, np.float64, copy=True)
    ok = np.array(valid, bool, copy=True)
    held = np.zeros_like(ok)
    depth = [0] * len(parents)
    for k in range(len(parents)):
        j = k
        while parents[j] >= 0:
            depth[k] += 1
            j = parents[j]
    for k in sorted(range(len(parents)), key=lambda j: depth[j]):
        p = parents[k]
        if p < 0:
            continue
        both = ok[:, k] & ok[:, p]
        need = ~ok[:, k] & ok[:, p]
        if not (need.any() and both.any()):
            continue
        src = np.maximum.accumulate(np.where(both, np.arange(len(both)), -1))
        src = np.where(src < 0, int(np.flatnonzero(both)[0]), src)
        v[need, k] = v[need, p] + (v[src[need], k] - v[src[need], p])
        ok[need, k] = held[need, k] = True
    return v, ok, held


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[(start, stop)) index ranges where the (T,) bool mask is True."""
    m = np.concatenate([[False], np.asarray(mask, bool), [False]])
    d = np.diff(m.astype(np.int8))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))
