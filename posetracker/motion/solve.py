"""The motion solve, offline: each track's joints fitted over the whole track, both directions in time at once.

For one track and one joint, the solved path x_t (t over the track's frames, briefly unseen frames included)
minimises

    sum_t  c_t * rho(|x_t - y_t| / s)  +  lam * sum_t |x_{t-1} - 2 x_t + x_{t+1}|^2

- y_t: the reading (x, y px; depth m; world x, y, z m), c_t its confidence (0 under ``min_confidence`` and
  where the person was not seen);
- rho: Cauchy's robust loss, s = ``outlier_scale`` x the person's size in pixels around that frame: a
  reading far from the motion the neighbouring frames support (an elbow that jumps onto the head for a few
  frames) is rejected, not averaged in;
- the second term, a smoothness prior on acceleration, zero-lag and symmetric in time; ``lam`` follows from
  ``cutoff_hz`` and the frame rate (the frequency the prior halves).

The loss is minimised by iteratively reweighted least squares: each step is one banded (pentadiagonal)
linear solve shared by all six channels, with the robust weights from the 2-D residuals (pixels are where a
wrong reading shows). Runs of a track split where it is unseen for more than ``bridge`` frames (absent means
absent: nothing is invented across a long gap); a joint is output solved where it has a confident reading
within ``bridge`` frames, and as read elsewhere.

This is the offline form of the per-track solve that every output reads (``TrackingSession``, offline mode).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_banded
from scipy.ndimage import median_filter

from posetracker.types import PoseFrame

SIZE_CONFIDENCE = 0.3  # joints at least this sure span the person's size (the robust loss's scale)
SIZE_WINDOW = 31  # frames of the running median of that size


@dataclass(frozen=True)
class SolveSettings:
    """The offline solve's settings (see the module docstring)."""

    cutoff_hz: float = 4.0  # the smoothness prior halves motion at this frequency
    outlier_scale: float = 0.05  # Cauchy scale, as a share of the person's size (bounding-box diagonal, px)
    min_confidence: float = 0.0  # readings under it carry no weight (over it: their confidence)
    bridge: int = 2  # frames a track or joint may be unseen without splitting its run
    iterations: int = 8  # reweighting steps

    def smoothness(self, frame_s: float) -> float:
        """lam of the prior for frames ``frame_s`` seconds apart: the cutoff's gain is one half."""
        w = 2.0 * math.sin(math.pi * min(self.cutoff_hz * frame_s, 0.5))
        return 1.0 / w**4


def _prior_bands(n: int, lam: float) -> np.ndarray:
    """lam * D'D of the second-difference operator D ((n-2) x n) in ``solve_banded``'s (5, n) layout."""
    ab = np.zeros((5, n))
    if n < 3:
        return ab
    d = np.zeros(n)  # diagonal of D'D: 1, 5, 6, ..., 6, 5, 1
    d[:] = 6.0
    d[[0, -1]] = 1.0
    d[[1, -2]] = 5.0
    if n == 3:
        d[1] = 4.0
    off1 = np.full(n - 1, -4.0)  # first off-diagonal: -2, -4, ..., -4, -2
    off1[[0, -1]] = -2.0
    off2 = np.ones(n - 2)
    ab[2] = lam * d
    ab[1, 1:] = ab[3, :-1] = lam * off1
    ab[0, 2:] = ab[4, :-2] = lam * off2
    return ab


