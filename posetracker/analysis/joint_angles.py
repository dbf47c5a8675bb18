"""Joint angles from tracked poses, defined in one table (:data:`ANGLES`).

Each angle is measured between two vectors, each running from one point to
another; a point is a joint or the mean of joints (``mid_hip`` = mean of
the hips, ``neck`` = mean of the shoulders). The ``kind`` says how:

=========  =====================================================================
kind       3-D (camera-space metres)                 2-D (image plane, pixels)
=========  =====================================================================
segments   unsigned angle between the vectors        same, in the image
sagittal   signed, in the body's sagittal plane:      unsigned angle between
           from ``a`` towards the body's front is +   the vectors in the image
frontal    signed, in the body's frontal plane:       unsigned angle between
           away from the midline is +                 the vectors in the image
vertical   angle between ``a`` and straight up        same, image up
           (camera -y: assumes a level camera)
=========  =====================================================================

Body frame (``frame`` column): ``pelvis`` = left axis along the hip line,
up along mid_hip -> neck, front = left x up; ``chest`` the same with the
shoulder line. Every value is labelled ``3d`` when all its joints have a
world position with real depth (a person whose joints spread over less than
2 cm of depth in the median frame has no depth estimate yet and is ``2d``
throughout), ``2d`` when it fell back to image
keypoints, and is nan when neither has the joints. 0 deg = standing
straight with the arms hanging for every angle but knee/elbow (0 = straight).
Angles whose joints the skeleton lacks (the ankle, unless the skeleton has
toe joints) are skipped.

This table is the only angle definition in PoseTracker. Two entry points
share the measuring code (rows = frames of one person, or people of one frame):

- :func:`compute_angles`: a whole sequence -> :class:`AngleTable` (exports);
- :func:`track_angles`: one :class:`~posetracker.tracks.PersonTrack` (gait analysis);
- :func:`frame_angles`: one :class:`~posetracker.types.PoseFrame` ->
  ``{(angle, side): (P,) degrees}`` (live plots, see :mod:`.history`); there
  each person's depth spread is judged in that frame alone.

Rows (N) below: the frames of one person, or the people of one frame.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from posetracker.tracks import PersonTrack, person_tracks, valid_points
from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame, PoseSequence

Point = tuple[str, ...]  # joint names averaged into one point; "{s}" = side


@dataclass(frozen=True)
class AngleDef:
    """One angle: vector a = a[0] -> a[1], vector b = b[0] -> b[1] (each a point), see the module table."""

    name: str
    kind: str
    a: tuple[Point, Point]
    b: tuple[Point, Point] | None
    frame: str | None = None
    offset: float = 0.0  # result = offset + sign * angle
    sign: float = 1.0
    description: str = ""


HIPS: Point = ("left_hip", "right_hip")
SHOULDERS: Point = ("left_shoulder", "right_shoulder")
TOES = ("{s}_big_toe", "{s}_foot_index", "{s}_toe")
EARS: Point = ("leftear", "rightear")

#: every angle, per side where it contains "{s}" (left, right); else once ("centre")
ANGLES: tuple[AngleDef, ...] = (
    AngleDef("knee_flexion", "segments", (("{s}_hip",), ("{s}_knee",)), (("{s}_knee",), ("{s}_ankle",)),
             description="0 = straight knee"),
    AngleDef("hip_flexion", "sagittal", (SHOULDERS, HIPS), (("{s}_hip",), ("{s}_knee",)), "pelvis",
             description="thigh against the trunk line, forward +"),
    AngleDef("elbow_flexion", "segments", (("{s}_shoulder",), ("{s}_elbow",)), (("{s}_elbow",), ("{s}_wrist",)),
             description="0 = straight elbow"),
    AngleDef("shoulder_flexion", "sagittal", (SHOULDERS, HIPS), (("{s}_shoulder",), ("{s}_elbow",)), "chest",
             description="upper arm forward from the trunk line"),
    AngleDef("shoulder_abduction", "frontal", (SHOULDERS, HIPS), (("{s}_shoulder",), ("{s}_elbow",)), "chest",
             description="upper arm out to the side from the trunk line"),
    AngleDef("trunk_lean", "vertical", (HIPS, SHOULDERS), None, description="trunk from vertical, any direction"),
    AngleDef("ankle_dorsiflexion", "segments", (("{s}_ankle",), ("{s}_knee",)), (("{s}_ankle",), TOES),
             offset=90.0, sign=-1.0, description="foot against the shank, 0 = right angle, toes up +"),
    # animal skeletons (mouse4): the head's direction (ears -> snout) against the body axis (tail base -> ears)
    AngleDef("head_turn", "segments", (("tailbase",), EARS), (EARS, ("snout",)),
             description="head against the body axis, 0 = in line"),
)

#: {angle name: its definition}
DEFINITIONS: dict[str, AngleDef] = {d.name: d for d in ANGLES}


@dataclass
class AngleTable:
    """Long table: one row per (frame, person, angle, side).

    frame, time_s, person_id, degrees: (N,) arrays; angle, side, method: (N,) lists of str
    (method: "3d", "2d" or "" where the angle could not be measured, degrees = nan).
    """

    frame: np.ndarray
    time_s: np.ndarray
    person_id: np.ndarray
    angle: list[str]
    side: list[str]
    degrees: np.ndarray
    method: list[str]
    definitions: dict[str, AngleDef] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.degrees.shape[0])

    def series(self, person: int, angle: str, side: str) -> tuple[np.ndarray, list[str]]:
        """(T,) degrees and methods of one angle of one person, in frame order."""
        idx = [i for i in range(len(self)) if self.person_id[i] == person and self.angle[i] == angle and self.side[i] == side]
        return self.degrees[idx], [self.method[i] for i in idx]


def _resolve(point: Point, side: str, spec: SkeletonSpec) -> list[int] | None:
    """Joint indices of a point for a side; None when the skeleton lacks it (TOES: first that exists)."""
    if point is TOES:
        for cand in point:
            name = cand.format(s=side)
            if name in spec.joint_names:
                return [spec.index(name)]
        return None
    names = [p.format(s=side) for p in point]
    if not all(n in spec.joint_names for n in names):
        return None
    return [spec.index(n) for n in names]


def _vec(pts: np.ndarray, ok: np.ndarray, ends: tuple[list[int], list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(N, D) vector between two points of pts (N, K, D) and its (N,) validity."""
    a, b = ends
    v = pts[:, b].mean(axis=1) - pts[:, a].mean(axis=1)
    return v, ok[:, a + b].all(axis=1)


