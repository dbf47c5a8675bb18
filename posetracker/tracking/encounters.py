"""Close encounters: where two tracks touch, whether their ids may have swapped, and an offline repair.

Appearance-free tracking links people (or animals) by where their joints are;
when two of them touch or cross, the tracker can hand each the other's id.
This pass runs over a whole tracked sequence (offline: it uses the frames
after the encounter):

1. An encounter of tracks a and b: a run of frames where both are present and
   their keypoint boxes (joints with confidence >= ``min_confidence``) overlap
   by IoU >= ``iou``; runs closer than ``gap`` frames merge.
2. Each track's motion before and after it: the box centre's position and
   velocity (least squares over the ``context`` frames each side, where the
   track is seen outside the encounter) and its size (median box diagonal).
3. Continuing each track's motion from before to the time after, the kept
   assignment costs ``|pred_a - after_a| + |pred_b - after_b|`` and the swapped
   one ``|pred_a - after_b| + |pred_b - after_a|``, each distance over the pair's
   mean size, plus the relative size change |log(size_after / size_before)| of
   each. ``swap_suspected`` when the swapped assignment costs less than
   ``margin`` x the kept one: the ids probably changed hands.
4. :func:`repair_swaps` swaps the two ids from the encounter's end on for the
   suspected encounters (in time order, so a later encounter sees the ids as
   repaired); it never creates or drops an id.

An encounter too short of context (a track seen on one side only) is listed,
never suspected. Works on any skeleton (humans, animals).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from posetracker.types import PoseFrame, PoseSequence


@dataclass(frozen=True)
class Encounter:
    """Two tracks touching over sequence frames ``start``..``end`` (positions in ``seq.frames``, inclusive).

    kept_cost / swapped_cost: step 3's costs (nan without context on both sides); swap_suspected: step 3.
    """

    tracks: tuple[int, int]
    start: int
    end: int
    kept_cost: float
    swapped_cost: float
    swap_suspected: bool

    def as_dict(self, seq: PoseSequence) -> dict:
        """For a report or the JSON metadata: ids, source frame indices and times, costs, the flag."""
        first, last = seq.frames[self.start], seq.frames[self.end]
        return {"tracks": list(self.tracks), "frames": [int(first.index), int(last.index)],
                "times": [round(float(first.timestamp), 3), round(float(last.timestamp), 3)],
                "kept_cost": _round(self.kept_cost), "swapped_cost": _round(self.swapped_cost),
                "swap_suspected": self.swap_suspected}


def _round(v: float) -> float | None:
    return round(float(v), 3) if np.isfinite(v) else None


def _boxes(frame: PoseFrame, min_confidence: float) -> dict[int, np.ndarray]:
    """{track id: (4,) keypoint box x1 y1 x2 y2 px} of the tracked people of one frame with >= 2 sure joints."""
    out: dict[int, np.ndarray] = {}
    for p, tid in enumerate(frame.track_ids.tolist()):
        ok = (frame.confidence[p] >= min_confidence) & np.isfinite(frame.keypoints[p, :, :2]).all(-1)
        if tid >= 0 and ok.sum() >= 2:
            xy = frame.keypoints[p, ok, :2].astype(np.float64)
            out[tid] = np.concatenate([xy.min(0), xy.max(0)])
    return out


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    """IoU of two (4,) boxes (0 for empty ones)."""
    lo, hi = np.maximum(a[:2], b[:2]), np.minimum(a[2:], b[2:])
    inter = float(np.clip(hi - lo, 0, None).prod())
    union = float(np.clip(a[2:] - a[:2], 0, None).prod() + np.clip(b[2:] - b[:2], 0, None).prod()) - inter
    return inter / union if union > 0 else 0.0


def frame_runs(frames: list[int], gap: int = 0) -> list[tuple[int, int]]:
    """Sorted frame positions -> inclusive (start, end) runs, runs at most ``gap`` frames apart merged."""
    if not frames:
        return []
    runs, start, prev = [], frames[0], frames[0]
    for i in frames[1:]:
        if i - prev > gap + 1:
            runs.append((start, prev))
            start = i
        prev = i
    runs.append((start, prev))
    return runs


class _Track:
    """One track's boxes where it is seen: positions (n,) in ``seq.frames``, boxes (n, 4) px."""

    def __init__(self) -> None:
        self.at: list[int] = []
        self.boxes: list[np.ndarray] = []

    def motion(self, times: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, float] | None:
        """Box centre position at the mean time, velocity (px/s) and median diagonal over positions lo..hi-1
        where the track is seen; None if it is seen in fewer than 2 of them."""
        at = np.asarray(self.at)
        pick = np.flatnonzero((at >= lo) & (at < hi))
        if len(pick) < 2:
            return None
        box = np.stack([self.boxes[i] for i in pick])  # (n, 4)
        centre, t = 0.5 * (box[:, :2] + box[:, 2:]), times[at[pick]]
        t0 = t.mean()
        velocity = np.polyfit(t - t0, centre, 1)[0] if np.ptp(t) > 0 else np.zeros(2)
        diagonal = float(np.median(np.hypot(*(box[:, 2:] - box[:, :2]).T)))
        return centre.mean(0), velocity, max(diagonal, 1.0)


