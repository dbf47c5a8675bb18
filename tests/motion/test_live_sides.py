"""Live left and right of people seen from behind (posetracker.motion.live_sides): a slide of the labels while the
person is seen from behind is exchanged back within a few frames, one frame at a time; people facing the camera,
real turns and a face seen poorly alone are left as read."""

from __future__ import annotations

import numpy as np

from posetracker.motion.live_sides import ENTER, LiveSides
from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame

SPEC = load_skeleton("human18")
FPS = 30.0
SIDE = {"left": 1.0, "right": -1.0}
HALF_WIDTH = {"shoulder": 0.18, "elbow": 0.24, "wrist": 0.27, "hip": 0.12, "knee": 0.13, "ankle": 0.14,
              "eye": 0.03, "ear": 0.07}
HEIGHT = {"nose": -0.72, "eye": -0.74, "ear": -0.72, "shoulder": -0.5, "elbow": -0.25, "wrist": 0.0, "hip": 0.0,
          "knee": 0.45, "ankle": 0.85}


def body(yaw_deg: np.ndarray, seed: int = 0) -> np.ndarray:
    """(T,) yaw (0: facing the camera, its left on +x) -> (T, K, 3) camera-space joints 3 m away (y down)."""
    t = np.radians(np.asarray(yaw_deg, np.float64))[:, None]
    out = np.zeros((len(t), SPEC.num_joints, 3))
    for k, name in enumerate(SPEC.joint_names):
        s, part = (SIDE[name.split("_")[0]], name.split("_")[1]) if "_" in name else (0.0, name)
        w, fwd = s * HALF_WIDTH.get(part, 0.0), (-0.1 if part == "nose" else 0.0)
        x, z = w * np.cos(t) - fwd * np.sin(t), w * np.sin(t) + fwd * np.cos(t)
        out[:, k] = np.concatenate([x, np.full_like(x, HEIGHT.get(part, -0.25)), 3.0 + z], axis=1)
    return out + np.random.default_rng(seed).normal(0, 0.005, out.shape)


def frames_of(world: np.ndarray, face: np.ndarray, slid: np.ndarray) -> list[PoseFrame]:
    """One tracked person (id 0) per frame: world (T, K, 3) true labels; face (T,) the nose and eyes' confidence;
    slid (T,) bool: frames whose every pair the network read the other way round (image, depth, world)."""
    order = np.asarray(SPEC.mirror_index)
    out = []
    for t, (w, f, s) in enumerate(zip(world, face, slid)):
        w = w[order] if s else w
        conf = np.full(SPEC.num_joints, 0.9)
        conf[[SPEC.index(n) for n in ("nose", "left_eye", "right_eye")]] = f
        kp = np.concatenate([640 + 600 * w[:, :2] / w[:, 2:], w[:, 2:]], axis=1)  # x, y px, depth m
        out.append(PoseFrame(t, t / FPS, kp[None].astype(np.float32), conf[None].astype(np.float32),
                             np.ones(1, np.float32), np.zeros(1, np.int64), (1280, 720),
                             w[None].astype(np.float32)))
    return out


def run(frames: list[PoseFrame]) -> list[PoseFrame]:
    sides = LiveSides(SPEC)
    return [sides.update(f) for f in frames]


def left_on_image_left(frame: PoseFrame, part: str) -> bool:
    return frame.keypoints[0, SPEC.index(f"left_{part}"), 0] < frame.keypoints[0, SPEC.index(f"right_{part}"), 0]


def test_a_back_turned_track_slid_is_relabelled_within_a_few_frames():
    """Facing the camera 1 s, a real turn (0.5 s), 1 s from behind read right, then 1 s read as if she faced the
    camera (the slide), then read right again: the slide's frames come out with her left on the image's left
    (from behind) from at most ``ENTER`` frames after it starts; every other frame is as read."""
    yaw = np.concatenate([np.zeros(30), np.linspace(0, 180, 15), np.full(90, 180.0)])
    face = np.where(yaw < 90, 0.8, 0.55)
    slid = np.zeros(len(yaw), bool)
    slid[75:105] = True
    truth = frames_of(body(yaw), face, np.zeros(len(yaw), bool))
    read = frames_of(body(yaw), face, slid)
    out = run(read)
    for t in range(len(yaw)):
        if slid[t] and t >= 75 + ENTER:
            np.testing.assert_allclose(out[t].keypoints, truth[t].keypoints, err_msg=f"frame {t}")
            np.testing.assert_allclose(out[t].world, truth[t].world)
            assert all(left_on_image_left(out[t], p) for p in ("shoulder", "hip", "elbow", "wrist", "knee", "ankle"))
        elif not slid[t]:
            assert out[t] is read[t], f"frame {t} changed"


def test_a_front_facing_track_is_untouched():
    yaw = np.random.default_rng(1).normal(0, 20, 120)
    frames = frames_of(body(yaw, 1), np.full(len(yaw), 0.8), np.zeros(len(yaw), bool))
    assert all(a is b for a, b in zip(run(frames), frames))


def test_a_real_turn_back_and_a_poorly_seen_face_are_untouched():
    """From behind, read right, she turns back to the camera over half a second while her face is still read
    poorly (it is seen again only after the turn); a man facing the camera with his face seen poorly, read from
    behind, then (6 frames unread) facing the camera: neither is a slide."""
    yaw = np.concatenate([np.zeros(30), np.full(60, 180.0), np.linspace(180, 360, 15), np.zeros(30)])
    face = np.concatenate([np.full(30, 0.8), np.full(80, 0.55), np.full(25, 0.8)])
    frames = frames_of(body(yaw, 2), face, np.zeros(len(yaw), bool))
    assert all(a is b for a, b in zip(run(frames), frames))
    yaw = np.concatenate([np.zeros(30), np.full(20, 180.0), np.full(6, 90.0), np.zeros(40)])
    world = body(yaw, 3)
    world[50:56, :, 2] = 3.0  # the trunk not read (flat) while he turns
    frames = frames_of(world, np.concatenate([np.full(30, 0.8), np.full(66, 0.55)]), np.zeros(len(yaw), bool))
    assert all(a is b for a, b in zip(run(frames), frames))
