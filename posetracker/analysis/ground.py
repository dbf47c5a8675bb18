"""Ground and gravity: the floor plane from the stance feet of everyone in a clip, and a Y-up floor frame.

Input: the 3-D ankles (camera space: x right, y down, z forward, metres) of every tracked
person in the frames where that ankle stands on still ground, still in the image
(:mod:`.stance`, from the 2-D foot contact of :mod:`.foot_contact`).

Fit (:func:`fit_floor_plane`): the ankles of the stance feet lie on a plane parallel to
the floor, one ankle height above it. One normal ``n`` (gravity, pointing up) is shared
by everyone; each person has their own offset ``d_k`` (``n . p = d_k``), because a
monocular depth error scales a person's distance, which moves their floor along the
normal. Iteratively reweighted least squares with Tukey's biweight (``tukey_c`` times
the residuals' MAD scale, at least ``min_scale_m``): a foot in the air read as standing
gets weight 0 and does not move the plane; it starts from the median offsets along
the prior normal, so half the points may be wrong.

The feet cannot show the tilt about a direction they do not spread along (a straight
walk across the image says nothing about the camera's pitch), so the fit adds a prior
on the normal: the stance frames' median body axis (contact ankles -> mid-shoulders;
upright people; the level camera's up where there are none), worth as much as
stance feet spread ``prior_spread_m`` along every direction. The normal is the smallest
eigenvector of ``C + prior_spread_m^2 (I - u u^T)`` (``C``: the weighted scatter of the
ankles about their person's centroid, ``u``: the prior): along a direction the feet
spread over with standard deviation ``s`` their tilt weighs ``s^2 / (s^2 + prior^2)``.

Fallback (``fitted`` False, with the reason in the report): less than ``min_stance_s``
seconds of inlier stance ankles (summed over feet and people), less than
``min_inlier_fraction`` of them inliers, or their robust scale above ``max_scale_m``
(the contacts do not lie on one plane; on the three clips of
``docs/experiments/floor-and-feet.md`` 98-100 % are inliers at a scale of 2.8-3.2 cm;
the BVH tests' synthetic person, who waves their legs in the air, passed in 2 of 60
random clips tried, the 20-s ones, at 4.6-5.0 cm): the level camera
(``X = x, Y = -y, Z = -z``) and the floor at the ``percentile``-th percentile of the
lowest joint, the method the BVH export used before; there is then no foot lock.

Floor frame (:class:`FloorFrame`): ``p_floor = rotation @ p_camera + translation``;
Y up along ``n``, X the camera's right projected onto the floor, ``Z = X x Y`` (towards
the camera, right-handed, as BVH), origin on the floor below the camera (so the camera
sits at Y = camera height). The floor is an ankle height below the ankles' plane: an
adult's ankle joint is ``ANKLE_HEIGHT_FRACTION`` (0.039, Winter, *Biomechanics and
Motor Control of Human Movement*) of stature above the sole (:mod:`.stature`; 1.65 m
when it cannot be measured). ``person_floor[k]``: person k's floor, Y in the floor
frame (0 for the shared floor, the inlier-weighted median of the people's floors).

Camera angles (:func:`camera_angles`): pitch = degrees the optical axis points below
the horizontal (down positive); roll = degrees the camera is turned clockwise about its
optical axis, seen from behind it (its right side down).

Shapes: N = stance ankles, K = people (or groups), T = frames, J = joints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posetracker.analysis.foot_contact import FEET, ContactSettings, FootContacts, GaitError, foot_contacts
from posetracker.analysis.stance import MAX_IMAGE_SLIDE, STILL_GROUND, ContactPhase, contact_phases, still_parts
from posetracker.analysis.stature import stature
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import PersonTrack, frame_time, person_tracks
from posetracker.types import PoseSequence

#: ankle joint height above the sole as a fraction of stature (Winter 2009, table 4.1)
ANKLE_HEIGHT_FRACTION = 0.039
DEFAULT_STATURE_M = 1.65
#: the level camera's floor frame: X = x, Y = -y (up), Z = -z
LEVEL = np.diag([1.0, -1.0, -1.0])


class GroundError(ValueError):
    """Input the floor fit cannot use (wrong shapes, non-finite points, bad settings)."""


@dataclass(frozen=True)
class GroundSettings:
    """Settings of the floor fit (lengths in metres)."""

    min_stance_s: float = 1.0
    min_inlier_fraction: float = 0.8
    max_scale_m: float = 0.05
    min_scale_m: float = 0.005
    tukey_c: float = 4.685
    prior_spread_m: float = 0.3
    max_prior_tilt_deg: float = 45.0
    percentile: float = 2.0
    min_confidence: float = 0.2
    max_ground_speed: float = STILL_GROUND
    max_image_slide: float = MAX_IMAGE_SLIDE
    max_iter: int = 50

    def check(self) -> None:
        """Raise GroundError for settings that cannot work."""
        if not self.min_stance_s >= 0:
            raise GroundError(f"min_stance_s must be >= 0, got {self.min_stance_s}")
        if not 0.0 < self.min_inlier_fraction <= 1.0:
            raise GroundError(f"min_inlier_fraction must be in (0, 1], got {self.min_inlier_fraction}")
        for name in ("max_scale_m", "min_scale_m", "tukey_c", "max_ground_speed", "max_image_slide"):
            if not getattr(self, name) > 0:
                raise GroundError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.prior_spread_m >= 0:
            raise GroundError(f"prior_spread_m must be >= 0, got {self.prior_spread_m}")
        if not 0.0 < self.max_prior_tilt_deg < 90.0:
            raise GroundError(f"max_prior_tilt_deg must be in (0, 90), got {self.max_prior_tilt_deg}")
        if not 0.0 <= self.percentile <= 100.0:
            raise GroundError(f"percentile must be in [0, 100], got {self.percentile}")


@dataclass(frozen=True)
class PlaneFit:
    """Result of :func:`fit_floor_plane`.

    normal:  (3,) unit up normal, camera space
    offsets: (K,) each group's plane offset ``n . p`` (m; nan for a group without inliers)
    inliers: list of K (N_k,) bool, the points with non-zero final weight
    scale:   robust standard deviation of the residuals (m)
    feet_normal: (3,) the weighted plane normal of the points alone (no prior), camera space
    spread:  (2,) standard deviations (m) of the inliers along the two in-plane principal axes
    """

    normal: np.ndarray
    offsets: np.ndarray
    inliers: list[np.ndarray]
    scale: float
    feet_normal: np.ndarray
    spread: np.ndarray
    iterations: int

    @property
    def num_points(self) -> int:
        return int(sum(len(i) for i in self.inliers))

    @property
    def num_inliers(self) -> int:
        return int(sum(int(i.sum()) for i in self.inliers))


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    if not n > 1e-12:
        raise GroundError("a direction of zero length")
    return np.asarray(v, np.float64) / n


def _check_groups(groups: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for k, g in enumerate(groups):
        g = np.asarray(g, np.float64)
        if g.ndim != 2 or g.shape[1] != 3:
            raise GroundError(f"points of group {k} must have shape (N, 3), got {g.shape}")
        if not np.isfinite(g).all():
            raise GroundError(f"points of group {k} must be finite (drop unknown ankles first)")
        out.append(g)
    if not out:
        raise GroundError("no groups of points")
    return out


def _min_eigvec(m: np.ndarray, towards: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(0.5 * (m + m.T))
    n = v[:, 0]
    return n if np.dot(n, towards) >= 0 else -n


def _scatter(groups: list[np.ndarray], weights: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """(3, 3) weighted scatter of the points about their group's weighted centroid (per unit weight), centroids."""
    total = np.zeros((3, 3))
    wsum = 0.0
    cents: list[np.ndarray | None] = []
    for g, w in zip(groups, weights):
        sw = float(w.sum())
        if sw <= 0:
            cents.append(None)
            continue
        c = (w[:, None] * g).sum(0) / sw
        d = g - c
        total += (w[:, None] * d).T @ d
        wsum += sw
        cents.append(c)
    return (total / wsum if wsum > 0 else total), cents


