"""A person walking out of the image: the readings of a body cut by the border do not drag its depth (issue #46)."""

from __future__ import annotations

import numpy as np

from posetracker.depth.lift import Camera
from posetracker.motion.border_cut import border_cut
from posetracker.motion.solve import solve_tracks
from posetracker.types import PoseFrame

K = 18
W, H = 1280, 720
DEPTH_M = 4.0


def _walk_out(frames: int = 50, speed_px: float = 8.0) -> tuple[list[PoseFrame], np.ndarray]:
    """One person 120 px wide, 320 px tall, at DEPTH_M, walking right out of a W x H frame at ``speed_px`` a frame.

    As the network reads a body cut by the border: joints beyond it are placed on it, and the depth read from
    the body's size grows as the visible part shrinks (DEPTH_M x full width / width inside the image).
    Returns (the PoseFrames, 30 fps; the body's left edge x (T,) px).
    """
    camera = Camera(W, H, fov_deg=60.0)
    offsets = np.stack([np.linspace(0, 120, K), np.linspace(0, 320, K)], 1)  # (K, 2) px
    out, left = [], []
    for t in range(frames):
        x0 = 900 + speed_px * t
        xy = np.array([x0, 200.0]) + offsets
        inside = np.clip(xy[:, 0], 0, W - 1)
        seen = float(inside.max() - inside.min())
        depth = DEPTH_M * 120.0 / max(seen, 12.0)
        xy[:, 0] = inside
        kp = np.concatenate([xy, np.full((K, 1), depth)], 1)[None].astype(np.float32)
        world = camera.to_camera(xy, np.full(K, depth))[None].astype(np.float32)
        out.append(PoseFrame(t, t / 30, kp, np.full((1, K), 0.8, np.float32), np.ones(1, np.float32), np.array([0]),
                             (W, H), world=world))
        left.append(x0)
    return out, np.array(left)


def test_a_body_cut_by_the_border_keeps_its_depth():
    frames, left = _walk_out()
    read = np.array([f.keypoints[0, 0, 2] for f in frames])
    cut = left + 120 > W - 1 - 0.01 * W
    assert read[cut].max() > 2 * DEPTH_M  # the readings run away as the body leaves
    solved = solve_tracks(frames)
    depth = np.array([f.keypoints[0, :, 2] for f in solved])  # (T, K)
    world_z = np.array([f.world[0, :, 2] for f in solved])
    assert np.abs(depth - DEPTH_M).max() < 0.05  # the old code followed them: 38.3 m off at the last frame
    assert np.abs(world_z - DEPTH_M).max() < 0.05
    assert np.abs(np.diff(world_z, axis=0)).max() < 0.01  # no depth rate a walker cannot move at
    x_read = np.array([f.keypoints[0, 0, 0] for f in frames])
    x_solved = np.array([f.keypoints[0, 0, 0] for f in solved])
    assert np.abs(x_read - left).max() > 10  # the readings stop on the border
    assert np.abs(x_solved - left).max() < 2  # the solve carries the joint on past it (old code: 10.3 px off)


def test_a_body_always_cut_keeps_its_readings():
    frames, _ = _walk_out(frames=30, speed_px=0.0)
    for f in frames:
        f.keypoints[0, :, 0] += 300  # every frame reaches past the right border
    xy = np.array([f.keypoints[0, :, :2] for f in frames])
    conf = np.array([f.confidence[0] for f in frames])
    assert not border_cut(xy, conf, (W, H)).any()
    assert not border_cut(xy - [500, 0], conf, (W, H)).any()  # none cut
    assert not border_cut(xy, conf, (0, 0)).any()  # image size unknown
    assert solve_tracks(frames)[-1].keypoints[0, 0, 2] == frames[-1].keypoints[0, 0, 2]  # read as it is
