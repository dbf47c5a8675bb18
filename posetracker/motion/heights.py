"""People's heights: a stature the user gives puts that person in true metres; every person's size is reported.

From one uncalibrated view a person's metric size comes from the depth head and the field of view, and reads
10-20 % off (``studies/multiview-reference.md``). A given stature fixes it: each of the track's 3-D
points is scaled about the camera's centre by ``given / measured`` (the measured stature:
:func:`posetracker.analysis.stature.stature`, the median over the track's frames). Scaling along the camera's
rays keeps every pixel where it was (x, y px unchanged; depth and world scaled), so the 2-D overlay is the same
and bones, world coordinates, BVH, TRC and gait are in the given person's metres; joint angles do not change.
People triangulated from several calibrated cameras are already where the cameras measured them: each frame of
theirs is scaled about the calibrated floor's point under their root instead (:func:`kept_points`), so their
body takes the given size and their path and stance feet stay (scaled about the camera's centre, a person 2 %
smaller moved ~8 cm towards it and their feet off the floor).

:func:`apply_heights` runs in the finishing step (``motion.finish.finish_sequence``) after the camera, so every
front end (``process``, ``batch``, the app) writes the same; ``posetracker export --height`` applies it to a
finished result. ``metadata["people"]`` then holds, per track id, ``stature_m``, ``stature_source`` ("given",
"multi-view" measured on the people triangulated from several calibrated cameras, "floor" from one calibrated
view's floor, "estimated" from one view's 3-D, or "unknown" where no frame shows the whole ankle-to-ear chain),
``scale`` (given / measured, or the floor's; 1 when estimated) and ``bones_m`` (each bone's median length, m, by name
"parent-child"); where several people share one uncalibrated view, ``motion.shared_floor`` then scales each to stand
on one floor and multiplies their ``stature_m``, ``scale`` and ``bones_m`` by it (``floor_scale``). On a finished
result the feet step's record (``metadata["feet"]``) moves with the people scaled, and the people sharing its floor
are scaled with those given a height (:func:`_follow_shared_floor`), so every export still stands them on one floor.

One calibrated view (``metadata["floor"]`` with ``people_on_it`` False) sizes each person whose height is not
given by the floor instead (:func:`floor_scales`, ``stature_source`` "floor"): scaled about the camera's centre
so that their stance ankles stand an ankle height above it. On the 4-view trial's single views this read the
two people within 1.2-4.9 % of their triangulated statures, against 2.5-19.3 % as estimated
(``studies/metres.md``).

Heights are written as ``1.72`` (everyone) or ``0=1.72,1=1.40`` (per track id; ``*=1.70`` for the rest).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

import numpy as np

from posetracker.types import PoseSequence

MIN_HEIGHT_M, MAX_HEIGHT_M = 0.4, 2.6  # a given stature outside this is a typo (cm, feet), refused
# the joints analysis.stature measures a stature with (one ear is enough there; both names must exist)
STATURE_JOINTS = ("left_ankle", "right_ankle", "left_knee", "right_knee", "left_hip", "right_hip", "left_shoulder",
                  "right_shoulder", "left_ear", "right_ear")


MIN_FLOOR_POINTS = 10  # stance ankles a calibrated floor needs to size a person
FLOOR_SCALE_RANGE = (0.5, 2.0)  # a floor that would scale a person further is not trusted


class HeightError(ValueError):
    """A height the user wrote that cannot be a person's stature in metres."""


@dataclass(frozen=True)
class Heights:
    """Statures the user gave, metres: ``everyone`` (None: not given) unless the track id is in ``per_track``."""

    everyone: float | None = None
    per_track: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for what, h in [("height", self.everyone)] + [(f"height of person {k}", v) for k, v in self.per_track.items()]:
            if h is not None and not (MIN_HEIGHT_M <= h <= MAX_HEIGHT_M):
                raise HeightError(f"{what} {h:g} m is not a person's stature in metres (expected "
                                  f"{MIN_HEIGHT_M:g}-{MAX_HEIGHT_M:g}; e.g. 1.72, not 172 cm)")

    def of(self, track_id: int) -> float | None:
        return self.per_track.get(int(track_id), self.everyone)

    def __bool__(self) -> bool:
        return self.everyone is not None or bool(self.per_track)


