"""The legs' swap repair listens to the trunk: a swap the feet found is undone only where the hips, exchanged with
the legs, would not cross the shoulders (steps in place read as swaps), and kept where the trunk says nothing
(side views)."""

from __future__ import annotations

import numpy as np

from posetracker.analysis.leg_swaps import swap_legs, trunk_checked, trunk_crossed
from posetracker.skeletons import load_skeleton
from posetracker.tracks import PersonTrack

SPEC = load_skeleton("human18")


def _track(hip_dx: np.ndarray, shoulder_dx: np.ndarray) -> PersonTrack:
    """A person (T frames) with the hips and shoulders ``dx`` px apart (left minus right) about x = 100, torso 100 px."""
    t = len(hip_dx)
    kp = np.zeros((t, SPEC.num_joints, 3))
    j = SPEC.index
    kp[:, j("left_hip"), 0], kp[:, j("right_hip"), 0] = 100 + hip_dx / 2, 100 - hip_dx / 2
    kp[:, j("left_shoulder"), 0], kp[:, j("right_shoulder"), 0] = 100 + shoulder_dx / 2, 100 - shoulder_dx / 2
    kp[:, [j("left_hip"), j("right_hip")], 1] = 300.0
    kp[:, [j("left_shoulder"), j("right_shoulder")], 1] = 200.0
    return PersonTrack(0, np.arange(t), np.arange(t) / 30.0, np.ones(t, bool), kp, np.ones((t, SPEC.num_joints)),
                       np.zeros((t, SPEC.num_joints, 3)))


def test_facing_the_camera_the_trunk_is_informative_and_side_on_it_is_not():
    facing = _track(np.full(10, 40.0), np.full(10, 60.0))
    side = _track(np.full(10, 5.0), np.full(10, -8.0))  # overlapping: 0.05-0.08 torso lengths apart
    informative, crossed = trunk_crossed(facing, SPEC)
    assert informative.all() and not crossed.any()
    informative, crossed = trunk_crossed(side, SPEC)
    assert not informative.any() and not crossed.any()
    informative, crossed = trunk_crossed(_track(np.full(10, -40.0), np.full(10, 60.0)), SPEC)
    assert informative.all() and crossed.all()


def test_a_step_in_place_facing_the_camera_is_not_undone_a_crossed_span_is():
    t = 60
    uncrossed = _track(np.full(t, 40.0), np.full(t, 60.0))
    inf, cr = trunk_crossed(uncrossed, SPEC)
    assert trunk_checked(np.array([20, 40]), inf, cr).tolist() == []  # exchanging the legs would cross the hips
    hip = np.full(t, 40.0)
    hip[20:40] = -40.0  # the network named the hips (with the legs) the other way round from 20 to 39
    inf, cr = trunk_crossed(_track(hip, np.full(t, 60.0)), SPEC)
    assert trunk_checked(np.array([20, 40]), inf, cr).tolist() == [20, 40]
    # the first swap vetoed, the second judged with the legs as they are then (not exchanged)
    hip[20:40], hip[40:] = 40.0, -40.0
    inf, cr = trunk_crossed(_track(hip, np.full(t, 60.0)), SPEC)
    assert trunk_checked(np.array([20, 40]), inf, cr).tolist() == [40]


def test_side_on_the_feet_decide():
    side = _track(np.full(60, 5.0), np.full(60, -8.0))
    inf, cr = trunk_crossed(side, SPEC)
    assert trunk_checked(np.array([10, 30, 50]), inf, cr).tolist() == [10, 30, 50]
    # the swapped legs are exchanged from each kept swap on, as before
    out = swap_legs(side, SPEC, np.array([10, 30]))
    lh, rh = SPEC.index("left_hip"), SPEC.index("right_hip")
    np.testing.assert_array_equal(out.keypoints[10:30, lh], side.keypoints[10:30, rh])
    np.testing.assert_array_equal(out.keypoints[30:, lh], side.keypoints[30:, lh])
