"""A synthetic side-view walker (human18) with exactly known heel strikes and toe offs, for the gait tests.

Ground frame: x forward, y up, metres. The body moves at a constant speed; each foot
stands still from its heel strike to its toe off, then swings one stride forward along
a smoothstep path (speed 6u(1 - u) through the swing, zero at both ends). On a treadmill everything moves back at the
walking speed, so the body stays put and the standing foot moves with the belt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame, PoseSequence

THIGH = SHANK = 0.45  # m
PX_PER_M = 110.0
GROUND_Y = 650.0  # px
IMAGE = (1280, 720)


@dataclass
class Walk:
    seq: PoseSequence
    heel_strikes: dict[str, list[int]]  # foot -> first frames in contact
    toe_offs: dict[str, list[int]]  # foot -> first frames in swing
    stride_s: float
    stance_frac: float
    speed_m_s: float


def _foot(t: float, first_hs: float, period: float, stance: float, stride: float, speed: float,
          ahead: float, clearance: float) -> tuple[float, float]:
    """Ground-frame (x, y) of a foot at time t, heel strikes at first_hs + k * period."""
    k = np.floor((t - first_hs) / period)
    hs = first_hs + k * period
    place = speed * hs + ahead  # where it landed
    s = t - hs
    if s < stance * period:
        return place, 0.0
    u = (s - stance * period) / ((1 - stance) * period)  # 0..1 through the swing
    return place + stride * u * u * (3 - 2 * u), clearance * np.sin(np.pi * u)  # smoothstep: speed 6u(1 - u)


def _knee(hip: np.ndarray, ankle: np.ndarray, forward: float) -> np.ndarray:
    """Knee of a two-link leg from hip to ankle (ground frame), bending forward."""
    d = ankle - hip
    dist = min(np.linalg.norm(d), THIGH + SHANK - 1e-6)
    along = (THIGH ** 2 - SHANK ** 2 + dist ** 2) / (2 * dist)
    up = np.sqrt(max(THIGH ** 2 - along ** 2, 0.0))
    unit = d / np.linalg.norm(d)
    normal = np.array([-unit[1], unit[0]])  # +90 degrees
    if normal[0] * forward < 0:
        normal = -normal
    return hip + along * unit + up * normal


def walker(fps: float = 30.0, seconds: float = 6.0, cadence_spm: float = 110.0, stance_frac: float = 0.62,
           step_m: float = 0.65, treadmill: bool = False, direction: int = 1, start_x_px: float | None = None,
           stand: bool = False) -> Walk:
    """A walker seen from the side (``direction`` +1: walking right in the image, -1: left).

    stand: no walking at all, both feet on the ground throughout.
    """
    spec = load_skeleton("human18")
    if start_x_px is None:
        start_x_px = 640.0 if treadmill or stand else 150.0 if direction > 0 else IMAGE[0] - 150.0
    period = 120.0 / cadence_spm
    stride = 2 * step_m
    speed = 0.0 if stand else stride / period
    ahead = speed * stance_frac * period / 2  # the foot lands this far ahead of the hip
    first = {"right": 0.3, "left": 0.3 + period / 2}
    hip_h = 0.85
    n = int(round(seconds * fps))
    frames = []
    for i in range(n):
        t = i / fps
        hip = np.array([speed * t, hip_h])
        pts: dict[str, np.ndarray] = {}
        for side in ("left", "right"):
            if stand:
                ankle = hip + [0.1 if side == "left" else -0.1, -hip_h + 0.08]
            else:
                x, y = _foot(t, first[side], period, stance_frac, stride, speed, ahead, 0.12)
                ankle = np.array([x, y + 0.08])
            pts[f"{side}_ankle"] = ankle
            pts[f"{side}_hip"] = hip + [0.0, 0.0]
            pts[f"{side}_knee"] = _knee(hip, ankle, 1.0)
            pts[f"{side}_shoulder"] = hip + [0.0, 0.5]
            pts[f"{side}_elbow"] = hip + [0.02, 0.25]
            pts[f"{side}_wrist"] = hip + [0.05, 0.02]
            pts[f"{side}_eye"] = hip + [0.08, 0.72]
            pts[f"{side}_ear"] = hip + [0.0, 0.70]
        pts["nose"] = hip + [0.1, 0.7]
        xy = np.array([pts[name] for name in spec.joint_names[:-1]])
        xy = np.vstack([xy, (xy.min(axis=0) + xy.max(axis=0)) / 2])  # centre: the box centre
        if treadmill:
            xy[:, 0] -= speed * t
        img = np.stack([start_x_px + direction * xy[:, 0] * PX_PER_M, GROUND_Y - xy[:, 1] * PX_PER_M], axis=1)
        kp = np.concatenate([img, np.full((len(img), 1), 4.0)], axis=1).astype(np.float32)
        frames.append(PoseFrame(i, t, kp[None], np.full((1, len(img)), 0.9, np.float32), np.ones(1, np.float32),
                                np.zeros(1, np.int64), IMAGE))
    hs: dict[str, list[int]] = {}
    to: dict[str, list[int]] = {}
    for side in ("left", "right"):
        times = first[side] + period * np.arange(-1, int(seconds / period) + 2)
        hs[side] = [int(np.ceil(x * fps - 1e-9)) for x in times if 0 <= x * fps < n]
        to[side] = [int(np.ceil((x + stance_frac * period) * fps - 1e-9)) for x in times
                    if 0 <= (x + stance_frac * period) * fps < n]
    if stand:
        hs, to = {"left": [], "right": []}, {"left": [], "right": []}
    return Walk(PoseSequence(frames, fps, spec), hs, to, period, stance_frac, speed)


def with_frames(seq: PoseSequence, fn) -> PoseSequence:
    """A copy of ``seq`` with ``fn(index, keypoints (P, K, 3), confidence (P, K))`` applied in place per frame."""
    out = []
    for f in seq.frames:
        kp, conf = f.keypoints.copy(), f.confidence.copy()
        fn(f.index, kp, conf)
        out.append(PoseFrame(f.index, f.timestamp, kp, conf, f.scores, f.track_ids, f.image_size, f.world))
    return PoseSequence(out, seq.fps, seq.skeleton, dict(seq.metadata))
