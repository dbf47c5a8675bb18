"""One pelvis per person: the hips a constant width apart, along a hip line solved over the track.

The per-track solve makes every bone of the skeleton's tree one length (``tracking.bones.rigid_tracks``), but the
hips hang off the virtual body centre, so the width between them is whatever each frame's depth said: on the
dancer the half width ran 2.9-10.3 cm (standard deviation 1.1 cm), shortest where the hip line is seen end-on and
its direction is depth noise. A rig has one pelvis (the BVH's Hips with constant OFFSETs, its orientation solved
smooth over the take): its hip joints then lay up to 7 cm from the world's, and legs aimed along the world's
directions carried that to the ankles, so the BVH's standing feet slid where the world's stood still.

:func:`rigid_pelvis` (run by ``motion.finish.finish_sequence`` before the feet are held, so every output reads it)
gives each person's world coordinates that pelvis: per track and run of frames, the hips' orientation
:func:`hips_rotation` (the one the BVH rig reads: its trunk direction, its spin about the trunk from the hip line,
weighted by the line's length against its median, so a line seen end-on is carried by the frames around; solved
over the run, robust to a reading that turns it by half a turn) and the hips put the person's median hip width
apart along it, about the mid-hip (the root and the trunk do not move). Each leg moves with its hip as one piece
(its knee and ankle by the same shift: no leg bone and no knee angle changes). A rig driven by these joints then
stands where they stand: its hips on the world's hips, its thighs and shins (the same constant lengths) on the
world's knees and ankles.

Shapes: T frames of a track, K joints; world (T, K, 3) camera metres; rotations (T, 3, 3) rest -> posed, the rest
frame's X along the hip line (left hip minus right hip) and Y up the trunk (mid-hip to mid-shoulders).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from posetracker.motion.rotations import (
    RotationSettings,
    aim_share,
    direction_weight,
    frame_from,
    line_weight,
    solve_bone,
    swing_onto,
)
from posetracker.types import PoseSequence

X, Y = np.eye(3)[0], np.eye(3)[1]
#: the hips' smoothness prior's cutoff (the trunk's, as the BVH rig solves it)
PELVIS_CUTOFF_HZ = 2.0
HIP_JOINTS = ("left_hip", "right_hip", "left_shoulder", "right_shoulder")


def hips_rotation(hip_line: np.ndarray, trunk: np.ndarray, weight: np.ndarray, frame_s: float,
                  settings: RotationSettings | None = None) -> np.ndarray:
    """(T, 3, 3) the hips over one take: the trunk's direction (``trunk`` (T, 3), always read), spun about it by
    the hip line (``hip_line`` (T, 3), by ``weight`` (T,) in [0, 1]: ``motion.rotations.line_weight``), solved with a
    ``PELVIS_CUTOFF_HZ`` prior (``settings``, default ``RotationSettings(cutoff_hz=PELVIS_CUTOFF_HZ)``;
    ``motion.rotations.solve_bone``) and then swung onto the hip line where it is long and its direction agrees
    with the path (``aim_share``)."""
    body = settings or RotationSettings(cutoff_hz=PELVIS_CUTOFF_HZ)
    read = frame_from(hip_line, trunk, X, Y)  # X along the hip line, Y towards the trunk
    path, _ = solve_bone(read, np.ones(len(read)), body.smoothness(frame_s), body, Y, weight)
    return swing_onto(path, X, read @ X, weight * aim_share(direction_weight(path @ X, read @ X, body)))


def _runs(ok: np.ndarray) -> list[tuple[int, int]]:
    """[(start, stop)) of the runs of True in the (T,) bool ``ok``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], ok.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def pelvis_world(world: np.ndarray, index: dict[str, int], legs: dict[str, tuple[int, ...]], frame_s: float
                 ) -> np.ndarray:
    """One track's world (T, K, 3) with the pelvis of the module docstring: ``index`` names the hips and
    shoulders' joints, ``legs`` {"left" / "right": the joints that move with that hip (knee, ankle, ...)}. Frames
    without both hips and shoulders are left as they are; each run of frames with them is solved on its own."""
    out = world.copy()
    lh, rh, ls, rs = (world[:, index[n]] for n in HIP_JOINTS)
    ok = np.isfinite(np.stack([lh, rh, ls, rs])).all(axis=(0, 2))
    line = lh - rh
    half = 0.5 * float(np.median(np.linalg.norm(line[ok], axis=-1))) if ok.any() else 0.0
    if not half > 0:
        return out
    mid = 0.5 * (lh + rh)
    weight = line_weight(np.where(ok[:, None], line, np.nan))
    for a, b in _runs(ok):
        if b - a < 3:  # too short to solve: as read
            continue
        along = hips_rotation(line[a:b], 0.5 * (ls[a:b] + rs[a:b]) - mid[a:b], weight[a:b], frame_s) @ X
        for side, sign in (("left", 1.0), ("right", -1.0)):
            hip = index[f"{side}_hip"]
            shift = mid[a:b] + sign * half * along - world[a:b, hip]
            for j in (hip, *legs[side]):
                out[a:b, j] = world[a:b, j] + shift
    return out


def rigid_pelvis(seq: PoseSequence) -> PoseSequence:
    """``seq`` with every person's world coordinates given one pelvis (module docstring); a skeleton without hips
    and shoulders, or a sequence without world coordinates, is returned as it is. The input is not changed; 2-D
    keypoints, confidences and every joint but the hips and legs are kept."""
    from posetracker.tracks import TrackError, frame_time, person_tracks

    spec = seq.skeleton
    if not all(n in spec.joint_names for n in HIP_JOINTS) or not any(f.world is not None for f in seq.frames):
        return seq
    index = {n: spec.index(n) for n in HIP_JOINTS}
    legs = {side: tuple(j for j in range(spec.num_joints) if _below(spec, j, index[f"{side}_hip"]))
            for side in ("left", "right")}
    try:
        tracks = person_tracks(seq)
    except TrackError:  # nobody tracked (every id -1): nothing to give a pelvis
        return seq
    if not tracks:
        return seq
    dt = frame_time(next(iter(tracks.values())).times, seq.fps)
    new = {tid: pelvis_world(tr.world, index, legs, dt) for tid, tr in tracks.items()}
    frames = []
    for i, f in enumerate(seq.frames):
        if f.world is None:
            frames.append(f)
            continue
        world = f.world.copy()
        for p, t in enumerate(f.track_ids.tolist()):
            if int(t) in new:
                moved = new[int(t)][i]
                world[p] = np.where(np.isfinite(world[p]) & np.isfinite(moved), moved, world[p])
        frames.append(dataclasses.replace(f, world=world.astype(f.world.dtype)))
    return dataclasses.replace(seq, frames=frames)


def _below(spec, joint: int, ancestor: int) -> bool:
    """Whether ``joint`` hangs below ``ancestor`` in the skeleton's tree (``ancestor`` itself excluded)."""
    p = spec.parents[joint]
    while p >= 0:
        if p == ancestor:
            return True
        p = spec.parents[p]
    return False


__all__ = ["hips_rotation", "pelvis_world", "rigid_pelvis"]
