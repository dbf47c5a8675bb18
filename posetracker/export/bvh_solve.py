"""Joint rotations for a BVH rig from 3-D joint positions, and continuous Euler angles.

Every joint's world rotation ``R`` (3x3, rest frame -> posed frame) is built
from two directions: its bone axis, which must point exactly at its child
(so forward kinematics with the rig's constant OFFSETs lands on the joints),
and a roll reference that fixes the spin about that axis:

- trunk, neck, head and clavicles: the neighbouring joints' lines (hip line,
  shoulder line, ear line, nose), see :mod:`.bvh_rig`; the hip and shoulder
  lines are held from the frame before while seen nearly end-on (side view,
  :func:`steady_axis`: a line a few centimetres long points anywhere); where the nose is not
  in front of the ears (no depth estimate yet) the head's up axis follows the neck;
- upper arm / forearm: the elbow hinge axis ``upper x fore``, signed to stay
  on the side of the previous frame's axis (an arm passing through straight,
  or read slightly over-straight, bends the other way round: without the sign
  the whole arm would turn by half a turn about itself); while the arm is near
  straight (bend < 10 deg, fully from 30 deg) the axis of the previous frame
  is carried over, so a straight arm never spins;
- thigh / shin: the knee hinge axis, blended towards the pelvis' lateral
  axis (swung onto the thigh) while the knee is near straight; a hinge axis
  that disagrees with the pelvis (hyperextension) is flipped;
- every roll reference then turns at most ``MAX_TURN_DEG`` a frame about its
  bone (:func:`limit_turn`; the forearm and the shin roll on the hinge axis made
  normal to themselves, :func:`steady_frame`), so no bone spins by half a turn
  between two frames while barely moving (measured by :func:`twist_flips`).

Local rotations are ``R_parent^T R``; Euler angles (intrinsic, in the channel
order) are unwrapped frame to frame: of the two equivalent triples and
every 360-degree shift the one nearest the previous frame is kept.

Shapes: T frames, J rig joints; positions (T, 3) metres in BVH space.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.spatial.transform import Rotation

from posetracker.export.bvh_rig import HUMANOID, SPINE_FRACTION, Rig

X, Y, Z = np.eye(3)
BEND_LO, BEND_HI = np.radians(10.0), np.radians(30.0)
MAX_TURN_DEG = 30.0  # most a roll reference (hinge axis, hip / shoulder line) turns between two frames
FACE_DEPTH_LO, FACE_DEPTH_HI = 0.02, 0.05  # metres the nose must be in front of the ears to orient the head
#: the nose tip sits this far below the head's forward axis (about 3 cm down for 10 cm forward of the ears)
NOSE_PITCH = np.arctan2(0.03, 0.10)


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 1e-12, n, np.nan)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=-1)


def frame_from(aim: np.ndarray, roll: np.ndarray, a0: np.ndarray, n0: np.ndarray) -> np.ndarray:
    """(T, 3, 3) rotations taking rest axis ``a0`` onto ``aim`` (T, 3) and ``n0`` towards ``roll`` (T, 3).

    ``a0`` and ``n0`` are orthogonal unit vectors; ``roll`` is made orthogonal
    to ``aim``. Where roll is parallel to aim the previous frame's roll is used.
    """
    u = _unit(aim)
    v = roll - _dot(roll, u)[:, None] * u
    bad = ~(np.linalg.norm(v, axis=-1) > 1e-9)
    for t in np.flatnonzero(bad):  # degenerate roll: keep the previous frame's (or any normal)
        prev = v[t - 1] if t > 0 else np.cross(u[t], X if abs(u[t, 0]) < 0.9 else Y)
        v[t] = prev - np.dot(prev, u[t]) * u[t]
    v = _unit(v)
    data = np.stack([u, v, np.cross(u, v)], axis=-1)  # columns
    rest = np.stack([a0, n0, np.cross(a0, n0)], axis=-1)
    return data @ rest.T


def steady_frame(aim: np.ndarray, roll: np.ndarray, a0: np.ndarray, n0: np.ndarray) -> np.ndarray:
    """:func:`frame_from` with the roll (made normal to the aim) turning at most ``MAX_TURN_DEG`` a frame:
    where the roll reference nearly lines up with the bone (a clavicle pointing forward in a side view),
    its direction is noise, and the bone must not spin on it."""
    u = _unit(aim)
    v = _unit(roll - _dot(roll, u)[:, None] * u)
    return frame_from(aim, limit_turn(v, u), a0, n0)


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


def hinge_axis_hold(d1: np.ndarray, d2: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """(T, 3) hinge axis of a two-segment limb, held from frame to frame while the limb is straight.

    d1, d2: (T, 3) unit directions of the upper and lower segment; ref: (T, 3)
    fallback axis for the first frame (and where nothing else is defined).
    """
    nb, w = _bend_weight(d1, d2)
    out = np.empty_like(d1)
    prev = ref[0]
    for t in range(d1.shape[0]):
        p = prev - np.dot(prev, d1[t]) * d1[t]
        if not np.linalg.norm(p) > 1e-6:
            p = ref[t] - np.dot(ref[t], d1[t]) * d1[t]
        p = p / np.linalg.norm(p)
        if w[t] > 0 and np.all(np.isfinite(nb[t])):
            b = nb[t] if np.dot(nb[t], p) >= 0 else -nb[t]  # the side nearer the last axis: no half turn
            n = w[t] * b + (1 - w[t]) * p
            nn = np.linalg.norm(n)
            n = n / nn if nn > 0.25 else (b if w[t] >= 0.5 else p)
        else:
            n = p
        out[t] = prev = n
    return out


def hinge_axis_ref(d1: np.ndarray, d2: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """(T, 3) hinge axis blended towards ``ref`` (T, 3) while straight; flipped to agree with ref
    (hyperextension); then turned at most ``MAX_TURN_DEG`` a frame (:func:`limit_turn`), so a hinge that
    swings past normal to the pelvis (a sideways misread of the knee) never turns the leg by half a turn."""
    nb, w = _bend_weight(d1, d2)
    nb = np.where(np.isfinite(nb), nb, ref)
    nb = np.where((_dot(nb, ref) < 0)[:, None], -nb, nb)
    return limit_turn(_unit(w[:, None] * nb + (1 - w[:, None]) * ref), d1)


def limit_turn(axes: np.ndarray, about: np.ndarray, max_deg: float | None = None) -> np.ndarray:
    """(T, 3) unit axes whose turn about the bone ``about`` (T, 3) is at most ``max_deg`` (default
    ``MAX_TURN_DEG``) from one frame to the next, towards each frame's own axis.

    The previous frame's axis is first carried along the bone's own swing (the smallest rotation taking
    the bone's last direction onto its new one), so only the turn about the bone (its roll) is limited; a
    half turn goes round the bone.
    """
    limit = np.radians(MAX_TURN_DEG if max_deg is None else max_deg)
    bone = _unit(about)
    out = np.array(axes, np.float64, copy=True)
    for t in range(1, len(out)):
        prev, target = out[t - 1], out[t]
        if not np.all(np.isfinite(prev)):
            continue
        if np.all(np.isfinite(bone[t - 1])) and np.all(np.isfinite(bone[t])):
            prev = swing(bone[t - 1][None], bone[t][None], prev[None])[0]
        if not np.all(np.isfinite(target)):
            out[t] = prev
            continue
        ang = np.arccos(np.clip(np.dot(prev, target), -1.0, 1.0))
        if ang <= limit:
            continue
        k = np.cross(prev, target)
        if np.linalg.norm(k) < 1e-6:  # opposite: turn about the bone
            k = bone[t] if np.all(np.isfinite(bone[t])) else np.cross(prev, X if abs(prev[0]) < 0.9 else Y)
        k = k / np.linalg.norm(k)
        out[t] = prev * np.cos(limit) + np.cross(k, prev) * np.sin(limit) + k * np.dot(k, prev) * (1 - np.cos(limit))
    return out


def steady_axis(v: np.ndarray, lo: float = 0.25, hi: float = 0.6) -> np.ndarray:
    """(T, 3) unit direction of ``v`` (T, 3), a line between two joints (hips, shoulders), held from the
    previous frame while the line is short against its median length (seen end-on, side view: its
    direction is then noise; fully the line's own from ``hi`` of the median, fully held below ``lo``)."""
    length = np.linalg.norm(v, axis=-1)
    ref = np.nanmedian(length) if np.isfinite(length).any() else 0.0
    s = np.clip((length / max(ref, 1e-9) - lo) / (hi - lo), 0.0, 1.0)
    w = s * s * (3 - 2 * s)
    u = _unit(v)
    out = np.empty_like(v)
    prev = None
    for t in range(v.shape[0]):
        if prev is None or not np.all(np.isfinite(u[t])):
            n = u[t] if prev is None else prev
        else:
            n = w[t] * u[t] + (1 - w[t]) * prev
            nn = np.linalg.norm(n)
            n = n / nn if nn > 1e-6 else prev
        out[t] = prev = n
    return out


def humanoid_rotations(pts: dict[str, np.ndarray]) -> np.ndarray:
    """(T, J, 3, 3) world rotations of the HUMANOID joints from named (T, 3) points (metres, all finite).

    The head's up axis comes from the face (forward = nose - mid-ears, taken
    to point NOSE_PITCH = 17 deg below the head's forward axis) when
    the nose is at least 5 cm in front of the ears, and follows the neck when
    it is less than 2 cm (no usable depth, e.g. before the depth head is
    trained), blended in between.
    """
    trunk = pts["neck"] - pts["mid_hip"]
    hip_x = limit_turn(steady_axis(pts["left_hip"] - pts["right_hip"]), _unit(trunk), 2 * MAX_TURN_DEG)
    sh_x = limit_turn(steady_axis(pts["left_shoulder"] - pts["right_shoulder"]), _unit(trunk), 2 * MAX_TURN_DEG)
    ear_x = pts["left_ear"] - pts["right_ear"]
    R: dict[str, np.ndarray] = {}
    R["Hips"] = frame_from(hip_x, trunk, X, Y)
    # the Spine sits SPINE_FRACTION up the Hips' +Y, which is the trunk made square to the hip line: aim it
    # from there at the chest point, so the Chest (and all above) land where the keypoints put them
    spine_at = pts["mid_hip"] + SPINE_FRACTION * np.linalg.norm(trunk, axis=-1, keepdims=True) * R["Hips"][:, :, 1]
    R["Spine"] = steady_frame(pts["chest"] - spine_at, _unit(hip_x) + _unit(sh_x), Y, X)
    R["Chest"] = steady_frame(trunk, sh_x, Y, X)
    R["Neck"] = steady_frame(pts["head"] - pts["neck"], ear_x, Y, X)
    neck_up = _unit(pts["head"] - pts["neck"])
    face = pts["nose"] - pts["head"]
    depth = _dot(face, _unit(np.cross(ear_x, neck_up)))  # how far the nose is in front of the ears
    w = np.clip((np.nan_to_num(depth) - FACE_DEPTH_LO) / (FACE_DEPTH_HI - FACE_DEPTH_LO), 0.0, 1.0)[:, None]
    face_up = _unit(np.cross(face, ear_x))  # (nose direction) x left: up, tilted forward by the nose pitch
    face_dir = _unit(np.cross(ear_x, face_up))
    up_from_face = np.cos(NOSE_PITCH) * face_up - np.sin(NOSE_PITCH) * face_dir
    up = w * np.nan_to_num(up_from_face) + (1 - w) * neck_up
    R["Head"] = steady_frame(ear_x, up, X, Y)
    chest_z = R["Chest"][:, :, 2]
    for side, sgn in (("Left", 1.0), ("Right", -1.0)):
        low = side.lower()
        R[f"{side}Shoulder"] = steady_frame(pts[f"{low}_shoulder"] - pts["neck"], chest_z, sgn * X, Z)
        # arm: rest along +-X, the forearm bends towards +Z -> hinge n0 = a0 x Z
        a0 = sgn * X
        n0 = np.cross(a0, Z)
        d1 = _unit(pts[f"{low}_elbow"] - pts[f"{low}_shoulder"])
        d2 = _unit(pts[f"{low}_wrist"] - pts[f"{low}_elbow"])
        rc = R["Chest"]
        ref = swing(rc @ a0, d1, rc @ n0)
        n = limit_turn(hinge_axis_hold(d1, d2, ref), d1)
        R[f"{side}Arm"] = frame_from(d1, n, a0, n0)
        # the hinge axis is held normal to the upper arm; the forearm rolls on it made normal to the forearm,
        # itself turning at most MAX_TURN_DEG a frame: where the held axis nearly lines up with the forearm (a
        # quick bend from straight), its normal part is noise, and the forearm must not spin on it
        R[f"{side}ForeArm"] = steady_frame(d2, n, a0, n0)
        R[f"{side}Hand"] = R[f"{side}ForeArm"]
        # leg: rest along -Y, the shin bends towards -Z -> hinge n0 = X
        a0, n0 = -Y, X
        d1 = _unit(pts[f"{low}_knee"] - pts[f"{low}_hip"])
        d2 = _unit(pts[f"{low}_ankle"] - pts[f"{low}_knee"])
        rh = R["Hips"]
        n = hinge_axis_ref(d1, d2, _unit(swing(rh @ a0, d1, rh @ n0)))
        R[f"{side}UpLeg"] = frame_from(d1, n, a0, n0)
        R[f"{side}Leg"] = steady_frame(d2, n, a0, n0)  # as the forearm
        R[f"{side}Foot"] = R[f"{side}Leg"]
    return np.stack([R[name] for name, *_ in HUMANOID], axis=1)


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