def fit_path(values: np.ndarray, weight: np.ndarray, lam: float, scale: float | np.ndarray, iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """One joint over one run of frames: the robust smoothing fit.

    values: (n, C) readings, channels 0-1 the 2-D pixels (the robust weights come from them; a frame counts
    where both are finite), the others (depth, world) fitted with the same weights where finite, nan elsewhere;
    weight: (n,) confidence, 0 where unread; lam: the prior's weight; scale: Cauchy scale (px), one or (n,).
    Returns (solved (n, C), final robust weight (n,) in [0, 1]).
    """
    n = len(values)
    finite = np.isfinite(values)
    y = np.where(finite, values, 0.0)
    c = np.where(finite[:, :2].all(-1), weight, 0.0)
    prior = _prior_bands(n, lam)

    def solve(w: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        ab = prior.copy()
        ab[2] += w + 1e-9
        return solve_banded((2, 2), ab, w[:, None] * rhs)

    robust = np.ones(n)
    for _ in range(max(1, iterations)):
        xy = solve(c * robust, y[:, :2])
        r = np.linalg.norm(xy - y[:, :2], axis=-1) / scale
        robust = 1.0 / (1.0 + r * r)
    out = np.empty_like(y)
    out[:, :2] = xy
    rest = np.arange(2, values.shape[1])
    if rest.size and finite[:, rest].all():
        out[:, rest] = solve(c * robust, y[:, rest])
    else:
        for ch in rest:
            w = c * robust * finite[:, ch]
            out[:, ch] = solve(w, y[:, ch : ch + 1])[:, 0] if w.sum() > 0 else np.nan
    return out, robust


def _local_size(xy: np.ndarray, conf: np.ndarray, window: int = SIZE_WINDOW) -> np.ndarray:
    """xy (n, K, 2) px, conf (n, K) -> (n,) the person's size around each frame: the running median over
    ``window`` frames of the diagonal of the box around the joints at least SIZE_CONFIDENCE sure (frames
    without such joints take their neighbours'; 0 when there are none). Local, so that a frame's solve does
    not depend on frames far from it (a video cut in chunks solves like the whole)."""
    sure = np.where((conf >= SIZE_CONFIDENCE)[..., None] & np.isfinite(xy), xy, np.nan)
    has = np.isfinite(sure).all(-1).any(-1)
    if not has.any():
        return np.zeros(len(xy))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        size = np.linalg.norm(np.nanmax(sure, 1) - np.nanmin(sure, 1), axis=-1)
    idx = np.flatnonzero(has)
    size = size[idx[np.clip(np.searchsorted(idx, np.arange(len(xy))), 0, len(idx) - 1)]]  # fill from the next seen
    return median_filter(size, size=window, mode="nearest")


def _runs(positions: np.ndarray, bridge: int) -> list[np.ndarray]:
    """Sorted frame positions -> the runs in which no gap is longer than ``bridge`` frames."""
    cuts = np.flatnonzero(np.diff(positions) > bridge + 1) + 1
    return np.split(positions, cuts)


def _near_reading(ok: np.ndarray, bridge: int) -> np.ndarray:
    """(n,) bool confident readings -> (n,) bool frames within ``bridge`` frames of one."""
    near = ok.copy()
    for k in range(1, bridge + 1):
        near[k:] |= ok[:-k]
        near[:-k] |= ok[k:]
    return near


def solve_tracks(frames: list[PoseFrame], settings: SolveSettings | None = None) -> list[PoseFrame]:
    """Every tracked person's keypoints (x, y px and depth) and world solved over their whole track.

    frames: T tracked PoseFrames, consecutive frames of one source (people with id -1 pass through unchanged).
    Returns new PoseFrames (the input is not modified); confidences, scores and ids are as given.
    """
    s = settings or SolveSettings()
    if not frames:
        return []
    stamps = np.array([f.timestamp for f in frames], np.float64)
    frame_s = float(np.median(np.diff(stamps))) if len(frames) > 1 else 1 / 30
    lam = s.smoothness(frame_s if frame_s > 0 else 1 / 30)
    out_kp = [f.keypoints.astype(np.float64) for f in frames]
    out_world = [None if f.world is None else f.world.astype(np.float64) for f in frames]
    where: dict[int, list[tuple[int, int]]] = {}
    for t, f in enumerate(frames):
        for p, tid in enumerate(f.track_ids.tolist()):
            if tid >= 0:
                where.setdefault(tid, []).append((t, p))
    for rows in where.values():
        rows_t = np.array([t for t, _ in rows])
        slot = {t: p for t, p in rows}
        for run in _runs(rows_t, s.bridge):
            _solve_run(frames, run, slot, lam, s, out_kp, out_world)
    return [dataclasses.replace(f, keypoints=k.astype(np.float32), world=None if w is None else w.astype(np.float32))
            for f, k, w in zip(frames, out_kp, out_world)]


def _solve_run(frames, run, slot, lam, s: SolveSettings, out_kp, out_world) -> None:
    """One run of one track (frame positions ``run``, its person index in each ``slot[t]``), solved in place."""
    t0 = int(run[0])
    n = int(run[-1]) - t0 + 1
    k = frames[int(run[0])].num_joints
    has_world = all(frames[t].world is not None for t in run.tolist())
    values = np.full((n, k, 6), np.nan)
    conf = np.zeros((n, k))
    for t in run.tolist():
        f, p = frames[t], slot[t]
        values[t - t0, :, :3] = f.keypoints[p]
        if has_world:
            values[t - t0, :, 3:] = f.world[p]
        conf[t - t0] = f.confidence[p]
    ok = (conf >= s.min_confidence) & np.isfinite(values[..., :2]).all(-1)
    weight = np.where(ok, conf, 0.0)
    if not ok.any():
        return
    scale = np.maximum(s.outlier_scale * _local_size(values[..., :2], conf), 2.0)  # (n,) px
    channels = slice(0, 6 if has_world else 3)
    for j in range(k):
        if ok[:, j].sum() < 3:
            continue
        solved, _ = fit_path(values[:, j, channels], weight[:, j], lam, scale, s.iterations)
        use = _near_reading(ok[:, j], s.bridge)
        for t in run.tolist():
            if use[t - t0]:
                p = slot[t]
                out_kp[t][p, j] = solved[t - t0, :3]
                if has_world:
                    out_world[t][p, j] = solved[t - t0, 3:6]


__all__ = ["SolveSettings", "fit_path", "solve_tracks"]
