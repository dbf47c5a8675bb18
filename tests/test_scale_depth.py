"""Root depth from body scale, and the guard that keeps the trained depth head inside its range."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.decoding.scale_depth import TORSO_M, depth_from_scale, guard_far_people, torso_length
from posetracker.skeletons import load_skeleton

SPEC = load_skeleton("human18")
FOCAL = 1000.0


def _person(torso_px: float, centre=(400.0, 300.0)) -> np.ndarray:
    """(K, 2) a standing figure whose mid-shoulder to mid-hip length is ``torso_px``."""
    xy = np.tile(np.asarray(centre, float), (SPEC.num_joints, 1))
    for name, dx, dy in (("left_shoulder", 0.4, -0.5), ("right_shoulder", -0.4, -0.5),
                         ("left_hip", 0.3, 0.5), ("right_hip", -0.3, 0.5)):
        xy[SPEC.index(name)] += (dx * torso_px, dy * torso_px)
    return xy


def test_depth_from_scale_uses_the_pinhole_model():
    xy = np.stack([_person(100.0), _person(50.0)])
    conf = np.ones(xy.shape[:2])
    z = depth_from_scale(xy, conf, SPEC, FOCAL)
    assert z.shape == (2, SPEC.num_joints)
    assert z[0, 0] == pytest.approx(FOCAL * TORSO_M / 100.0) and z[1, 0] == pytest.approx(2 * z[0, 0])
    assert torso_length(xy, conf, SPEC) == pytest.approx([100.0, 50.0])


def test_small_people_get_body_scale_root_depth_and_keep_the_head_relative_depths():
    # network input at 1/4 of the source: torsos of 40 and 10 px at the input, 160 and 40 px in the source
    xy_input = np.stack([_person(40.0), _person(10.0)])
    xy_source = 4 * xy_input
    conf = np.ones(xy_input.shape[:2])
    head = np.full((2, SPEC.num_joints), 5.0)
    head[:, SPEC.index("left_hip")] = 5.2  # a relative depth the guard must keep
    out = guard_far_people(head, xy_input, xy_source, conf, SPEC, FOCAL)
    assert np.array_equal(out[0], head[0]), "a person the head was trained on keeps its depth"
    far = FOCAL * TORSO_M / 40.0  # 12.5 m from the source torso
    assert out[1, SPEC.root] == pytest.approx(far)
    assert out[1, SPEC.index("left_hip")] - out[1, SPEC.root] == pytest.approx(0.2)
    unseen = conf.copy()
    unseen[:, SPEC.index("left_hip")] = 0.0  # no torso length: nothing to go on, the head stays
    assert np.array_equal(guard_far_people(head, xy_input, xy_source, unseen, SPEC, FOCAL), head)
