"""A floor that follows a camera which tilts, used only where one floor does not fit the stance feet.

The finishing step stands everyone on one floor in camera space (:mod:`posetracker.motion.shared_floor`,
:mod:`posetracker.motion.feet`). A handheld camera that pans and tilts moves that floor: on the street-dance
crowd the stance ankles scatter 5.9 cm about the best single plane (at most 5.0 cm are accepted), so no floor was
fitted, nothing was held, and the exports fell back to a level camera with far people 1.4-2.0 m above the floor
drawn (``studies/floor-and-feet.md``). :func:`camera_turn` decides whether the camera moved and by how much:

1. the one-plane fit (``analysis.ground.ground_from_sequence``) is tried first; where it accepts the stance feet,
   or a calibration gives the floor, or several views do, the camera stood still: None, nothing changes;
2. otherwise the floor's normal per frame is fitted to everyone's stance ankles (:func:`motion.camera_tilt.
   fit_tilt`: robust, smooth over time, starting from the one-plane fit's normal with the body-axis prior), the
   pitch of frames without stance feet fitted to those people's lower ankles (``carry_tilt``), and each frame
   turned by the smallest rotation that lays its floor's normal onto their mean (``tilt_rotations``);
3. the one-plane fit is tried again on the turned sequence; only where it now accepts the stance feet is the
   turn used (the stance feet say the camera moved, and how).

:func:`turned` applies it to every frame's world coordinates (T frames: world_t -> C_t world_t, a rotation about
the camera's centre: no pixel, distance or bone changes); the finishing step shares the floor and holds the feet
on the turned sequence, then turns it back (``inverse``) and writes the turn into the feet step's record
(``metadata["feet"]["floor"]["turn"]``, :mod:`posetracker.analysis.held_ground`), so every export (BVH, TRC)
stands each frame on the floor as that frame's camera saw it (``FloorFrame.world_to_floor``).

Shapes: T frames of the sequence, P people of a frame, K joints.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from posetracker.motion.camera_tilt import TiltSettings, carry_tilt, fit_tilt, tilt_rotations
from posetracker.types import PoseSequence

MIN_CONFIDENCE = 0.2  # stance ankles counted, as the floor fit counts them (GroundSettings.min_confidence)


def camera_turn(seq: PoseSequence, settings: TiltSettings | None = None) -> tuple[np.ndarray | None, dict[str, Any]]:
    """(C (T, 3, 3) each frame's camera -> the camera the floor is fitted in, or None where the camera stood
    still or no turn makes one floor fit; a report, JSON-ready) for ``seq`` (module docstring)."""
    from posetracker.analysis.foot_contact import GaitError
    from posetracker.analysis.ground import ground_from_sequence
    from posetracker.tracks import TrackError, person_tracks

    meta = seq.metadata or {}
    if "floor" in meta or "multiview" in meta:
        return None, {"turned": False, "reason": "a calibrated floor or several views"}
    if not {"left_ankle", "right_ankle"} <= set(seq.skeleton.joint_names):
        return None, {"turned": False, "reason": "no ankles"}  # an animal: no stance feet
    try:
        ground = ground_from_sequence(seq)
    except (KeyError, TrackError, GaitError) as exc:
        return None, {"turned": False, "reason": str(exc)}
    if ground.frame.fitted:
        return None, {"turned": False, "reason": "one floor fits the stance feet"}
    tracks = person_tracks(seq)
    stance = _stance_points(seq, ground, tracks)
    if stance is None:
        return None, {"turned": False, "reason": "too few stance ankles"}
    points, frames, person, n0, tids = stance
    settings = settings or TiltSettings()
    fit = fit_tilt(points, frames, person, len(seq.frames), n0, 1.0 / seq.fps, settings)
    low, low_frames, low_person = _lowest_ankles(seq, tracks, tids, frames, n0)
    normals = carry_tilt(fit, points, frames, person, low, low_frames, low_person, 1.0 / seq.fps, settings)
    mean = normals.mean(0) / np.linalg.norm(normals.mean(0))
    turn = tilt_rotations(normals, mean)  # each frame turned to the mean tilt
    again = ground_from_sequence(turned(seq, turn)).frame
    angle = np.degrees(np.arccos(np.clip(normals @ mean, -1.0, 1.0)))
    report = {"one_floor": str(ground.frame.report.get("reason", "")), "cutoff_hz": settings.cutoff_hz,
              "stance_ankles": len(points), "scale_cm": round(100 * fit.scale, 2),
              "carried_frames": len(np.unique(low_frames)), "largest_turn_deg": round(float(angle.max()), 2)}
    if not again.fitted:
        return None, {"turned": False, "reason": f"turned, still no floor: {again.report.get('reason', '')}",
                      **report}
    return turn, {"turned": True, "reason": "", **report}


def _stance_points(seq: PoseSequence, ground: Any, tracks: dict
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[int]] | None:
    """(points (N, 3) camera-space stance ankles, frames (N,), person (N,) group, n0 (3,) the one-plane fit's
    normal with the body-axis prior, the track id of each group) of ``ground``'s stance phases; None where there
    are fewer than 3. ``tracks``: ``person_tracks(seq)``."""
    from posetracker.analysis.floor_plane import GroundError, fit_floor_plane, unit
    from posetracker.analysis.foot_contact import FEET
    from posetracker.analysis.ground import body_up

    spec = seq.skeleton
    idx = [spec.index(f"{side}_ankle") for side in FEET]
    groups, frames, ups, tids = [], [], [], []
    for tid, phases in ground.phases.items():
        tr = tracks[tid]
        ok = tr.valid_world(MIN_CONFIDENCE)[:, idx]
        t = [np.arange(p.start, p.stop)[ok[p.start:p.stop, p.foot]] for p in phases]
        pts = [tr.world[ti, idx[p.foot]] for ti, p in zip(t, phases)]
        if t and sum(len(v) for v in t):
            groups.append(np.concatenate(pts))
            frames.append(np.concatenate(t))
            ups.append(body_up(tr, spec, phases, MIN_CONFIDENCE, 45.0))
            tids.append(tid)
    if sum(len(g) for g in groups) < 3:
        return None
    up = np.concatenate(ups)
    prior = unit(np.median(up, axis=0)) if len(up) >= 5 else np.array([0.0, -1.0, 0.0])
    try:
        n0 = fit_floor_plane(groups, prior).normal
    except GroundError:
        return None
    person = np.concatenate([np.full(len(g), k) for k, g in enumerate(groups)])
    return np.concatenate(groups), np.concatenate(frames), person, n0, tids


def _lowest_ankles(seq: PoseSequence, tracks: dict, tids: list[int], frames: np.ndarray, up: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(points (M, 3) camera-space lowest ankle, frames (M,), person (M,) group k of ``tids[k]``) of each person
    in ``tids`` (the stance groups' track ids, :func:`_stance_points`) at each frame that no stance ankle's
    ``frames`` (N,) covers: the ankle lower along ``up`` (3,), the one-plane fit's normal
    (:func:`motion.camera_tilt.carry_tilt`)."""
    from posetracker.analysis.foot_contact import FEET

    idx = np.array([seq.skeleton.index(f"{side}_ankle") for side in FEET])
    covered = np.zeros(len(seq.frames), bool)
    covered[frames] = True
    out: tuple[list, list, list] = ([], [], [])
    for k, tid in enumerate(tids):
        tr = tracks[tid]
        ok = tr.valid_world(MIN_CONFIDENCE)[:, idx] & ~covered[:, None]
        t = np.flatnonzero(ok.any(1))
        pts = tr.world[t][:, idx]  # (M_k, 2, 3)
        lower = np.where(ok[t, 0] & ok[t, 1], pts[:, 0] @ up < pts[:, 1] @ up, ok[t, 0])
        out[0].append(np.where(lower[:, None], pts[:, 0], pts[:, 1]))
        out[1].append(t)
        out[2].append(np.full(len(t), k))
    if not out[0]:
        return np.zeros((0, 3)), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out[0]), np.concatenate(out[1]), np.concatenate(out[2])


