"""A synthetic 3-D walker (human18) on a floor, seen by a pitched and rolled camera, for the floor and foot-lock tests.

Written independently of the library. Floor frame: X right, Y up, Z towards the camera, metres,
floor at Y = 0. The walker goes along ``heading_deg`` (0: across the image to the right, 90: towards
the camera); each foot stands still from its heel strike to its toe off, then swings one stride on
(smoothstep, a sine of clearance). The ankle joint stands ``ANKLE_FRACTION`` of the walker's stature
above the floor, so the library's ankle-height model fits it. The camera stands at (0, CAMERA_HEIGHT, 0),
looks along -Z, pitched down by ``pitch_deg`` and then turned clockwise (seen from behind) by
``roll_deg``; the image is a pinhole of focal ``FOCAL`` px.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame, PoseSequence

THIGH = SHANK = 0.45
TRUNK, NECK, HIP_HALF, SHOULDER_HALF = 0.50, 0.20, 0.10, 0.18
STATURE = (THIGH + SHANK + TRUNK + NECK) / 0.897  # the ankle-to-ear chain over its share of stature
ANKLE_FRACTION = 0.039
ANKLE = ANKLE_FRACTION * STATURE
HIP_HEIGHT = ANKLE + 0.78
CAMERA_HEIGHT = 1.4
FOCAL = 1000.0
IMAGE = (1280, 720)


@dataclass
class Scene:
    seq: PoseSequence
    camera_axes: np.ndarray  # (3, 3) rows: the camera x, y, z axes in the floor frame (p_cam = axes @ (P - C))
    camera_position: np.ndarray  # (3,) floor frame
    stance: dict[int, np.ndarray]  # person -> (T, 2) bool: left, right ankle standing (truth)
    truth_floor: dict[int, np.ndarray]  # person -> (T, K, 3) the joints in the floor frame


def camera_axes(pitch_deg: float, roll_deg: float) -> np.ndarray:
    """(3, 3) rows: the camera's x (right), y (down), z (forward) axes in the floor frame."""
    p, r = np.radians(pitch_deg), np.radians(roll_deg)
    X, Y, Z = np.eye(3)
    x, y, z = X, -Y * np.cos(p) + Z * np.sin(p), -Z * np.cos(p) - Y * np.sin(p)
    return np.stack([x * np.cos(r) + y * np.sin(r), -x * np.sin(r) + y * np.cos(r), z])


def _foot(t: float, first: float, period: float, stance: float, stride: float, speed: float, ahead: float,
          clearance: float) -> tuple[float, float, bool]:
    """(distance along the path, height above the ankle's standing height, standing) of a foot at time t."""
    k = np.floor((t - first) / period)
    hs = first + k * period
    place = speed * hs + ahead
    s = t - hs
    if s < stance * period:
        return place, 0.0, True
    u = (s - stance * period) / ((1 - stance) * period)
    return place + stride * u * u * (3 - 2 * u), clearance * np.sin(np.pi * u), False


def _knee(hip: np.ndarray, ankle: np.ndarray, forward: np.ndarray) -> np.ndarray:
    d = ankle - hip
    dist = min(np.linalg.norm(d), THIGH + SHANK - 1e-6)
    along = (THIGH ** 2 - SHANK ** 2 + dist ** 2) / (2 * dist)
    up = np.sqrt(max(THIGH ** 2 - along ** 2, 0.0))
    unit = d / np.linalg.norm(d)
    normal = forward - np.dot(forward, unit) * unit
    return hip + along * unit + up * normal / np.linalg.norm(normal)