def close_encounters(seq: PoseSequence, iou: float = 0.3, gap: int = 2, context: int = 8, margin: float = 0.7,
                     min_confidence: float = 0.3) -> list[Encounter]:
    """Every encounter of two tracks in ``seq`` (see the module docstring), in time order. One pass over the
    frames, pairs compared only within a frame: memory grows with the people seen, not tracks x frames."""
    tracks: dict[int, _Track] = {}
    touching: dict[tuple[int, int], list[int]] = {}  # (a, b), a < b -> positions where their boxes overlap
    for t, frame in enumerate(seq.frames):
        boxes = _boxes(frame, min_confidence)
        ids = sorted(boxes)
        for tid in ids:
            track = tracks.setdefault(tid, _Track())
            track.at.append(t)
            track.boxes.append(boxes[tid])
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                if _iou(boxes[a], boxes[b]) >= iou:
                    touching.setdefault((a, b), []).append(t)
    times = np.array([f.timestamp for f in seq.frames], np.float64)
    out = [_judge(pair, start, end, tracks, times, context, margin)
           for pair, at in touching.items() for start, end in frame_runs(at, gap)]
    return sorted(out, key=lambda e: (e.start, e.tracks))


def _judge(pair: tuple[int, int], start: int, end: int, tracks: dict[int, _Track], times: np.ndarray,
           context: int, margin: float) -> Encounter:
    windows = {"b": (max(0, start - context), start), "a": (end + 1, min(len(times), end + 1 + context))}
    m = {(tid, side): tracks[tid].motion(times, *windows[side]) for tid in pair for side in "ba"}
    if any(v is None for v in m.values()):
        return Encounter(pair, start, end, float("nan"), float("nan"), False)
    a, b = pair
    size = np.mean([m[(tid, side)][2] for tid in pair for side in "ba"])

    def cost(x: int, y: int) -> float:
        """Track x's motion before continued to the time after, against track y's after."""
        (p0, v0, s0), (p1, _, s1) = m[(x, "b")], m[(y, "a")]
        dt = float(times[slice(*windows["a"])].mean() - times[slice(*windows["b"])].mean())
        return float(np.linalg.norm(p0 + v0 * dt - p1)) / size + abs(float(np.log(s1 / s0)))

    kept, swapped = cost(a, a) + cost(b, b), cost(a, b) + cost(b, a)
    return Encounter(pair, start, end, kept, swapped, bool(swapped < margin * kept))


def repair_swaps(seq: PoseSequence, encounters: list[Encounter] | None = None) -> tuple[PoseSequence, list[Encounter]]:
    """``seq`` with the ids of each suspected encounter's two tracks swapped from its end on (see the module
    docstring, step 4) -> (repaired sequence, the encounters repaired). The input is not changed."""
    encounters = close_encounters(seq) if encounters is None else encounters
    suspected = [e for e in encounters if e.swap_suspected]
    if not suspected:
        return seq, []
    frames = list(seq.frames)
    now = {i: i for i in seq.track_ids()}  # original id -> the id it carries after the repairs so far
    for e in sorted(suspected, key=lambda e: e.start):
        a, b = (now[tid] for tid in e.tracks)  # the encounter's two tracks under their current ids
        for t in range(e.end + 1, len(frames)):
            frames[t] = _swap_ids(frames[t], a, b)
        now = {o: b if c == a else a if c == b else c for o, c in now.items()}
    return dataclasses.replace(seq, frames=frames, metadata=dict(seq.metadata)), suspected


def _swap_ids(frame: PoseFrame, a: int, b: int) -> PoseFrame:
    ids = frame.track_ids.copy()
    ids[frame.track_ids == a], ids[frame.track_ids == b] = b, a
    return dataclasses.replace(frame, track_ids=ids)
