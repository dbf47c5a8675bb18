"""The floor and the stance phases a finished sequence stands on, read back from its metadata.

The finishing step (:func:`posetracker.motion.feet.plant_feet`, run by ``motion.finish.finish_sequence``) fits the
floor and the stance phases once and holds each stance ankle still on one point per phase in the world
coordinates. It writes what it decided into ``metadata["feet"]`` (plain JSON, so a saved result keeps it):

- ``floor``: the floor frame (:func:`floor_as_dict`: ``rotation`` (3, 3) and ``translation`` (3,), camera metres ->
  floor frame, ``fitted``, ``person_floor`` and ``ankle_height`` {track id: m}, ``report``; where the camera tilts,
  ``turn``: T rotation vectors, each frame's camera -> the one the floor was fitted in, applied first), the one the
  motion was planted on (or the level-camera fallback where no floor could be fitted: then nothing was held);
- ``num_frames``: the sequence's frame count the phases index;
- ``people``: {track id: {"phases": [{"foot": "left" | "right", "start", "stop", "point_m"}, ...], ...}}, each phase
  [start, stop) in positions of the sequence's frames (= a :class:`~posetracker.tracks.PersonTrack`'s frames) and
  the point its ankle is held on, metres in that person's floor frame (Y up from their own floor: their ankle
  height).

Every output reads them through :func:`held_ground` (the BVH's floor, origin and legs, TRC's floor, the floor
studies and tests) instead of fitting again, so all of them stand on one floor and hold the same phases. Only a
sequence without them (a result saved before this, a sequence never finished, one whose frames no longer match)
has its floor fitted again (:func:`posetracker.analysis.ground.ground_from_sequence`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posetracker.analysis.foot_contact import FEET
from posetracker.analysis.ground import FloorFrame, Ground, ground_from_sequence
from posetracker.analysis.stance import ContactPhase
from posetracker.types import PoseSequence


def floor_as_dict(frame: FloorFrame) -> dict[str, Any]:
    """The JSON-ready form of ``frame`` (:func:`floor_from_dict` reads it back exactly: floats as Python floats)."""
    return {"rotation": [[float(v) for v in row] for row in np.asarray(frame.rotation, np.float64)],
            "translation": [float(v) for v in np.asarray(frame.translation, np.float64)],
            "fitted": bool(frame.fitted),
            "person_floor": {str(k): float(v) for k, v in frame.person_floor.items()},
            "ankle_height": {str(k): float(v) for k, v in frame.ankle_height.items()},
            "report": frame.report,
            **({} if frame.turn is None else {"turn": turn_as_list(frame.turn)})}


def turn_as_list(turn: np.ndarray) -> list[list[float]]:
    """(T, 3, 3) per-frame rotations -> T rotation vectors (radians, axis times angle), JSON-ready."""
    from scipy.spatial.transform import Rotation

    return [[float(v) for v in row] for row in Rotation.from_matrix(np.asarray(turn, np.float64)).as_rotvec()]


def floor_from_dict(data: dict[str, Any]) -> FloorFrame:
    """The :class:`FloorFrame` of :func:`floor_as_dict`'s ``data``."""
    return FloorFrame(np.asarray(data["rotation"], np.float64).reshape(3, 3),
                      np.asarray(data["translation"], np.float64).reshape(3), bool(data["fitted"]),
                      {int(k): float(v) for k, v in data.get("person_floor", {}).items()},
                      {int(k): float(v) for k, v in data.get("ankle_height", {}).items()},
                      dict(data.get("report", {})), _turn(data.get("turn")))


def _turn(rotvecs: list[list[float]] | None) -> np.ndarray | None:
    """(T, 3, 3) rotations of :func:`turn_as_list`'s rotation vectors (None: none)."""
    if rotvecs is None:
        return None
    from scipy.spatial.transform import Rotation

    return Rotation.from_rotvec(np.asarray(rotvecs, np.float64).reshape(-1, 3)).as_matrix()


def phase_as_dict(phase: ContactPhase, point: np.ndarray) -> dict[str, Any]:
    """One held stance phase: its foot, [start, stop) and ``point`` (3,) m in the person's floor frame."""
    return {"foot": FEET[phase.foot], "start": int(phase.start), "stop": int(phase.stop),
            "point_m": [round(float(v), 6) for v in point]}


