"""BVH rigs: the joint hierarchy, its rest pose and the points that drive it.

Coordinates. Camera space (x right, y down, z forward, metres) becomes BVH
space by ``X = x, Y = -y, Z = -z`` (a 180-degree turn about x): Y up,
right-handed, the camera at the origin looking down -Z, so a person facing
the camera faces +Z, the usual BVH "front". Rest orientations are all
identity: every OFFSET is given in the parent's frame, which at rest is
aligned with the world axes.

Humanoid rig (human skeletons with the COCO-17 joints; human18)
-----------------------------------------------------------------

Rest pose: a T-pose standing on Y = 0 and facing +Z: the character's left
is +X, arms straight out along +-X (palms down), legs straight down (-Y),
feet pointing forward (+Z). Bone lengths are per-person medians over the
clip (see :func:`humanoid_rig`), so the rig is rigid.

===============  =============  ===========================================  ===================
BVH joint        parent         position (computed from keypoints)           rest OFFSET dir
===============  =============  ===========================================  ===================
Hips (root)      -              mid_hip = (left_hip + right_hip) / 2         (0, legs, 0)
Spine            Hips           mid_hip + 1/10 (neck - mid_hip), see below   +Y
Chest            Spine          mid_hip + 1/2 (neck - mid_hip)               +Y
Neck             Chest          neck = (left_shoulder + right_shoulder) / 2  +Y
Head             Neck           head = (left_ear + right_ear) / 2            +Y, End Site +Y
LeftShoulder     Chest          neck (clavicle root)                         +Y
LeftArm          LeftShoulder   left_shoulder                                +X
LeftForeArm      LeftArm        left_elbow                                   +X
LeftHand         LeftForeArm    left_wrist                                   +X, End Site +X
LeftUpLeg        Hips           left_hip                                     +X
LeftLeg          LeftUpLeg      left_knee                                    -Y
LeftFoot         LeftLeg        left_ankle                                   -Y, End Site +Z
Right*           (mirror)       right_* keypoints                            X mirrored
===============  =============  ===========================================  ===================

The Spine joint (no keypoint of its own) sits a tenth up the trunk along the
Hips' +Y, which is the trunk made square to the hip line, so the root bone
has a length (at the hips Blender's importer gives it none); the Spine aims
from there at the chest point, so the joints above it stay on their
keypoints up to a small error (2 mm in the round-trip test).

Orientation of each joint (its bone axis aims at its child; the roll is
fixed by neighbouring joints, see :mod:`.bvh_solve`): Hips: +X along the
hip line, +Y towards the neck. Spine / Chest: +Y along the trunk, +X along
the hip+shoulder / shoulder line. Neck: +Y towards the head, +X along the ear
line. Head: +X along the ear line, +Z towards the nose raised by 17 deg (the
nose tip sits below the head's forward axis); +Y along the neck where the nose
is not in front of the ears, i.e. without real depth. Clavicles: +-X to the
shoulder, +Z as the chest's. Arms and legs: the bone axis at the child, roll
from the elbow / knee bend plane (hinge axis), which is held through straight
arms and falls back to the pelvis for straight legs. Hands and feet have no
keypoints of their own: they follow the forearm / lower leg.

Generic rig (any other skeleton: animals)
-----------------------------------------
The skeleton tree itself, rooted at its root joint; rest = the bone
directions of the first complete frame with the per-bone median lengths.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from posetracker.skeletons import SkeletonSpec

#: camera space (x right, y down, z forward) -> BVH space (Y up, right-handed)
BVH_FROM_CAMERA = np.diag([1.0, -1.0, -1.0])

#: fractions of the trunk (mid_hip -> neck) at which the Spine and Chest joints sit (a Spine at the hips
#: would give the root Hips bone zero length: Blender drops it)
SPINE_FRACTION, CHEST_FRACTION = 0.1, 0.5
#: End Site lengths as fractions of a measured bone
HAND_FRACTION, FOOT_FRACTION, HEAD_FRACTION = 0.4, 0.45, 1.0

X, Y, Z = np.eye(3)

#: (BVH joint, parent, position point, rest OFFSET direction); order = BVH file order (depth first)
HUMANOID: tuple[tuple[str, str | None, str, tuple[float, float, float]], ...] = (
    ("Hips", None, "mid_hip", (0, 1, 0)),
    ("Spine", "Hips", "spine", (0, 1, 0)),
    ("Chest", "Spine", "chest", (0, 1, 0)),
    ("Neck", "Chest", "neck", (0, 1, 0)),
    ("Head", "Neck", "head", (0, 1, 0)),
    ("LeftShoulder", "Chest", "neck", (0, 1, 0)),
    ("LeftArm", "LeftShoulder", "left_shoulder", (1, 0, 0)),
    ("LeftForeArm", "LeftArm", "left_elbow", (1, 0, 0)),
    ("LeftHand", "LeftForeArm", "left_wrist", (1, 0, 0)),
    ("RightShoulder", "Chest", "neck", (0, 1, 0)),
    ("RightArm", "RightShoulder", "right_shoulder", (-1, 0, 0)),
    ("RightForeArm", "RightArm", "right_elbow", (-1, 0, 0)),
    ("RightHand", "RightForeArm", "right_wrist", (-1, 0, 0)),
    ("LeftUpLeg", "Hips", "left_hip", (1, 0, 0)),
    ("LeftLeg", "LeftUpLeg", "left_knee", (0, -1, 0)),
    ("LeftFoot", "LeftLeg", "left_ankle", (0, -1, 0)),
    ("RightUpLeg", "Hips", "right_hip", (-1, 0, 0)),
    ("RightLeg", "RightUpLeg", "right_knee", (0, -1, 0)),
    ("RightFoot", "RightLeg", "right_ankle", (0, -1, 0)),
)

#: keypoints the humanoid rig needs in every frame it animates
HUMANOID_REQUIRED: tuple[str, ...] = (
    "nose", "left_ear", "right_ear", "left_shoulder", "right_shoulder", "left_elbow", "right_elbow",
    "left_wrist", "right_wrist", "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle",
)


@dataclass
class Rig:
    """A BVH joint tree with its rest pose.

    names:     (J,) BVH joint names, depth-first (BVH file order), root first
    parents:   (J,) parent index, -1 for the root
    offsets:   (J, 3) rest OFFSET of each joint in its parent's frame, metres
               (the root's: its rest position)
    end_sites: {leaf joint index: (3,) End Site offset, metres}
    points:    (J,) name of the point that positions each joint (a keypoint or a virtual point)
    """

    names: list[str]
    parents: list[int]
    offsets: np.ndarray
    end_sites: dict[int, np.ndarray] = field(default_factory=dict)
    points: list[str] = field(default_factory=list)

    @property
    def num_joints(self) -> int:
        return len(self.names)

    def children(self, j: int) -> list[int]:
        return [c for c, p in enumerate(self.parents) if p == j]

    def bone_lengths(self) -> dict[str, float]:
        """{joint: |OFFSET|} in metres for every non-root joint."""
        return {n: float(np.linalg.norm(self.offsets[j])) for j, n in enumerate(self.names) if self.parents[j] >= 0}


def is_humanoid(spec: SkeletonSpec) -> bool:
    """True when the skeleton has every keypoint the humanoid rig needs."""
    return spec.kind == "human" and all(n in spec.joint_names for n in HUMANOID_REQUIRED)


def humanoid_points(pos: np.ndarray, spec: SkeletonSpec) -> dict[str, np.ndarray]:
    """Named (T, 3) points in BVH space from keypoints ``pos`` (T, K, 3), virtual ones included."""
    pts = {n: pos[:, i] for i, n in enumerate(spec.joint_names)}
    pts["mid_hip"] = 0.5 * (pts["left_hip"] + pts["right_hip"])
    pts["neck"] = 0.5 * (pts["left_shoulder"] + pts["right_shoulder"])
    pts["head"] = 0.5 * (pts["left_ear"] + pts["right_ear"])
    pts["spine"] = pts["mid_hip"] + SPINE_FRACTION * (pts["neck"] - pts["mid_hip"])
    pts["chest"] = pts["mid_hip"] + CHEST_FRACTION * (pts["neck"] - pts["mid_hip"])
    return pts


def _median_length(a: np.ndarray, b: np.ndarray) -> float:
    d = np.linalg.norm(b - a, axis=-1)
    d = d[np.isfinite(d)]
    return float(np.median(d)) if d.size else float("nan")


def humanoid_rig(pts: dict[str, np.ndarray], symmetric: bool = False) -> Rig:
    """The humanoid rig with per-bone median lengths measured on ``pts`` (valid frames only).

    pts: named (T, 3) points from :func:`humanoid_points`, metres, nan where unknown.
    symmetric: give left and right bones the mean of their two lengths.
    """
    names = [r[0] for r in HUMANOID]
    index = {n: i for i, n in enumerate(names)}
    parents = [-1 if r[1] is None else index[r[1]] for r in HUMANOID]
    trunk = _median_length(pts["mid_hip"], pts["neck"])
    lengths = np.zeros(len(names))
    for j, (name, parent, point, _) in enumerate(HUMANOID):
        if parent is None:
            continue
        if name == "Spine":
            lengths[j] = SPINE_FRACTION * trunk
        elif name == "Chest":
            lengths[j] = (CHEST_FRACTION - SPINE_FRACTION) * trunk
        elif point == "neck":  # Neck and clavicle roots: the rest of the trunk
            lengths[j] = (1 - CHEST_FRACTION) * trunk
        else:
            lengths[j] = _median_length(pts[HUMANOID[parents[j]][2]], pts[point])
    if symmetric:
        for j, n in enumerate(names):
            if n.startswith("Left"):
                r = index["Right" + n[4:]]
                lengths[j] = lengths[r] = 0.5 * (lengths[j] + lengths[r])
    if not np.all(np.isfinite(lengths)) or np.any(lengths[1:] <= 1e-6):
        bad = [n for j, n in enumerate(names) if j > 0 and not lengths[j] > 1e-6]
        raise ValueError(f"cannot measure the bones of {bad}")
    offsets = np.array([r[3] for r in HUMANOID], np.float64) * lengths[:, None]
    legs = 0.5 * (lengths[index["LeftLeg"]] + lengths[index["LeftFoot"]] + lengths[index["RightLeg"]] + lengths[index["RightFoot"]])
    offsets[0] = (0.0, legs, 0.0)  # rest: standing on Y = 0 (ankles on the floor)
    ear_width = _median_length(pts["left_ear"], pts["right_ear"])
    end_sites = {
        index["Head"]: Y * HEAD_FRACTION * (ear_width if np.isfinite(ear_width) else 0.15),
        index["LeftHand"]: X * HAND_FRACTION * lengths[index["LeftHand"]],
        index["RightHand"]: -X * HAND_FRACTION * lengths[index["RightHand"]],
        index["LeftFoot"]: Z * FOOT_FRACTION * lengths[index["LeftFoot"]],
        index["RightFoot"]: Z * FOOT_FRACTION * lengths[index["RightFoot"]],
    }
    return Rig(names, parents, offsets, end_sites, [r[2] for r in HUMANOID])


def _dfs(spec: SkeletonSpec) -> list[int]:
    order: list[int] = []

    def visit(j: int) -> None:
        order.append(j)
        for c in spec.children(j):
            visit(c)

    visit(spec.root)
    return order


def bvh_name(name: str) -> str:
    """A joint name safe for BVH (no whitespace, no braces)."""
    out = "".join(c if (c.isalnum() or c in "_-.:") else "_" for c in name)
    return out or "joint"


def skeleton_rig(pos: np.ndarray, valid: np.ndarray, spec: SkeletonSpec) -> Rig:
    """The skeleton's own tree as a rig: rest = first complete frame's directions, median lengths.

    pos: (T, K, 3) BVH-space metres; valid: (T,) frames where every joint is known.
    """
    order = _dfs(spec)
    where = {k: j for j, k in enumerate(order)}
    parents = [-1 if spec.parents[k] < 0 else where[spec.parents[k]] for k in order]
    first = int(np.flatnonzero(valid)[0])
    offsets = np.zeros((len(order), 3))
    end_sites: dict[int, np.ndarray] = {}
    for j, k in enumerate(order):
        p = spec.parents[k]
        if p < 0:
            offsets[j] = pos[first, k]
            continue
        d = pos[first, k] - pos[first, p]
        n = np.linalg.norm(d)
        u = d / n if n > 1e-9 else Y
        offsets[j] = u * _median_length(pos[valid][:, p], pos[valid][:, k])
    for j in range(len(order)):
        if not any(p == j for p in parents):
            parent_len = np.linalg.norm(offsets[j]) if parents[j] >= 0 else 0.0
            direction = offsets[j] / parent_len if parent_len > 1e-9 else Y
            end_sites[j] = direction * max(0.25 * parent_len, 1e-3)
    names = [bvh_name(spec.joint_names[k]) for k in order]
    seen: set[str] = set()
    for j, n in enumerate(names):  # duplicate names break Blender's importer
        base, i = n, 1
        while n in seen:
            n, i = f"{base}_{i}", i + 1
        names[j] = n
        seen.add(n)
    return Rig(names, parents, offsets, end_sites, [spec.joint_names[k] for k in order])