def fit_floor_plane(groups: list[np.ndarray], prior_up: np.ndarray | None = None,
                    settings: GroundSettings | None = None) -> PlaneFit:
    """Robust plane through stance ankles with one normal and an offset per group (see the module docstring).

    groups: K arrays (N_k, 3) of finite camera-space points (m), one per person (N_k may be 0).
    prior_up: (3,) the prior up direction (default: the level camera's, (0, -1, 0)).
    Raises GroundError for bad shapes, non-finite points, or fewer than 3 points in all.
    """
    settings = settings or GroundSettings()
    settings.check()
    groups = _check_groups(groups)
    u = _unit(np.array([0.0, -1.0, 0.0]) if prior_up is None else np.asarray(prior_up, np.float64).reshape(-1))
    if u.shape != (3,):
        raise GroundError(f"prior_up must have shape (3,), got {np.shape(prior_up)}")
    if sum(len(g) for g in groups) < 3:
        raise GroundError(f"a plane needs at least 3 points, got {sum(len(g) for g in groups)}")
    prior = settings.prior_spread_m ** 2 * (np.eye(3) - np.outer(u, u))
    n = u.copy()
    offsets = np.array([np.median(g @ n) if len(g) else np.nan for g in groups])
    weights = [np.ones(len(g)) for g in groups]
    scale = settings.min_scale_m
    it = 0
    for it in range(1, settings.max_iter + 1):
        res = np.concatenate([g @ n - d for g, d in zip(groups, offsets) if len(g)])
        scale = max(1.4826 * float(np.median(np.abs(res))), settings.min_scale_m)
        weights = []
        for g, d in zip(groups, offsets):
            z = (g @ n - d) / (settings.tukey_c * scale) if len(g) and np.isfinite(d) else np.full(len(g), np.inf)
            weights.append(np.where(np.abs(z) < 1, (1 - z * z) ** 2, 0.0))
        scatter, cents = _scatter(groups, weights)
        new = _min_eigvec(scatter + prior, u)
        offsets = np.array([np.dot(c, new) if c is not None else np.nan for c in cents])
        done = float(np.linalg.norm(new - n)) < 1e-10
        n = new
        if done:
            break
    scatter, _ = _scatter(groups, weights)
    feet = _min_eigvec(scatter, u)
    spread = np.sqrt(np.maximum(np.linalg.eigvalsh(scatter)[1:], 0.0))[::-1]  # along the points' in-plane axes
    return PlaneFit(n, offsets, [wk > 0 for wk in weights], scale, feet, spread.copy(), it)


