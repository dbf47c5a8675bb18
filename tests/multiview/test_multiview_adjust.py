"""posetracker.multiview.adjust: a camera whose calibrated pose disagrees with the others' fitted to the people."""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np
from test_multiview import CAMERAS, moving_body

from posetracker.multiview.adjust import adjust_poses


def _people_views(rng: np.random.Generator, noise_px: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Two people walking, seen by the true CAMERAS: xy (V, 2 T, K, 2) px (the people one after another), conf."""
    bodies = np.concatenate([moving_body(40), moving_body(40, shift=(-0.8, 1.2, 0.0))])  # (2 T, K, 3)
    xy = np.stack([c.project(bodies) for c in CAMERAS]) + rng.normal(0, noise_px, (4, 80, 17, 2))
    return xy, np.full(xy.shape[:3], 0.9)


def _moved(cam, turn_deg: float, shift_m) -> object:
    """``cam`` turned about its own y axis by ``turn_deg`` and its centre moved by ``shift_m`` (world m)."""
    turn = cv2.Rodrigues(np.array([0.0, np.radians(turn_deg), 0.0]))[0]
    r = turn @ cam.R
    return dataclasses.replace(cam, R=r, t=-r @ (cam.center + np.asarray(shift_m)))


def test_a_camera_placed_wrong_is_put_back_where_the_people_say():
    xy, conf = _people_views(np.random.default_rng(0))
    wrong = list(CAMERAS)
    wrong[2] = _moved(CAMERAS[2], 2.5, (0.08, -0.1, 0.03))  # ~20 px off (cam03 of the Pose2Sim trial: 34)
    cams, adjustments = adjust_poses(wrong, xy, conf)
    assert [a.camera for a in adjustments] == ["cam2"] and adjustments[0].kept
    a = adjustments[0]
    assert a.before_px > 15 and a.after_px < 1.5
    assert np.linalg.norm(cams[2].center - CAMERAS[2].center) < 0.01  # within 1 cm of the true camera
    assert np.allclose(cams[2].R, CAMERAS[2].R, atol=2e-3)
    assert all(cams[i] is wrong[i] for i in (0, 1, 3))


def test_cameras_that_agree_are_left_alone_and_the_first_is_never_moved():
    xy, conf = _people_views(np.random.default_rng(1))
    cams, adjustments = adjust_poses(CAMERAS, xy, conf)
    assert adjustments == [] and all(a is b for a, b in zip(cams, CAMERAS))
    wrong = [_moved(CAMERAS[0], 2.5, (0.08, -0.1, 0.03))] + list(CAMERAS[1:])
    cams, adjustments = adjust_poses(wrong, xy, conf)
    assert "cam0" not in [a.camera for a in adjustments] and cams[0] is wrong[0]
    two = adjust_poses(wrong[:2], xy[:2], conf[:2])  # no third view to check a view against
    assert two[1] == [] and two[0][1] is wrong[1]
