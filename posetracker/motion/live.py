"""The motion solve, live: the offline solve's loss (``motion.solve``) over each track's last frames, causal.

Each frame, every tracked person's last ``window`` frames of readings (this one included) are fitted with the
same robust, confidence-weighted loss and acceleration prior as offline, and the fit's value at the newest
frame is given out: no frame of delay on top of the network's look-ahead. The prior's null space is
constant velocity, so a joint moving steadily comes out without lag; a reading far from what the window's
other frames support (beyond the Cauchy scale, a share of the person's size) is rejected, and a new place
that several frames agree on is followed within a frame or two.

Per frame one batched dense solve per reweighting step for all people ((people x K, n, n), n <= ``window``).
A track unseen for more than ``bridge`` frames starts a new window (absent means absent). Tracks unseen
for ``drop_after`` seconds are dropped; a timestamp going back (a seek) resets everything.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from posetracker.motion.solve import SIZE_CONFIDENCE, SolveSettings
from posetracker.types import PoseFrame


@dataclass(frozen=True)
class LiveSolveSettings:
    """The live solve's settings: the offline ones plus the window."""

    # a lower cutoff and a wider robust scale than offline: the newest frame's value has no frames after it
    # to average with (chosen on the dancer and the side-view walk against the One Euro filter it replaced)
    solve: SolveSettings = field(default_factory=lambda: SolveSettings(cutoff_hz=2.5, outlier_scale=0.1, iterations=4))
    window: int = 12  # frames fitted each time (the newest one's value is given out)
    drop_after: float = 0.5  # s: a track unseen this long is forgotten


def _second_difference_gram(n: int) -> np.ndarray:
    """(n, n) D'D of the second-difference operator."""
    d = np.diff(np.eye(n), 2, axis=0)
    return d.T @ d


@dataclass
class _Track:
    values: list[np.ndarray] = field(default_factory=list)  # each (K, 6): x, y px, depth, world xyz
    conf: list[np.ndarray] = field(default_factory=list)  # each (K,)
    times: list[float] = field(default_factory=list)
    last_index: int = -1


class LiveSolver:
    """Per-track causal motion solve of tracked PoseFrames (see the module docstring)."""

    def __init__(self, settings: LiveSolveSettings | None = None) -> None:
        self.settings = settings or LiveSolveSettings()
        self._grams = {n: _second_difference_gram(n) for n in range(3, self.settings.window + 1)}
        self.reset()

    def reset(self) -> None:
        """Forget every track."""
        self._tracks: dict[int, _Track] = {}
        self._last_t = -np.inf
        self._lam = None

    @property
    def track_ids(self) -> list[int]:
        return sorted(self._tracks)

    def forget(self, track_ids: Iterable[int]) -> None:
        for i in track_ids:
            self._tracks.pop(int(i), None)

    def update(self, frame: PoseFrame) -> PoseFrame:
        """Solve the tracked people of ``frame``; returns a new PoseFrame (same dtypes). People with id -1, and
        repeats of an id within a frame, pass through."""
        s = self.settings
        t = float(frame.timestamp)
        if t < self._last_t:
            self.reset()
        if self._lam is None and np.isfinite(self._last_t) and t > self._last_t:
            self._lam = s.solve.smoothness(t - self._last_t)  # the frame interval of the stream
        self._last_t = t
        self.forget([i for i, tr in self._tracks.items() if t - tr.times[-1] > s.drop_after])
        ids = frame.track_ids
        ids_u, first = np.unique(ids, return_index=True)
        people = first[ids_u >= 0]
        if people.size == 0:
            return frame
        kp = frame.keypoints.copy()
        world = None if frame.world is None else frame.world.copy()
        ready: dict[int, list[int]] = {}  # window length -> people whose windows have it (solved together)
        for p in people.tolist():
            tid = int(ids[p])
            tr = self._tracks.get(tid)
            if tr is None or frame.index - tr.last_index > s.solve.bridge + 1:
                tr = self._tracks[tid] = _Track()
            reading = np.full((frame.num_joints, 6), np.nan)
            reading[:, :3] = frame.keypoints[p]
            if frame.world is not None:
                reading[:, 3:] = frame.world[p]
            tr.values.append(reading)
            tr.conf.append(frame.confidence[p].astype(np.float64))
            tr.times.append(t)
            tr.last_index = frame.index
            del tr.values[:-s.window], tr.conf[:-s.window], tr.times[:-s.window]
            if len(tr.values) >= 3:
                ready.setdefault(len(tr.values), []).append(p)
        for group in ready.values():
            tracks = [self._tracks[int(ids[p])] for p in group]
            out = self._solve(np.stack([np.stack(tr.values) for tr in tracks]),
                              np.stack([np.stack(tr.conf) for tr in tracks]))  # (M, K, 6) at the newest frame
            kp[group] = np.where(np.isfinite(out[..., :3]), out[..., :3], kp[group])
            if world is not None:
                world[group] = np.where(np.isfinite(out[..., 3:]), out[..., 3:], world[group])
        return dataclasses.replace(frame, keypoints=kp.astype(np.float32),
                                   world=None if world is None else world.astype(np.float32))

    __call__ = update

    def _solve(self, values: np.ndarray, conf: np.ndarray) -> np.ndarray:
        """M people's windows: values (M, n, K, 6), conf (M, n, K) -> the robust fits' (M, K, 6) at the newest
        frame (the joints of all M people solved as one batch)."""
        s = self.settings.solve
        m, n, k = conf.shape
        finite = np.isfinite(values)  # (M, n, K, 6)
        y = np.where(finite, values, 0.0).transpose(0, 2, 1, 3).reshape(m * k, n, 6)  # (M K, n, 6)
        c = np.where(finite[..., :2].all(-1) & (conf >= s.min_confidence), conf, 0.0)  # (M, n, K)
        c = c.transpose(0, 2, 1).reshape(m * k, n)
        sure = np.where((conf[:, -1] >= SIZE_CONFIDENCE)[..., None], values[:, -1, :, :2], np.nan)  # (M, K, 2)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a person with no sure joint: no size
            size = np.linalg.norm(np.nanmax(sure, 1) - np.nanmin(sure, 1), axis=-1)  # (M,)
        scale = np.repeat(np.maximum(s.outlier_scale * np.nan_to_num(size), 2.0), k)[:, None]  # (M K, 1)
        prior = (self._lam or s.smoothness(1 / 30)) * self._grams[n]
        eye = np.eye(n)

        def solve(w: np.ndarray, rhs: np.ndarray) -> np.ndarray:  # w (B, n), rhs (B, n, C) -> (B, n, C)
            a = prior[None] + (w[..., None] + 1e-9) * eye[None]
            return np.linalg.solve(a, w[..., None] * rhs)

        robust = np.ones_like(c)
        for _ in range(max(1, s.iterations)):
            xy = solve(c * robust, y[..., :2])
            r = np.linalg.norm(xy - y[..., :2], axis=-1) / scale
            robust = 1.0 / (1.0 + r * r)
        newest = values[:, -1]  # (M, K, 6)
        out = np.empty((m, k, 6))
        out[..., :2] = xy[:, -1].reshape(m, k, 2)
        fit = solve(c * robust, y[..., 2:])[:, -1].reshape(m, k, 4)
        rest = finite[..., 2:].all(1)  # (M, K, 4): channels known in every frame of the window
        out[..., 2:] = np.where(rest, fit, newest[..., 2:])
        return np.where(c.reshape(m, k, n).any(-1)[..., None], out, newest)


__all__ = ["LiveSolveSettings", "LiveSolver"]
