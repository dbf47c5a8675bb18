"""Views that were not started together: their frames aligned by the people's motion, before triangulation.

When the views show the same instant, a person's joints in one view lie on the epipolar lines of the same
joints in another (``match.epipolar_distance``); a view whose frames run ``lag`` frames late puts a moving
person off those lines. For each view against the first, :func:`frame_offsets` tries every lag within
``max_lag`` frames and keeps the one whose best-matching tracks lie closest to each other's epipolar lines (the
median over view 0's tracks of the cheapest ``match.pair_cost``). People standing still carry no timing: a
flat cost gives 0, and so does a lag 0 within 5 % of the cheapest (the synchronised 4-view trial's minima sit
within one 60 fps frame of 0). :func:`align` then cuts every view to
the frames all of them saw, so frame i of each is the same instant.

Shapes: V views, T_v frames each; offsets (V,) int, frame t of view 0 = frame t + offsets[v] of view v.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from posetracker.multiview.calibration import CameraCalibration
from posetracker.multiview.match import ViewTrack, pair_cost
from posetracker.types import PoseSequence

MIN_FRAMES = 10  # frames two tracks must share at a lag for it to count
FLAT = 1.25  # costs within this factor of each other over every lag: no timing evidence (people standing still)
SAME = 1.05  # lag 0 within this factor of the cheapest lag: started together (the trial: +-1 frame at 2-3 %)


def _shifted(track: ViewTrack, lag: int, length: int) -> ViewTrack:
    """``track`` read ``lag`` frames later, on ``length`` frames of the first view's clock (nan outside)."""
    xy = np.full((length,) + track.xy.shape[1:], np.nan)
    conf = np.zeros((length,) + track.confidence.shape[1:])
    lo, hi = max(0, -lag), min(length, len(track.xy) - lag)
    if hi > lo:
        xy[lo:hi], conf[lo:hi] = track.xy[lo + lag:hi + lag], track.confidence[lo + lag:hi + lag]
    return ViewTrack(track.view, track.track_id, xy, conf)


def lag_costs(cam_a: CameraCalibration, cam_b: CameraCalibration, tracks_a: dict[int, ViewTrack],
              tracks_b: dict[int, ViewTrack], length: int, max_lag: int) -> dict[int, float]:
    """{lag: median over a's tracks of the cheapest epipolar cost (px) to a track of b read ``lag`` frames
    later} for every lag within ``max_lag`` at which some pair shares ``MIN_FRAMES`` frames."""
    out = {}
    for lag in range(-max_lag, max_lag + 1):
        best = []
        for ta in tracks_a.values():
            costs = [c for c, n in (pair_cost(cam_a, cam_b, ta, _shifted(tb, lag, length)) for tb in tracks_b.values())
                     if n >= MIN_FRAMES]
            if costs:
                best.append(min(costs))
        if best:
            out[lag] = float(np.median(best))
    return out


def frame_offsets(cameras: Sequence[CameraCalibration], sequences: Sequence[PoseSequence],
                  max_lag: int = 30) -> list[int]:
    """Each view's frame offset against the first (module docstring)."""
    from posetracker.multiview.reference import view_tracks

    tracks = [view_tracks(seq, v) for v, seq in enumerate(sequences)]
    offsets = [0]
    for v in range(1, len(sequences)):
        costs = lag_costs(cameras[0], cameras[v], tracks[0], tracks[v], len(sequences[0]), max_lag)
        if not costs or max(costs.values()) < FLAT * min(costs.values()):
            offsets.append(0)
            continue
        lag = min(costs, key=costs.get)
        offsets.append(0 if 0 in costs and costs[0] <= SAME * costs[lag] else lag)
    return offsets


def align(sequences: Sequence[PoseSequence], offsets: Sequence[int]) -> list[PoseSequence]:
    """The views cut to the frames every one of them saw, each frame given view 0's index and timestamp of that
    instant (so frame i of each is the same instant, numbered as in the first video)."""
    start = max(0, *(-o for o in offsets))
    end = min(len(s) - o for s, o in zip(sequences, offsets))
    if end - start < 1:
        raise ValueError(f"the views share no frames at offsets {list(offsets)}")
    ref = sequences[0].frames[start:end]
    out = []
    for seq, o in zip(sequences, offsets):
        frames = [dataclasses.replace(f, index=r.index, timestamp=r.timestamp)
                  for r, f in zip(ref, seq.frames[start + o:end + o])]
        out.append(dataclasses.replace(seq, frames=frames))
    return out


__all__ = ["align", "frame_offsets", "lag_costs"]
