"""Ground and gravity: the floor plane from the stance feet of everyone in a clip, and a Y-up floor frame.

Input: the 3-D ankles (camera space: x right, y down, z forward, metres) of every tracked
person in the frames where that ankle stands on still ground, still in the image
(:mod:`.stance`, from the 2-D foot contact of :mod:`.foot_contact`).

The plane fit itself, its settings and the camera angles are in :mod:`.floor_plane`.

Fallback (``fitted`` False, with the reason in the report): less than ``min_stance_s``
seconds of inlier stance ankles (summed over feet and people), less than
``min_inlier_fraction`` of them inliers, or their robust scale above ``max_scale_m``
(the contacts do not lie on one plane; on the three clips of
``studies/floor-and-feet.md`` 98-100 % are inliers at a scale of 2.8-3.2 cm;
the BVH tests' synthetic person, who waves their legs in the air, passed in 2 of 60
random clips tried, the 20-s ones, at 4.6-5.0 cm): the level camera
(``X = x, Y = -y, Z = -z``) and the floor at the ``percentile``-th percentile of the
lowest joint, the method the BVH export used before; there is then no foot lock.

A calibrated camera's floor (``metadata["floor"]``, the calibration's z = 0) replaces the fit: the frame is the
calibration's world turned Y up; people triangulated from several views stand on it where their stance feet
are within ON_FLOOR_M of it (else on their own floor: a platform), one view's each on their own floor along
its normal, as their stance feet say.

Floor frame (:class:`FloorFrame`): ``p_floor = rotation @ p_camera + translation``;
Y up along ``n``, X the camera's right projected onto the floor, ``Z = X x Y`` (towards
the camera, right-handed, as BVH), origin on the floor below the camera (so the camera
sits at Y = camera height). The floor is an ankle height below the ankles' plane: an
adult's ankle joint is ``ANKLE_HEIGHT_FRACTION`` (0.039, Winter, *Biomechanics and
Motor Control of Human Movement*) of stature above the sole (:mod:`.stature`; 1.65 m
when it cannot be measured). ``person_floor[k]``: person k's floor, Y in the floor
frame (0 for the shared floor, the inlier-weighted median of the people's floors).

Shapes: N = stance ankles, K = people (or groups), T = frames, J = joints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posetracker.analysis.foot_contact import FEET, ContactSettings, GaitError, foot_contacts
from posetracker.analysis.floor_plane import (
    LEVEL, GroundError, GroundSettings, camera_angles, fit_floor_plane, floor_rotation, percentile_floor, unit,
)
from posetracker.analysis.stance import ContactPhase, contact_phases, still_parts
from posetracker.analysis.stature import stature
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import PersonTrack, frame_time, person_tracks
from posetracker.types import PoseSequence

#: ankle joint height above the sole as a fraction of stature (Winter 2009, table 4.1)
ANKLE_HEIGHT_FRACTION = 0.039
DEFAULT_STATURE_M = 1.65
#: triangulated people whose stance feet give a floor this close to a calibration's stand on it
ON_FLOOR_M = 0.03


@dataclass(frozen=True)
class FloorFrame:
    """Camera space -> floor frame (Y up from the floor).

    rotation:     (3, 3) camera -> floor rotation (rows: floor X, Y, Z in camera space)
    translation:  (3,) metres; ``p_floor = rotation @ p_camera + translation``
    fitted:       the floor was fitted to stance feet or given by a calibration (False: the level-camera fallback)
    person_floor: {track id: Y (m) of that person's floor in the floor frame}
    ankle_height: {track id: the person's ankle height above the sole (m)}
    report:       what was fitted, from how much, the camera's pitch and roll (JSON-ready)
    turn:         (T, 3, 3) per frame of the sequence, the rotation from that frame's camera to the one the floor
                  was fitted in (a camera that tilts, ``motion.moving_floor``); None: the camera stood still
    """

    rotation: np.ndarray
    translation: np.ndarray
    fitted: bool
    person_floor: dict[int, float] = field(default_factory=dict)
    ankle_height: dict[int, float] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    turn: np.ndarray | None = None

    def to_floor(self, points: np.ndarray) -> np.ndarray:
        """(..., 3) camera-space points -> (..., 3) floor-frame points (m)."""
        p = np.asarray(points, np.float64)
        if p.shape[-1:] != (3,):
            raise GroundError(f"points must have shape (..., 3), got {p.shape}")
        return p @ self.rotation.T + self.translation

    def world_to_floor(self, world: np.ndarray, person: int | None = None) -> np.ndarray:
        """(T, ..., 3) camera-space points of the sequence's T frames -> floor frame, each frame turned by its
        ``turn`` first where the camera tilts; with ``person`` their own floor at Y = 0."""
        p = np.asarray(world, np.float64)
        if self.turn is not None:
            if p.ndim < 2 or p.shape[0] != len(self.turn):
                raise GroundError(f"points must have shape ({len(self.turn)}, ..., 3), got {p.shape}")
            p = np.einsum("tij,t...j->t...i", self.turn, p)
        return self.to_floor(p) if person is None else self.to_person_floor(p, person)

    def to_person_floor(self, points: np.ndarray, person: int) -> np.ndarray:
        """(..., 3) camera-space points of ``person`` -> floor frame with that person's own floor at Y = 0."""
        out = self.to_floor(points)
        out[..., 1] -= self.person_floor.get(int(person), 0.0)
        return out


@dataclass(frozen=True)
class Ground:
    """The floor of a clip and the stance phases it was fitted to.

    frame:    the floor frame
    phases:   {track id: stance phases on still ground with the ankle's 3-D known (track labels)}
    """

    frame: FloorFrame
    phases: dict[int, list[ContactPhase]]


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


def drop_raised(phases: list[ContactPhase], ankles: np.ndarray, up: np.ndarray, min_len: int,
                max_rise_m: float = 0.05) -> list[ContactPhase]:
    """The stance phases less the frames where the other foot stands too and this one is ``max_rise_m`` higher:
    a foot held still in the air (a person balancing on the other leg) is slow, so speed alone reads it as
    standing, and it would lift the person's floor (the standing leg then bent to reach it). ankles: (T, F, 3)
    camera metres; up: (3,) unit, the body's up; parts shorter than ``min_len`` frames are dropped."""
    t = ankles.shape[0]
    standing = np.zeros((t, 2), bool)
    for ph in phases:
        standing[ph.start:ph.stop, ph.foot] = True
    height = np.nan_to_num(ankles @ up, nan=np.nan)  # (T, F) metres up the body
    both = standing.all(axis=1) & np.isfinite(height).all(axis=1)
    rise = np.where(both, height[:, 0] - height[:, 1], 0.0)  # left above right
    raised = np.stack([rise > max_rise_m, -rise > max_rise_m], axis=1)  # (T, F) this foot is the raised one
    out: list[ContactPhase] = []
    for ph in phases:
        keep = ~raised[ph.start:ph.stop, ph.foot]
        edges = np.flatnonzero(np.diff(np.concatenate([[0], keep.astype(np.int8), [0]])))
        for a, b in zip(edges[::2], edges[1::2]):
            if b - a >= min_len:
                out.append(ContactPhase(ph.foot, ph.start + int(a), ph.start + int(b)))
    return sorted(out, key=lambda q: (q.start, q.foot))


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
                       contact_settings: ContactSettings | None = None, floor: dict[str, Any] | None = None
                       ) -> Ground:
    """The floor of a clip from the stance ankles of every track (see the module docstring), or the
    calibration's ``floor`` where one is given (``metadata["floor"]``:
    :func:`posetracker.multiview.calibration.calibration_floor`; the stance phases are found as without it).

    tracks: {track id: PersonTrack} (:func:`posetracker.tracks.person_tracks`); image_size: (width, height) px
    of the frames ((0, 0) = unknown); fps: used only where the timestamps cannot give the frame time.
    Never raises for data that cannot give a floor: the frame is then the fallback, with the reason.
    Raises GroundError for bad settings or no tracks.
    """
    settings = settings or GroundSettings()
    settings.check()
    if not tracks:
        raise GroundError("no tracks")
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
        min_len = max(2, int(round((contact_settings or ContactSettings()).min_contact_s / dt)))
        ph = still_parts(c, contact_phases(c, ok, settings.max_ground_speed), settings.max_image_slide, min_len)
        own_up = body_up(tr, spec, ph, settings.min_confidence, settings.max_prior_tilt_deg)
        if len(own_up):  # a still foot held in the air is not standing
            ph = drop_raised(ph, pos, unit(np.median(own_up, axis=0)), min_len)
        phases[tid] = ph
        pts = np.concatenate([pos[p.start:p.stop, p.foot] for p in ph]) if ph else np.zeros((0, 3))
        groups.append(pts)
        ids.append(tid)
        ups.append(body_up(tr, spec, ph, settings.min_confidence, settings.max_prior_tilt_deg))
        people[str(tid)]["contact_points"] = len(pts)
    if floor:
        return _calibrated(floor, tracks, ids, groups, ankle, people, phases)
    up = np.concatenate(ups) if ups else np.zeros((0, 3))
    prior = unit(np.median(up, axis=0)) if len(up) >= 5 else np.array([0.0, -1.0, 0.0])
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
        return Ground(frame, phases)
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
        return Ground(_fallback(tracks, spec, settings, reason, ankle, info), phases)
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
    return Ground(frame, phases)


def _calibrated(floor: dict[str, Any], tracks: dict[int, PersonTrack], ids: list[int], groups: list[np.ndarray],
                ankle: dict[int, float], people: dict[str, dict[str, Any]],
                phases: dict[int, list[ContactPhase]]) -> Ground:
    """The Ground of a calibration's floor: its frame, each person's stance ankles' median height above it
    (``stance_ankle_height_m``) and the floor their feet give (``floor_m``: that less their ankle height), which
    is their own floor, except where ``floor["people_on_it"]`` (people in the calibration's metres) and it lies
    within ON_FLOOR_M (``floor["on_floor_m"]`` where given) of the calibration's: they stand on it (0). Someone
    measured higher stands on something else (a step, a platform) and is not pulled down to it."""
    rot = np.asarray(floor["rotation"], np.float64).reshape(3, 3)
    trans = np.asarray(floor["translation"], np.float64).reshape(3)
    on_it = bool(floor.get("people_on_it", True))
    near = float(floor.get("on_floor_m", ON_FLOOR_M))
    person_floor = {tid: 0.0 for tid in tracks}
    for tid, pts in zip(ids, groups):
        if len(pts):
            h = float(np.median((pts @ rot.T + trans)[:, 1]))
            own = h - ankle[tid]
            person_floor[tid] = 0.0 if on_it and abs(own) <= near else own
            people[str(tid)].update(stance_ankle_height_m=round(h, 4), floor_m=round(own, 4),
                                    on_calibration_floor=person_floor[tid] == 0.0)
    pitch, roll = camera_angles(rot[1])
    report = {"fitted": True, "reason": "", "method": f"the calibration's floor ({floor.get('source', '')}); "
              + (f"people on it where their feet are within {100 * near:g} cm of it, else on their own"
                 if on_it and near > 0 else "each person's own floor along its normal, from their stance feet"),
              "pitch_deg": round(pitch, 2), "roll_deg": round(roll, 2),
              "camera_height_m": _r(float(trans[1]), 4), "contact_points": int(sum(len(g) for g in groups)),
              "people": people}
    return Ground(FloorFrame(rot, trans, True, person_floor, ankle, report), phases)


def ground_from_sequence(seq: PoseSequence, person: int | None = None, settings: GroundSettings | None = None,
                         contact_settings: ContactSettings | None = None) -> Ground:
    """:func:`ground_from_tracks` over every tracked person of ``seq`` (or only ``person``), on the calibration's
    floor where ``seq.metadata["floor"]`` holds one. Raises TrackError when there is no such person."""
    size = seq.frames[0].image_size if seq.frames else (0, 0)
    return ground_from_tracks(person_tracks(seq, person), seq.skeleton, size, seq.fps, settings, contact_settings,
                              (seq.metadata or {}).get("floor"))