def _angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Unsigned angle in degrees between (N, D) vectors."""
    cross = np.cross(a, b) if a.shape[-1] == 3 else a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    cross = np.linalg.norm(cross, axis=-1) if a.shape[-1] == 3 else np.abs(cross)
    return np.degrees(np.arctan2(cross, np.sum(a * b, axis=-1)))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _body_frame(w: np.ndarray, spec: SkeletonSpec, line: Point) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(left, up, front) unit axes (N, 3) in camera space from a left-right joint pair and the trunk."""
    left = _unit(w[:, spec.index(line[0])] - w[:, spec.index(line[1])])
    hips = w[:, [spec.index(n) for n in HIPS]].mean(axis=1)
    neck = w[:, [spec.index(n) for n in SHOULDERS]].mean(axis=1)
    up = neck - hips
    up = _unit(up - np.sum(up * left, axis=-1, keepdims=True) * left)
    return left, up, np.cross(left, up)


def _planar(a: np.ndarray, b: np.ndarray, down: np.ndarray, across: np.ndarray) -> np.ndarray:
    """Signed angle (deg) from a to b in the plane spanned by ``down`` and ``across`` (N, 3)."""
    ang = lambda v: np.arctan2(np.sum(v * across, -1), np.sum(v * down, -1))  # noqa: E731
    d = np.degrees(ang(b) - ang(a))
    return (d + 180.0) % 360.0 - 180.0


