"""Which track of each view is which person: tracks paired across calibrated views over the whole clip.

Each view's tracker gives its own track ids. Two tracks of two views are the same person when their
confident joints lie on each other's epipolar lines: the cost of a pair is the median over the frames both
are present of the median symmetric epipolar distance (px) of the joints confident in both. On the Pose2Sim
trial (1088x1920) one person's tracks cost 6-51 px, two people's 79-510 px. Tracks are then
grouped greedily, cheapest pair first (complete linkage: every pair of a group that shares frames must cost
under ``max_cost_px``); a group holds at most one track of a view at any frame, so a person split into two
fragments in one view keeps both. Shapes: T frames, K joints, V views.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from posetracker.multiview.calibration import CameraCalibration


@dataclass(frozen=True)
class ViewTrack:
    """One track of one view. xy (T, K, 2) px, nan where absent; confidence (T, K), 0 where absent."""

    view: int
    track_id: int
    xy: np.ndarray
    confidence: np.ndarray

    @property
    def present(self) -> np.ndarray:
        """(T,) bool: the track has a point in the frame."""
        return np.isfinite(self.xy).all(-1).any(-1)


@dataclass(frozen=True)
class PersonMatch:
    """One person across views: tracks ((view, track id), ...) sorted, and the group's worst pair cost (px)."""

    tracks: tuple[tuple[int, int], ...]
    cost_px: float

    @property
    def views(self) -> tuple[int, ...]:
        return tuple(sorted({v for v, _ in self.tracks}))

    def track_ids(self, view: int) -> tuple[int, ...]:
        return tuple(tid for v, tid in self.tracks if v == view)


def essential(cam_a: CameraCalibration, cam_b: CameraCalibration) -> np.ndarray:
    """(3, 3) E with x_b^T E x_a = 0 for normalised undistorted coordinates (homogeneous) of one world point."""
    r = cam_b.R @ cam_a.R.T
    t = cam_b.t - r @ cam_a.t
    tx = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
    return tx @ r


def epipolar_distance(cam_a: CameraCalibration, cam_b: CameraCalibration, xy_a: np.ndarray,
                      xy_b: np.ndarray) -> np.ndarray:
    """(..., 2) px in view a and (..., 2) px in view b -> (...) px: mean of each point's distance to the other's
    epipolar line (undistorted, in each view's own pixels via its focal length)."""
    h = lambda p: np.concatenate([p, np.ones(p.shape[:-1] + (1,))], axis=-1)  # noqa: E731
    a, b = h(cam_a.undistort(xy_a)), h(cam_b.undistort(xy_b))
    e = essential(cam_a, cam_b)
    line_b, line_a = a @ e.T, b @ e  # lines in b of a's points, in a of b's points
    alg = (b * line_b).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d_b = np.abs(alg) / np.linalg.norm(line_b[..., :2], axis=-1) * cam_b.K[0, 0]
        d_a = np.abs(alg) / np.linalg.norm(line_a[..., :2], axis=-1) * cam_a.K[0, 0]
    return 0.5 * (d_a + d_b)


def pair_cost(cam_a: CameraCalibration, cam_b: CameraCalibration, ta: ViewTrack, tb: ViewTrack,
              min_confidence: float = 0.3, min_joints: int = 3) -> tuple[float, int]:
    """(median over shared frames of the mean epipolar distance px, number of frames compared); nan, 0 if none."""
    both = (ta.confidence >= min_confidence) & (tb.confidence >= min_confidence)
    both &= np.isfinite(ta.xy).all(-1) & np.isfinite(tb.xy).all(-1)
    d = epipolar_distance(cam_a, cam_b, ta.xy, tb.xy)  # (T, K)
    frames = both.sum(axis=1) >= min_joints
    if not frames.any():
        return float("nan"), 0
    per_frame = np.nanmedian(np.where(both, d, np.nan)[frames], axis=1)
    return float(np.median(per_frame)), int(frames.sum())


def _linkage(a: list[int], b: list[int], cost: np.ndarray, overlap: np.ndarray, same_view: np.ndarray) -> float:
    """Complete-linkage cost of merging groups a and b (inf when they clash or share no frames)."""
    sub = np.ix_(a, b)
    if (same_view[sub] & overlap[sub]).any():
        return np.inf
    compared = np.isfinite(cost[sub])
    return float(cost[sub][compared].max()) if compared.any() else np.inf


def match_tracks(cameras: Sequence[CameraCalibration], tracks: Sequence[Mapping[int, ViewTrack]],
                 max_cost_px: float = 60.0, min_frames: int = 10, min_confidence: float = 0.3) -> list[PersonMatch]:
    """Group the tracks of V views into people.

    tracks: per view, {track id: ViewTrack} (all with the same T frames)
    Returns the groups seen in at least 2 views, most present first (sum of frames over their tracks).
    """
    nodes = [tr for view in tracks for tr in view.values()]
    n = len(nodes)
    if n == 0:  # nobody tracked in any view (an empty room, dark views): no one to match
        return []
    cost = np.full((n, n), np.nan)
    present = np.array([tr.present for tr in nodes]).reshape(n, -1)
    overlap = (present[:, None] & present[None]).any(-1)
    views = np.array([tr.view for tr in nodes])
    same_view = views[:, None] == views[None]
    for i in range(n):
        for j in range(i + 1, n):
            if same_view[i, j]:
                continue
            c, frames = pair_cost(cameras[views[i]], cameras[views[j]], nodes[i], nodes[j], min_confidence)
            if frames >= min_frames:
                cost[i, j] = cost[j, i] = c
    groups: list[list[int]] = [[i] for i in range(n)]
    costs = [0.0] * n
    while True:
        best, pair = max_cost_px, None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                c = _linkage(groups[a], groups[b], cost, overlap, same_view)
                if c <= best:
                    best, pair = c, (a, b)
        if pair is None:
            break
        a, b = pair
        groups[a] += groups.pop(b)
        costs[a] = max(costs[a], costs.pop(b), best)
    out = [PersonMatch(tuple(sorted((int(views[i]), nodes[i].track_id) for i in g)), c)
           for g, c in zip(groups, costs) if len(set(views[g])) >= 2]
    return sorted(out, key=lambda m: -sum(int(present[i].sum()) for i in range(n)
                                          if (int(views[i]), nodes[i].track_id) in m.tracks))


def person_views(match: PersonMatch, tracks: Sequence[Mapping[int, ViewTrack]]) -> tuple[np.ndarray, np.ndarray]:
    """One matched person's 2-D points in every view: xy (V, T, K, 2) px (nan where unseen), confidence (V, T, K).

    Where two of the person's tracks in one view are present in the same frame, the surer one (mean confidence)
    is taken."""
    first = next(tr for view in tracks for tr in view.values())
    t, k = first.xy.shape[:2]
    xy = np.full((len(tracks), t, k, 2), np.nan)
    conf = np.zeros((len(tracks), t, k))
    for v, tid in match.tracks:
        tr = tracks[v][tid]
        take = tr.present & (tr.confidence.mean(axis=1) > conf[v].mean(axis=1))
        xy[v, take], conf[v, take] = tr.xy[take], tr.confidence[take]
    return xy, conf
