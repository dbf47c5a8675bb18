"""Motion capture (BVH) as human18 3-D points, for the pose prior and the BVH round-trip tests.

Joints are mapped to human18 by name (hips, knees, ankles, shoulders, elbows,
wrists); the face points (nose, eyes, ears), which mocap rigs lack, are laid
rigidly on the source Head joint at frame 0 and carried by its rotation; the
centre is the hip midpoint. Needs ``bvhio`` (and its ``glm``), from the dev extras.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from posetracker.skeletons import SkeletonSpec, load_skeleton

#: human18 joint -> source joint names (first found wins; "mixamorig:" prefixes are dropped)
SOURCE_NAMES = {
    "left_hip": ("LeftUpLeg", "UpperLeg_L", "LeftHip"), "right_hip": ("RightUpLeg", "UpperLeg_R", "RightHip"),
    "left_knee": ("LeftLeg", "LowerLeg_L", "LeftKnee"), "right_knee": ("RightLeg", "LowerLeg_R", "RightKnee"),
    "left_ankle": ("LeftFoot", "Foot_L", "LeftAnkle"), "right_ankle": ("RightFoot", "Foot_R", "RightAnkle"),
    "left_shoulder": ("LeftArm", "UpperArm_L", "LeftShoulder"), "right_shoulder": ("RightArm", "UpperArm_R", "RightShoulder"),
    "left_elbow": ("LeftForeArm", "LowerArm_L", "LeftElbow"), "right_elbow": ("RightForeArm", "LowerArm_R", "RightElbow"),
    "left_wrist": ("LeftHand", "Hand_L", "LeftWrist"), "right_wrist": ("RightHand", "Hand_R", "RightWrist"),
    "head": ("Head",),
}


class MocapError(ValueError):
    """A BVH file lacks a joint the human18 mapping needs."""


def read_positions(path: str | Path, frames: int | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], float]:
    """({joint: (T, 3) world positions, file units}, {joint: (T, 3, 3) world rotations}, frame time s) via bvhio."""
    try:
        import bvhio
        import glm
    except ImportError as exc:
        raise ImportError("reading BVH motion capture needs bvhio: pip install -e '.[dev]'") from exc
    root = bvhio.readAsHierarchy(str(path))
    layout = [j for j, _, _ in root.layout()]
    n = root.getKeyframeRange()[1] + 1 if frames is None else frames
    pos = {j.Name.split(":")[-1]: np.empty((n, 3)) for j in layout}
    rot = {j.Name.split(":")[-1]: np.empty((n, 3, 3)) for j in layout}
    for f in range(n):
        root.loadPose(f)
        for j in layout:
            name = j.Name.split(":")[-1]
            pos[name][f] = list(j.PositionWorld)
            rot[name][f] = np.array(glm.mat3_cast(j.RotationWorld).to_list()).T  # glm is column-major
    frame_time = bvhio.readAsBvh(str(path), loadKeyFrames=False).FrameTime
    return pos, rot, frame_time


def mocap_points(path: str | Path, metres_per_unit: float, frames: int | None = None,
                 spec: SkeletonSpec | None = None) -> tuple[np.ndarray, float]:
    """A BVH file -> (human18 points (T, K, 3) in metres, BVH space (Y up), frame time s)."""
    spec = spec or load_skeleton("human18")
    pos, rot, dt = read_positions(path, frames)
    src = {}
    for joint, names in SOURCE_NAMES.items():
        name = next((n for n in names if n in pos), None)
        if name is None:
            raise MocapError(f"{Path(path).name}: no joint for {joint} (looked for {', '.join(names)})")
        src[joint] = pos[name] * metres_per_unit
    head, r_head = src.pop("head"), rot[next(n for n in SOURCE_NAMES["head"] if n in rot)]
    left = src["left_shoulder"][0] - src["right_shoulder"][0]
    left /= np.linalg.norm(left)
    up = head[0] - 0.5 * (src["left_shoulder"][0] + src["right_shoulder"][0])
    up -= np.dot(up, left) * left
    up /= np.linalg.norm(up)
    fwd = np.cross(left, up)
    face = {"nose": 0.10 * fwd - 0.03 * up, "left_eye": 0.035 * left + 0.08 * fwd, "right_eye": -0.035 * left + 0.08 * fwd,
            "left_ear": 0.075 * left, "right_ear": -0.075 * left}
    for name, off in face.items():  # rigid on the source head: laid out at frame 0, then carried by its rotation
        src[name] = head + r_head @ (r_head[0].T @ off)
    points = np.zeros((len(head), spec.num_joints, 3))
    for name, p in src.items():
        points[:, spec.index(name)] = p
    points[:, spec.root] = 0.5 * (src["left_hip"] + src["right_hip"])
    return points, dt
