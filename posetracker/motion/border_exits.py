"""Where a person leaves the image: readings whose distance runs away at the border are nobody's, and end the track.

A person walking out of the image is read from the part still inside, and at the border the tracker may hand
their id to someone else: on the street clip (``video_openpose_examples/video.avi``, 50 fps) a woman walks out
at the left edge while a man stands behind her at the same place in the image; over 0.2 s track 14's joints
slide from her onto him and its distance from the camera runs 5.0 -> 7.6 m, at up to 17 m/s (its root 42 cm a
frame). No one on foot moves so; in Blender the person flew off the image.

So, per track (the finishing step, :func:`posetracker.motion.finish.finish_sequence`, before the heights), with
r_t the track's distance in a frame (the median depth of its joints at least ``SURE`` sure) and a frame *at the
border* where such a joint lies within ``MARGIN`` of the image's long side from its edge (or beyond it):

1. a *run-away* is a stretch of consecutive steps between the track's frames, each at the border (either frame)
   and with |r_t - r_{t-1}| faster than ``WALK_MS``, holding at least one step faster than ``RUN_MS``;
2. its frames between the last frame before it and the first after it are dropped (absent means absent: a mix
   of two people, or of a body and the border, is no one), and the frames after it go on under a new track id
   (the person read after is not known to be the one before). A run-away that reaches the track's first or last
   frame just drops those frames: the track starts or ends where its distance is still a person's (one that
   spans the whole track leaves it as read: no frame to go by).

A depth that wanders slower than ``RUN_MS``, a body whose feet touch the image's edge, and any frame away from
the border stay as they are: on the dancer, the side-view walk and the pose2sim clip nothing moves (the fastest
distance change at the border there is 3.1 m/s); on the street clip only track 14's handover (16.8 m/s; at most
6.6 m/s elsewhere at the border: the man after it, standing at the edge). A track's bones stay those the session gave it (one length per bone over the joined track); the
ids of a known number of animals are never split.

Shapes: T frames, P_t people in frame t, K joints (``posetracker.types.PoseFrame``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from posetracker.types import PoseFrame, PoseSequence

MARGIN = 0.01  # a sure joint this share of the image's long side from an edge (or beyond it): the frame is at the border
SURE = 0.3  # joints at least this sure give the track's distance and mark the border
RUN_MS = 10.0  # a distance change faster than this (m/s) is no one on foot: the readings ran away
WALK_MS = 3.0  # a run-away stretch goes on while the distance changes faster than this (m/s)


def track_distance(frame: PoseFrame, p: int) -> tuple[float, bool]:
    """Person ``p`` of ``frame`` -> (distance m: the median depth of its joints at least SURE sure, nan where
    none or no depth; whether such a joint lies within MARGIN of the image border or beyond it)."""
    kp = frame.keypoints[p].astype(np.float64)  # (K, 3) x, y px, depth m
    sure = (frame.confidence[p] >= SURE) & np.isfinite(kp[:, :2]).all(-1)
    depth = kp[sure, 2]
    depth = depth[np.isfinite(depth) & (depth > 0)]
    r = float(np.median(depth)) if depth.size else float("nan")
    w, h = frame.image_size
    if w <= 0 or h <= 0 or not sure.any():
        return r, False
    m = MARGIN * max(w, h)
    x, y = kp[sure, 0], kp[sure, 1]
    return r, bool(((x < m) | (x > w - 1 - m) | (y < m) | (y > h - 1 - m)).any())


def run_aways(times: np.ndarray, distance: np.ndarray, border: np.ndarray) -> list[tuple[int, int]]:
    """One track's frames in order: times (n,) s, distance (n,) m (nan unknown), border (n,) bool ->
    [(first, stop)) row ranges to drop, one per run-away (module docstring, steps 1-2): the rows strictly
    between the last row before it and the first row after it (none for a jump between two rows), or to the
    track's start / end where it reaches it; none where it spans the whole track."""
    n = len(times)
    if n < 2:
        return []
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.abs(np.diff(distance)) / np.diff(times)  # (n-1,) m/s, step i between rows i and i+1
    at_border = border[1:] | border[:-1]
    fast = at_border & (rate > WALK_MS)  # nan rates are False
    out = []
    edges = np.flatnonzero(np.diff(np.r_[0, fast.astype(np.int8), 0]))  # starts, stops of runs of fast steps
    for a, b in zip(edges[::2], edges[1::2]):  # steps a..b-1: rows a..b change fast
        if not (rate[a:b] > RUN_MS).any():
            continue
        first = 0 if a == 0 else a + 1  # row a is the last one before (unless the track starts running away)
        stop = n if b == n - 1 else b  # row b is the first one after (unless the track ends running away)
        if stop - first < n:  # a track running away over its whole length has no frame to go by: kept as read
            out.append((first, stop))  # first == stop: a jump from one frame to the next, nothing between
    return out


def split_border_exits(seq: PoseSequence) -> tuple[PoseSequence, dict[str, Any]]:
    """``seq`` with every run-away at the image border dropped and the track split there (module docstring) ->
    (sequence, report {track id as text: [{"dropped": [first, last] source frame indices dropped (empty for a
    jump between two frames), "new_id": the id the frames after go on under, or None at a track's start / end}]};
    empty and ``seq`` itself where nothing ran away).
    A sequence of a known number of animals (``metadata["known_count"]``: each id is one animal) is returned as it
    is. The input is not changed."""
    if (seq.metadata or {}).get("known_count"):
        return seq, {}
    frames = seq.frames
    rows: dict[int, list[tuple[int, int]]] = {}
    for t, f in enumerate(frames):
        for p, tid in enumerate(f.track_ids.tolist()):
            if tid >= 0:
                rows.setdefault(int(tid), []).append((t, p))
    next_id = max(rows, default=-1) + 1
    drop = [np.zeros(f.num_people, bool) for f in frames]
    new_ids = [f.track_ids.copy() for f in frames]
    report: dict[str, Any] = {}
    for tid, where in sorted(rows.items()):
        read = [track_distance(frames[t], p) for t, p in where]
        times = np.array([frames[t].timestamp for t, _ in where], np.float64)
        stretches = run_aways(times, np.array([r for r, _ in read]), np.array([b for _, b in read]))
        for first, stop in stretches:
            for t, p in where[first:stop]:
                drop[t][p] = True
            after = stop < len(where) and first > 0
            if after:
                for t, p in where[stop:]:
                    new_ids[t][p] = next_id
            dropped = [int(frames[where[i][0]].index) for i in (first, stop - 1)] if stop > first else []
            report.setdefault(str(tid), []).append({"dropped": dropped, "new_id": next_id if after else None})
            next_id += int(after)
    if not report:
        return seq, {}
    out = [dataclasses.replace(f, track_ids=ids).select(~d) if d.any() or (ids != f.track_ids).any() else f
           for f, d, ids in zip(frames, drop, new_ids)]
    return dataclasses.replace(seq, frames=out), report


__all__ = ["run_aways", "split_border_exits", "track_distance"]