def floor_rotation(normal: np.ndarray) -> np.ndarray:
    """(3, 3) camera -> floor rotation (rows: the floor's X, Y, Z axes in camera space) for the up ``normal`` (3,):
    Y = normal, X = camera x projected onto the floor, Z = X x Y. The level camera's is :data:`LEVEL`."""
    y = _unit(normal)
    x = np.array([1.0, 0.0, 0.0]) - y[0] * y
    if np.linalg.norm(x) < 1e-6:
        raise GroundError("the floor normal lies along the camera's x axis: no floor X direction")
    x = _unit(x)
    return np.stack([x, y, np.cross(x, y)])


def camera_angles(normal: np.ndarray) -> tuple[float, float]:
    """(pitch, roll) in degrees of the camera for the floor's up ``normal`` (3,) in camera space: pitch > 0
    looking down, roll > 0 turned clockwise seen from behind the camera."""
    n = _unit(normal)
    pitch = float(np.degrees(np.arcsin(np.clip(-n[2], -1.0, 1.0))))
    roll = float(np.degrees(np.arctan2(-n[0], -n[1])))
    return pitch, roll


def percentile_floor(heights: np.ndarray, percentile: float = 2.0) -> float:
    """The fallback floor: the ``percentile``-th percentile over frames of the lowest of the (T, J) joint heights
    (m, Y up, nan = unknown); nan when no frame has a joint."""
    h = np.asarray(heights, np.float64)
    if h.ndim != 2:
        raise GroundError(f"heights must have shape (T, J), got {h.shape}")
    known = np.isfinite(h).any(axis=1)
    if not known.any():
        return float("nan")
    return float(np.percentile(np.nanmin(h[known], axis=1), percentile))


