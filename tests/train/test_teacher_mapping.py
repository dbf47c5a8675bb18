"""BlazePose-33 -> human18 mapping: one table, the centre from the skeleton's own rule."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.train.teachers.mapping import BLAZEPOSE_33, BLAZEPOSE_TO_HUMAN18, blazepose_to_human18


def test_table_covers_human18_by_name(human18):
    labelled = [human18.joint_names[j] for j in human18.labelled_joints]
    assert sorted(BLAZEPOSE_TO_HUMAN18) == sorted(labelled)
    for name, idx in BLAZEPOSE_TO_HUMAN18.items():
        assert BLAZEPOSE_33[idx] == name  # same naming on both sides
    assert len(BLAZEPOSE_33) == 33
    expected = {"nose": 0, "left_eye": 2, "right_eye": 5, "left_ear": 7, "right_ear": 8,
                "left_shoulder": 11, "right_shoulder": 12, "left_elbow": 13, "right_elbow": 14,
                "left_wrist": 15, "right_wrist": 16, "left_hip": 23, "right_hip": 24,
                "left_knee": 25, "right_knee": 26, "left_ankle": 27, "right_ankle": 28}
    assert BLAZEPOSE_TO_HUMAN18 == expected


def test_points_and_bbox_centre(human18):
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 100, (33, 2))
    vis = np.ones(33)
    vis[27] = 0.1  # left ankle not visible: left out of the centre
    out, ov = blazepose_to_human18(pts, vis, human18)
    assert out.shape == (18, 2) and ov.shape == (18,)
    for name, idx in BLAZEPOSE_TO_HUMAN18.items():
        j = human18.index(name)
        np.testing.assert_array_equal(out[j], pts[idx])
        assert ov[j] == vis[idx]
    used = [i for n, i in BLAZEPOSE_TO_HUMAN18.items() if i != 27]
    centre = human18.index("centre")
    np.testing.assert_allclose(out[centre], (pts[used].min(0) + pts[used].max(0)) / 2)
    assert ov[centre] == 1.0


def test_world_points_batch_and_no_visible(human18):
    world = np.random.default_rng(1).normal(size=(2, 33, 3))
    vis = np.ones((2, 33))
    vis[1] = 0.0
    out, ov = blazepose_to_human18(world, vis, human18)
    assert out.shape == (2, 18, 3)
    idx = [BLAZEPOSE_TO_HUMAN18[n] for n in human18.joint_names if n in BLAZEPOSE_TO_HUMAN18]
    c = human18.index("centre")
    np.testing.assert_allclose(out[0, c], (world[0, idx].min(0) + world[0, idx].max(0)) / 2)
    assert np.isnan(out[1, c]).all() and ov[1, c] == 0.0


def test_rejects_wrong_layout(human18):
    with pytest.raises(ValueError):
        blazepose_to_human18(np.zeros((17, 2)), spec=human18)
