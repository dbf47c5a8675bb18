"""Joint rotations for a BVH rig from 3-D joint positions, and continuous Euler angles.

Every joint's world rotation ``R`` (3x3, rest frame -> posed frame) is read each frame from two
directions, its bone axis (at its child) and a roll reference that fixes the spin about it, with a weight
for how well that frame's joints fix it; each bone is then solved over the take, both directions in time
(:mod:`posetracker.motion.rotations`: robust to readings that would turn it by half a turn in a frame,
smooth, continuous, no flips) and aimed back at its child where its reading was accepted, so forward
kinematics with the rig's constant OFFSETs lands on the joints. The readings (:func:`humanoid_rotations`):

- trunk, neck, head and clavicles: the neighbouring joints' lines (hip line, shoulder line, ear line,
  nose), see :mod:`.bvh_rig`; a line seen nearly end-on (side view: a few centimetres long, its direction
  noise) weighs nothing, so the frames around it carry the bone;
- upper arm / thigh: the elbow / knee hinge axis ``upper x fore``, weighted by the bend (a straight limb
  has none); a knee's axis is flipped to agree with the pelvis (it never bends backwards);
- forearm / shin: one hinge, the solved upper bone's axis; hands and feet follow them.

Local rotations are ``R_parent^T R``; Euler angles (intrinsic, in the channel order) are unwrapped frame
to frame: of the two equivalent triples and every 360-degree shift the one nearest the previous frame is
kept. :func:`bone_steps` measures each bone's turn between frames (as Blender shows it).

Shapes: T frames, J rig joints; positions (T, 3) metres in BVH space.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from scipy.spatial.transform import Rotation

from posetracker.export.bvh_rig import HUMANOID, SPINE_FRACTION, Rig
from posetracker.motion.pelvis import PELVIS_CUTOFF_HZ, hips_rotation
from posetracker.motion.rotations import (
    RotationSettings,
    aim_share,
    direction_weight,
    frame_from,
    hinge_signs,
    limit_speed,
    line_weight,
    smoothstep,
    solve_bone,
    swing_onto,
)

X, Y, Z = np.eye(3)
BEND_LO, BEND_HI = np.radians(10.0), np.radians(30.0)
FACE_DEPTH_LO, FACE_DEPTH_HI = 0.02, 0.05  # metres the nose must be in front of the ears to orient the head
#: the nose tip sits this far below the head's forward axis (about 3 cm down for 10 cm forward of the ears)
NOSE_PITCH = np.arctan2(0.03, 0.10)
#: cosines of a bent knee's signed hinge axis against the pelvis': the bend fixes the thigh's roll while the axis
#: lies on the pelvis' side (within 90 degrees), not from 120 (the sign kept over the take reads it bending backwards)
KNEE_BACK = (np.cos(np.radians(120.0)), np.cos(np.radians(90.0)))
#: the smoothness prior's cutoff for the trunk, neck, head and clavicles (the limbs: RotationSettings.cutoff_hz)
TRUNK_CUTOFF_HZ = PELVIS_CUTOFF_HZ


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 1e-12, n, np.nan)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=-1)


def swing(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Apply to x (T, 3) the smallest rotation taking unit a (T, 3) onto unit b (T, 3)."""
    v = np.cross(a, b)
    c = _dot(a, b)
    opposite = c < -1 + 1e-9
    k = np.where(opposite, 1.0, 1.0 / np.maximum(1.0 + c, 1e-12))[:, None]
    out = x + np.cross(v, x) + k * np.cross(v, np.cross(v, x))
    if opposite.any():  # half turn about an axis normal to a
        ax = _unit(np.cross(a[opposite], np.where(np.abs(a[opposite, :1]) < 0.9, X, Y)))
        xo = x[opposite]
        out[opposite] = 2 * _dot(xo, ax)[:, None] * ax - xo
    return out


