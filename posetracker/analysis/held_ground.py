"""The floor and the stance phases a finished sequence stands on, read back from its metadata.

The finishing step (:func:`posetracker.motion.feet.plant_feet`, run by ``motion.finish.finish_sequence``) fits the
floor and the stance phases once and holds each stance ankle still on one point per phase in the world
coordinates. It writes what it decided into ``metadata["feet"]`` (plain JSON, so a saved result keeps it):

- ``floor``: the floor frame (:func:`floor_as_dict`: ``rotation`` (3, 3) and ``translation`` (3,), camera metres ->
  floor frame, ``fitted``, ``person_floor`` and ``ankle_height`` {track id: m}, ``report``), the one the motion was
  planted on (or the level-camera fallback where no floor could be fitted: then nothing was held);
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
            "report": frame.report}


def floor_from_dict(data: dict[str, Any]) -> FloorFrame:
    """The :class:`FloorFrame` of :func:`floor_as_dict`'s ``data``."""
    return FloorFrame(np.asarray(data["rotation"], np.float64).reshape(3, 3),
                      np.asarray(data["translation"], np.float64).reshape(3), bool(data["fitted"]),
                      {int(k): float(v) for k, v in data.get("person_floor", {}).items()},
                      {int(k): float(v) for k, v in data.get("ankle_height", {}).items()},
                      dict(data.get("report", {})))


def phase_as_dict(phase: ContactPhase, point: np.ndarray) -> dict[str, Any]:
    """One held stance phase: its foot, [start, stop) and ``point`` (3,) m in the person's floor frame."""
    return {"foot": FEET[phase.foot], "start": int(phase.start), "stop": int(phase.stop),
            "point_m": [round(float(v), 6) for v in point]}


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


__all__ = ["floor_as_dict", "floor_from_dict", "has_held_ground", "held_ground", "held_phases", "phase_as_dict"]
