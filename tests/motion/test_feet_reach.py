"""A held ankle reached by a leg of constant bones (motion.feet, step 2): the knee on the circle that keeps the thigh
and shin their lengths, and a point beyond the straight leg's reach reached as far as it goes (the shin used to
stretch to it, so the world's shins changed length frame to frame and a rig of constant bones, the BVH's, missed
the held ankle)."""

from __future__ import annotations

import numpy as np

from posetracker.analysis.stance import ContactPhase
from posetracker.motion.feet import TURN_DEG, FeetSettings, _knee, _legs

T = 60
LEGS = [(0, 1, 2), (3, 4, 5)]  # hip, knee, ankle of the left and right leg


def _standing() -> np.ndarray:
    """(T, 6, 3) floor-frame m: two near-straight legs of 0.45 m bones, ankles 6 cm up, standing still."""
    one = np.array([[0.1, 0.96, 0.0], [0.1, 0.51, 0.01], [0.1, 0.06, 0.0],
                    [-0.1, 0.96, 0.0], [-0.1, 0.51, 0.01], [-0.1, 0.06, 0.0]])
    return np.repeat(one[None], T, axis=0)


def _lengths(pts: np.ndarray) -> np.ndarray:
    """(T, 4) thigh and shin of each leg."""
    return np.stack([np.linalg.norm(pts[:, b] - pts[:, a], axis=1) for h, k, an in LEGS for a, b in ((h, k), (k, an))],
                    axis=1)


def test_a_point_beyond_the_straight_leg_is_reached_as_far_as_it_goes_and_no_bone_stretches():
    pts = _standing()
    for point, beyond in (([0.1, 0.06, 0.15], True), ([0.1, 0.08, 0.03], False)):  # 15 cm forward: 1.2 cm too far
        point = np.array([point])
        out = _legs(pts, LEGS, [ContactPhase(0, 10, 50)], point, 0.06, np.ones((T, 6), bool), 3,
                    FeetSettings().smoothness(1 / 30), 1.0)
        np.testing.assert_allclose(_lengths(out), _lengths(pts), atol=1e-6)  # every bone keeps its length
        np.testing.assert_array_equal(out[:, 3:], pts[:, 3:])  # the other leg and the hips stay
        ankle = out[20:40, 2]
        if beyond:  # the straight leg's end, pointing at the point
            hip = out[20:40, 0]
            reach = np.linalg.norm(ankle - hip, axis=1)
            np.testing.assert_allclose(reach, _lengths(pts)[0, :2].sum(), atol=1e-6)
            to_point = (point - hip) / np.linalg.norm(point - hip, axis=1, keepdims=True)
            np.testing.assert_allclose((ankle - hip) / reach[:, None], to_point, atol=2e-3)
        else:
            assert np.abs(ankle - point).max() < 1e-3  # m: on the point


def test_the_knee_keeps_both_bones_and_bends_the_way_it_bent():
    hip, knee, ankle = (np.array([p]) for p in ([0.0, 1.0, 0.0], [0.0, 0.55, 0.05], [0.0, 0.1, 0.0]))
    l1, l2 = np.linalg.norm(knee - hip), np.linalg.norm(ankle - knee)
    near = np.array([[0.0, 0.2, 0.0]])  # 10 cm nearer the hip: the knee bends further
    k, a = _knee(hip, knee, near, ankle)
    np.testing.assert_allclose(a, near)
    np.testing.assert_allclose([np.linalg.norm(k - hip), np.linalg.norm(a - k)], [l1, l2], atol=1e-9)
    assert k[0, 2] > 0.05
    far = np.array([[0.0, -0.5, 0.3]])
    k, a = _knee(hip, knee, far, ankle)
    np.testing.assert_allclose([np.linalg.norm(k - hip), np.linalg.norm(a - k)], [l1, l2], atol=1e-6)
    np.testing.assert_allclose((a - hip) / np.linalg.norm(a - hip), (far - hip) / np.linalg.norm(far - hip), atol=1e-9)


def test_a_straight_leg_lifted_does_not_snap_its_knee_round():
    """A swinging ankle under standing height on a near-straight leg is lifted to it (step 2); the knee read 3 cm
    out, its bend plane turning 70 degrees a frame (a straight leg's plane is noise), must go 15 cm out: its plane
    turns at most TURN_DEG a frame (along the plane as read it stepped 22 cm a frame)."""
    t = 12
    pts = np.repeat(_standing()[:1], t, axis=0)  # hips 0.96 m up, ankles at standing height 0.06
    turn = np.radians(np.arange(t) * 70.0)
    pts[:, 1] = [0.1, 0.51, 0.0] + 0.03 * np.stack([np.sin(turn), np.zeros(t), np.cos(turn)], axis=1)
    pts[:, 2, 1] = 0.01  # the left ankle 5 cm under standing height: the leg 0.2 cm short of straight
    out = _legs(pts, LEGS, [], np.zeros((0, 3)), 0.06, np.ones((t, 6), bool), 3, FeetSettings().smoothness(1 / 30),
                1.0)
    np.testing.assert_allclose(out[:, 2, 1], 0.06, atol=1e-9)  # lifted to standing height
    np.testing.assert_allclose(_lengths(out)[:, :2], _lengths(pts)[:, :2], atol=1e-6)
    knee = out[:, 1] - out[:, 0]
    bend = knee - knee[:, 1:2] * [0.0, 1.0, 0.0]  # the leg's line is vertical: the bend is the knee's X, Z
    assert np.linalg.norm(bend, axis=1).min() > 0.14
    cos = (bend[1:] * bend[:-1]).sum(1) / np.linalg.norm(bend[1:], axis=1) / np.linalg.norm(bend[:-1], axis=1)
    assert np.degrees(np.arccos(np.clip(cos, -1, 1))).max() <= TURN_DEG + 1e-6
    assert np.linalg.norm(np.diff(out[:, 1], axis=0), axis=1).max() < 0.1  # m a frame
