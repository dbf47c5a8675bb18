"""A pose prior for a camera whose gravity is known (studies/metres.md): the training recipe's level cameras, and the
study's geometry (studies/tools/level_prior.py): the 2-D turned level, its depths put back on the rays."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from posetracker.depth.estimator import DepthEstimator
from posetracker.depth.pose_prior import PosePrior
from posetracker.model.pose_prior import PosePriorNet
from posetracker.skeletons import load_skeleton
from posetracker.train.pose_prior import VirtualViews, _rotations

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies" / "tools"))
from level_prior import (
    LevelDepthEstimator,
    level_fuse,
    level_relative_depth,
    level_turn,
)

SPEC = load_skeleton("human18")
HIPS = [SPEC.index("left_hip"), SPEC.index("right_hip")]


def walking_pose() -> np.ndarray:
    """(K, 3) metres, Y up: a person mid-stride, the left leg forward and bent, the right straight behind."""
    p = {"nose": (0, 1.62, 0.1), "left_eye": (0.035, 1.66, 0.08), "right_eye": (-0.035, 1.66, 0.08),
         "left_ear": (0.075, 1.63, 0), "right_ear": (-0.075, 1.63, 0),
         "left_shoulder": (0.19, 1.45, 0), "right_shoulder": (-0.19, 1.45, 0),
         "left_elbow": (0.22, 1.18, -0.1), "right_elbow": (-0.22, 1.18, 0.12),
         "left_wrist": (0.24, 0.94, -0.12), "right_wrist": (-0.24, 0.96, 0.3),
         "left_hip": (0.1, 0.95, 0), "right_hip": (-0.1, 0.95, 0),
         "left_knee": (0.1, 0.55, 0.22), "right_knee": (-0.1, 0.52, -0.12),
         "left_ankle": (0.1, 0.12, 0.12), "right_ankle": (-0.1, 0.1, -0.3)}
    out = np.zeros((SPEC.num_joints, 3))
    for name, xyz in p.items():
        out[SPEC.index(name)] = xyz
    out[SPEC.root] = out[HIPS].mean(0)
    return out


def oracle(views: VirtualViews, size: int) -> tuple[PosePrior, np.ndarray, np.ndarray]:
    """A PosePrior whose network gives the level camera's true target for each of ``size`` level views (the
    views in order; it records how far its inputs were from theirs), those views' camera-space points
    (size, K, 3) m and the joints they show (size, K)."""
    xy, ok, z = views.sample(size)
    x, y = views.encode(xy, ok, z)
    prior = PosePrior(PosePriorNet(SPEC.num_joints, hidden=8, blocks=1).numpy_state(), SPEC, mirrored=False)

    def forward(inputs: np.ndarray) -> np.ndarray:
        prior.input_error = float(np.abs(inputs - x.numpy()).max())
        return y.numpy()

    prior.forward = forward
    return prior, np.concatenate([xy * z[..., None], z[..., None]], -1), ok


def test_level_turn_takes_gravity_onto_the_image_down_axis():
    for pitch, roll in ((0.0, 0.0), (22.0, 0.0), (-8.0, 0.0), (21.8, 26.1), (40.0, -15.0)):
        # a camera pitched down by `pitch` and rolled: the world's down (Y up: -Y) seen in its axes
        down = (_rotations(np.zeros(1), np.radians([pitch]), np.radians([roll]))[0] @ [0.0, -1.0, 0.0]) * [1, -1, -1]
        turn = level_turn(down)
        np.testing.assert_allclose(turn @ turn.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(turn) == pytest.approx(1.0)
        np.testing.assert_allclose(turn @ down, [0.0, 1.0, 0.0], atol=1e-12)
        assert turn[0, 2] - turn[2, 0] == pytest.approx(0.0, abs=1e-12)  # turned about a level axis: no yaw
        assert np.degrees(np.arccos(np.clip((np.trace(turn) - 1) / 2, -1, 1))) == pytest.approx(
            np.degrees(np.arccos(down[1])), abs=1e-6)  # by the camera's tilt, no more
    np.testing.assert_allclose(level_turn([0.0, 2.0, 0.0]), np.eye(3))


@pytest.mark.parametrize("pitch,roll", [(22.5, -13.4), (24.9, 2.8), (21.8, 26.1)])
def test_a_level_prior_that_knows_the_level_depths_gives_the_tilted_cameras_depths(pitch, roll):
    """Level views of a pose, then the same points seen by a camera pitched and rolled about its centre: the
    level path returns the tilted camera's true depths (relative to the hips' midpoint) from its own 2-D."""
    views = VirtualViews([walking_pose()[None]], SPEC, noise=0.0, seed=4, pitch_deg=(0.0, 0.0), roll_sd_deg=0.0)
    prior, level_points, ok = oracle(views, 12)
    down = (_rotations(np.zeros(1), np.radians([pitch]), np.radians([roll]))[0] @ [0.0, -1.0, 0.0]) * [1, -1, -1]
    turn = level_turn(down)
    points = level_points @ turn  # (P, K, 3) the same points in the tilted camera (turn maps camera -> level)
    focal, centre = 1400.0, (544.0, 960.0)
    xy = points[..., :2] / points[..., 2:] * focal + np.array(centre)
    hips = points[:, HIPS, 2]
    got = level_relative_depth(prior, xy, ok, points[:, SPEC.root, 2], focal, turn, centre, hips)
    assert prior.input_error < 1e-4  # it read the level views' 2-D
    want = points[..., 2] - hips.mean(1, keepdims=True)
    want[:, SPEC.root] = 0.0
    np.testing.assert_allclose(got, want, atol=1e-6)
    # the same prior fed the tilted 2-D as it is (the prior that does not know the camera) is far off
    plain = prior.relative_depth(xy, ok, points[:, SPEC.root, 2], focal)
    assert prior.input_error > 0.05 and np.abs(plain - want).max() > 0.1


def test_a_level_camera_gives_what_the_prior_gives_without_a_turn():
    from posetracker.depth.lift import Camera

    views = VirtualViews([walking_pose()[None]], SPEC, noise=0.0, seed=5)
    xy, ok, z = views.sample(4)
    prior = PosePrior(PosePriorNet(SPEC.num_joints, hidden=16, blocks=1).numpy_state(), SPEC, mirrored=False)
    camera = Camera(640, 480, fov_deg=70.0)
    px = xy * camera.focal + np.array(camera.principal_point)
    depth = z.astype(np.float32)
    plain = prior.fuse(px, np.ones(ok.shape), depth, camera.focal)
    np.testing.assert_allclose(level_fuse(prior, px, np.ones(ok.shape), depth, camera, np.eye(3)), plain, atol=1e-4)


def test_the_level_estimator_is_the_sessions_depth_stage_on_a_level_camera():
    prior = PosePrior(PosePriorNet(SPEC.num_joints, hidden=16, blocks=1).numpy_state(), SPEC, mirrored=False)
    views = VirtualViews([walking_pose()[None]], SPEC, noise=0.0, seed=6)
    xy, ok, z = views.sample(2)
    px = (xy * 1000.0 + np.array([540.0, 960.0])).astype(np.float32)
    reads = np.zeros((2, 1 + len(SPEC.edges)), np.float32)
    reads[:, 0] = z[:, SPEC.root]
    conf = np.ones(ok.shape, np.float32)
    base = DepthEstimator(SPEC, 50.0, True, prior)
    plain = base.estimate(px, conf, reads, (1080, 1920))[0]
    level = LevelDepthEstimator(base, prior, (0.0, 1.0, 0.0)).estimate(px, conf, reads, (1080, 1920))[0]
    tilted = LevelDepthEstimator(base, prior, (0.0, 0.9, 0.4)).estimate(px, conf, reads, (1080, 1920))[0]
    np.testing.assert_allclose(level, plain, atol=1e-4)
    assert np.abs(tilted - plain).max() > 1e-3


def test_the_level_recipe_trains_on_level_cameras_only():
    from posetracker.train.pose_prior import load_prior_config

    cfg = load_prior_config(Path(__file__).resolve().parents[2] / "configs" / "pose_prior_level.yaml")
    assert cfg.pitch_deg == (-3.0, 3.0) and cfg.roll_sd_deg == 2.0
    views = VirtualViews([walking_pose()[None]], SPEC, noise=0.0, seed=7, pitch_deg=(0.0, 0.0), roll_sd_deg=0.0)
    xy, _, _ = views.sample(16)
    # a level camera sees a vertical line (the upright trunk: hips' and shoulders' midpoints) as a vertical line,
    # up to the perspective of hips and shoulders at different depths (x in focal lengths)
    hip, shoulder = xy[:, HIPS].mean(1), xy[:, [SPEC.index("left_shoulder"), SPEC.index("right_shoulder")]].mean(1)
    assert np.median(np.abs(hip[:, 0] - shoulder[:, 0])) < 3e-4
    tilted = VirtualViews([walking_pose()[None]], SPEC, noise=0.0, seed=7, pitch_deg=(20.0, 20.0), roll_sd_deg=0.0)
    xy, _, _ = tilted.sample(16)
    hip, shoulder = xy[:, HIPS].mean(1), xy[:, [SPEC.index("left_shoulder"), SPEC.index("right_shoulder")]].mean(1)
    assert np.median(np.abs(hip[:, 0] - shoulder[:, 0])) > 1e-3
