"""Per-track One Euro smoothing of tracked PoseFrames.

:class:`PoseSmoother` keeps, for every track id, One Euro filters
(:func:`~posetracker.tracking.one_euro.one_euro_step`) on every joint's
keypoint x, y, z and world x, y, z. Image x, y use the pixel parameters,
depth z and world xyz the metric ones. All tracks' states live in one
(slots, K, 6) array, so a frame costs a fixed number of numpy calls.
Filters are created on the first frame a track id appears in and dropped
when the id has not been seen for ``drop_after`` seconds (or on
:meth:`PoseSmoother.forget`). People with id -1 (not yet confirmed) pass
through unchanged.

People smaller than ``reference_size`` are smoothed in units of their size:
the pixel ``beta`` is multiplied by ``reference_size`` / the diagonal of the
box around the person's keypoints in this frame, so the filter's cutoff
depends on how fast a joint moves relative to the body, not in pixels (a 30 px
sprinter far away is followed as closely as a 450 px one near the camera).
Larger people keep the pixel ``beta``: smoothing them harder would add lag
where it shows most (a close-up webcam user), and their keypoints are already
precise relative to their size. Depth and world xyz are in metres,
independent of image size.

Large people, live (``large_params``, :data:`LARGE_LIVE_PX` from
:data:`LARGE_PERSON_PX` px on): a slower speed estimate (``d_cutoff`` 0.5 Hz, not
1) and a higher cutoff at rest (``min_cutoff`` 1.5 Hz, not 0.7). Most of a large
person's jitter is jumps, not noise: a joint re-found 100-180 px from where it
was held, a foot read on the other foot for a few frames (the SLEAP dancer:
1.2 % of its joint-frames accelerating over 30 px/frame^2 carry 40 % of its
jitter). With a fast speed estimate the jump itself reads as speed and opens
the filter at once; the slower one follows it over a few frames. The higher
rest cutoff gives back the lag this adds on slow motion; a large person's
readings are precise relative to the PCK tolerance (0.1 of its size), so the
weaker smoothing at rest costs no accuracy there. Small people keep the
preset: their noise is large against their size, and on them the slower
speed estimate cost accuracy. Between ``LARGE_PERSON_PX[0]`` and ``[1]`` the
parameters move linearly from the preset's. Held-out clips and the dancer:
``studies/live-smoothing.md``.

Low-confidence joints (``confidence < min_confidence``) are not fed to the
filter: the joint keeps its last smoothed offset from the skeleton root (the
body centre) and moves with the smoothed root ("hold relative to the body").
A plain hold would leave the joint behind a walking person; extrapolating its
own noisy velocity would overshoot. A joint never seen confidently passes
through raw; a nan input (unknown depth) stays nan. A timestamp earlier than
the previous frame's (a seek) resets every filter.

:class:`~posetracker.tracking.tracker.PoseTracker` never reuses an id within a
recording (a seek resets it and ids start again at 0: a timestamp going back
resets the filters too); ``smoother.forget(tracker.last_retired)`` after each
tracker update frees the filters of retired tracks at once.

Live, each reading's pull on its filter is first weighed against the track's motion
(``motion.live_solve.LiveSolve``: ``update(frame, weight)``, ``last_xy``): a reading far from where the
body's motion puts the joint moves it by a fraction of its jump.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.one_euro import REFERENCE_PERSON_PX, OneEuroParams, one_euro_step, preset
from posetracker.types import PoseFrame

_FIELDS = ("_x", "_dx", "_t", "_rel")

#: Live: people whose keypoint box has a diagonal of at least LARGE_PERSON_PX[1] px are smoothed with
#: :data:`LARGE_LIVE_PX`, those under LARGE_PERSON_PX[0] px with the preset; in between, linearly
LARGE_PERSON_PX = (250.0, 350.0)
#: Live pixel parameters for large people (the module docstring); beta as the "live" preset's
LARGE_LIVE_PX = OneEuroParams(min_cutoff=1.5, beta=0.03, d_cutoff=0.5)


class PoseSmoother:
    """Per-track One Euro smoothing of ``keypoints`` and ``world``.

    spec:           skeleton of the frames (root = the joint held joints follow).
    params:         a mode of :data:`~posetracker.tracking.one_euro.PRESETS`
                    ("live" or "offline") or explicit pixel parameters.
    metric_params:  parameters for depth z and world xyz (metres); default the
                    "m" preset of ``params``' mode ("live" if params is explicit).
    min_confidence: joints below it are held (see the module docstring).
    drop_after:     seconds after which the filters of an unseen track are dropped.
    reference_size: person size (px, keypoint-box diagonal) the pixel parameters are for;
                    smaller people are smoothed relative to their size; None = plain pixels.
    large_params:   pixel parameters for people of at least ``LARGE_PERSON_PX[1]`` px (linearly from
                    ``params`` between the two sizes); "auto": :data:`LARGE_LIVE_PX` for the "live"
                    preset, none otherwise; None: ``params`` for everyone.
    """

    def __init__(
        self,
        spec: SkeletonSpec,
        params: str | OneEuroParams = "live",
        metric_params: OneEuroParams | None = None,
        *,
        min_confidence: float = 0.3,
        drop_after: float = 0.5,
        reference_size: float | None = REFERENCE_PERSON_PX,
        large_params: OneEuroParams | None | str = "auto",
    ) -> None:
        mode = params if isinstance(params, str) else "live"
        px = preset(params, "px") if isinstance(params, str) else params
        m = metric_params or preset(mode, "m")
        if isinstance(large_params, str):
            if large_params != "auto":
                raise ValueError(f"large_params: a OneEuroParams, None or 'auto', got {large_params!r}")
            large_params = LARGE_LIVE_PX if params == "live" else None
        self.spec = spec
        self.pixel_params, self.metric_params, self.large_params = px, m, large_params
        self.min_confidence = float(min_confidence)
        self.drop_after = float(drop_after)
        self.reference_size = reference_size
        # Per-column parameters: keypoint x, y (px), z (m), world x, y, z (m).
        fields = ("min_cutoff", "beta", "d_cutoff")
        self._args = tuple(np.array([getattr(px, f)] * 2 + [getattr(m, f)] * 4) for f in fields)
        self._large = None if large_params is None else tuple(
            np.array([getattr(large_params, f)] * 2 + [getattr(m, f)] * 4) for f in fields)
        self.reset()

    def reset(self) -> None:
        """Drop every track's filters."""
        k = self.spec.num_joints
        self._slot: dict[int, int] = {}  # track id -> row of the state arrays
        self._seen = np.zeros(0)  # (S,) last time each slot's track was seen
        self._x = np.zeros((0, k, 6))  # (S, K, 6) filtered values, nan = never observed
        self._dx = np.zeros((0, k, 6))  # (S, K, 6) filtered speeds
        self._t = np.zeros((0, k, 6))  # (S, K, 6) last update time, nan = never
        self._rel = np.zeros((0, k, 6))  # (S, K, 6) last smoothed offset from the root, nan = none
        self._last_t = -np.inf

    @property
    def track_ids(self) -> list[int]:
        """Sorted ids that currently have filters."""
        return sorted(self._slot)

    def forget(self, track_ids: Iterable[int]) -> None:
        """Drop the filters of these ids (e.g. ``tracker.last_retired``)."""
        for i in track_ids:
            self._slot.pop(int(i), None)

    def _slot_of(self, tid: int) -> int:
        s = self._slot.get(tid)
        if s is None:
            used = set(self._slot.values())
            s = next(i for i in range(len(self._seen) + 1) if i not in used)
            if s == len(self._seen):  # grow by doubling
                n = max(4, len(self._seen))
                self._seen = np.concatenate([self._seen, np.zeros(n)])
                for f in _FIELDS:
                    a = getattr(self, f)
                    setattr(self, f, np.concatenate([a, np.zeros((n,) + a.shape[1:])]))
            self._x[s] = self._t[s] = self._rel[s] = np.nan
            self._dx[s] = 0.0
            self._slot[tid] = s
        return s

    def last_xy(self, track_ids: Iterable[int]) -> np.ndarray:
        """(M, K, 2) the filters' last image x, y (px) of these track ids; nan where a joint (or track) has none."""
        track_ids = list(track_ids)
        out = np.full((len(track_ids), self.spec.num_joints, 2), np.nan)
        for i, tid in enumerate(track_ids):
            s = self._slot.get(int(tid))
            if s is not None:
                out[i] = self._x[s, :, :2]
        return out

    def update(self, frame: PoseFrame, weight: np.ndarray | None = None) -> PoseFrame:
        """Smooth the tracked people of ``frame``; returns a new PoseFrame (same dtypes).

        People with id -1, and repeats of an id within a frame, pass through. weight: (P, K) in [0, 1] per
        person of the frame and joint, the reading's pull on its filter (the filter takes x_hat + w (x - x_hat)
        for image x, y, depth and world); None: every reading in full.
        """
        t = float(frame.timestamp)
        if t < self._last_t:
            self.reset()
        self._last_t = t
        self.forget([i for i, s in self._slot.items() if t - self._seen[s] > self.drop_after])
        ids = frame.track_ids
        people = first_of_tracks(ids)  # (M,) one person per track id
        if people.size == 0:
            return frame
        rows = np.array([self._slot_of(int(ids[p])) for p in people])
        self._seen[rows] = t
        m, k = people.size, self.spec.num_joints
        x = np.full((m, k, 6), np.nan)
        x[..., :3] = frame.keypoints[people]
        if frame.world is not None:
            x[..., 3:] = frame.world[people]
        ok = np.broadcast_to((frame.confidence[people] >= self.min_confidence)[..., None], x.shape)
        finite = ~np.isnan(x)
        min_cutoff, beta, d_cutoff = self._args
        size = person_size(x[..., :2])
        if self._large is not None:  # large people: towards LARGE_LIVE_PX with their size
            lo, hi = LARGE_PERSON_PX
            w = np.zeros((m, 1, 6))
            w[:, 0, :2] = np.minimum(np.maximum((np.where(np.isnan(size), 0.0, size) - lo) / (hi - lo), 0.0), 1.0)[:, None]
            min_cutoff, beta, d_cutoff = (a + w * (b - a) for a, b in zip(self._args, self._large))
        if self.reference_size is not None:
            scale = np.ones((m, 1, 6))
            scale[:, 0, :2] = np.where(np.isnan(size), 1.0, np.maximum(self.reference_size / size, 1.0))[:, None]
            beta = beta * scale
        if weight is not None:  # a weighed reading pulls its filter by that share of its distance
            last = self._x[rows]
            w = np.asarray(weight, np.float64)[people][..., None]
            x_in = np.where(np.isnan(last), x, last + w * (x - last))
        else:
            x_in = x
        xs, dxs, ts = one_euro_step(x_in, t, ok & finite, self._x[rows], self._dx[rows], self._t[rows], min_cutoff, beta, d_cutoff)
        out = np.where(np.isnan(xs), x, xs)  # never observed: raw
        # Low-confidence joints keep their last offset from the smoothed root.
        root = out[:, self.spec.root : self.spec.root + 1]  # (M, 1, 6)
        rel = self._rel[rows]
        held = ~ok & finite & ~np.isnan(rel) & ~np.isnan(root)
        out = np.where(held, root + rel, out)
        fresh = ok & finite & ~np.isnan(root)
        self._rel[rows] = np.where(fresh, out - root, rel)
        self._x[rows], self._dx[rows], self._t[rows] = xs, dxs, ts
        out = np.where(finite, out, np.nan)  # unknown stays unknown
        kp = frame.keypoints.copy()
        kp[people] = out[..., :3]
        world = None
        if frame.world is not None:
            world = frame.world.copy()
            world[people] = out[..., 3:]
        return dataclasses.replace(frame, keypoints=kp, world=world)

    __call__ = update


def first_of_tracks(track_ids: np.ndarray) -> np.ndarray:
    """(M,) int64 the first person of each track id >= 0 in ``track_ids`` (P,), by ascending id (as
    ``np.unique(..., return_index=True)``, without its cost on a few ids)."""
    first: dict[int, int] = {}
    for p, tid in enumerate(track_ids.tolist()):
        if tid >= 0 and tid not in first:
            first[tid] = p
    return np.array([first[tid] for tid in sorted(first)], np.int64)


def person_size(xy: np.ndarray, min_px: float = 8.0) -> np.ndarray:
    """xy (M, K, 2) px, nan = no joint -> (M,) diagonal of the box around each person's keypoints (px, at
    least ``min_px``; every joint the network placed, so the box does not jump as joints' confidence
    flickers); nan for a person without keypoints."""
    seen = np.isfinite(xy).all(-1, keepdims=True)  # (M, K, 1)
    box = np.where(seen, xy, -np.inf).max(1) - np.where(seen, xy, np.inf).min(1)  # (M, 2), -inf without joints
    return np.where(seen.any((1, 2)), np.maximum(np.hypot(*box.T), min_px), np.nan)
