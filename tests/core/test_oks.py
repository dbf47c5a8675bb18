"""The one OKS (posetracker.oks): values pinned against hand-computed cases, and each caller's area convention."""

from __future__ import annotations

import math

import numpy as np
import pytest

from posetracker.decoding.duplicates import keypoint_similarity
from posetracker.evaluation.metrics import oks_matrix as eval_oks
from posetracker.oks import DEFAULT_SIGMA, joint_sigmas, keypoint_bbox_area, oks
from posetracker.skeletons import load_skeleton, spec_from_dict
from posetracker.tracking.similarity import oks_matrix as tracking_oks


def test_one_joint_by_hand():
    # sigma 0.25 -> k = 0.5, k^2 = 0.25; area 8 -> 2 s^2 k^2 = 4; d^2 = 4 -> exp(-1)
    assert oks(np.array([4.0]), 8.0, np.array([0.25])) == pytest.approx(math.exp(-1.0), abs=1e-15)
    assert oks(np.array([0.0]), 8.0, np.array([0.25])) == 1.0
    # d^2 = 4 ln 2 -> exactly one half
    assert oks(np.array([4.0 * math.log(2.0)]), 8.0, np.array([0.25])) == pytest.approx(0.5, abs=1e-15)


def test_mean_over_the_mask_and_inf_scores_zero():
    d2 = np.array([0.0, 4.0, 100.0])
    sig = np.array([0.25, 0.25, 0.25])
    # all three count: (1 + e^-1 + e^-25) / 3
    assert oks(d2, 8.0, sig) == pytest.approx((1 + math.exp(-1) + math.exp(-25)) / 3, abs=1e-15)
    # the third does not count: (1 + e^-1) / 2
    assert oks(d2, 8.0, sig, np.array([True, True, False])) == pytest.approx((1 + math.exp(-1)) / 2, abs=1e-15)
    # a counted joint at infinite distance (labelled, not predicted) scores 0 but counts: (1 + 0) / 2
    assert oks(np.array([0.0, np.inf]), 8.0, sig[:2]) == 0.5
    # no joint counts: 0
    assert oks(d2, 8.0, sig, np.zeros(3, bool)) == 0.0
    assert oks(np.zeros(0), 8.0, np.zeros(0)) == 0.0


def test_per_joint_sigma_and_area_scale():
    # joint 0: sigma 0.5 (k^2 = 1), joint 1: sigma 0.125 (k^2 = 1/16); area 2 -> denominators 4 and 1/4
    d2 = np.array([4.0, 0.25])
    assert oks(d2, 2.0, np.array([0.5, 0.125])) == pytest.approx((math.exp(-1) + math.exp(-1)) / 2, abs=1e-15)
    # four times the area -> a quarter of the exponent
    assert oks(d2, 8.0, np.array([0.5, 0.125])) == pytest.approx(math.exp(-0.25), abs=1e-15)


def test_batched_shapes_broadcast_the_area():
    d2 = np.array([[[0.0, 4.0], [4.0, 4.0], [0.0, 0.0]]])  # (1, 3, 2)
    area = np.array([[8.0, 8.0, 8.0]])  # (1, 3)
    mask = np.array([[[True, True], [True, False], [False, False]]])
    out = oks(d2, area, np.array([0.25, 0.25]), mask)
    assert out.shape == (1, 3)
    np.testing.assert_allclose(out[0], [(1 + math.exp(-1)) / 2, math.exp(-1), 0.0], atol=1e-15)


def test_keypoint_bbox_area():
    xy = np.array([[[1.0, 2.0], [4.0, 6.0], [100.0, 100.0]]])
    assert keypoint_bbox_area(xy, np.array([[True, True, False]]))[0] == 12.0  # 3 x 4
    assert keypoint_bbox_area(xy, np.array([[True, False, False]]))[0] == 0.0  # one joint
    assert keypoint_bbox_area(xy, np.zeros((1, 3), bool))[0] == 0.0
    assert keypoint_bbox_area(xy[:0], np.zeros((0, 3), bool)).shape == (0,)


def test_joint_sigmas():
    sig = joint_sigmas(load_skeleton("human18"))
    assert np.isfinite(sig).all() and sig.shape == (18,)
    joints = [{"name": "a", "parent": None}, {"name": "b", "parent": "a"}, {"name": "c", "parent": "a"}]
    spec = spec_from_dict({"name": "three", "joints": joints, "sigmas": [0.02, None, 0.04]})
    np.testing.assert_array_equal(joint_sigmas(spec), [0.02, 0.03, 0.04])
    bare = spec_from_dict({"name": "bare", "joints": joints[:2]})
    np.testing.assert_array_equal(joint_sigmas(bare), [DEFAULT_SIGMA, DEFAULT_SIGMA])


def test_callers_area_conventions():
    sig = np.array([0.25, 0.25])
    a = np.array([[0.0, 0.0], [30.0, 40.0]])  # keypoint box 30 x 40 = 1200 px^2
    b = a + np.array([[3.0, 4.0], [0.0, 0.0]])  # joint 0 moved by 5 px
    e = math.exp(-25.0 / (2 * 1200 * 0.25))
    # evaluation: the area is the given box area (here w * h = 1200), mask = labelled joints
    gt = np.concatenate([a, np.ones((2, 1))], axis=1)[None]
    assert eval_oks(b[None], np.ones((1, 2)), gt, np.array([1200.0]), sig)[0, 0] == pytest.approx((e + 1) / 2, abs=1e-12)
    # a labelled joint that is not predicted scores 0 but counts
    assert eval_oks(b[None], np.array([[1.0, 0.0]]), gt, np.array([1200.0]), sig)[0, 0] == pytest.approx(e / 2)
    # tracking: mean of the two areas, floored at 32^2 = 1024
    area = keypoint_bbox_area(a[None], np.ones((1, 2), bool))
    assert area[0] == 1200.0
    ok = np.ones((1, 2), bool)
    assert tracking_oks(a[None], ok, area, b[None], ok, area, sig)[0, 0] == pytest.approx((e + 1) / 2, abs=1e-15)
    small = np.array([100.0])
    e_floor = math.exp(-25.0 / (2 * 1024 * 0.25))
    assert tracking_oks(a[None], ok, small, b[None], ok, small, sig)[0, 0] == pytest.approx((e_floor + 1) / 2, abs=1e-15)
    # duplicates: the given area, floored at 1 px^2, over the joints both are confident in
    assert keypoint_similarity(a, b, np.array([True, True]), sig, 1200.0) == pytest.approx((e + 1) / 2, abs=1e-15)
    one_joint = keypoint_similarity(a, b, np.array([True, False]), sig, 0.0)  # area 0 -> 1
    assert one_joint == pytest.approx(math.exp(-25.0 / 0.5), abs=1e-15)
    assert keypoint_similarity(a, b, np.array([False, False]), sig, 1200.0) == 0.0