def _measure(d: AngleDef, side: str, spec: SkeletonSpec, pts: np.ndarray, ok: np.ndarray, three_d: bool) -> np.ndarray | None:
    """(N,) degrees (nan where the joints are missing); None if the skeleton lacks the joints."""
    ends_a = [_resolve(p, side, spec) for p in d.a]
    ends_b = [_resolve(p, side, spec) for p in d.b] if d.b else []
    if any(e is None for e in ends_a + ends_b):
        return None
    a, valid = _vec(pts, ok, (ends_a[0], ends_a[1]))
    if d.kind == "vertical":
        up = np.array([0.0, -1.0, 0.0][: pts.shape[-1]])
        out = _angle(a, np.broadcast_to(up, a.shape))
    else:
        b, vb = _vec(pts, ok, (ends_b[0], ends_b[1]))
        valid &= vb
        if d.kind == "segments" or not three_d:
            out = _angle(a, b)
        else:
            line = HIPS if d.frame == "pelvis" else SHOULDERS
            need = [spec.index(n) for n in HIPS + SHOULDERS]
            valid &= ok[:, need].all(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                left, up, front = _body_frame(pts, spec, line)
            outward = left if side == "left" else -left
            out = _planar(a, b, -up, front if d.kind == "sagittal" else outward)
    out = d.offset + d.sign * out
    return np.where(valid, out, np.nan)


#: a person whose joints spread over less depth than this (median over frames) has no depth estimate
MIN_DEPTH_SPREAD_M = 0.02

MODES = ("auto", "3d", "2d")

AngleKey = tuple[str, str]  # (angle name, side): ("knee_flexion", "left"), ("trunk_lean", "centre")


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: choose auto, 3d or 2d")


def _depth_ok(world: np.ndarray, ok: np.ndarray, per_row: bool) -> np.ndarray:
    """``ok`` (N, K), kept only where the person has real depth (not one depth for all joints).

    The depth spread of a row is max - min z over its usable joints (>= 2 of them).
    per_row False: the rows are the frames of one person, judged by the median
    spread over their frames (all rows kept or none); True: the rows are the
    people of one frame, each judged by their own spread.
    """
    z = world[..., 2]
    spread = np.max(np.where(ok, z, -np.inf), axis=1) - np.min(np.where(ok, z, np.inf), axis=1)
    seen = ok.sum(axis=1) >= 2
    if per_row:
        return ok & (seen & (spread >= MIN_DEPTH_SPREAD_M))[:, None]
    if not seen.any() or not np.median(spread[seen]) >= MIN_DEPTH_SPREAD_M:
        return np.zeros_like(ok)
    return ok


def _measure_rows(spec: SkeletonSpec, keys: list[AngleKey], world: np.ndarray | None, image: np.ndarray,
                  confidence: np.ndarray, min_confidence: float, mode: str,
                  per_row: bool, image_size: tuple[int, int] = (0, 0)) -> dict[AngleKey, tuple[np.ndarray, np.ndarray]]:
    """{(angle, side): ((N,) degrees, (N,) method "3d" / "2d" / "")} for N rows of joints.

    world: (N, K, 3) metres or None; image: (N, K, >=2) pixels; confidence: (N, K);
    image_size: (width, height) px of the frame: joints outside it (a person entering at
    the edge, the network guessing a hidden limb) give no angle; (0, 0) = unknown.
    3-D where the row's joints have usable depth (see :func:`_depth_ok`), else 2-D.
    """
    _check_mode(mode)
    confidence = np.where(_inside(image, image_size), confidence, -1.0)  # outside: never confident enough
    none = np.zeros(confidence.shape, bool)
    if world is None:
        world = np.full(confidence.shape + (3,), np.nan)
    ok3 = _depth_ok(world, valid_points(world, confidence, min_confidence), per_row) if mode != "2d" else none
    ok2 = valid_points(image[..., :2], confidence, min_confidence) if mode != "3d" else none
    out: dict[AngleKey, tuple[np.ndarray, np.ndarray]] = {}
    for name, side in keys:
        d = DEFINITIONS[name]
        v3 = _measure(d, side, spec, world, ok3, True)
        v2 = _measure(d, side, spec, image[..., :2], ok2, False)
        use3 = np.isfinite(v3)
        method = np.where(use3, "3d", np.where(np.isfinite(v2), "2d", ""))
        out[(name, side)] = (np.where(use3, v3, v2), method)
    return out


def _inside(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(N, K) bool: the joints' image points (N, K, >=2) px lie inside a (width, height) frame."""
    w, h = size
    if w <= 0 or h <= 0:
        return np.ones(image.shape[:-1], bool)
    x, y = image[..., 0], image[..., 1]
    with np.errstate(invalid="ignore"):
        return (x >= 0) & (x < w) & (y >= 0) & (y < h)


def angle_names(spec: SkeletonSpec) -> list[AngleKey]:
    """(angle, side) pairs this skeleton can measure, in table order."""
    out = []
    for d in ANGLES:
        sides = ("left", "right") if "{s}" in repr(d.a) + repr(d.b) else ("centre",)
        for s in sides:
            if all(_resolve(p, s, spec) is not None for p in d.a + (d.b or ())):
                out.append((d.name, s))
    return out


def check_angle_names(spec: SkeletonSpec, names: Iterable[AngleKey] | None = None) -> list[AngleKey]:
    """``names`` as a list of (angle, side) pairs, or every pair of :func:`angle_names` when None.

    Raises ValueError for a pair the skeleton cannot measure (an unknown angle or side, missing joints).
    """
    available = angle_names(spec)
    if names is None:
        return available
    keys = [(str(n), str(s)) for n, s in names]
    unknown = [k for k in keys if k not in available]
    if unknown:
        raise ValueError(f"skeleton {spec.name!r} cannot measure {unknown}; it measures {available}")
    return keys


def frame_angles(pose: PoseFrame, spec: SkeletonSpec, names: Iterable[AngleKey] | None = None,
                 min_confidence: float = 0.2, mode: str = "auto") -> dict[AngleKey, np.ndarray]:
    """Angles of everyone in one frame: {(angle, side): (P,) degrees}, nan where not measurable.

    The live counterpart of :func:`compute_angles`, with the same table and rule:
    3-D from ``pose.world`` when the person's joints have real depth spread
    (judged per person, in this frame), else 2-D from the image keypoints.
    names: the (angle, side) pairs wanted, in that order (default: every pair of
    :func:`angle_names`); a pair the skeleton cannot measure raises ValueError.
    """
    keys = check_angle_names(spec, names)
    conf = np.nan_to_num(np.asarray(pose.confidence, np.float64), nan=0.0)
    world = None if pose.world is None else np.asarray(pose.world, np.float64)
    image = np.asarray(pose.keypoints, np.float64)
    measured = _measure_rows(spec, keys, world, image, conf, min_confidence, mode, per_row=True,
                             image_size=pose.image_size)
    return {k: deg for k, (deg, _) in measured.items()}


def track_angles(track: PersonTrack, spec: SkeletonSpec, names: Iterable[AngleKey] | None = None,
                 min_confidence: float = 0.2, mode: str = "auto",
                 image_size: tuple[int, int] = (0, 0)) -> dict[AngleKey, tuple[np.ndarray, np.ndarray]]:
    """Angles of one person over the T frames of a track: {(angle, side): ((T,) degrees, (T,) method)}.

    The per-person rule of :func:`compute_angles` (3-D when the person has depth, judged over
    the whole track, else 2-D); names as in :func:`frame_angles`; image_size (width, height) px.
    """
    return _measure_rows(spec, check_angle_names(spec, names), track.world, track.keypoints, track.confidence,
                         min_confidence, mode, per_row=False, image_size=image_size)


def compute_angles(seq: PoseSequence, person: int | None = None, min_confidence: float = 0.2, mode: str = "auto") -> AngleTable:
    """Angles of every tracked person (or ``person``) in every frame.

    mode: "auto" (3-D where depth is available, else 2-D), "3d" (nan without
    depth) or "2d" (image plane only). Raises TrackError when there is no person.
    """
    _check_mode(mode)
    spec = seq.skeleton
    keys = angle_names(spec)
    size = seq.frames[0].image_size if seq.frames else (0, 0)  # joints outside the frame give no angle
    cols: dict[str, list] = {k: [] for k in ("frame", "time", "pid", "angle", "side", "deg", "method")}
    for tid, tr in person_tracks(seq, person).items():
        measured = _measure_rows(spec, keys, tr.world, tr.keypoints, tr.confidence, min_confidence, mode, per_row=False,
                                 image_size=size)
        for (name, side), (deg, method) in measured.items():
            n = tr.num_frames
            cols["frame"].append(tr.frames)
            cols["time"].append(tr.times)
            cols["pid"].append(np.full(n, tid))
            cols["angle"] += [name] * n
            cols["side"] += [side] * n
            cols["deg"].append(deg)
            cols["method"] += method.tolist()
    defs = dict(DEFINITIONS)
    cat = lambda k, dt: np.concatenate(cols[k]).astype(dt) if cols[k] else np.zeros(0, dt)  # noqa: E731
    table = AngleTable(cat("frame", np.int64), cat("time", np.float64), cat("pid", np.int64), cols["angle"],
                       cols["side"], cat("deg", np.float64), cols["method"], defs)
    order = np.lexsort((np.arange(len(table)), table.frame, table.person_id))  # person, then frame, table order
    return AngleTable(table.frame[order], table.time_s[order], table.person_id[order], [table.angle[i] for i in order],
                      [table.side[i] for i in order], table.degrees[order], [table.method[i] for i in order], defs)