def parse_heights(text: str | None) -> Heights:
    """``"1.72"`` -> everyone 1.72 m; ``"0=1.72,1=1.40"`` -> per track id; ``"*=1.70"`` the rest; None/"" -> none.
    Raises HeightError with what was wrong."""
    if not text or not text.strip():
        return Heights()
    if re.fullmatch(r"\s*\d{1,2}\s*,\s*\d+\s*", text):  # 1,72: a decimal comma
        whole, frac = (p.strip() for p in text.split(","))
        raise HeightError(f"height {text.strip()!r}: write metres with a decimal point ({whole}.{frac}); several "
                          "people as ID=METRES, e.g. 0=1.72,1=1.40")
    everyone: float | None = None
    per: dict[int, float] = {}
    for part in text.split(","):
        part = part.strip()
        key, _, value = part.rpartition("=")
        try:
            h = float(value)
        except ValueError:
            raise HeightError(f"height {part!r}: expected metres such as 1.72, or ID=METRES such as 0=1.72") from None
        if not math.isfinite(h):
            raise HeightError(f"height {part!r} is not a number of metres")
        key = key.strip()
        if key in ("", "*"):
            if everyone is not None:
                raise HeightError(f"heights {text.strip()!r}: two heights for everyone ({everyone:g}, {h:g}); give "
                                  "one per track id, e.g. 0=1.72,1=1.40")
            everyone = h
        elif key.isdigit():
            if int(key) in per:
                raise HeightError(f"heights {text.strip()!r}: person {int(key)} is given two heights")
            per[int(key)] = h
        else:
            raise HeightError(f"height {part!r}: {key!r} is not a track id (a whole number, or * for everyone)")
    return Heights(everyone, per)


def apply_heights(seq: PoseSequence, heights: Heights | None = None) -> tuple[PoseSequence, list[str]]:
    """``seq`` with each person given a height scaled to it, and ``metadata["people"]`` (module docstring) for
    everyone -> (sequence, warnings). A person with a given height whose stature cannot be measured is left as
    it is, with a warning. The input is not changed."""
    from posetracker.analysis.stature import stature
    from posetracker.tracks import person_tracks

    heights = heights or Heights()
    ids = seq.track_ids()
    if not ids or all(f.world is None for f in seq.frames):
        return seq, []
    if not set(STATURE_JOINTS) <= set(seq.skeleton.joint_names):  # an animal: no stature to measure or give
        return seq, ([f"heights apply to people: the {seq.skeleton.name} skeleton has no ankle-to-ear chain"]
                     if heights else [])
    tracks = person_tracks(seq)
    measured_by = "multi-view" if "multiview" in (seq.metadata or {}) else "estimated"  # triangulated, or one view
    on_floor = floor_scales(seq)
    scale: dict[int, float] = {}
    people: dict[str, dict] = {}
    warnings: list[str] = []
    for tid, track in tracks.items():
        ok = track.present[:, None] & (track.confidence > 0) & np.isfinite(track.world).all(-1)
        measured = stature(track.world, ok, seq.skeleton)
        given = heights.of(tid)
        before = ((seq.metadata or {}).get("people") or {}).get(str(tid)) or {}
        if given is None and before.get("stature_source") == "given" and math.isfinite(measured):
            given = measured  # scaled to a given height before (a finished result exported again): it stays given
        if given is not None and math.isfinite(measured):
            scale[tid] = given / measured
            entry = {"stature_m": round(given, 3), "stature_source": "given", "scale": round(scale[tid], 4)}
        elif given is None and tid in on_floor and math.isfinite(measured) and before.get("stature_source") != "floor":
            scale[tid] = on_floor[tid]
            entry = {"stature_m": round(measured * scale[tid], 3), "stature_source": "floor",
                     "scale": round(scale[tid], 4)}
        elif given is None and before.get("stature_source") == "floor" and math.isfinite(measured):
            entry = {"stature_m": round(measured, 3), "stature_source": "floor", "scale": 1.0}  # exported again
        elif given is not None:
            warnings.append(f"person {tid}: height {given:g} m not applied: no frame shows the whole ankle-to-ear "
                            "chain to measure the stature by")
            entry = {"stature_m": None, "stature_source": "unknown", "scale": 1.0}
        else:
            entry = {"stature_m": round(measured, 3) if math.isfinite(measured) else None,
                     "stature_source": measured_by if math.isfinite(measured) else "unknown", "scale": 1.0}
            if "floor_scale" in before:  # sized by the shared floor when finished (motion.shared_floor): kept
                entry.update(scale=before.get("scale", 1.0), floor_scale=before["floor_scale"])
        entry["bones_m"] = _bones(track.world[track.present] * scale.get(tid, 1.0), seq)
        people[str(tid)] = entry
    missing = sorted(set(heights.per_track) - set(tracks))
    if missing:
        warnings.append(f"heights given for track ids not in the result: {', '.join(map(str, missing))} "
                        f"(ids present: {', '.join(map(str, ids))})")
    _follow_shared_floor(seq, tracks, scale, people)
    about = kept_points(seq) if scale else None
    frames = [scaled_frame(f, scale, None if about is None else about[i]) for i, f in enumerate(seq.frames)] \
        if scale else seq.frames
    return dataclasses.replace(seq, frames=frames, metadata=_held_feet({**(seq.metadata or {}), "people": people},
                                                                     scale, about)), warnings