def scaled_record(feet: dict[str, Any], scale: dict[int, float], height: float | None = None,
                  centres: dict[int, np.ndarray] | None = None) -> dict[str, Any]:
    """The ``metadata["feet"]`` record ``feet`` for the same people with person t's world scaled by ``scale[t]``
    about the camera's centre, the floor frame's camera height (``translation[1]``) set to ``height`` (None: kept).
    With H, H' the camera's heights before and after, person t's floor Y_t goes to H' - s (H - Y_t), their ankle
    height and largest shift times s, and each held point q (their own floor frame) to s q - (s - 1) (t_x, 0, t_z)
    (t: the frame's translation). ``centres`` {t: (T, 3) camera metres per frame, NaN where absent}: person t was
    scaled about these points of the floor (Y = 0: triangulated people, ``motion.heights.kept_points``) instead;
    the floor stays, Y_t goes to s Y_t and each held point about the phase's mean centre. People not in ``scale``
    keep their floor where it is. The input is not changed."""
    floor = feet["floor"]
    t = [float(v) for v in floor["translation"]]
    new_h = t[1] if height is None else float(height)
    k = {str(tid): float(v) for tid, v in scale.items()}
    about = {str(tid): c for tid, c in (centres or {}).items() if str(tid) in k}
    person_floor = {tid: (k[tid] * float(y) if tid in about else new_h - k.get(tid, 1.0) * (t[1] - float(y)))
                    for tid, y in floor["person_floor"].items()}
    report = dict(floor.get("report") or {})
    if height is not None:
        report["camera_height_m"] = round(new_h, 4)
    report["people"] = {tid: ({**p, "floor_m": round(person_floor[tid], 4)} if tid in k and tid in person_floor
                              and p.get("floor_m") is not None else p) for tid, p in (report.get("people") or {}).items()}
    new_floor = {**floor, "translation": [t[0], new_h, t[2]], "person_floor": person_floor, "report": report,
                 "ankle_height": {tid: float(a) * k.get(tid, 1.0) for tid, a in floor["ankle_height"].items()}}
    people = {}
    for tid, person in (feet.get("people") or {}).items():
        s = k.get(tid, 1.0)
        moved = [{**ph, "point_m": _moved_point(ph, s, (t[0], 0.0, t[2]), floor, about.get(tid),
                                                float(floor["person_floor"].get(tid, 0.0)), person_floor.get(tid, 0.0))}
                 for ph in person.get("phases", [])]
        people[tid] = {**person, "phases": moved, **({"largest_shift_m": round(person["largest_shift_m"] * s, 4)}
                                                     if "largest_shift_m" in person else {})}
    return {**feet, "floor": new_floor, "people": people}


def _moved_point(phase: dict[str, Any], s: float, origin: tuple[float, float, float], floor: dict[str, Any],
                 centres: np.ndarray | None, y_before: float, y_after: float) -> list[float]:
    """A held phase's point (its person's floor frame) after scaling by ``s`` about the camera's centre (floor-frame
    point ``origin``: (t_x, 0, t_z)), or about the mean of ``centres`` (T, 3) over the phase's frames."""
    q = np.asarray(phase["point_m"], np.float64)
    if centres is None:
        return [round(float(v), 6) for v in s * q - (s - 1.0) * np.asarray(origin)]
    c = np.asarray(centres, np.float64)[int(phase["start"]):int(phase["stop"])]
    c = c[np.isfinite(c).all(-1)]
    if not len(c):
        return [round(float(v), 6) for v in q]
    o = c.mean(0) @ np.asarray(floor["rotation"], np.float64).T + np.asarray(floor["translation"], np.float64)
    o[1] = 0.0
    whole = q + np.array([0.0, y_before, 0.0])  # the floor frame
    return [round(float(v), 6) for v in o + s * (whole - o) - np.array([0.0, y_after, 0.0])]


def held_phases(feet: dict[str, Any]) -> dict[int, list[ContactPhase]]:
    """{track id: the stance phases held} of a ``metadata["feet"]`` record."""
    return {int(tid): [ContactPhase(FEET.index(p["foot"]), int(p["start"]), int(p["stop"]))
                       for p in person.get("phases", [])]
            for tid, person in (feet.get("people") or {}).items()}


def has_held_ground(seq: PoseSequence) -> bool:
    """Whether ``seq`` carries the floor and stance phases its finishing step decided, for its frames."""
    feet = (seq.metadata or {}).get("feet") or {}
    return "floor" in feet and int(feet.get("num_frames", -1)) == len(seq.frames)


def held_ground(seq: PoseSequence) -> Ground:
    """The floor and the stance phases of ``seq`` as its finishing step decided them (``metadata["feet"]``, module
    docstring; people it held no phase of have none); a sequence without them (:func:`has_held_ground`: an old
    file, never finished) has them fitted again (:func:`~posetracker.analysis.ground.ground_from_sequence`, on the
    calibration's floor where ``metadata["floor"]`` holds one). Raises TrackError (fitting again) when the sequence
    has no tracked person."""
    if not has_held_ground(seq):
        return ground_from_sequence(seq)
    feet = seq.metadata["feet"]
    return Ground(floor_from_dict(feet["floor"]), held_phases(feet))


__all__ = ["floor_as_dict", "floor_from_dict", "has_held_ground", "held_ground", "held_phases", "phase_as_dict",
           "scaled_record", "turn_as_list"]
