"""Depths of joints the refiners moved: the pose prior, which reads the final 2-D pose, takes a larger share
(posetracker.depth.estimator.moved_prior_weight, PosePrior.fuse with per-joint weights)."""

from __future__ import annotations

import numpy as np

from posetracker.depth.estimator import MOVED_PRIOR_WEIGHT, DepthEstimator, moved_prior_weight
from posetracker.depth.pose_prior import load_pose_prior
from posetracker.skeletons import load_skeleton

SPEC = load_skeleton("human18")


def person(seed: int = 0) -> np.ndarray:
    """(1, K, 2) px of a person about 300 px tall."""
    rng = np.random.default_rng(seed)
    return np.array([320.0, 240.0]) + rng.uniform(-150, 150, (1, SPEC.num_joints, 2))


def test_unmoved_joints_keep_the_weight_moved_ones_rise_to_the_cap() -> None:
    xy = person()
    moved = xy.copy()
    w = SPEC.index("left_wrist")
    diag = float(np.hypot(*(xy[0].max(0) - xy[0].min(0))))
    moved[0, w, 0] += 0.025 * diag  # half of MOVED_FRACTION
    weight = moved_prior_weight(moved, xy, 0.5)
    others = [k for k in range(SPEC.num_joints) if k != w]
    np.testing.assert_allclose(weight[0, others], 0.5)
    assert abs(weight[0, w] - (0.5 + 0.5 * (MOVED_PRIOR_WEIGHT - 0.5))) < 0.02
    moved[0, w, 0] += 0.5 * diag
    assert moved_prior_weight(moved, xy, 0.5)[0, w] == MOVED_PRIOR_WEIGHT


def test_the_estimator_without_a_move_is_the_estimator_without_reads() -> None:
    prior = load_pose_prior(spec=SPEC)
    est = DepthEstimator(SPEC, 60.0, True, prior)
    xy = person(1)
    conf = np.full((1, SPEC.num_joints), 0.9)
    reads = np.concatenate([[[3.0]], np.random.default_rng(2).normal(0, 0.1, (1, SPEC.num_edges))], axis=1)
    plain = est.estimate(xy, conf, reads, (640, 480))
    same = est.estimate(xy, conf, reads, (640, 480), read_xy=xy.copy())
    np.testing.assert_allclose(same[0], plain[0], atol=1e-6)
    moved = xy.copy()
    w = SPEC.index("left_wrist")
    moved[0, w] += 40.0
    depth, _ = est.estimate(moved, conf, reads, (640, 480), read_xy=xy)
    unmoved, _ = est.estimate(moved, conf, reads, (640, 480))
    assert depth[0, w] != unmoved[0, w]  # the moved wrist's depth leans further on the prior
    others = [k for k in range(SPEC.num_joints) if k != w]
    np.testing.assert_allclose(depth[0, others], unmoved[0, others], atol=1e-6)