def kept_points(seq: PoseSequence) -> list[dict[int, np.ndarray]] | None:
    """Where each frame's triangulated people are scaled about: per frame {track id: (3,) m, the first camera's
    frame}, the point of the calibrated floor under the person's root (the root itself without a floor; the mean of
    their joints without a root), so that a person sized to a given height stays where the cameras measured them,
    feet on the floor. None for one view's people (scaled about the camera's centre: their pixels stay)."""
    meta = seq.metadata or {}
    if "multiview" not in meta:
        return None
    floor = meta.get("floor")
    R = None if floor is None else np.asarray(floor["rotation"], np.float64)  # camera -> Y-up floor world
    t = None if floor is None else np.asarray(floor["translation"], np.float64)
    root = seq.skeleton.root
    out: list[dict[int, np.ndarray]] = []
    for f in seq.frames:
        points: dict[int, np.ndarray] = {}
        for p, tid in enumerate(f.track_ids if f.world is not None else ()):
            w = np.asarray(f.world[p], np.float64)  # (K, 3)
            ok = np.isfinite(w).all(-1)
            if not ok.any():
                continue
            c = w[root] if ok[root] else w[ok].mean(0)
            if R is not None:
                q = R @ c + t
                q[1] = 0.0  # down to the floor
                c = R.T @ (q - t)
            points[int(tid)] = c
        out.append(points)
    return out


def _follow_shared_floor(seq: PoseSequence, tracks: dict, scale: dict[int, float], people: dict[str, dict]) -> None:
    """A finished result whose people were scaled to one floor (``metadata["shared_floor"]``, ``motion.shared_floor``)
    and some of them given a height now: the others on that floor scaled with them (the geometric mean of the
    given people's factors), so that everyone still stands on one floor, as ``process --height`` gives. ``scale``
    and ``people`` are updated in place."""
    meta = seq.metadata or {}
    mates = {int(t) for t in (meta.get("shared_floor") or {}).get("people", {})}
    now = [scale[t] for t in mates if t in scale and people[str(t)]["stature_source"] == "given"]
    if not now:
        return
    g = math.exp(sum(math.log(v) for v in now) / len(now))
    for t in sorted(mates - set(scale)):
        if t not in tracks or str(t) not in people:
            continue
        before = (meta.get("people") or {}).get(str(t)) or {}
        scale[t] = g
        p = people[str(t)]
        p.update(stature_m=None if p["stature_m"] is None else round(p["stature_m"] * g, 3),
                 scale=round(before.get("scale", 1.0) * g, 4), floor_scale=round(before.get("floor_scale", 1.0) * g, 4),
                 bones_m=_bones(tracks[t].world[tracks[t].present] * g, seq))