def _bend_weight(d1: np.ndarray, d2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hinge axis unit (T, 3), weight (T,) in [0, 1] growing with the bend angle)."""
    nb = np.cross(d1, d2)
    ang = np.arctan2(np.linalg.norm(nb, axis=-1), _dot(d1, d2))
    s = np.clip((ang - BEND_LO) / (BEND_HI - BEND_LO), 0.0, 1.0)
    return _unit(nb), s * s * (3 - 2 * s)


def _aim(measured: np.ndarray, weight: np.ndarray, spin: np.ndarray, a0: np.ndarray, lam: float,
         settings: RotationSettings, line: np.ndarray | float = 1.0) -> np.ndarray:
    """A bone that aims at its child: its orientation solved over the take (``weight`` (T,) for its direction,
    ``spin`` (T,) for its spin about it, ``a0`` its rest bone axis), then swung onto the reading's bone axis, so
    only its spin comes from the path; not where the reading's direction lies far off the path's
    (:func:`~posetracker.motion.rotations.aim_share`), nor, by ``line`` (T,) in [0, 1], where the bone is a line
    between two joints seen end-on (a clavicle in a side view: its direction is noise)."""
    solved, _ = solve_bone(measured, weight, lam, settings, a0, spin)
    share = aim_share(direction_weight(solved @ a0, measured @ a0, settings))
    return swing_onto(solved, a0, measured @ a0, share * line)


def humanoid_rotations(pts: dict[str, np.ndarray], frame_s: float = 1 / 30,
                       settings: RotationSettings | None = None) -> np.ndarray:
    """(T, J, 3, 3) world rotations of the HUMANOID joints over one take, from named (T, 3) points (metres, all
    finite), each bone solved over the take (:mod:`posetracker.motion.rotations`), parents first.

    Readings, each with a weight for its direction and one for its spin about it (where the spin weighs little,
    the reading counts for its direction and the path carries the spin): the Hips, the trunk's direction, spun
    by the hip line (weight: its length against its median, so a hip line seen end-on in a side view is carried
    by the frames around it), aimed along the hip line where it is long; Spine, Chest and Neck aim along the
    trunk and neck, spun by the hip + shoulder, shoulder and ear lines (weighted alike; an ear line more than
    about 80 degrees round from the shoulders is a misreading); the Head up from the face (forward = nose -
    mid-ears, taken to point NOSE_PITCH = 17 deg below the head's forward axis, where the nose is at least 5 cm
    in front of the ears; the neck's direction where it is less than 2 cm, blended in between), spun by the ear
    line; clavicles aim at the shoulders where the shoulder line is long, spun by the chest (weighted by how far
    they are from pointing along it). The trunk, neck, head and clavicles are solved with a 2 Hz cutoff
    (TRUNK_CUTOFF_HZ), the limbs with ``settings.cutoff_hz``. Limbs: the upper arm and thigh aim at the elbow /
    knee and spin on the bend's hinge axis (spin weight: the bend, 0 under 10 deg, 1 from 30 deg; a straight
    arm's reading is the chest's rest hinge swung onto it, a straight leg's the pelvis', weighted by the hip
    line); the knee's axis is signed over the take to agree with the pelvis (a knee never bends backwards); where
    the sign kept while bent leaves it more than 90-120 degrees from the pelvis' (``KNEE_BACK``), the bend gives
    no roll and the frames around carry it. The forearm and shin aim at the wrist / ankle, spun on the solved
    upper bone's hinge axis; hands and feet follow them.
    Last, no bone turns faster than ``max_speed_dps`` (:func:`~posetracker.motion.rotations.limit_speed`).
    """
    s = settings or RotationSettings()
    frame_s = frame_s if frame_s > 0 else 1 / 30
    lam = s.smoothness(frame_s)
    body = dataclasses.replace(s, cutoff_hz=TRUNK_CUTOFF_HZ)  # the trunk, neck, head and clavicles turn slower
    lam_body = body.smoothness(frame_s)
    trunk = pts["neck"] - pts["mid_hip"]
    hip_v = pts["left_hip"] - pts["right_hip"]
    sh_v = pts["left_shoulder"] - pts["right_shoulder"]
    ear_x = pts["left_ear"] - pts["right_ear"]
    w_hip, w_sh, w_ear = line_weight(hip_v), line_weight(sh_v), line_weight(ear_x)
    # a head turns at most about 80 degrees against the shoulders: an ear line further round is a misreading
    w_ear = w_ear * smoothstep(_dot(_unit(ear_x), _unit(sh_v)), -0.1, 0.2)
    R: dict[str, np.ndarray] = {}
    ones = np.ones(len(trunk))
    R["Hips"] = hips_rotation(hip_v, trunk, w_hip, frame_s, body)  # as the session's pelvis (motion.pelvis)
    # the Spine sits SPINE_FRACTION up the Hips' +Y, which is the trunk made square to the hip line: aim it
    # from there at the chest point, so the Chest (and all above) land where the keypoints put them
    spine_at = pts["mid_hip"] + SPINE_FRACTION * np.linalg.norm(trunk, axis=-1, keepdims=True) * R["Hips"][:, :, 1]
    lateral = R["Hips"][:, :, 0] + _unit(sh_v) * w_sh[:, None]
    R["Spine"] = _aim(frame_from(pts["chest"] - spine_at, lateral, Y, X), ones, np.maximum(w_hip, w_sh), Y, lam_body, body)
    R["Chest"] = _aim(frame_from(trunk, sh_v, Y, X), ones, w_sh, Y, lam_body, body)
    R["Neck"] = _aim(frame_from(pts["head"] - pts["neck"], ear_x, Y, X), ones, w_ear, Y, lam_body, body)
    neck_up = _unit(pts["head"] - pts["neck"])
    face = pts["nose"] - pts["head"]
    depth = _dot(face, _unit(np.cross(ear_x, neck_up)))  # how far the nose is in front of the ears
    w = smoothstep(depth, FACE_DEPTH_LO, FACE_DEPTH_HI)[:, None]
    face_up = _unit(np.cross(face, ear_x))  # (nose direction) x left: up, tilted forward by the nose pitch
    face_dir = _unit(np.cross(ear_x, face_up))
    up_from_face = np.cos(NOSE_PITCH) * face_up - np.sin(NOSE_PITCH) * face_dir
    up = w * np.nan_to_num(up_from_face) + (1 - w) * neck_up
    R["Head"] = solve_bone(frame_from(ear_x, up, X, Y), ones, lam_body, body, Y, w_ear)[0]
    chest_z = R["Chest"][:, :, 2]
    for side, sgn in (("Left", 1.0), ("Right", -1.0)):
        low = side.lower()
        clav = pts[f"{low}_shoulder"] - pts["neck"]
        w_clav = smoothstep(np.linalg.norm(np.cross(_unit(clav), chest_z), axis=-1), 0.2, 0.5)
        R[f"{side}Shoulder"] = _aim(frame_from(clav, chest_z, sgn * X, Z), w_sh, w_clav, sgn * X, lam_body, body, w_sh)
        # arm: rest along +-X, the forearm bends towards +Z -> hinge n0 = a0 x Z
        a0 = sgn * X
        n0 = np.cross(a0, Z)
        d1 = _unit(pts[f"{low}_elbow"] - pts[f"{low}_shoulder"])
        d2 = _unit(pts[f"{low}_wrist"] - pts[f"{low}_elbow"])
        rc = R["Chest"]
        hinge, bend = _bend_weight(d1, d2)
        ref = swing(rc @ a0, d1, rc @ n0)
        n = np.where(bend[:, None] > 0, np.nan_to_num(hinge), ref)
        R[f"{side}Arm"] = _aim(frame_from(d1, n, a0, n0), ones, bend, a0, lam, s)
        R[f"{side}ForeArm"] = frame_from(d2, R[f"{side}Arm"] @ n0, a0, n0)  # the elbow: on the upper arm's hinge
        R[f"{side}Hand"] = R[f"{side}ForeArm"]
        # leg: rest along -Y, the shin bends towards -Z -> hinge n0 = X
        a0, n0 = -Y, X
        d1 = _unit(pts[f"{low}_knee"] - pts[f"{low}_hip"])
        d2 = _unit(pts[f"{low}_ankle"] - pts[f"{low}_knee"])
        rh = R["Hips"]
        ref = _unit(swing(rh @ a0, d1, rh @ n0))
        hinge, bend = _bend_weight(d1, d2)
        hinge = np.where(np.isfinite(hinge), hinge, ref)
        hinge = hinge * hinge_signs(hinge, ref, bend)[:, None]  # a knee never bends backwards; no flip while bent
        # where the sign kept for continuity turns the axis round from the pelvis' (the knee read bending
        # backwards), the bend does not fix the thigh's roll: the reading falls back to the pelvis' and weighs
        # little, so the frames around carry the roll
        trust = bend * smoothstep(_dot(hinge, ref), *KNEE_BACK)
        n = _unit(trust[:, None] * hinge + (1 - trust[:, None]) * ref)
        R[f"{side}UpLeg"] = _aim(frame_from(d1, n, a0, n0), ones, trust + (1 - bend) * w_hip, a0, lam, s)
        R[f"{side}Leg"] = frame_from(d2, R[f"{side}UpLeg"] @ n0, a0, n0)  # the knee: on the thigh's hinge
        R[f"{side}Foot"] = R[f"{side}Leg"]
    step = s.max_speed_dps * frame_s  # no bone turns faster than a body can
    return np.stack([limit_speed(R[name], step) for name, *_ in HUMANOID], axis=1)


def level_feet(world: np.ndarray, names: list[str]) -> np.ndarray:
    """(T, J, 3, 3) ``world`` with each Foot level (its rest up +Y along BVH +Y, the floor's normal), pointing
    where its knee points (forward = the shin's hinge axis x up): human18 has no toes, so a foot that simply
    followed its shin would dip its toes through the floor whenever the shin leans back (up to 6 cm on the
    walk, dancer and pose2sim clips); the ankle then turns between the shin and a flat foot."""
    out = world.copy()
    up = np.broadcast_to(Y, (world.shape[0], 3))
    for side in ("Left", "Right"):
        leg, foot = names.index(f"{side}Leg"), names.index(f"{side}Foot")
        forward = np.cross(world[:, leg] @ X, up)
        ok = np.linalg.norm(forward, axis=-1) > 1e-3  # a knee axis pointing straight up: keep the shin's
        out[ok, foot] = frame_from(forward[ok], up[ok], Z, Y)
    return out


def _kabsch(rest: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """(T, 3, 3) rotations best mapping rest offsets (m, 3) onto observed ones (T, m, 3)."""
    h = np.einsum("tmi,mj->tij", obs, rest)
    u, _, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(u @ vt))
    fix = np.ones((h.shape[0], 3))
    fix[:, 2] = np.where(d == 0, 1.0, d)
    return (u * fix[:, None, :]) @ vt


def skeleton_rotations(pos: np.ndarray, rig: Rig, joint_of: list[int]) -> np.ndarray:
    """(T, J, 3, 3) world rotations of a generic rig.

    pos: (T, K, 3) positions (all finite); joint_of: (J,) skeleton joint index
    of each rig joint. A joint with one child swings its rest bone onto the
    observed one (no twist relative to its parent); with several children
    it is the least-squares (Kabsch) fit of its children's offsets; a leaf
    follows its parent.
    """
    t, j = pos.shape[0], rig.num_joints
    world = np.empty((t, j, 3, 3))
    eye = np.broadcast_to(np.eye(3), (t, 3, 3))
    for i in range(j):
        p = rig.parents[i]
        rp = eye if p < 0 else world[:, p]
        kids = rig.children(i)
        if not kids:
            world[:, i] = rp
            continue
        obs = np.stack([pos[:, joint_of[c]] - pos[:, joint_of[i]] for c in kids], axis=1)  # (T, m, 3)
        local_obs = np.einsum("tji,tmj->tmi", rp, obs)  # R_p^T obs
        rest = rig.offsets[kids]
        if len(kids) == 1:
            a0 = np.broadcast_to(_unit(rest[0]), (t, 3))
            b = _unit(local_obs[:, 0])
            cols = np.stack([swing(a0, b, np.broadcast_to(e, (t, 3))) for e in np.eye(3)], axis=-1)
            local = cols
        else:
            local = _kabsch(rest, local_obs)
        world[:, i] = rp @ local
    return world


def local_rotations(world: np.ndarray, parents: list[int]) -> np.ndarray:
    """(T, J, 3, 3) rotations relative to the parent (the root's is its world rotation)."""
    local = world.copy()
    for j, p in enumerate(parents):
        if p >= 0:
            local[:, j] = np.swapaxes(world[:, p], -1, -2) @ world[:, j]
    return local


def euler_continuous(local: np.ndarray, order: str = "ZXY") -> np.ndarray:
    """(T, J, 3) intrinsic Euler angles in degrees, in ``order``, continuous over T.

    local: (T, J, 3, 3). Angles may leave [-180, 180] to stay continuous.
    """
    t, j = local.shape[:2]
    with warnings.catch_warnings():  # gimbal lock: scipy zeroes the third angle; continuity still holds
        warnings.simplefilter("ignore", UserWarning)
        e = Rotation.from_matrix(local.reshape(-1, 3, 3)).as_euler(order.upper(), degrees=True).reshape(t, j, 3)
    alt = np.stack([e[..., 0] + 180.0, 180.0 - e[..., 1], e[..., 2] + 180.0], axis=-1)
    out = np.empty_like(e)
    out[0] = e[0]
    for i in range(1, t):
        prev = out[i - 1]
        best = None
        for cand in (e[i], alt[i]):
            c = cand + 360.0 * np.round((prev - cand) / 360.0)
            cost = np.abs(c - prev).sum(axis=-1, keepdims=True)
            best = (c, cost) if best is None else (np.where(cost < best[1], c, best[0]), np.minimum(cost, best[1]))
        out[i] = best[0]
    return out


def world_rotations(euler: np.ndarray, parents: list[int], order: str = "ZXY") -> np.ndarray:
    """(T, J, 3, 3) world rotations from local Euler angles (T, J, 3) degrees (the inverse of
    :func:`local_rotations` + :func:`euler_continuous`)."""
    t, j = euler.shape[:2]
    local = Rotation.from_euler(order.upper(), euler.reshape(-1, 3), degrees=True).as_matrix().reshape(t, j, 3, 3)
    world = local.copy()
    for i, p in enumerate(parents):  # parents come before their children
        if p >= 0:
            world[:, i] = world[:, p] @ local[:, i]
    return world


def bone_steps(world: np.ndarray) -> np.ndarray:
    """(T-1, J) degrees each bone turns between two frames (roll included; end bones too). world: (T, J, 3, 3)."""
    rel = np.swapaxes(world[:-1], -1, -2) @ world[1:]
    return np.degrees(Rotation.from_matrix(rel.reshape(-1, 3, 3)).magnitude()).reshape(rel.shape[:2])


def rest_bone_axes(rig: Rig) -> np.ndarray:
    """(J, 3) each joint's rest bone direction (its first child's OFFSET; nan for a leaf), for :func:`twist_flips`."""
    return np.array([rig.offsets[rig.children(j)[0]] if rig.children(j) else [np.nan] * 3
                     for j in range(rig.num_joints)])


def twist_flips(world: np.ndarray, axes: np.ndarray, min_twist_deg: float = 90.0,
                max_swing_deg: float = 30.0) -> np.ndarray:
    """(T-1, J) bool: steps where a bone turns by more than ``min_twist_deg`` about its own axis while
    its direction moves less than ``max_swing_deg`` (a roll flip an animator sees as a twisted limb).

    world: (T, J, 3, 3) world rotations; axes: (J, 3) each joint's rest bone direction
    (:func:`rest_bone_axes`; nan or zero: no bone, never counted).
    """
    rel = np.swapaxes(world[:-1], -1, -2) @ world[1:]  # (T-1, J, 3, 3) step in the joint's own frame
    q = Rotation.from_matrix(rel.reshape(-1, 3, 3)).as_quat().reshape(*rel.shape[:2], 4)  # x, y, z, w
    a = _unit(axes)
    twist = np.degrees(2 * np.arctan2(np.abs(np.einsum("tjc,jc->tj", q[..., :3], np.nan_to_num(a))), np.abs(q[..., 3])))
    b0 = np.einsum("tjab,jb->tja", world[:-1], np.nan_to_num(a))
    b1 = np.einsum("tjab,jb->tja", world[1:], np.nan_to_num(a))
    swing_deg = np.degrees(np.arccos(np.clip(_dot(b0, b1), -1.0, 1.0)))
    has_bone = np.isfinite(a).all(-1)[None]
    return has_bone & (twist > min_twist_deg) & (swing_deg < max_swing_deg)
