"""The humanoid rig's legs reach the motion's ankles from the rig's own hips.

The rotation solve (:mod:`.bvh_solve`) aims each thigh and shin along the world's hip -> knee -> ankle, but
the rig's hip joints hang off its root (mid-hip) by its Hips rotation, which is solved smooth over the take
with constant OFFSETs: they sit up to 5-6 cm from the world's hips, and a leg aimed only along the world's
directions carries that error to the ankle. The session holds each stance ankle still on the floor
(:mod:`posetracker.motion.feet`); so that the rig stands where the motion stands, each leg is aimed from the
rig's hip at the world's ankle while it stands (the stance phases the session held, ``metadata["feet"]`` read by
:func:`posetracker.analysis.held_ground.held_ground`, eased in and out over ``REACH_BLEND_S``: a phase found only by
fitting again at export would reach for an ankle the motion does not hold; a swinging leg keeps the solve's, which
does not follow a reading that jumps): the thigh and shin (constant lengths) meet the ankle wherever it is within
reach, the knee on the side the solved leg bent to (the thigh's roll is kept); out of reach, the straightened leg
points at it. Only the thigh and shin turn; the trunk and the root stay.

Shapes: T frames, J rig joints; positions (T, 3) metres in BVH space.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import distance_transform_edt

from posetracker.analysis.stance import ContactPhase
from posetracker.export.bvh_rig import Rig
from posetracker.export.bvh_solve import frame_from, swing

X, Y = np.eye(3)[0], np.eye(3)[1]
#: seconds a leg eases into and out of reaching the ankle either side of a stance phase
REACH_BLEND_S = 0.1
#: the most the knee moves per metre the leg's span changes to reach the ankle (a straight knee: see reach_ankles)
KNEE_PER_SPAN = 10.0
#: how much a leg's forward (about the thigh's knee axis) weighs against its bend's side (sin of the bend)
STRAIGHT = 1e-5


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(n, 1e-12)


def _knee(hip: np.ndarray, u: np.ndarray, d: np.ndarray, v: np.ndarray, l1: float, l2: float) -> np.ndarray:
    """(T, 3) the knee of a thigh ``l1`` and shin ``l2`` from ``hip`` (T, 3) to ``hip + d u`` (d (T,), u (T, 3)
    unit), bending towards ``v`` (T, 3, unit, normal to u)."""
    d = np.clip(d, abs(l1 - l2) + 1e-6, (l1 + l2) * (1 - 1e-9))
    cos_a = np.clip((l1 * l1 + d * d - l2 * l2) / (2 * l1 * d), -1.0, 1.0)
    return hip + l1 * (cos_a[:, None] * u + np.sqrt(1 - cos_a * cos_a)[:, None] * v)


def stance_weight(phases: list[ContactPhase], slots: np.ndarray, num_slots: int, blend: float) -> np.ndarray:
    """(N, 2) in [0, 1]: 1 on the motion-line slots of each foot's stance ``phases`` (track frames; ``slots``
    (T,) each track frame's slot of ``num_slots``), easing to 0 over ``blend`` slots either side (smoothstep)."""
    inside = np.zeros((num_slots, 2), bool)
    for p in phases:
        inside[slots[p.start:p.stop], p.foot] = True
    out = np.zeros((num_slots, 2))
    for f in range(2):
        if inside[:, f].any():
            dist = distance_transform_edt(~inside[:, f])
            s = np.clip(1.0 - dist / max(blend, 1.0), 0.0, 1.0)
            out[:, f] = s * s * (3 - 2 * s)
    return out


def reach_ankles(world: np.ndarray, root: np.ndarray, ankles: dict[str, tuple[np.ndarray, np.ndarray]],
                 rig: Rig) -> np.ndarray:
    """(T, J, 3, 3) ``world`` with each UpLeg and Leg turned so the rig's ankle (its Foot joint) lands on the
    world's ankle, as far as its weight says: ``ankles[side]`` = (ankle (T, 3), weight (T,) in [0, 1]; side
    "Left" / "Right"; 1 while it stands, :func:`stance_weight`: the swinging leg keeps the solve's, which does
    not follow a reading that jumps), from the hip the rig puts at ``root`` (T, 3, the Hips position) + Hips
    rotation @ UpLeg OFFSET.

    The solved leg (thigh and shin as the rotation solve aimed them, the rig's lengths) is turned about the rig's
    hip to point at the ankle, then bent in its own plane (the knee stays on the side it bent to; a straight leg
    bends forward about the thigh's hinge) until it spans the distance; its span changes by at least
    1 / ``KNEE_PER_SPAN`` of the distance its knee moves (near a straight knee a span closer by micrometres would
    move the knee by tenths of a millimetre: the ankle then rests within that residue of the target). Where the rig's
    hip is the world's and the world's bones have the rig's lengths, nothing moves. The Foot keeps the shin's
    rotation (level it afterwards)."""
    names = rig.names
    out = world.copy()
    hips = world[:, names.index("Hips")]
    for side, (ankle, weight) in ankles.items():
        up, leg, foot = (names.index(f"{side}{b}") for b in ("UpLeg", "Leg", "Foot"))
        l1, l2 = float(np.linalg.norm(rig.offsets[leg])), float(np.linalg.norm(rig.offsets[foot]))
        hip = root + hips @ rig.offsets[up]
        thigh_s = _unit(world[:, up] @ _unit(rig.offsets[leg]))
        reach = l1 * thigh_s + l2 * _unit(world[:, leg] @ _unit(rig.offsets[foot]))  # solved hip -> ankle
        span = np.linalg.norm(reach, axis=-1)
        to = reach + weight[:, None] * (ankle - hip - reach)
        d_t = np.linalg.norm(to, axis=-1)
        u = _unit(to)
        side_s = swing(_unit(reach), u, thigh_s)  # the solved thigh, the leg turned to point at the ankle
        side_s = side_s - np.sum(side_s * u, axis=-1, keepdims=True) * u
        forward = np.cross(u, world[:, up] @ X)  # a straight leg: forward about the thigh's knee axis
        straight = np.linalg.norm(forward, axis=-1) < 1e-9
        if straight.any():
            forward[straight] = np.cross(u[straight], np.where(np.abs(u[straight, :1]) < 0.9, X, Y))
        v = _unit(side_s + STRAIGHT * _unit(forward))
        gain = np.abs(d_t - span)
        move = np.linalg.norm(_knee(hip, u, d_t, v, l1, l2) - _knee(hip, u, span, v, l1, l2), axis=-1)
        t = np.clip(KNEE_PER_SPAN * gain / np.maximum(move, 1e-12), 0.0, 1.0)
        d = np.clip(span + t * (d_t - span), abs(l1 - l2) + 1e-6, (l1 + l2) * (1 - 1e-9))
        knee = _knee(hip, u, d, v, l1, l2)
        thigh = _unit(knee - hip)
        out[:, up] = np.stack([swing(thigh_s, thigh, world[:, up][:, :, c]) for c in range(3)], axis=-1)
        shin = _unit(hip + d[:, None] * u - knee)
        out[:, leg] = frame_from(shin, out[:, up] @ X, -Y, X)
        out[:, foot] = out[:, leg]
    return out
