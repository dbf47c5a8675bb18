"""Root depth from body scale (the pinhole model on the torso, or the shoulder / hip width)."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.depth.scale_depth import DEFAULT_DEPTH_M, SHOULDER_WIDTH_M, TORSO_M, depth_from_scale
from posetracker.skeletons import load_skeleton

SPEC = load_skeleton("human18")
FOCAL = 1000.0


def _person(torso_px: float, centre=(400.0, 300.0)) -> np.ndarray:
    """(K, 2) a standing figure whose mid-shoulder to mid-hip length is ``torso_px`` (shoulders 0.8 torso wide)."""
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
    assert np.all(z[0] == z[0, 0]), "each person is flat at its root depth"


def test_depth_from_scale_falls_back_to_the_shoulders_then_the_default():
    xy = _person(100.0)[None]
    conf = np.ones(xy.shape[:2])
    conf[0, SPEC.index("left_hip")] = 0.0  # torso unseen -> shoulder width (80 px)
    assert depth_from_scale(xy, conf, SPEC, FOCAL)[0, 0] == pytest.approx(FOCAL * SHOULDER_WIDTH_M / 80.0)
    assert depth_from_scale(xy, np.zeros_like(conf), SPEC, FOCAL)[0, 0] == pytest.approx(DEFAULT_DEPTH_M)
