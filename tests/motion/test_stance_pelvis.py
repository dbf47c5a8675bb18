"""Two standing ankles read at different heights (motion.stance_pelvis, before step 2 of motion.feet): the pelvis
takes most of the difference (its roll, its height), so the near-straight knees keep most of the bend they were read with
while both ankles still reach standing height. With the hips fixed (the feet step before) a 1 cm lift of one ankle
bent its 172-degree knee by 11 degrees and the other leg straightened to the end of its reach, its ankle still
over the floor."""

from __future__ import annotations

import numpy as np

from posetracker.analysis.stance import ContactPhase
from posetracker.motion.feet import FeetSettings, _legs, _points, stance_weights
from posetracker.motion.stance_pelvis import (
    knee_sensitivity,
    move_pelvis,
    stance_pelvis,
)

T = 40
LEGS = [(0, 1, 2), (3, 4, 5)]  # hip, knee, ankle of the left and right leg; joint 6 the body's centre
PARENTS = (6, 0, 1, 6, 3, 4, -1)
STAND = 0.06  # m, standing ankle height


def _leg(hip: np.ndarray, ahead: float, bend_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """(knee, ankle) of a leg of two 0.45 m bones from ``hip`` whose knee is ``bend_deg`` (interior angle), its
    ankle ``ahead`` m forward (Z) of the hip, the knee bent forward."""
    reach = 0.9 * np.sin(np.radians(bend_deg) / 2)  # hip -> ankle
    down = np.sqrt(reach**2 - ahead**2)
    ankle = hip + np.array([0.0, -down, ahead])
    u = (ankle - hip) / reach
    side = np.cross(u, [1.0, 0.0, 0.0])
    side = side if side[2] > 0 else -side
    out = np.sqrt(0.45**2 - (reach / 2) ** 2)
    return hip + u * reach / 2 + out * side, ankle


def _double_stance(apart: float = 0.02) -> np.ndarray:
    """(T, 7, 3) floor frame, Y up: a walker in double stance, left foot 25 cm ahead, right 25 cm behind, knees at
    172 and 170 degrees; the left ankle read ``apart`` / 2 under standing height, the right as much over it (the
    legs as read, hip to ankle, so the knees' bend is the reading's)."""
    pts = np.zeros((7, 3))
    for i, (x, ahead, bend, dy) in enumerate(((0.1, 0.25, 172.0, -apart / 2), (-0.1, -0.25, 170.0, apart / 2))):
        hip = np.array([x, 0.0, 0.0])
        knee, ankle = _leg(hip, ahead, bend)
        shift = np.array([0.0, STAND + dy - ankle[1], 0.0])
        pts[3 * i:3 * i + 3] = np.stack([hip, knee, ankle]) + shift
    pts[6] = 0.5 * (pts[0] + pts[3]) + np.array([0.0, 0.1, 0.0])
    return np.repeat(pts[None], T, axis=0)


def _knees(pts: np.ndarray) -> np.ndarray:
    """(T, 2) knee angles, degrees."""
    out = []
    for h, k, a in LEGS:
        u, v = pts[:, h] - pts[:, k], pts[:, a] - pts[:, k]
        cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
        out.append(np.degrees(np.arccos(np.clip(cos, -1, 1))))
    return np.stack(out, 1)


def _step_two(pts: np.ndarray, pelvis: bool) -> np.ndarray:
    """Step 2 of motion.feet on ``pts`` (both feet standing the whole time), the pelvis first or not."""
    phases = [ContactPhase(0, 0, T), ContactPhase(1, 0, T)]
    lam = FeetSettings().smoothness(1 / 30)
    valid = np.ones(pts.shape[:2], bool)
    if pelvis:
        w, owner = stance_weights(phases, T, 3)
        pts, _, _ = stance_pelvis(pts, PARENTS, LEGS, phases, w, owner, STAND, valid, lam)
    points = _points(pts[:, [2, 5]], phases, STAND)
    return _legs(pts, LEGS, phases, points, STAND, valid, 3, lam, 1.0)


def test_the_pelvis_not_the_knees_takes_two_standing_ankles_read_2_cm_apart():
    read = _double_stance(0.02)
    np.testing.assert_allclose(_knees(read)[0], [172.0, 170.0], atol=1e-6)
    fixed = _step_two(read, pelvis=False)  # the hips fixed: the knees take it
    moved = _step_two(read, pelvis=True)
    np.testing.assert_allclose(moved[:, [2, 5], 1], STAND, atol=2e-3)  # both ankles stand
    np.testing.assert_allclose(fixed[:, 2, 1], STAND, atol=2e-3)
    assert (fixed[:, 5, 1] > STAND + 0.004).all()  # the hips fixed: the straightened leg cannot reach the floor
    cost_fixed = np.abs(_knees(fixed) - _knees(read))
    cost_moved = np.abs(_knees(moved) - _knees(read))
    assert cost_fixed.max(0).min() > 7.0, cost_fixed.max(0)  # degrees, each knee
    # the pelvis takes most of it (2.5 / 4.8 against 10.6 / 10.0 degrees): a degree of its roll costs two of knee
    assert (cost_moved.max(0) < 0.5 * cost_fixed.max(0)).all(), (cost_moved.max(0), cost_fixed.max(0))
    assert cost_moved.max() < 5.5, cost_moved.max(0)
    # the hips keep their width and the body's centre stays over them; the legs moved with their hips
    width = np.linalg.norm(moved[:, 0] - moved[:, 3], axis=1)
    np.testing.assert_allclose(width, np.linalg.norm(read[:, 0] - read[:, 3], axis=1), atol=1e-6)
    assert moved[0, 0, 1] - read[0, 0, 1] > 0.005 and moved[0, 3, 1] - read[0, 3, 1] < -0.005  # rolled: left up


def test_ankles_at_standing_height_move_nothing():
    read = _double_stance(0.0)
    np.testing.assert_allclose(_step_two(read, pelvis=True), read, atol=1e-6)


def test_a_straight_knee_is_the_most_sensitive_and_the_roll_keeps_the_hip_width():
    read = _double_stance(0.02)
    sens = [knee_sensitivity(read[:, h], read[:, k], read[:, a])[0] for h, k, a in LEGS]
    assert sens[0] > sens[1] > 500.0  # degrees per metre: 172 degrees over 170
    d = np.full(T, 0.01)
    out = move_pelvis(read, (0, 3), ((0, 1, 2), (3, 4, 5)), np.zeros(T), d)
    np.testing.assert_allclose(out[:, 0, 1] - read[:, 0, 1], 0.01, atol=1e-9)  # left hip up 1 cm
    np.testing.assert_allclose(out[:, 3, 1] - read[:, 3, 1], -0.01, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(out[:, 0] - out[:, 3], axis=1),
                               np.linalg.norm(read[:, 0] - read[:, 3], axis=1), atol=1e-9)
    np.testing.assert_allclose(_knees(out), _knees(read), atol=1e-9)  # each leg moved as one piece
    np.testing.assert_allclose(out[:, 6], read[:, 6])  # the rest of the body does not roll