def _held_feet(meta: dict, scale: dict[int, float], about: list[dict[int, np.ndarray]] | None = None) -> dict:
    """``meta`` with the feet step's record (``metadata["feet"]``, a finished result) moved with the people scaled
    (``analysis.held_ground.scaled_record``; ``about``: :func:`kept_points`, triangulated people scaled about their
    floor points), so that every export still finds the held feet where they are: the floor frame's camera height
    goes with the people on its floor (a calibrated floor stays), and the shared floor's record
    (``metadata["shared_floor"]``) with it."""
    feet = meta.get("feet") or {}
    if not scale or "floor" not in feet or all(v == 1.0 for v in scale.values()):
        return meta
    from posetracker.analysis.held_ground import scaled_record

    floor = feet["floor"]
    on = [v for t, v in scale.items() if abs(float(floor["person_floor"].get(str(t), 1.0))) < 1e-6]
    height = None if "floor" in meta or not on else float(floor["translation"][1]) * math.exp(
        sum(math.log(v) for v in on) / len(on))
    centres = None
    if about is not None:  # {track id: (T, 3)} of the frames' points, NaN where the person is absent
        centres = {tid: np.array([a.get(tid, (np.nan,) * 3) for a in about], np.float64) for tid in scale}
    out = {**meta, "feet": scaled_record(feet, scale, height, centres)}
    if "shared_floor" in meta and meta["shared_floor"].get("scaled"):
        shared = meta["shared_floor"]
        out["shared_floor"] = {**shared, **({"camera_height_m": round(height, 4)} if height is not None else {}),
                               "people": {t: {**p, "scale": round(p["scale"] * scale.get(int(t), 1.0), 4)}
                                          for t, p in shared["people"].items()}}
    return out


def floor_scales(seq: PoseSequence, min_points: int = MIN_FLOOR_POINTS) -> dict[int, float]:
    """{track id: scale} that stands each person's stance ankles an ankle height above a calibrated camera's floor
    (``metadata["floor"]`` of one view, ``people_on_it`` False), scaling them about the camera's centre as a given
    height does; {} without such a floor. With the camera c m above the floor, a person of measured stature H
    whose stance ankles' median lies a m along the floor's up (camera coordinates): s (a) + c = 0.039 s H, so
    s = c / (0.039 H - a). People with fewer than ``min_points`` stance ankles, or a scale outside
    FLOOR_SCALE_RANGE, are left out."""
    floor = (seq.metadata or {}).get("floor")
    if not floor or floor.get("people_on_it", True):
        return {}
    from posetracker.analysis.ground import ANKLE_HEIGHT_FRACTION, ground_from_sequence

    report = ground_from_sequence(seq).frame.report
    c = float(np.asarray(floor["translation"], np.float64)[1])
    out = {}
    for tid, p in (report.get("people") or {}).items():
        if p.get("stance_ankle_height_m") is None or p.get("stature_m") is None or p["contact_points"] < min_points:
            continue
        a = float(p["stance_ankle_height_m"]) - c
        s = c / (ANKLE_HEIGHT_FRACTION * float(p["stature_m"]) - a)
        if FLOOR_SCALE_RANGE[0] <= s <= FLOOR_SCALE_RANGE[1]:
            out[int(tid)] = s
    return out


def scaled_frame(frame, scale: dict[int, float], about: dict[int, np.ndarray] | None = None):
    """A PoseFrame with person p's world scaled by ``scale[track id]`` about ``about[track id]`` ((3,) m; None or
    absent: the camera's centre, i.e. world and depth multiplied), depth with the world's z; x, y px and everyone
    else as they are."""
    s = np.array([scale.get(int(t), 1.0) for t in frame.track_ids], np.float32)  # (P,)
    if (s == 1.0).all():
        return frame
    o = np.array([(about or {}).get(int(t), np.zeros(3)) for t in frame.track_ids], np.float32).reshape(-1, 3)
    keypoints = frame.keypoints.copy()
    keypoints[..., 2] = o[:, None, 2] + s[:, None] * (keypoints[..., 2] - o[:, None, 2])
    world = None if frame.world is None else o[:, None] + s[:, None, None] * (frame.world - o[:, None])
    return dataclasses.replace(frame, keypoints=keypoints, world=world)


def _bones(world: np.ndarray, seq: PoseSequence) -> dict[str, float]:
    """{"parent-child": median length m} of the anatomical bones of one track's world (T, K, 3)."""
    from posetracker.tracking.bones import bone_lengths

    spec = seq.skeleton
    names = spec.joint_names
    lengths = bone_lengths(world, spec)  # (T, E)
    out = {}
    for e, (a, b) in enumerate(spec.edges.tolist()):
        if a in spec.virtual or b in spec.virtual:
            continue
        good = lengths[:, e][np.isfinite(lengths[:, e])]
        if good.size:
            out[f"{names[a]}-{names[b]}"] = round(float(np.median(good)), 4)
    return out


__all__ = ["HeightError", "Heights", "apply_heights", "parse_heights", "scaled_frame"]