def turned(seq: PoseSequence, turn: np.ndarray, inverse: bool = False) -> PoseSequence:
    """``seq`` with frame t's world coordinates (P, K, 3) turned by ``turn[t]`` (T, 3, 3) about the camera's
    centre (``inverse``: by its transpose, back); keypoints, depths and everything else as they are."""
    frames = []
    for f, c in zip(seq.frames, turn):
        if f.world is None:
            frames.append(f)
            continue
        world = f.world @ (c if inverse else c.T)
        frames.append(dataclasses.replace(f, world=world.astype(f.world.dtype)))
    return dataclasses.replace(seq, frames=frames)


def record_turn(seq: PoseSequence, turn: np.ndarray, report: dict[str, Any]) -> PoseSequence:
    """``seq`` (turned back) with the turn in its feet step's record: ``metadata["feet"]["floor"]["turn"]`` (T
    rotation vectors, :func:`posetracker.analysis.held_ground.turn_as_list`) and the report as its
    ``report["camera_turn"]``."""
    from posetracker.analysis.held_ground import turn_as_list

    meta = dict(seq.metadata or {})
    feet = dict(meta.get("feet") or {})
    floor = dict(feet.get("floor") or {})
    if not floor:
        return seq
    floor["turn"] = turn_as_list(turn)
    floor["report"] = {**(floor.get("report") or {}), "camera_turn": report}
    meta["feet"] = {**feet, "floor": floor}
    return dataclasses.replace(seq, metadata=meta)


__all__ = ["camera_turn", "record_turn", "turned"]
