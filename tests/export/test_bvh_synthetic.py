"""Synthetic 3-D human18 motion with constant bone lengths (shared by the BVH and angle tests).

The generator is written independently of the exporter: its own forward
kinematics in a Y-up body space (scipy rotations), then camera space
(x right, y down, z forward, the person ~3 m in front of the camera).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from posetracker.export.bvh_rig import BVH_FROM_CAMERA
from posetracker.skeletons import load_skeleton
from posetracker.tracking.bones import bone_lengths
from posetracker.types import PoseFrame, PoseSequence

#: bone lengths of the synthetic person (metres)
BODY = dict(hip=0.10, trunk=0.50, shoulder=0.18, neck=0.20, upper_arm=0.28, forearm=0.26, thigh=0.42, shin=0.41,
            ear=0.075)
FACE = {"nose": (0.0, -0.03, 0.10), "left_eye": (0.035, 0.0, 0.08), "right_eye": (-0.035, 0.0, 0.08),
        "left_ear": (0.075, 0.0, 0.0), "right_ear": (-0.075, 0.0, 0.0)}


def _rot(seq: str, angles: np.ndarray) -> np.ndarray:
    return Rotation.from_euler(seq, angles, degrees=True).as_matrix()


def _wave(rng: np.random.Generator, t: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """A smooth random signal in [lo, hi] (sum of two sines)."""
    f = rng.uniform(0.1, 0.6, 2)
    ph = rng.uniform(0, 2 * np.pi, 2)
    s = 0.6 * np.sin(2 * np.pi * f[0] * t + ph[0]) + 0.4 * np.sin(2 * np.pi * f[1] * t + ph[1])
    return lo + (hi - lo) * (s + 1) / 2


def synthetic_world(n: int = 90, fps: float = 30.0, seed: int = 0) -> dict[str, np.ndarray]:
    """{joint name: (n, 3)} BVH-space (Y up) positions in metres of one moving person (+ "head_up" axis)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / fps
    w = lambda lo, hi: _wave(rng, t, lo, hi)  # noqa: E731
    b = BODY
    root = np.stack([w(-0.5, 0.5), 0.95 + w(-0.05, 0.02), -3.0 + w(-0.4, 0.4)], axis=1)
    r_pelvis = _rot("YXZ", np.stack([w(-60, 60), w(-10, 15), w(-8, 8)], 1))
    r_trunk = r_pelvis @ _rot("XZY", np.stack([w(-5, 35), w(-15, 15), w(-25, 25)], 1))  # flexion, lateral, twist
    p = {"mid_hip": root}
    p["left_hip"] = root + r_pelvis @ np.array([b["hip"], 0, 0])
    p["right_hip"] = root - r_pelvis @ np.array([b["hip"], 0, 0])
    neck = root + r_trunk @ np.array([0, b["trunk"], 0])
    r_head = r_trunk @ _rot("YXZ", np.stack([w(-50, 50), w(-25, 25), w(-15, 15)], 1))
    head = neck + r_head @ np.array([0, b["neck"], 0])
    for name, off in FACE.items():
        p[name] = head + r_head @ np.array(off)
    # shoulder girdle: one rigid line through the neck, tilted and turned against the trunk
    r_clav = r_trunk @ _rot("ZY", np.stack([w(-12, 12), w(-10, 10)], 1))
    for side, s in (("left", 1.0), ("right", -1.0)):
        sh = neck + r_clav @ np.array([s * b["shoulder"], 0, 0])
        # upper arm: from the T-pose, down (about Z) by 20..85 deg, forward swing and twist
        r_ua = r_trunk @ _rot("ZYX", np.stack([-s * w(20, 85), -s * w(-30, 60), s * w(-40, 40)], 1))
        el = sh + r_ua @ np.array([s * b["upper_arm"], 0, 0])
        r_fa = r_ua @ _rot("Y", -s * w(5, 120)[:, None])  # elbow hinge: forearm towards +Z at rest
        wr = el + r_fa @ np.array([s * b["forearm"], 0, 0])
        r_th = r_pelvis @ _rot("XZY", np.stack([-w(-20, 70), s * w(-5, 25), s * w(-20, 20)], 1))
        hip = p[f"{side}_hip"]
        kn = hip + r_th @ np.array([0, -b["thigh"], 0])
        r_sh = r_th @ _rot("X", w(0, 100)[:, None])  # knee: shin swings back (-Z)
        an = kn + r_sh @ np.array([0, -b["shin"], 0])
        p.update({f"{side}_shoulder": sh, f"{side}_elbow": el, f"{side}_wrist": wr,
                  f"{side}_knee": kn, f"{side}_ankle": an})
    p["neck"], p["head"] = neck, head
    p["head_up"] = r_head @ np.array([0.0, 1.0, 0.0])  # not a joint: the head's true up axis
    return p


def make_sequence(n: int = 90, fps: float = 30.0, seed: int = 0, people: int = 1) -> PoseSequence:
    """A human18 PoseSequence (world in camera space) of ``people`` synthetic persons."""
    spec = load_skeleton("human18")
    k = spec.num_joints
    worlds = []
    for i in range(people):
        p = synthetic_world(n, fps, seed + i)
        bvh = np.zeros((n, k, 3))
        for j, name in enumerate(spec.joint_names):
            if name != "centre":
                bvh[:, j] = p[name] + np.array([1.2 * i, 0, 0])
        labelled = [j for j in range(k) if spec.joint_names[j] != "centre"]
        bvh[:, spec.index("centre")] = 0.5 * (bvh[:, labelled].min(1) + bvh[:, labelled].max(1))
        worlds.append(bvh @ BVH_FROM_CAMERA.T)  # BVH space -> camera space (the map is its own inverse)
    frames = []
    for f in range(n):
        world = np.stack([w[f] for w in worlds]).astype(np.float32)
        kp = np.empty_like(world)
        kp[..., 0] = 1000 * world[..., 0] / world[..., 2] + 640
        kp[..., 1] = 1000 * world[..., 1] / world[..., 2] + 360
        kp[..., 2] = world[..., 2]
        frames.append(PoseFrame(index=f, timestamp=f / fps, keypoints=kp, confidence=np.full((people, k), 0.9, np.float32),
                                scores=np.full(people, 0.9, np.float32), track_ids=np.arange(people, dtype=np.int64),
                                image_size=(1280, 720), world=world))
    return PoseSequence(frames, fps=fps, skeleton=spec, metadata={"source": "synthetic"})


def test_synthetic_bones_are_rigid():
    seq = make_sequence(60)
    spec = seq.skeleton
    world = np.stack([f.world[0] for f in seq.frames]).astype(np.float64)
    lengths = bone_lengths(world, spec)
    anatomical = [e for e, (a, c) in enumerate(spec.edges.tolist()) if spec.index("centre") not in (a, c)]
    assert np.ptp(lengths[:, anatomical], axis=0).max() < 1e-5
    # the person faces the camera on average: left shoulder at larger image x than the right
    assert np.mean(world[:, spec.index("left_shoulder"), 0] > world[:, spec.index("right_shoulder"), 0]) > 0.5