@dataclass(frozen=True)
class FloorFrame:
    """Camera space -> floor frame (Y up from the floor).

    rotation:     (3, 3) camera -> floor rotation (rows: floor X, Y, Z in camera space)
    translation:  (3,) metres; ``p_floor = rotation @ p_camera + translation``
    fitted:       the floor was fitted to stance feet (False: the level-camera fallback)
    person_floor: {track id: Y (m) of that person's floor in the floor frame}
    ankle_height: {track id: the person's ankle height above the sole (m)}
    report:       what was fitted, from how much, the camera's pitch and roll (JSON-ready)
    """

    rotation: np.ndarray
    translation: np.ndarray
    fitted: bool
    person_floor: dict[int, float] = field(default_factory=dict)
    ankle_height: dict[int, float] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)

    def to_floor(self, points: np.ndarray) -> np.ndarray:
        """(..., 3) camera-space points -> (..., 3) floor-frame points (m)."""
        p = np.asarray(points, np.float64)
        if p.shape[-1:] != (3,):
            raise GroundError(f"points must have shape (..., 3), got {p.shape}")
        return p @ self.rotation.T + self.translation

    def to_person_floor(self, points: np.ndarray, person: int) -> np.ndarray:
        """(..., 3) camera-space points of ``person`` -> floor frame with that person's own floor at Y = 0."""
        out = self.to_floor(points)
        out[..., 1] -= self.person_floor.get(int(person), 0.0)
        return out


@dataclass(frozen=True)
class Ground:
    """The floor of a clip and the stance phases it was fitted to.

    frame:    the floor frame
    contacts: {track id: FootContacts} (absent for people whose foot contact could not be read)
    phases:   {track id: stance phases on still ground with the ankle's 3-D known (track labels)}
    fit:      the plane fit (None when there were too few points to try one)
    """

    frame: FloorFrame
    contacts: dict[int, FootContacts]
    phases: dict[int, list[ContactPhase]]
    fit: PlaneFit | None = None


def ankle_heights(track: PersonTrack, spec: SkeletonSpec, min_confidence: float = 0.2) -> tuple[float, float]:
    """(ankle height m, stature m) of one person: ANKLE_HEIGHT_FRACTION of their stature (DEFAULT_STATURE_M
    when it cannot be measured; stature is then nan)."""
    try:
        h = stature(track.world, track.valid_world(min_confidence), spec)
    except KeyError:  # a skeleton without the COCO names
        h = float("nan")
    return ANKLE_HEIGHT_FRACTION * (h if np.isfinite(h) else DEFAULT_STATURE_M), h


