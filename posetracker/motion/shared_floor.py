"""One floor for everyone one camera sees: each person scaled about the camera's centre to stand on it.

One uncalibrated view reads each person's distance from their own depth and body size, and that reading is off by
a factor per person (``studies/metres.md``: 10-20 %). The floor fit (:mod:`posetracker.analysis.ground`) then
finds one floor normal but a floor per person along it: on the pose2sim two-person clip the man's floor stood
58 cm above the woman's, and an output that stands everyone on one floor (Blender, from the camera) drew one of
them far off their image. Scaling a person's 3-D points about the camera's centre changes none of their pixels
(x, y px), only how far and how big they are, and moves their floor along the normal in proportion: with h_k the
distance of person k's floor from the camera along the normal (their stance ankles' plane less their ankle
height, which scales with them), scaling by s_k puts it at s_k h_k. So one floor at distance H for everyone:

    s_k = H / h_k

with H a gauge the camera cannot give: the people whose height was given (``--height``, ``stature_source``
"given") keep their scale 1 and H is the geometric mean of their floors' distances; otherwise H is the geometric
mean of everyone's, so that the product of the scales is 1 (the people's sizes as read, on average, kept).
The fit is done again on the scaled people (``ROUNDS`` at most: the stance phases and the plane move a little
with the scale), the scales multiplied. People without enough standing feet (``MIN_POINTS`` stance ankles
agreeing with the plane) or a scale outside ``SCALE_RANGE`` keep theirs.

A fit rejected only because the stance ankles scatter too far about it (the crowd clip's far people, read too
far and too large, scatter the most in metres) is tried too: the scaled people are kept only where the floor fit
with its usual limits then accepts them; otherwise the sequence is returned as it was.

:func:`scale_to_floor` runs in the finishing step (``motion.finish.finish_sequence``) after the heights and before
the feet step, which fits the floor again and holds the stance feet on it; its last fit may turn the floor's normal
(the 4-view trial's cam03: the people's floors 27 cm apart again), so :func:`keep_one_floor` then scales the same
people onto the floor the feet step ended with, and moves its record (``metadata["feet"]``) with them.
It writes ``metadata["shared_floor"]``: ``camera_height_m`` (H), ``gauge``, ``rounds`` and per person
``floor_before_m`` (their floor above the shared one as first fitted) and ``scale``; ``metadata["people"]``
(:mod:`posetracker.motion.heights`) gets each scaled person's ``floor_scale``, and their ``stature_m``,
``scale`` and ``bones_m`` multiplied by it. Nothing is done (and nothing written) with fewer than two such people,
a calibrated floor (``metadata["floor"]``: it sizes people itself, ``heights.floor_scales``), or people
triangulated from several views (``metadata["multiview"]``: in metres already).

Shapes: frames hold P people with K joints, keypoints (P, K, 3) x, y px and depth m, world (P, K, 3) camera m.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from posetracker.motion.heights import scaled_frame
from posetracker.types import PoseSequence

MIN_POINTS = 10  # stance ankles on the plane a person needs to be scaled to it
SCALE_RANGE = (0.5, 2.0)  # a person the floor would scale further keeps their size
ROUNDS = 3  # floor fits at most
DONE = 1e-3  # a round whose scales all lie within this of 1 ends the fitting


def scale_to_floor(seq: PoseSequence) -> tuple[PoseSequence, dict[str, Any]]:
    """``seq`` with each person scaled about the camera's centre to stand on one floor (module docstring) ->
    (sequence, report; the report also in ``metadata["shared_floor"]`` where anyone was scaled). The input is not
    changed; x, y px and confidences are kept."""
    from posetracker.analysis.floor_plane import GroundSettings

    meta = seq.metadata or {}
    if "floor" in meta or "multiview" in meta:
        return seq, {"scaled": False, "reason": "a calibrated floor or several views size the people"}
    if not any(f.world is not None for f in seq.frames):
        return seq, {"scaled": False, "reason": "no world coordinates"}
    given = {int(k) for k, p in (meta.get("people") or {}).items() if p.get("stature_source") == "given"}
    loose = GroundSettings(max_scale_m=1.0)  # the scatter is judged after scaling (module docstring)
    total: dict[int, float] = {}
    first: dict[int, float] = {}
    out, rounds, camera_h, gauge = seq, 0, float("nan"), ""
    for rounds in range(1, ROUNDS + 1):
        floors = _floors(out, loose)
        if floors is None:
            break
        h, before = floors
        if rounds == 1:
            first = before
        scale, camera_h, gauge = _scales(h, given)
        if len(scale) < 2 and rounds == 1:
            return seq, {"scaled": False, "reason": f"{len(scale)} person with a floor: nothing to share"}
        out = _scaled(out, scale)
        for tid, s in scale.items():
            total[tid] = total.get(tid, 1.0) * s
        if all(abs(s - 1.0) <= DONE for s in scale.values()):
            break
    if not total or not _accepted(out):
        return seq, {"scaled": False, "reason": "no floor fitted to the people scaled to it"}
    report = {"scaled": True, "camera_height_m": round(camera_h, 4), "gauge": gauge, "rounds": rounds,
              "people": {str(t): {"floor_before_m": round(first.get(t, 0.0), 4), "scale": round(s, 4)}
                         for t, s in sorted(total.items())}}
    return dataclasses.replace(out, metadata={**(out.metadata or {}), "shared_floor": report,
                                              "people": _people(meta.get("people") or {}, total)}), report


def keep_one_floor(seq: PoseSequence, report: dict[str, Any]) -> PoseSequence:
    """``seq`` after the feet step (``motion.feet.plant_feet``, ``metadata["feet"]``) with the people
    :func:`scale_to_floor` scaled (its ``report``) scaled again so that they stand on the feet step's floor as it
    ended: the feet step fits the floor again to the feet it held, and where they spread little across one
    direction the body-axis prior turns its normal there (the 4-view trial's cam03: 10 -> 17 degrees of pitch),
    which moves the floors of people standing apart along it (27 cm). The same scales (``_scales``: the same gauge)
    from the feet step's floors, and the feet step's record made to match: scaling about the camera's centre by
    s moves a person's floor to H - s h (H the camera's height over the new shared floor, h theirs before) and
    multiplies their ankle height, held points (their own floor frame: its origin lies below the camera) and
    largest shift by s. ``metadata["shared_floor"]`` gets the scales multiplied, ``after_feet`` (these factors)
    and H; ``metadata["people"]`` as in :func:`scale_to_floor`. Anything else is returned as it is."""
    from posetracker.analysis.held_ground import scaled_record

    meta = seq.metadata or {}
    feet = meta.get("feet") or {}
    floor = feet.get("floor") or {}
    if not report.get("scaled") or not feet.get("planted") or not floor.get("fitted"):
        return seq
    camera = float(floor["translation"][1])
    mine = {int(t) for t in report["people"]}
    h = {int(t): camera - float(y) for t, y in floor["person_floor"].items() if int(t) in mine}
    scale, height, gauge = _scales({t: v for t, v in h.items() if v > 0}, {t for t in mine if _given(meta, t)})
    if not scale or all(abs(v - 1.0) <= DONE for v in scale.values()) and abs(height - camera) <= 1e-4:
        return seq
    total = {t: round(p["scale"] * scale.get(int(t), 1.0), 4) for t, p in report["people"].items()}
    shared = {**report, "camera_height_m": round(height, 4), "gauge": gauge,
              "after_feet": {str(t): round(v, 4) for t, v in sorted(scale.items())},
              "people": {t: {**p, "scale": total[t]} for t, p in report["people"].items()}}
    out = _scaled(seq, scale)
    return dataclasses.replace(out, metadata={**meta, "feet": scaled_record(feet, scale, height),
                                              "shared_floor": shared,
                                              "people": _people(meta.get("people") or {}, scale, total)})


def _given(meta: dict[str, Any], tid: int) -> bool:
    return ((meta.get("people") or {}).get(str(tid)) or {}).get("stature_source") == "given"


def _floors(seq: PoseSequence, settings) -> tuple[dict[int, float], dict[int, float]] | None:
    """({track id: distance of their floor from the camera along the normal, m}, {track id: their floor above the
    shared one, m}) of the people whose stance ankles the fit found on the plane (at least MIN_POINTS); None where
    no plane was fitted."""
    from posetracker.analysis.floor_plane import GroundError
    from posetracker.analysis.foot_contact import GaitError
    from posetracker.analysis.ground import ground_from_sequence
    from posetracker.tracks import TrackError

    try:
        frame = ground_from_sequence(seq, settings=settings).frame
    except (KeyError, TrackError, GaitError, GroundError):
        return None
    if not frame.fitted:
        return None
    camera = float(frame.translation[1])  # the camera's height above the shared floor
    people = frame.report.get("people") or {}
    h, before = {}, {}
    for tid, floor in frame.person_floor.items():
        p = people.get(str(tid)) or {}
        if "floor_m" in p and p.get("inliers", 0) >= MIN_POINTS and camera - floor > 0:
            h[int(tid)], before[int(tid)] = camera - float(floor), float(floor)
    return h, before


def _scales(h: dict[int, float], given: set[int]) -> tuple[dict[int, float], float, str]:
    """({track id: scale}, the shared floor's distance H m, the gauge in words) for the floors' distances ``h``."""
    fixed = sorted(t for t in h if t in given)
    ref = fixed or sorted(h)
    camera = math.exp(float(np.mean([math.log(h[t]) for t in ref])))
    gauge = (f"the heights given (track{'s' if len(fixed) > 1 else ''} {', '.join(map(str, fixed))}) keep their size"
             if fixed else "the product of the scales is 1")
    scale = {t: (1.0 if t in given else camera / d) for t, d in h.items()}
    scale = {t: s for t, s in scale.items() if SCALE_RANGE[0] <= s <= SCALE_RANGE[1]}
    return scale, camera, gauge


def _accepted(seq: PoseSequence) -> bool:
    """Whether the floor fit with its usual limits accepts ``seq``'s stance feet."""
    return _floors(seq, None) is not None


def _scaled(seq: PoseSequence, scale: dict[int, float]) -> PoseSequence:
    """``seq`` with each person's depth and world multiplied by ``scale[track id]`` (others as they are)."""
    if all(s == 1.0 for s in scale.values()):
        return seq
    return dataclasses.replace(seq, frames=[scaled_frame(f, scale) for f in seq.frames])


def _people(people: dict[str, dict], scale: dict[int, float], total: dict[str, float] | None = None
            ) -> dict[str, dict]:
    """``metadata["people"]`` with each person's ``scale`` and stature and bones times their ``scale`` (this step's
    factor), and their ``floor_scale`` (the whole of it: ``total[track id]``, else this factor)."""
    out = {}
    for tid, p in people.items():
        s = scale.get(int(tid))
        if s is None:
            out[tid] = p
            continue
        q = dict(p)
        if q.get("stature_m") is not None:
            q["stature_m"] = round(q["stature_m"] * s, 3)
        q["scale"] = round(q.get("scale", 1.0) * s, 4)
        q["bones_m"] = {k: round(v * s, 4) for k, v in (q.get("bones_m") or {}).items()}
        q["floor_scale"] = round((total or {}).get(str(tid), s), 4)
        out[tid] = q
    return out


__all__ = ["keep_one_floor", "scale_to_floor"]
