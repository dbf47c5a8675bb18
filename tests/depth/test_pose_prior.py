"""The pose prior: inputs, units, the mix with the depth head, training, weights files, the session."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posetracker.depth.pose_prior import (
    UPPER_WEIGHT, PosePrior, PosePriorError, default_prior_path, load_pose_prior, numpy_forward, prior_inputs)
from posetracker.model.pose_prior import PosePriorNet
from posetracker.skeletons import load_skeleton
from posetracker.train.pose_prior import PriorConfig, VirtualViews, save_pose_prior, train_prior

SPEC = load_skeleton("human18")


def standing_pose(left_arm_forward: float = 0.0) -> np.ndarray:
    """(K, 3) metres, Y up, facing +z (toward a camera at yaw 0): a person with arms down;
    the left wrist and elbow moved ``left_arm_forward`` m forward."""
    p = {"nose": (0, 1.62, 0.1), "left_eye": (0.035, 1.66, 0.08), "right_eye": (-0.035, 1.66, 0.08),
         "left_ear": (0.075, 1.63, 0), "right_ear": (-0.075, 1.63, 0),
         "left_shoulder": (0.19, 1.45, 0), "right_shoulder": (-0.19, 1.45, 0),
         "left_elbow": (0.22, 1.18, 0), "right_elbow": (-0.22, 1.18, 0),
         "left_wrist": (0.24, 0.92, 0), "right_wrist": (-0.24, 0.92, 0),
         "left_hip": (0.1, 0.95, 0), "right_hip": (-0.1, 0.95, 0),
         "left_knee": (0.1, 0.5, 0.02), "right_knee": (-0.1, 0.5, 0.02),
         "left_ankle": (0.1, 0.08, 0), "right_ankle": (-0.1, 0.08, 0)}
    out = np.zeros((SPEC.num_joints, 3))
    for name, xyz in p.items():
        out[SPEC.index(name)] = xyz
    out[SPEC.index("left_elbow"), 2] += 0.5 * left_arm_forward
    out[SPEC.index("left_wrist"), 2] += left_arm_forward
    out[SPEC.root] = 0.5 * (out[SPEC.index("left_hip")] + out[SPEC.index("right_hip")])
    return out


def test_inputs_do_not_depend_on_where_or_how_big_the_person_is():
    views = VirtualViews([standing_pose()[None]], SPEC, noise=0.0, seed=1)
    xy, ok, _ = views.sample(6)
    x, s, torso = prior_inputs(xy, ok, SPEC)
    x2, s2, _ = prior_inputs(xy * 731.0 + np.array([320.0, 200.0]), ok, SPEC)
    assert torso.all() and np.allclose(s2, 731.0 * s)
    np.testing.assert_allclose(x2, x, atol=1e-5)
    ok[0, SPEC.index("left_hip")] = False  # no torso: flagged, inputs zero
    x3, _, torso3 = prior_inputs(xy, ok, SPEC)
    assert not torso3[0] and torso3[1:].all() and not x3[0].any()


def oracle_prior(x: torch.Tensor, y: torch.Tensor, weight: float = 0.5) -> PosePrior:
    """A PosePrior whose network gives the training target of each input (looked up), to check the
    units between training and the product."""
    prior = PosePrior(PosePriorNet(SPEC.num_joints, hidden=8, blocks=1).numpy_state(), SPEC, weight=weight,
                      upper_weight=weight, mirrored=False)
    prior.forward = lambda inputs: y.numpy()[torch.cdist(torch.from_numpy(inputs), x).argmin(1).numpy()]
    return prior


def test_the_numpy_forward_is_the_network():
    net = PosePriorNet(SPEC.num_joints, hidden=32, blocks=2).eval()
    x = torch.randn(5, (SPEC.num_joints - 1) * 3)
    with torch.no_grad():
        ref = net(x).numpy()
    np.testing.assert_allclose(numpy_forward(net.numpy_state())(x.numpy()), ref, atol=1e-5)


def test_training_targets_turn_back_into_metres_in_the_product():
    views = VirtualViews([standing_pose(0.3)[None], standing_pose(-0.2)[None]], SPEC, noise=0.0, seed=2)
    xy, ok, z = views.sample(16)
    x, y = views.encode(xy, ok, z)
    focal = 900.0
    prior = oracle_prior(x, y)
    rel = prior.relative_depth(xy * focal + 500.0, ok, z[:, SPEC.root], focal)
    np.testing.assert_allclose(rel, z - z[:, SPEC.root, None], atol=1e-6)


def test_fuse_mixes_relative_depths_and_keeps_the_root():
    views = VirtualViews([standing_pose(0.4)[None]], SPEC, noise=0.0, seed=3)
    xy, ok, z = views.sample(3)
    x, y = views.encode(xy, ok, z)
    focal = 600.0
    conf = np.where(ok, 0.9, 0.0)
    head = z + np.random.default_rng(0).normal(0, 0.1, z.shape)  # the depth head: noisy depths
    fused = oracle_prior(x, y, 0.5).fuse(xy * focal, conf, head, focal)
    assert np.allclose(fused[:, SPEC.root], head[:, SPEC.root])
    a, b = SPEC.index("left_wrist"), SPEC.index("right_wrist")
    scale = head[:, SPEC.root] / z[:, SPEC.root]  # the prior's metres come from the head's root depth
    expected = 0.5 * (head[:, a] - head[:, b]) + 0.5 * (z[:, a] - z[:, b]) * scale
    np.testing.assert_allclose(fused[:, a] - fused[:, b], expected, atol=1e-6)
    np.testing.assert_array_equal(oracle_prior(x, y, 0.0).fuse(xy * focal, conf, head, focal), head)
    conf[1, SPEC.index("right_shoulder")] = 0.1  # torso not seen: that person is left as it was
    fused = oracle_prior(x, y).fuse(xy * focal, conf, head, focal)
    np.testing.assert_array_equal(fused[1], head[1])
    assert not np.array_equal(fused[0], head[0])


def test_a_short_training_learns_which_wrist_is_nearer():
    """Poses with the left arm forward or back by up to 0.45 m: from 2-D alone (foreshortening,
    elbow bend in the image) the prior must tell which wrist is nearer the camera."""
    rng = np.random.default_rng(0)
    poses = [standing_pose(f)[None] for f in rng.uniform(-0.45, 0.45, 40)]
    cfg = PriorConfig(steps=400, batch=128, hidden=64, blocks=2, noise=0.02, seed=0)
    net = train_prior(VirtualViews(poses, SPEC, noise=cfg.noise, seed=0), cfg)
    test = VirtualViews(poses, SPEC, noise=0.0, seed=99)
    xy, ok, z = test.sample(400)
    rel = PosePrior(net.numpy_state(), SPEC).relative_depth(xy, ok, z[:, SPEC.root], 1.0)
    a, b = SPEC.index("left_wrist"), SPEC.index("right_wrist")
    truth, pred = z[:, a] - z[:, b], rel[:, a] - rel[:, b]
    clear = np.abs(truth) > 0.1
    assert (np.sign(pred[clear]) == np.sign(truth[clear])).mean() > 0.85


def test_the_prior_reads_a_pose_and_its_mirror_image_alike():
    """Mirrored, the 2-D pose (x -> -x, left <-> right) gives each joint the depth its mirror joint had: the prior
    averages its reading of the pose and of its mirror image; a single reading of an untrained network does not."""
    views = VirtualViews([standing_pose(0.3)[None]], SPEC, noise=0.0, seed=5)
    xy, ok, z = views.sample(4)
    m = np.asarray(SPEC.mirror_index)
    state = PosePriorNet(SPEC.num_joints, hidden=16, blocks=1).numpy_state()
    for mirrored, alike in ((True, True), (False, False)):
        prior = PosePrior(state, SPEC, mirrored=mirrored)
        rel = prior.relative_depth(xy, ok, z[:, SPEC.root], 1.0)
        rel_m = prior.relative_depth(xy[:, m] * np.array([-1.0, 1.0]), ok[:, m], z[:, SPEC.root], 1.0)
        assert np.allclose(rel_m[:, m], rel, atol=1e-9) == alike


def test_the_prior_takes_more_of_the_head_s_and_arms_depth():
    views = VirtualViews([standing_pose(0.2)[None]], SPEC, noise=0.0, seed=6)
    xy, ok, z = views.sample(2)
    x, y = views.encode(xy, ok, z)
    prior = oracle_prior(x, y)
    prior.weight = PosePrior(PosePriorNet(SPEC.num_joints, hidden=8, blocks=1).numpy_state(), SPEC).weight
    head = z + np.random.default_rng(1).normal(0, 0.1, z.shape)
    fused = prior.fuse(xy * 500.0, np.where(ok, 0.9, 0.0), head, 500.0)
    hips = [SPEC.index("left_hip"), SPEC.index("right_hip")]
    scale = head[:, SPEC.root] / z[:, SPEC.root]
    for name, w in (("left_wrist", UPPER_WEIGHT), ("left_ankle", 0.5), ("left_hip", 0.5)):
        j = SPEC.index(name)
        hip_head = head[:, hips].mean(1)
        expected = hip_head + (1 - w) * (head[:, j] - hip_head) + w * (z[:, j] - z[:, SPEC.root]) * scale
        np.testing.assert_allclose(fused[:, j], expected, atol=1e-6)


def test_weights_round_trip_and_errors(tmp_path):
    net = PosePriorNet(SPEC.num_joints, hidden=16, blocks=1)
    path = tmp_path / "prior.safetensors"
    save_pose_prior(net, SPEC, path, source="test")
    loaded = load_pose_prior(path, weight=0.25)
    legs = [SPEC.index(n) for n in ("left_hip", "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle")]
    assert (loaded.weight[legs] == 0.25).all() and np.delete(loaded.weight, legs).min() == UPPER_WEIGHT
    x = torch.randn(2, (SPEC.num_joints - 1) * 3)
    with torch.no_grad():
        np.testing.assert_allclose(loaded.forward(x.numpy()), net.eval()(x).numpy(), atol=1e-5)
    with pytest.raises(PosePriorError, match="not found"):
        load_pose_prior(tmp_path / "missing.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"not a weights file")
    with pytest.raises(PosePriorError, match="cannot read"):
        load_pose_prior(tmp_path / "bad.safetensors")
    with pytest.raises(PosePriorError, match="mouse4"):
        load_pose_prior(path, spec=load_skeleton("mouse4"))
    with pytest.raises(PosePriorError, match="does not fit"):
        PosePrior(PosePriorNet(SPEC.num_joints - 1, hidden=16, blocks=1).numpy_state(), SPEC)


def test_the_session_mixes_in_the_shipped_prior():
    from posetracker.session import DepthSettings, SessionConfig, TrackingSession

    assert default_prior_path("human18").is_file()
    session = TrackingSession.open()
    assert session.depth_trained and session.depth.prior is not None
    assert TrackingSession.open(config=SessionConfig(depth=DepthSettings(pose_prior=False))).depth.prior is None
    assert session.notices == []


def test_an_unreadable_prior_leaves_depth_to_the_head_with_a_notice(tmp_path, monkeypatch):
    import posetracker.session
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession
    from posetracker.types import Frame

    bad = tmp_path / "pose-prior-human18.safetensors"
    bad.write_bytes(b"not a weights file")
    monkeypatch.setattr(posetracker.session, "default_prior_path", lambda skeleton: bad)
    session = TrackingSession.open(config=SessionConfig(network=NetworkSettings(lookahead=0)))
    assert session.depth.prior is None
    assert len(session.notices) == 1 and "Pose prior not used" in session.notices[0] and "cannot read" in session.notices[0]
    assert session.step(Frame(0, 0.0, np.zeros((96, 128, 3), np.uint8))).keypoints.shape[1:] == (18, 3)  # tracks on