def _ankles(track: PersonTrack, spec: SkeletonSpec, min_confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """(T, F, 3) camera-space ankles of the track's own left, right ankle joints, (T, F) bool known."""
    idx = [spec.index(f"{s}_ankle") for s in FEET]
    ok = track.valid_world(min_confidence)[:, idx]
    return track.world[:, idx], ok


def body_up(track: PersonTrack, spec: SkeletonSpec, phases: list[ContactPhase], min_confidence: float,
            max_tilt_deg: float) -> np.ndarray:
    """(M, 3) unit camera-space directions from the standing ankles' mean to the mid-shoulders, one per stance
    frame with both shoulders known, those within ``max_tilt_deg`` of the level camera's up."""
    ankles, ok = _ankles(track, spec, min_confidence)
    t = track.num_frames
    weight = np.zeros((t, len(FEET)))
    for p in phases:
        weight[p.start:p.stop, p.foot] = 1.0
    weight *= ok
    if not {"left_shoulder", "right_shoulder"} <= set(spec.joint_names):
        return np.zeros((0, 3))
    sh = [spec.index("left_shoulder"), spec.index("right_shoulder")]
    shoulders_ok = track.valid_world(min_confidence)[:, sh].all(axis=1)
    rows = (weight.sum(1) > 0) & shoulders_ok
    if not rows.any():
        return np.zeros((0, 3))
    feet = (np.nan_to_num(ankles[rows]) * weight[rows][:, :, None]).sum(1) / weight[rows].sum(1, keepdims=True)
    v = track.world[rows][:, sh].mean(axis=1) - feet
    length = np.linalg.norm(v, axis=1)
    v = v[length > 1e-6] / length[length > 1e-6, None]
    return v[-v[:, 1] >= np.cos(np.radians(max_tilt_deg))]


def _fallback(tracks: dict[int, PersonTrack], spec: SkeletonSpec, settings: GroundSettings, reason: str,
              ankle: dict[int, float], info: dict[str, Any]) -> FloorFrame:
    floors = []
    for tr in tracks.values():
        heights = -tr.world[..., 1].copy()
        heights[~tr.valid_world(settings.min_confidence)] = np.nan
        f = percentile_floor(heights[:, list(spec.labelled_joints)], settings.percentile)
        if np.isfinite(f):
            floors.append(f)
    floor = float(np.median(floors)) if floors else 0.0
    report = {"fitted": False, "reason": reason,
              "method": f"level camera, floor at the {settings.percentile:g}th percentile of the lowest joint",
              "pitch_deg": 0.0, "roll_deg": 0.0, "camera_height_m": round(-floor, 4), **info}
    return FloorFrame(LEVEL.copy(), np.array([0.0, -floor, 0.0]), False, {k: 0.0 for k in tracks}, ankle, report)


def _r(v: float, digits: int = 4) -> float | None:
    return round(float(v), digits) if np.isfinite(v) else None


def ground_from_tracks(tracks: dict[int, PersonTrack], spec: SkeletonSpec, image_size: tuple[int, int] = (0, 0),
                       fps: float = 30.0, settings: GroundSettings | None = None,
                       contact_settings: ContactSettings | None = None) -> Ground:
    """The floor of a clip from the stance ankles of every track (see the module docstring).

    tracks: {track id: PersonTrack} (:func:`posetracker.tracks.person_tracks`); image_size: (width, height) px
    of the frames ((0, 0) = unknown); fps: used only where the timestamps cannot give the frame time.
    Never raises for data that cannot give a floor: the frame is then the fallback, with the reason.
    Raises GroundError for bad settings or no tracks.
    """
    settings = settings or GroundSettings()
    settings.check()
    if not tracks:
        raise GroundError("no tracks")
    contacts: dict[int, FootContacts] = {}
    phases: dict[int, list[ContactPhase]] = {}
    groups: list[np.ndarray] = []
    ids: list[int] = []
    ups: list[np.ndarray] = []
    ankle: dict[int, float] = {}
    people: dict[str, dict[str, Any]] = {}
    for tid, tr in tracks.items():
        a, h = ankle_heights(tr, spec, settings.min_confidence)
        ankle[tid] = a
        people[str(tid)] = {"stature_m": _r(h, 3), "ankle_height_m": round(a, 4)}
        if not np.isfinite(tr.world).any():
            continue
        try:
            c = foot_contacts(tr, spec, contact_settings, image_size, fps)
        except GaitError as exc:
            people[str(tid)]["contacts"] = str(exc)
            continue
        pos, ok = _ankles(tr, spec, settings.min_confidence)
        dt = frame_time(tr.times, fps)
        ph = still_parts(c, contact_phases(c, ok, settings.max_ground_speed), settings.max_image_slide,
                         max(2, int(round((contact_settings or ContactSettings()).min_contact_s / dt))))
        contacts[tid], phases[tid] = c, ph
        pts = np.concatenate([pos[p.start:p.stop, p.foot] for p in ph]) if ph else np.zeros((0, 3))
        groups.append(pts)
        ids.append(tid)
        ups.append(body_up(tr, spec, ph, settings.min_confidence, settings.max_prior_tilt_deg))
        people[str(tid)]["contact_points"] = len(pts)
    up = np.concatenate(ups) if ups else np.zeros((0, 3))
    prior = _unit(np.median(up, axis=0)) if len(up) >= 5 else np.array([0.0, -1.0, 0.0])
    info: dict[str, Any] = {"prior": f"body axis of {len(up)} stance frames" if len(up) >= 5 else "level camera",
                            "prior_pitch_deg": _r(camera_angles(prior)[0], 2),
                            "prior_roll_deg": _r(camera_angles(prior)[1], 2), "people": people}
    total = int(sum(len(g) for g in groups))
    info["contact_points"] = total
    dt = frame_time(next(iter(tracks.values())).times, fps)
    need = max(int(np.ceil(settings.min_stance_s / dt - 1e-9)), 3)
    if total < need:
        frame = _fallback(tracks, spec, settings, f"too few stance ankles: {total} (need {need}, "
                          f"{settings.min_stance_s:g} s)", ankle, info)
        return Ground(frame, contacts, phases, None)
    fit = fit_floor_plane(groups, prior, settings)
    frac = fit.num_inliers / max(fit.num_points, 1)
    info.update({"inliers": fit.num_inliers, "inlier_fraction": round(frac, 3), "scale_cm": round(100 * fit.scale, 2),
                 "spread_m": [round(float(s), 3) for s in fit.spread],
                 "feet_only_pitch_deg": _r(camera_angles(fit.feet_normal)[0], 2),
                 "feet_only_roll_deg": _r(camera_angles(fit.feet_normal)[1], 2)})
    for tid, inl in zip(ids, fit.inliers):
        people[str(tid)]["inliers"] = int(inl.sum())
    reason = ""
    if fit.num_inliers < need:
        reason = f"too few stance ankles agree on a plane: {fit.num_inliers} (need {need})"
    elif frac < settings.min_inlier_fraction:
        reason = f"the stance ankles do not lie on one plane: {100 * frac:.0f} % inliers (need " \
                 f"{100 * settings.min_inlier_fraction:.0f} %)"
    elif fit.scale > settings.max_scale_m:
        reason = f"the stance ankles scatter {100 * fit.scale:.1f} cm about the best plane (at most " \
                 f"{100 * settings.max_scale_m:.1f} cm)"
    if reason:
        return Ground(_fallback(tracks, spec, settings, reason, ankle, info), contacts, phases, fit)
    rot = floor_rotation(fit.normal)
    floors, counts, fitted_ids = [], [], []
    for tid, d, inl in zip(ids, fit.offsets, fit.inliers):
        if np.isfinite(d) and inl.any():
            floors.append(d - ankle[tid])
            counts.append(int(inl.sum()))
            fitted_ids.append(tid)
    order = np.argsort(floors)
    cum = np.cumsum(np.array(counts)[order])
    shared = float(np.array(floors)[order][np.searchsorted(cum, 0.5 * cum[-1])])  # inlier-weighted median
    person_floor = {tid: 0.0 for tid in tracks}
    for tid, f in zip(fitted_ids, floors):
        person_floor[tid] = float(f - shared)
        people[str(tid)]["floor_m"] = round(person_floor[tid], 4)
    pitch, roll = camera_angles(fit.normal)
    info.update({"fitted": True, "reason": "", "method": "robust plane fit of the stance ankles (IRLS, Tukey biweight)"
                 ", one normal, a floor per person, body-axis prior", "pitch_deg": round(pitch, 2),
                 "roll_deg": round(roll, 2), "camera_height_m": round(-shared, 4),
                 "normal_camera": [round(float(v), 6) for v in fit.normal]})
    report = {"fitted": True, "reason": "", **{k: v for k, v in info.items() if k not in ("fitted", "reason")}}
    frame = FloorFrame(rot, np.array([0.0, -shared, 0.0]), True, person_floor, ankle, report)
    return Ground(frame, contacts, phases, fit)


def ground_from_sequence(seq: PoseSequence, person: int | None = None, settings: GroundSettings | None = None,
                         contact_settings: ContactSettings | None = None) -> Ground:
    """:func:`ground_from_tracks` over every tracked person of ``seq`` (or only ``person``).
    Raises TrackError when there is no such person."""
    size = seq.frames[0].image_size if seq.frames else (0, 0)
    return ground_from_tracks(person_tracks(seq, person), seq.skeleton, size, seq.fps, settings, contact_settings)
