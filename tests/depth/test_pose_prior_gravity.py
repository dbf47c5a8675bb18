"""A pose prior trained with the camera's gravity as an input (studies/metres.md): its inputs
(posetracker.train.prior_gravity), the training views' gravity, the network's extra inputs, and the study's depth
stage that reads it (studies/tools/gravity_prior.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from test_pose_prior import SPEC, standing_pose

from posetracker.depth import DepthEstimator
from posetracker.depth.pose_prior import (
    default_prior_path,
    load_pose_prior,
    numpy_forward,
    prior_inputs,
)
from posetracker.model.pose_prior import PosePriorNet
from posetracker.train.pose_prior import (
    PriorConfig,
    VirtualViews,
    save_pose_prior,
    train_prior,
)
from posetracker.train.prior_gravity import (
    camera_gravity_inputs,
    gravity_inputs,
    level_view_inputs,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies" / "tools"))
from gravity_prior import GravityDepthEstimator, GravityPosePrior, load_gravity_prior


def test_gravity_inputs_are_the_pitch_and_roll_seen_along_the_ray_to_the_person():
    pitch, below = np.radians(20.0), np.radians(10.0)
    down = np.array([[0.0, np.cos(pitch), np.sin(pitch)]] * 3)  # a camera looking 20 deg down
    ray = np.array([[0.0, 0.0, 1.0], [0.0, np.tan(below), 1.0], [0.0, 0.0, 2.0]])  # centred, 10 deg below, centred
    g = gravity_inputs(down * 3.0, ray)
    np.testing.assert_allclose(g[0], [0.0, np.cos(pitch), np.sin(pitch), 1.0], atol=1e-6)
    np.testing.assert_allclose(g[1], [0.0, np.cos(pitch + below), np.sin(pitch + below), 1.0], atol=1e-6)
    np.testing.assert_allclose(g[2], g[0], atol=1e-6)
    rolled = gravity_inputs(np.array([[np.sin(0.3), np.cos(0.3), 0.0]]), ray[:1])
    np.testing.assert_allclose(rolled[0], [np.sin(0.3), np.cos(0.3), 0.0, 1.0], atol=1e-6)
    unknown = gravity_inputs(np.array([[np.nan] * 3, [0.0, 1.0, 0.0]]), ray[:2])
    np.testing.assert_array_equal(unknown[0], 0.0)
    assert unknown[1, 3] == 1.0 and not gravity_inputs(None, ray).any()


def test_training_views_give_the_world_down_and_the_same_draws_as_without_it():
    views = VirtualViews([standing_pose()[None]], SPEC, noise=0.0, seed=4, gravity_dropout=0.0)
    xy, _, z, down = views.sample_views(32)
    points = np.concatenate([xy * z[..., None], z[..., None]], -1)  # camera space
    leg = points[:, SPEC.index("left_hip")] - points[:, SPEC.index("left_ankle")]  # upright: straight up
    np.testing.assert_allclose(leg / np.linalg.norm(leg, axis=-1, keepdims=True), -down, atol=1e-9)
    plain = VirtualViews([standing_pose()[None]], SPEC, seed=5)
    told = VirtualViews([standing_pose()[None]], SPEC, seed=5, gravity_dropout=0.5)
    (xp, yp), (xt, yt) = plain.batch(200), told.batch(200)
    n = xp.shape[1]
    assert xt.shape[1] == n + 4 and torch.equal(xt[:, :n], xp) and torch.equal(yt, yp)
    assert 0.3 < xt[:, -1].mean() < 0.7  # hidden for about half the samples
    assert not xt[xt[:, -1] == 0, n:].any()


def test_extra_inputs_leave_the_rest_of_the_network_and_run_in_numpy():
    torch.manual_seed(0)
    plain = PosePriorNet(SPEC.num_joints, hidden=32, blocks=2)
    torch.manual_seed(0)
    told = PosePriorNet(SPEC.num_joints, hidden=32, blocks=2, extra_inputs=4).eval()
    assert all(torch.equal(v, told.state_dict()[k]) for k, v in plain.state_dict().items())
    x = torch.randn(5, (SPEC.num_joints - 1) * 3 + 4)
    with torch.no_grad():
        np.testing.assert_allclose(numpy_forward(told.numpy_state())(x.numpy()), told(x).numpy(), atol=1e-5)
    assert GravityPosePrior(told.numpy_state(), SPEC).takes_gravity
    assert not GravityPosePrior(plain.numpy_state(), SPEC).takes_gravity


def _person(knee_forward: float, torso: float, legs: float) -> np.ndarray:
    """(K, 3) an upright person, knees ``knee_forward`` m forward, torso and head ``torso`` and legs ``legs`` times
    as tall (the 2-D alone then tells the camera's pitch badly)."""
    p = standing_pose()
    hip = p[SPEC.root, 1]
    for sel, k in ((p[:, 1] > hip + 0.01, torso), (p[:, 1] < hip - 0.01, legs)):
        p[sel, 1] = hip + (p[sel, 1] - hip) * k
    p[[SPEC.index("left_knee"), SPEC.index("right_knee")], 2] += knee_forward
    return p


def test_told_the_gravity_a_short_training_reads_the_feet_depth_better():
    """Upright people of many proportions, knees forward or not, seen from 0-50 deg above: how far the ankle
    recedes from the hips depends on the camera's pitch, which the 2-D alone does not show well."""
    rng = np.random.default_rng(0)
    poses = [_person(*a)[None] for a in zip(rng.uniform(0, 0.3, 200), rng.uniform(0.5, 1.5, 200),
                                             rng.uniform(0.6, 1.4, 200))]
    test = VirtualViews(poses, SPEC, noise=0.0, seed=99, pitch_deg=(0.0, 50.0))
    xy, ok, z, down = test.sample_views(1000)
    ankle = SPEC.index("left_ankle")
    errors = []
    for dropout, level in ((None, False), (0.0, False), (0.0, True)):
        cfg = PriorConfig(steps=600, batch=128, hidden=64, blocks=2, noise=0.0, seed=0)
        net = train_prior(VirtualViews(poses, SPEC, noise=0.0, seed=0, pitch_deg=(0.0, 50.0),
                                       gravity_dropout=dropout, level_view=level), cfg)
        g = None if dropout is None else camera_gravity_inputs(xy, ok, down, 1.0, (0.0, 0.0), SPEC, level)
        rel = GravityPosePrior(net.numpy_state(), SPEC).relative_depth(xy, ok, z[:, SPEC.root], 1.0, g)
        errors.append(np.abs(z[:, ankle] - z[:, SPEC.root] - rel[:, ankle]).mean())
    assert errors[1] < 0.6 * errors[0] and errors[2] < 0.6 * errors[0], errors


def test_the_level_view_is_the_pose_seen_by_the_camera_turned_level():
    views = VirtualViews([standing_pose()[None]], SPEC, noise=0.0, seed=7, pitch_deg=(10.0, 40.0), roll_sd_deg=8.0)
    xy, ok, _, down = views.sample_views(8)
    ok[:] = True
    level = level_view_inputs(xy, ok, down, SPEC).reshape(8, -1, 2)
    plain = prior_inputs(xy, ok, SPEC)[0].reshape(8, -1, 3)[..., :2]
    hip, ankle = (SPEC.index(n) - (SPEC.index(n) > SPEC.root) for n in ("left_hip", "left_ankle"))
    leg, before = level[:, ankle] - level[:, hip], plain[:, ankle] - plain[:, hip]  # upright: vertical when level
    assert np.abs(leg[:, 0] / leg[:, 1]).max() < 1e-6 and np.abs(before[:, 0] / before[:, 1]).max() > 0.05
    assert not level_view_inputs(xy, ok, None, SPEC).any()
    np.testing.assert_allclose(level_view_inputs(xy, ok, np.array([0.0, 1.0, 0.0]), SPEC).reshape(8, -1, 2), plain,
                               atol=1e-5)


def test_the_depth_stage_tells_the_prior_the_gravity_where_known(tmp_path):
    torch.manual_seed(1)
    path = tmp_path / "prior.safetensors"
    save_pose_prior(PosePriorNet(SPEC.num_joints, hidden=16, blocks=1, extra_inputs=4), SPEC, path, "test")
    prior = load_gravity_prior(path, SPEC)
    views = VirtualViews([standing_pose()[None]], SPEC, noise=0.0, seed=6)
    xy, ok, _ = views.sample(2)
    xy = xy * 800.0 + np.array([540.0, 960.0])
    conf = np.where(ok, 0.9, 0.0).astype(np.float32)
    reads = np.zeros((2, SPEC.num_joints), np.float32)  # root depth, then the edges' differences: all 0 m
    reads[:, 0] = 4.0
    base = DepthEstimator(SPEC)
    level, pitched = np.array([0.0, 1.0, 0.0]), np.array([0.0, np.cos(0.4), np.sin(0.4)])
    out = [GravityDepthEstimator(base, prior, d).estimate(xy, conf, reads, (1080, 1920))[0]
           for d in (None, level, pitched)]
    assert not np.allclose(out[1], out[2]) and not np.allclose(out[0], out[1])
    prior.gravity = np.zeros((2, 4), np.float32)  # unknown: all four zero
    depth = np.full((2, SPEC.num_joints), 4.0)
    unknown = prior.fuse(xy, conf, depth, 900.0)
    prior.gravity = None
    np.testing.assert_array_equal(unknown, prior.fuse(xy, conf, depth, 900.0))
    np.testing.assert_array_equal(out[0], GravityDepthEstimator(base, prior, None).estimate(xy, conf, reads,
                                                                                            (1080, 1920))[0])
    plain = load_gravity_prior(default_prior_path(), SPEC)  # the shipped prior, no gravity inputs: as shipped
    assert not plain.takes_gravity
    rel = (xy, ok, np.full(2, 4.0), 900.0)
    np.testing.assert_array_equal(plain.relative_depth(*rel), load_pose_prior(spec=SPEC).relative_depth(*rel))
