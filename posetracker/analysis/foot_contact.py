"""Foot contact per frame, and heel strikes and toe offs, from the 2-D motion of the feet (side-view walking).

A foot is in contact when it moves at the *ground's* speed: zero for walking over
ground in front of a still camera, the belt speed on a treadmill, the panning speed
under a panning camera. The ground speed is not assumed; it is estimated (per window
of a few seconds) as the velocity at which at least one foot moves in nearly every
frame (walking always has a foot on the ground): the velocity ``g`` minimising
``sum_t min(min_feet |u_foot(t) - g|, cap)``, a robust mode. Speeds are in leg lengths
per second (hip -> knee -> ankle, in pixels, a running median), so nothing depends on
the person's size in the image.

Per foot (left, right), with ``s(t) = |u_foot(t) - g(t)|``:

- thresholds scale with the person's own swing speed (``peak`` = 95th percentile of
  ``s``): contact begins below ``on_fraction * peak`` and lasts until ``s`` rises above
  ``off_fraction * peak`` (hysteresis: noise between the two does not end it), never
  below ``min_speed``; a contact then ends at its last frame below ``on_fraction * peak``,
  so heel strike and toe off are read at the same speed;
- contacts shorter than ``min_contact_s`` between two swings are dropped, swings
  shorter than ``min_swing_s`` between two contacts are filled;
- a foot missing, below ``min_confidence`` or outside the image for at most
  ``max_gap_s`` is bridged by linear interpolation (no event is placed on such a
  frame or right after it); a longer gap, and the frames next to it whose velocity
  needs it, is *unknown* (-1): neither contact nor swing, and it breaks runs.

Side views often name the *front* foot "left": the labels swap when the feet pass.
:func:`repair_swaps` finds the sign of it (one label stops standing where the other
starts, at once) and exchanges the labels from there, so "left" and
"right" are the network's names at the start of the track, kept consistent. Those swaps are
what :mod:`posetracker.motion.sides` undoes in the motion itself; the gait analysis then reads
the feet as labelled, without the repair.

Events (:func:`contact_events`): a heel strike at the first frame of a contact run
that follows at least ``min_swing_s`` of seen swing; a toe off at the first swing
frame after a contact run when at least ``min_swing_s`` of seen swing follows. A
contact run that touches a gap or either end of the track has no event there.

The foot point is the ankle, or the mean of the ankle and the heel / toe joints when
the skeleton has them (``{s}_heel``, ``{s}_big_toe``, ``{s}_small_toe``, ``{s}_toe``,
``{s}_foot_index``). With the ankle alone, toe off is read when the ankle speeds up
(between heel rise and toe off).

The states and the rules on their runs (hysteresis, trimmed ends, short runs, the swap repair) are in
:mod:`posetracker.analysis.contact_states`. Shapes: T = frames of the track, F = 2 feet (left, right).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from posetracker.analysis.contact_states import (  # noqa: F401 (SWING, UNKNOWN, repair_swaps: re-exported)
    CONTACT, SWING, UNKNOWN, drop_short, hysteresis, repair_swaps, swap_after, trim_ends)
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import PersonTrack, fill_gaps, frame_time, runs, valid_points

FEET = ("left", "right")
FOOT_JOINTS = ("{s}_ankle", "{s}_heel", "{s}_big_toe", "{s}_small_toe", "{s}_toe", "{s}_foot_index")
LEG_JOINTS = ("{s}_hip", "{s}_knee", "{s}_ankle")

HEEL_STRIKE, TOE_OFF = "heel_strike", "toe_off"


class GaitError(ValueError):
    """The skeleton or the settings cannot give foot contacts (no ankles, bad numbers)."""


@dataclass(frozen=True)
class ContactSettings:
    """Thresholds of :func:`foot_contacts` (speeds in leg lengths per second, durations in seconds)."""

    min_confidence: float = 0.3
    on_fraction: float = 0.4
    off_fraction: float = 0.55
    min_speed: float = 0.3
    min_contact_s: float = 0.1
    min_swing_s: float = 0.1
    ground_window_s: float = 2.0
    smooth_s: float = 0.1
    repair_swaps: bool = True  # find (and undo in the contacts) label swaps; the gait analysis reads labels as given
    max_gap_s: float = 0.1

    def check(self) -> None:
        """Raise GaitError for settings that cannot work."""
        if not 0.0 <= self.min_confidence <= 1.0:
            raise GaitError(f"min_confidence must be in [0, 1], got {self.min_confidence}")
        if not 0.0 < self.on_fraction <= self.off_fraction < 1.0:
            raise GaitError(f"need 0 < on_fraction <= off_fraction < 1, got {self.on_fraction}, {self.off_fraction}")
        for name in ("min_speed", "min_contact_s", "min_swing_s", "ground_window_s"):
            if not getattr(self, name) > 0:
                raise GaitError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("smooth_s", "max_gap_s"):
            if not getattr(self, name) >= 0:
                raise GaitError(f"{name} must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class FootContacts:
    """Foot contact of one person over the T frames of a track.

    frames:     (T,) int64 source frame index
    times:      (T,) float64 seconds
    position:   (T, F, 2) float64 foot point, image x, y px; nan where unseen
    leg:        (T,) float64 leg length px (running median; nan where never seen nearby)
    ground:     (T, 2) float64 ground velocity, leg lengths / s (image x, y); nan where unknown
    speed:      (T, F) float64 foot speed relative to the ground, leg lengths / s; nan where unknown
    contact:    (T, F) int8: 1 contact, 0 swing, -1 unknown
    thresholds: (F, 2) float64 (on, off) speed thresholds per foot, leg lengths / s
    swaps:      (S,) int64 track indices from which the left and right labels were exchanged
                (:func:`repair_swaps`); position, speed and contact are already repaired
    bridged:    (T, F) bool frames where the foot was not seen but lies in a gap of at most
                ``max_gap_s``, bridged by linear interpolation (their contact is measured; no
                event is placed on them or right after them)
    """

    frames: np.ndarray
    times: np.ndarray
    position: np.ndarray
    leg: np.ndarray
    ground: np.ndarray
    speed: np.ndarray
    contact: np.ndarray
    thresholds: np.ndarray
    swaps: np.ndarray
    bridged: np.ndarray

    @property
    def num_frames(self) -> int:
        return int(self.times.shape[0])


@dataclass(frozen=True)
class GaitEvent:
    """A heel strike or toe off of one foot; ``index`` is the position in the track (0..T-1)."""

    foot: str
    kind: str
    index: int
    frame: int
    time: float


def foot_joints(spec: SkeletonSpec) -> dict[str, list[int]]:
    """{foot: joint indices of its foot point} (the ankle first). Raises GaitError without both ankles."""
    out: dict[str, list[int]] = {}
    for side in FEET:
        names = [n.format(s=side) for n in FOOT_JOINTS]
        if names[0] not in spec.joint_names:
            raise GaitError(f"skeleton {spec.name!r} has no {names[0]}: gait needs both ankles")
        out[side] = [spec.index(n) for n in names if n in spec.joint_names]
    for side in FEET:
        for n in LEG_JOINTS:
            if n.format(s=side) not in spec.joint_names:
                raise GaitError(f"skeleton {spec.name!r} has no {n.format(s=side)}: gait needs hips, knees, ankles")
    return out


def _inside(points: np.ndarray, image_size: tuple[int, int]) -> np.ndarray:
    """(...,) bool: image points (..., 2) px lie inside a (width, height) frame; all True when the size is unknown."""
    w, h = image_size
    if w <= 0 or h <= 0:
        return np.ones(points.shape[:-1], bool)
    with np.errstate(invalid="ignore"):
        return (points[..., 0] >= 0) & (points[..., 0] < w) & (points[..., 1] >= 0) & (points[..., 1] < h)


def _seen(track: PersonTrack, joints: list[int], min_confidence: float, image_size: tuple[int, int]) -> np.ndarray:
    """(T,) bool: every joint in ``joints`` is finite, confident and inside the frame."""
    xy = track.keypoints[:, joints, :2]
    ok = valid_points(xy, track.confidence[:, joints], min_confidence) & _inside(xy, image_size)
    if min_confidence > 0:  # valid_points keeps confidence == min_confidence; a 0-confidence joint is never seen
        ok &= track.confidence[:, joints] > 0
    return ok.all(axis=1)


def _running_median(values: np.ndarray, half: int) -> np.ndarray:
    """(T,) nan-aware median over [t - half, t + half]; nan where the window has no finite value."""
    t = values.shape[0]
    out = np.full(t, np.nan)
    for i in range(t):
        w = values[max(0, i - half): i + half + 1]
        w = w[np.isfinite(w)]
        if w.size:
            out[i] = np.median(w)
    return out


def leg_length(track: PersonTrack, spec: SkeletonSpec, min_confidence: float, image_size: tuple[int, int],
               half_window: int) -> np.ndarray:
    """(T,) px: hip -> knee -> ankle length, mean of the sides seen, running median over 2 * half_window + 1 frames."""
    per_side = []
    for side in FEET:
        idx = [spec.index(n.format(s=side)) for n in LEG_JOINTS]
        xy = track.keypoints[:, idx, :2]
        length = np.linalg.norm(xy[:, 1] - xy[:, 0], axis=-1) + np.linalg.norm(xy[:, 2] - xy[:, 1], axis=-1)
        per_side.append(np.where(_seen(track, idx, min_confidence, image_size), length, np.nan))
    both = np.stack(per_side, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # frames with neither side seen: nan
        mean = np.nanmean(both, axis=1)
    return _running_median(mean, half_window)


def _smooth(points: np.ndarray, ok: np.ndarray, half: int) -> np.ndarray:
    """(T, D) centred moving average over 2 * half + 1 seen frames around each seen frame (nan elsewhere)."""
    out = np.where(ok[:, None], points, np.nan)
    if half <= 0:
        return out
    t = points.shape[0]
    res = np.full_like(out, np.nan)
    for i in np.flatnonzero(ok):
        lo, hi = max(0, i - half), min(t, i + half + 1)
        res[i] = np.nanmean(out[lo:hi], axis=0)
    return res


def _velocity(points: np.ndarray, ok: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(T, D) central-difference velocity of (T, D) points per second where the frame and both
    neighbours are ``ok`` (T,); nan elsewhere (the ends, next to missing frames)."""
    v = np.full_like(points, np.nan)
    if points.shape[0] >= 3:
        dt = (times[2:] - times[:-2])[:, None]
        both = (ok[2:] & ok[1:-1] & ok[:-2])[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            v[1:-1] = np.where(both & (dt > 0), (points[2:] - points[:-2]) / dt, np.nan)
    return v


def ground_velocity(u: np.ndarray, half_window: int, cap: float = 1.0, stride: int | None = None,
                    candidates: int = 100) -> np.ndarray:
    """(T, 2) ground velocity from the feet's velocities ``u`` (T, F, 2), leg lengths / s.

    In windows of 2 * half_window + 1 frames (centres every ``stride`` frames, default a
    third of a half window; linear in between, held at the ends): the candidate velocity
    (one of the feet's own, at most ``candidates`` of them spread over the window) that
    minimises ``sum_t min(min_f |u[t, f] - g|, cap)`` over frames with a foot seen; nan
    throughout when no window has 5 such frames.
    """
    t = u.shape[0]
    seen = np.isfinite(u).all(axis=-1)  # (T, F)
    centres, values = [], []
    stride = stride or max(1, half_window // 3)
    for c in range(0, t, max(1, stride)):
        lo, hi = max(0, c - half_window), min(t, c + half_window + 1)
        win, ok = u[lo:hi], seen[lo:hi]
        rows = ok.any(axis=1)
        if rows.sum() < 5:
            continue
        cand = win[ok]  # (N, 2)
        if cand.shape[0] > candidates:
            cand = cand[np.linspace(0, cand.shape[0] - 1, candidates).astype(int)]
        d = np.linalg.norm(win[rows][None, :, :, :] - cand[:, None, None, :], axis=-1)  # (N, R, F)
        d = np.where(ok[rows][None], d, np.inf).min(axis=2)
        cost = np.minimum(d, cap).sum(axis=1)
        centres.append(c)
        values.append(cand[int(np.argmin(cost))])
    if not centres:
        return np.full((t, 2), np.nan)
    c, g = np.array(centres, float), np.array(values)
    idx = np.arange(t, dtype=float)
    return np.stack([np.interp(idx, c, g[:, 0]), np.interp(idx, c, g[:, 1])], axis=1)


def _frames(seconds: float, dt: float) -> int:
    return max(1, int(round(seconds / dt)))


def foot_contacts(track: PersonTrack, spec: SkeletonSpec, settings: ContactSettings | None = None,
                  image_size: tuple[int, int] = (0, 0), fps: float = 30.0) -> FootContacts:
    """Per-frame foot contact of one person (see the module docstring for the rule).

    image_size: (width, height) px of the frames (joints outside give no contact); (0, 0) = unknown.
    fps: used only when the track's timestamps cannot give the frame time.
    Raises GaitError when the skeleton has no ankles, hips or knees, or for bad settings.
    """
    settings = settings or ContactSettings()
    settings.check()
    joints = foot_joints(spec)
    dt = frame_time(track.times, fps)
    t = track.num_frames
    leg = leg_length(track, spec, settings.min_confidence, image_size, _frames(1.0, dt))
    position = np.full((t, len(FEET), 2), np.nan)
    u = np.full((t, len(FEET), 2), np.nan)
    bridged = np.zeros((t, len(FEET)), bool)
    half = _frames(settings.smooth_s, dt) // 2
    for f, side in enumerate(FEET):
        seen = _seen(track, joints[side], settings.min_confidence, image_size)
        point, ok = fill_gaps(track.keypoints[:, joints[side], :2].mean(axis=1), seen,
                              int(settings.max_gap_s / dt + 1e-9))
        bridged[:, f] = ok & ~seen
        position[:, f] = np.where(ok[:, None], point, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            u[:, f] = _velocity(_smooth(point, ok, half), ok, track.times) / leg[:, None]
    ground = ground_velocity(u, _frames(settings.ground_window_s / 2, dt))
    speed = np.linalg.norm(u - ground[:, None, :], axis=-1)
    finite = speed[np.isfinite(speed)]
    peak = float(np.percentile(finite, 95)) if finite.size else np.nan
    contact = np.full((t, len(FEET)), UNKNOWN, np.int8)
    thresholds = np.full((len(FEET), 2), np.nan)
    swaps: list[int] = []
    if np.isfinite(peak):
        on = max(settings.min_speed, settings.on_fraction * peak)
        off = max(1.5 * settings.min_speed, settings.off_fraction * peak)
        thresholds[:] = (on, off)
        for f in range(len(FEET)):
            state = trim_ends(hysteresis(speed[:, f], on, off), speed[:, f], on)
            contact[:, f] = drop_short(state, SWING, _frames(settings.min_swing_s, dt))
        if settings.repair_swaps:
            contact, position, swaps = repair_swaps(contact, position, leg, track.times)
            for i in swaps:
                swap_after(speed, i)
        for f in range(len(FEET)):
            state = drop_short(contact[:, f], SWING, _frames(settings.min_swing_s, dt))
            contact[:, f] = drop_short(state, CONTACT, _frames(settings.min_contact_s, dt))
    for i in swaps:
        swap_after(bridged, i)
    return FootContacts(track.frames, track.times, position, leg, ground, speed, contact, thresholds,
                        np.array(swaps, np.int64), bridged)


def contact_events(contacts: FootContacts, min_swing_s: float = 0.1) -> list[GaitEvent]:
    """Heel strikes and toe offs of both feet, in time order (see the module docstring)."""
    dt = frame_time(contacts.times, 30.0)
    need = _frames(min_swing_s, dt)
    events: list[GaitEvent] = []
    for f, side in enumerate(FEET):
        state, guessed = contacts.contact[:, f], contacts.bridged[:, f]
        for a, b in runs(state == CONTACT):
            if a >= need and (state[a - need:a] == SWING).all() and not guessed[a - 1:a + 1].any():
                events.append(GaitEvent(side, HEEL_STRIKE, a, int(contacts.frames[a]), float(contacts.times[a])))
            if b + need <= len(state) and (state[b:b + need] == SWING).all() and not guessed[b - 1:b + 1].any():
                events.append(GaitEvent(side, TOE_OFF, b, int(contacts.frames[b]), float(contacts.times[b])))
    events.sort(key=lambda e: (e.index, e.foot, e.kind))
    return events
