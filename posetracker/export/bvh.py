"""BVH export: one rigid, Y-up animated skeleton per tracked person.

Pipeline per person (see :mod:`.bvh_rig` for the hierarchy table and rest
pose, :mod:`.bvh_solve` for the rotations, :mod:`.bvh_motion` for the options,
the solved motion and the file's text):

1. ``world`` (camera metres) -> BVH space ``X = x, Y = -y, Z = -z`` (Y up,
   right-handed, the person facing the camera faces +Z).
2. Frames are put on a uniform time grid whose step (the ``Frame Time``) is
   the median step of the source timestamps; a dropped source frame is a gap.
3. A joint is missing where its world position is nan or its confidence is
   below ``min_confidence``. Gaps of at most ``max_gap_s`` are linearly
   interpolated; during longer gaps the joint is carried by its parent at its
   last seen offset (``tracks.hold_limbs``: a missing wrist follows the elbow,
   the body moves on). Only a frame without the body centre holds the whole
   pose (its last complete frame). All three are listed in the sidecar report
   ``NAME.bvh.json``.
4. Bone lengths: per-bone median over the complete frames -> constant OFFSETs
   (T-pose for humans). Every joint's rotation aims its bone at its child, so
   forward kinematics reproduces the joints that map 1:1 up to the length
   correction, and the roll comes from neighbouring joints.
5. Channels: the root has ``Xposition Yposition Zposition`` (centimetres by
   default) then three rotations; every other joint three rotations, in
   ``rotation_order`` (default ZXY, intrinsic, degrees), unwrapped so that
   no channel jumps by 360 degrees. Numbers are locale-independent.

``origin="floor"`` (default) stands everyone on the floor the session fitted
to the clip's stance feet (``floor="fit"``): the floor and the stance phases
the finishing step decided, read from the sequence's ``metadata["feet"]``
(:mod:`posetracker.analysis.held_ground`; fitted again,
:mod:`posetracker.analysis.ground`, only for a sequence without them, such as
a result saved before they were kept): step 1 maps camera space into the floor
frame instead (Y up along the floor's normal, so gravity is -Y whatever the
camera's pitch and roll; X the camera's right along the floor; where the camera
tilts, each frame turned first by the turn recorded with the floor, and the
report's ``bvh_from_camera`` is then the map of the camera the floor was fitted
in: frame f's camera maps by ``bvh_from_camera`` after the rotation vector of
``floor.turn`` at the clip's frame f, :mod:`posetracker.motion.moving_floor`), each person's
own floor goes to Y = 0 and the first frame's root to X = Z = 0. The standing
feet are the motion's: the session held each stance foot still on this floor,
an ankle height above it, in the world coordinates every output reads
(:mod:`posetracker.motion.feet`; the report's ``feet`` is its report); the
export moves no foot (the rest pose stands on its ankles at Y = 0): the
session's pelvis and bones are the rig's (:mod:`posetracker.motion.pelvis`),
so its legs stand on the held ankles. When the feet
give no floor (too few stance frames, no plane), and with
``floor="percentile"``, the level camera's axes above are kept and the floor is
the 2nd percentile of the lowest joint (the method before the fit); the
report's ``floor`` says which and why, and
``bvh_from_camera`` gives the whole map (BVH = R camera + t, in the file's
units). ``"camera"`` keeps camera coordinates (step 1 only). Several people
share one X, Z origin (the first person's first root) and stand apart where
they stood; on the fitted floor each stands on their own floor (a monocular
depth error moves a person's floor along the normal), on the percentile floor
they share the median of their floors. Absent means absent: a person's motion is cut into *takes*, the runs of
frames where their body drives the rig, joined across gaps of at most
``max_gap_s`` (interpolated as above) and split by longer ones; each take is
its own file (``STEM_person{ID}.bvh`` for a person seen in one take,
``STEM_person{ID}_take{N}.bvh`` otherwise), so nobody stands frozen while
unseen or jumps across a long gap in Blender. BVH has no visibility channel,
which is why absence is a gap between files: each take's report gives its
``start_frame`` and ``start_time_s`` on the clip's timeline (Blender's BVH
import: Start Frame) and lists the person's other takes. Takes shorter than
``min_take_s`` are not written (listed in the report's ``dropped_takes``).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from posetracker.analysis.ground import Ground
from posetracker.analysis.held_ground import held_ground, turn_as_list
from posetracker.export.bvh_motion import (  # noqa: F401 (ORDERS: re-exported)
    ORDERS, UNITS, BvhMotion, BvhOptions, bvh_text, map_report, shared_origin)
from posetracker.export.bvh_rig import (
    BVH_FROM_CAMERA,
    HUMANOID_REQUIRED,
    humanoid_points,
    humanoid_rig,
    is_humanoid,
    skeleton_rig,
)
from posetracker.export.bvh_solve import euler_continuous, humanoid_rotations, level_feet, local_rotations, skeleton_rotations
from posetracker.export.files import person_path, write_files
from posetracker.export.registry import ExportError, ExportWarning
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import PersonTrack, TrackError, fill_gaps, frame_time, hold_limbs, person_tracks, runs
from posetracker.types import PoseSequence


def _grid(times: np.ndarray, dt: float) -> np.ndarray:
    """(T,) motion-line slot of each source frame on a uniform grid of step dt."""
    slots = np.round((times - times[0]) / dt).astype(np.int64)
    if np.any(np.diff(slots) <= 0) or slots[-1] > 4 * len(times):  # irregular clock: one line per frame
        return np.arange(len(times))
    return slots


def solve_person(track: PersonTrack, spec: SkeletonSpec, fps: float, options: BvhOptions = BvhOptions(),
                 ground: Ground | None = None) -> BvhMotion:
    """Rig, root path and continuous local rotations of one person (raises ValueError on unusable input).

    ground: the clip's floor (:func:`posetracker.analysis.held_ground.held_ground`: the session's); None (or a
    floor not fitted): the level camera, the floor at the 2nd percentile of the lowest joint."""
    if not np.isfinite(track.world).any():
        raise ValueError("BVH needs 3-D joints and this person has no world coordinates")
    humanoid = options.rig == "humanoid" or (options.rig == "auto" and is_humanoid(spec))
    if humanoid and not is_humanoid(spec):
        raise ValueError(f"skeleton {spec.name!r} lacks the humanoid keypoints {list(HUMANOID_REQUIRED)}")
    required = [spec.index(n) for n in HUMANOID_REQUIRED] if humanoid else list(range(spec.num_joints))

    dt = frame_time(track.times, fps)
    slots = _grid(track.times, dt)
    n = int(slots[-1]) + 1
    fitted = options.origin == "floor" and options.floor == "fit" and ground is not None and ground.frame.fitted
    rotation = ground.frame.rotation if fitted else BVH_FROM_CAMERA
    translation = ground.frame.translation if fitted else np.zeros(3)
    pos = np.full((n, spec.num_joints, 3), np.nan)
    valid = np.zeros((n, spec.num_joints), bool)
    pos[slots] = ground.frame.world_to_floor(track.world) if fitted else track.world @ rotation.T + translation
    valid[slots] = track.valid_world(options.min_confidence)
    max_gap = int(round(options.max_gap_s / dt))
    filled, ok_joint = fill_gaps(pos, valid, max_gap)
    filled, ok_joint, limb_held = hold_limbs(filled, ok_joint, spec.parents)
    ok = ok_joint[:, required].all(axis=1)
    if not ok.any():
        counts = valid[:, required].sum(axis=0)
        worst = [spec.joint_names[required[i]] for i in np.argsort(counts)[:3]]
        raise ValueError(f"no frame has all the joints the rig needs (least seen: {', '.join(worst)})")
    first, last = int(np.flatnonzero(ok)[0]), int(np.flatnonzero(ok)[-1])
    span = slice(first, last + 1)
    filled, ok, valid, ok_joint, limb_held = filled[span], ok[span], valid[span], ok_joint[span], limb_held[span]
    all_takes = takes_of(ok, max_gap)
    min_take = max(1, min(int(round(options.min_take_s / dt)), n))  # a clip shorter than that: its length
    takes = [(a, b) for a, b in all_takes if b - a >= min_take]
    if not takes:
        raise ValueError(f"seen whole for at most {max(b - a for a, b in all_takes) * dt:.2f} s at a time "
                         f"(takes shorter than {options.min_take_s} s are not written)")
    complete = valid[:, required].all(axis=1)
    measure = filled[complete] if complete.sum() >= 1 else filled[ok]

    if humanoid:
        rig = humanoid_rig(humanoid_points(measure, spec), symmetric=options.symmetric)
        pts = humanoid_points(filled[ok], spec)
        at = np.cumsum(ok)  # complete frames before each frame (+1 where complete): takes -> complete frames
        parts = [(int(at[a] - ok[a]), int(at[b - 1])) for a, b in all_takes]
        world = np.concatenate([humanoid_rotations({k: v[a:b] for k, v in pts.items()}, dt) for a, b in parts])
        root = pts["mid_hip"]
    else:
        rig = skeleton_rig(filled, ok, spec)
        joint_of = [spec.index(p) for p in rig.points]
        world = skeleton_rotations(filled[ok], rig, joint_of)
        root = filled[ok][:, spec.root]
    # held frames: repeat the last complete pose (the first one before it)
    src = np.maximum.accumulate(np.where(ok, np.arange(len(ok)), -1))
    src = np.where(src < 0, int(np.flatnonzero(ok)[0]), src)
    idx = np.cumsum(ok) - 1
    take = idx[src]
    scale = UNITS[options.units]
    if fitted:
        floor = ground.frame.person_floor.get(track.track_id, 0.0)
    else:
        floor = float(np.percentile(np.nanmin(filled[ok][:, required, 1], axis=1), 2))
    if humanoid:  # the feet stand level (human18 has no toes: the foot's orientation is the rig's choice)
        world = level_feet(world, rig.names)
    world, root = world[take], root[take]
    euler = euler_continuous(local_rotations(world, rig.parents), options.rotation_order)

    shift = np.array([-root[0, 0], -floor, -root[0, 2]]) if options.origin == "floor" else np.zeros(3)
    times = track.times[0] + (first + np.arange(len(ok))) * dt
    names = spec.joint_names
    interpolated = [
        {"joint": names[k], "bvh_frames": [a, b], "time_s": [round(float(times[a]), 6), round(float(times[b - 1]), 6)]}
        for k in required for a, b in runs(ok_joint[:, k] & ~valid[:, k] & ~limb_held[:, k])
    ]
    limbs = [
        {"joint": names[k], "bvh_frames": [a, b], "time_s": [round(float(times[a]), 6), round(float(times[b - 1]), 6)]}
        for k in required for a, b in runs(limb_held[:, k])
    ]
    inside = np.zeros_like(ok)
    for a, b in takes:
        inside[a:b] = True
    held = [
        {"bvh_frames": [a, b], "time_s": [round(float(times[a]), 6), round(float(times[b - 1]), 6)],
         "missing": [names[k] for k in required if not ok_joint[a:b, k].all()]}
        for a, b in runs(~ok & inside)
    ]

    def span_of(a: int, b: int) -> dict[str, Any]:
        return {"start_frame": int(track.frames[0]) + first + a, "frames": b - a,
                "time_s": [round(float(times[a]), 6), round(float(times[b - 1]), 6)]}
    if options.origin == "camera":
        floor_report: dict[str, Any] = {"method": "none (origin camera)"}
    elif options.floor == "percentile":
        floor_report = {"fitted": False, "reason": "floor=percentile", "method": "level camera, floor at the 2nd "
                        "percentile of the lowest joint"}
    else:
        floor_report = dict(ground.frame.report) if ground is not None else {}
        if fitted and ground.frame.turn is not None:  # a camera that tilts: each frame's camera -> the map's
            floor_report["turn"] = {"frames": [int(v) for v in track.frames],
                                    "rotvec": turn_as_list(ground.frame.turn)}
    axes = ("BVH Y up from the fitted floor (its normal), X = camera x along the floor, Z = X x Y (towards the "
            "camera); right-handed; rest pose faces +Z" if fitted else
            "BVH X = camera x, Y = -camera y (up), Z = -camera z; right-handed; rest pose faces +Z")
    report = {
        "track_id": track.track_id, "skeleton": spec.name, "rig": "humanoid" if humanoid else "skeleton",
        "frames": len(ok), "frame_time_s": dt, "start_time_s": float(times[0]),
        "units": options.units, "rotation_order": options.rotation_order.upper(),
        "axes": axes,
        "rest_pose": "T-pose: arms along +-X, legs down -Y, feet forward +Z, standing on Y=0"
        if humanoid else "first complete frame's bone directions, median bone lengths",
        "origin": options.origin, "origin_shift": (shift * scale).round(4).tolist(),
        "bone_lengths": {k: round(v * scale, 4) for k, v in rig.bone_lengths().items()},
        "interpolated_gaps": interpolated, "max_interpolated_gap_s": options.max_gap_s,
        "held_limbs": limbs, "held_pose": held,
        "takes": [span_of(a, b) for a, b in takes],
        "dropped_takes": [span_of(a, b) for a, b in all_takes if (a, b) not in takes], "min_take_s": options.min_take_s,
        "floor": floor_report, "bvh_from_camera": map_report(rotation, translation + shift, options.units),
    }
    return BvhMotion(rig, root + shift, euler, dt, options.rotation_order.upper(), report, floor, shift, fitted,
                     np.array(rotation, np.float64), np.array(translation, np.float64), takes)


def takes_of(ok: np.ndarray, max_gap: int) -> list[tuple[int, int]]:
    """[(start, stop)) of each take: the runs of the (N,) bool ``ok`` joined across gaps of at most ``max_gap``."""
    out: list[tuple[int, int]] = []
    for a, b in runs(ok):
        if out and a - out[-1][1] <= max_gap:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


class BvhExporter:
    name = "bvh"
    suffixes = (".bvh",)
    description = "BVH animation (Blender, MotionBuilder), one file per person, with a .bvh.json report"

    def write(self, seq: PoseSequence, path: Path, force: bool = False, person: int | None = None, **options: Any) -> list[Path]:
        """Write ``path`` (one person) or ``STEM_person{ID}.bvh`` per person, each with ``NAME.json`` beside it."""
        path = Path(path)
        known = {k: v for k, v in options.items() if k in BvhOptions.__dataclass_fields__ and v is not None}
        opts = BvhOptions(**known)
        try:
            tracks = person_tracks(seq, person)
        except TrackError as exc:
            raise ExportError(f"BVH: {exc}") from None
        texts: dict[Path, str] = {}
        failed: list[str] = []
        motions: dict[int, BvhMotion] = {}
        ground = None
        if opts.origin == "floor" and opts.floor == "fit":  # the session's floor and stance phases (everyone's)
            ground = held_ground(seq)
        for tid, track in tracks.items():
            try:
                motions[tid] = solve_person(track, seq.skeleton, seq.fps, opts, ground)
            except ValueError as exc:  # this person cannot drive the rig: the others still can
                failed.append(f"BVH: person {tid} not exported: {exc}")
        if opts.origin == "floor" and len(motions) > 1:  # one origin: the people stand where they stood
            shift = shared_origin(list(motions.values()))
            for motion in motions.values():
                motion.move_origin(shift, opts.units)
        for tid, motion in motions.items():
            out = person_path(path, tid, len(tracks) > 1)
            motion.report["source"] = seq.metadata.get("source", "")
            if "camera" in seq.metadata:  # the field of view the 3-D was lifted with, and where it came from
                motion.report["camera"] = seq.metadata["camera"]
            if "feet" in seq.metadata:  # the standing feet the session held on the floor (motion.feet)
                motion.report["feet"] = {k: v for k, v in seq.metadata["feet"].items() if k != "floor"}
            for k, take in enumerate(motion.takes):
                name = out if len(motion.takes) == 1 else out.with_name(f"{out.stem}_take{k + 1}{out.suffix}")
                part = motion.take(k)
                texts[name] = bvh_text(part, opts.units)
                texts[name.with_name(name.name + ".json")] = json.dumps(part.report, indent=1) + "\n"
        if not texts:
            raise ExportError("; ".join(failed))
        files = write_files(texts, force)
        for message in failed:
            warnings.warn(ExportWarning(message), stacklevel=2)
        return files