def walker_points(n: int, fps: float, heading_deg: float, start: np.ndarray, cadence_spm: float = 110.0,
                  step_m: float = 0.6, stance_frac: float = 0.62, phase_s: float = 0.3
                  ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """({joint: (n, 3)} floor-frame positions, (n, 2) bool left / right ankle standing) of one walker."""
    h = np.radians(heading_deg)
    fwd = np.array([np.cos(h), 0.0, -np.sin(h)])
    up = np.array([0.0, 1.0, 0.0])
    left = np.cross(up, fwd)  # the walker's left, on the floor
    period = 120.0 / cadence_spm
    stride = 2 * step_m
    speed = stride / period
    ahead = speed * stance_frac * period / 2
    first = {"right": phase_s, "left": phase_s + period / 2}
    pts = {k: np.zeros((n, 3)) for k in ("nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder",
                                          "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist",
                                          "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle",
                                          "right_ankle")}
    standing = np.zeros((n, 2), bool)
    for i in range(n):
        t = i / fps
        hip = start + fwd * speed * t + up * HIP_HEIGHT
        for f, (side, s) in enumerate((("left", 1.0), ("right", -1.0))):
            along, lift, stand = _foot(t, first[side], period, stance_frac, stride, speed, ahead, 0.10)
            ankle = start + fwd * along + s * left * 0.09 + up * (ANKLE + lift)
            side_hip = hip + s * left * HIP_HALF
            pts[f"{side}_hip"][i] = side_hip
            pts[f"{side}_ankle"][i] = ankle
            pts[f"{side}_knee"][i] = _knee(side_hip, ankle, fwd)
            standing[i, f] = stand
            sh = hip + up * TRUNK + s * left * SHOULDER_HALF
            pts[f"{side}_shoulder"][i] = sh
            pts[f"{side}_elbow"][i] = sh - up * 0.27 + fwd * 0.03
            pts[f"{side}_wrist"][i] = sh - up * 0.52 + fwd * 0.08
            pts[f"{side}_ear"][i] = hip + up * (TRUNK + NECK) + s * left * 0.075
            pts[f"{side}_eye"][i] = hip + up * (TRUNK + NECK + 0.01) + s * left * 0.035 + fwd * 0.08
        pts["nose"][i] = hip + up * (TRUNK + NECK - 0.03) + fwd * 0.10
    return pts, standing


def scene(n: int = 180, fps: float = 30.0, pitch_deg: float = 12.0, roll_deg: float = 4.0,
          walkers: tuple[tuple[float, tuple[float, float], float], ...] = ((35.0, (-1.6, -5.0), 1.0),),
          noise_m: float = 0.0, wobble: float = 0.0, seed: int = 0) -> Scene:
    """Walkers ``(heading_deg, (start X, start Z), depth_scale)`` seen by the camera; a depth scale other than 1
    multiplies that walker's camera-space coordinates (a monocular depth error: same image, wrong distance).
    ``noise_m``: Gaussian noise on every world joint; ``wobble``: the depth scale also swings by this fraction
    at 0.7 Hz (a depth error that changes: the whole body slides along the camera rays, standing feet too)."""
    spec = load_skeleton("human18")
    rng = np.random.default_rng(seed)
    axes = camera_axes(pitch_deg, roll_deg)
    cam = np.array([0.0, CAMERA_HEIGHT, 0.0])
    worlds, stance, truth = [], {}, {}
    for p, (heading, (x0, z0), depth_scale) in enumerate(walkers):
        pts, standing = walker_points(n, fps, heading, np.array([x0, 0.0, z0]), phase_s=0.3 + 0.17 * p)
        k = spec.num_joints
        floor = np.zeros((n, k, 3))
        for j, name in enumerate(spec.joint_names):
            if name != "centre":
                floor[:, j] = pts[name]
        labelled = [j for j in range(k) if spec.joint_names[j] != "centre"]
        floor[:, spec.index("centre")] = 0.5 * (floor[:, labelled].min(1) + floor[:, labelled].max(1))
        swing = 1.0 + wobble * np.sin(2 * np.pi * 0.7 * np.arange(n) / fps + p)
        camera = (floor - cam) @ axes.T * depth_scale * swing[:, None, None]
        camera = camera + rng.normal(0.0, noise_m, camera.shape) if noise_m > 0 else camera
        worlds.append(camera)
        stance[p], truth[p] = standing, floor
    frames = []
    for i in range(n):
        world = np.stack([w[i] for w in worlds])
        kp = np.empty_like(world)
        kp[..., 0] = FOCAL * world[..., 0] / world[..., 2] + IMAGE[0] / 2
        kp[..., 1] = FOCAL * world[..., 1] / world[..., 2] + IMAGE[1] / 2
        kp[..., 2] = world[..., 2]
        m = len(walkers)
        frames.append(PoseFrame(i, i / fps, kp.astype(np.float32), np.full((m, kp.shape[1]), 0.9, np.float32),
                                np.full(m, 0.9, np.float32), np.arange(m, dtype=np.int64), IMAGE,
                                world.astype(np.float32)))
    return Scene(PoseSequence(frames, fps, spec, {"source": "synthetic floor"}), axes, cam, stance, truth)


#: three walkers (heading degrees, start (x, z) m, cadence factor) on the floor, for a camera that turns
TURNING_WALKERS = ((35.0, (-1.6, -5.0), 1.0), (-20.0, (1.0, -6.5), 1.0), (160.0, (2.0, -8.0), 1.0))


def turn_matrix(pitch_deg: float, roll_deg: float = 0.0) -> np.ndarray:
    """(3, 3) a camera's turn about its centre: looking ``pitch_deg`` further down, rolled ``roll_deg``, applied to
    camera-space points (x right, y down: looking further down turns points up)."""
    p, r = np.radians(pitch_deg), np.radians(roll_deg)
    pitch = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(p), np.sin(p)], [0.0, -np.sin(p), np.cos(p)]])
    roll = np.array([[np.cos(r), -np.sin(r), 0.0], [np.sin(r), np.cos(r), 0.0], [0.0, 0.0, 1.0]])
    return roll @ pitch


def turning_camera(pitch_deg: np.ndarray, roll_deg: np.ndarray | None = None, seed: int = 0
                   ) -> tuple[PoseSequence, np.ndarray]:
    """:func:`scene` (camera pitched 12, rolled 2 degrees; the three TURNING_WALKERS, 1 cm noise) seen by a camera
    that also turns about its centre by (T,) pitch and roll degrees a frame -> (sequence, (T, 3) the floor's true up
    normal per frame in that frame's camera)."""
    roll_deg = np.zeros(len(pitch_deg)) if roll_deg is None else roll_deg
    sc = scene(n=len(pitch_deg), pitch_deg=12.0, roll_deg=2.0, walkers=TURNING_WALKERS, noise_m=0.01, seed=seed)
    up = sc.camera_axes @ np.array([0.0, 1.0, 0.0])  # (3,) camera space
    frames, normals = [], []
    for f, p, r in zip(sc.seq.frames, pitch_deg, roll_deg):
        turn = turn_matrix(p, r)
        world = f.world.astype(np.float64) @ turn.T
        kp = np.empty_like(world)
        kp[..., 0] = FOCAL * world[..., 0] / world[..., 2] + IMAGE[0] / 2
        kp[..., 1] = FOCAL * world[..., 1] / world[..., 2] + IMAGE[1] / 2
        kp[..., 2] = world[..., 2]
        frames.append(replace(f, keypoints=kp.astype(np.float32), world=world.astype(np.float32)))
        normals.append(turn @ up)
    return replace(sc.seq, frames=frames), np.array(normals)
