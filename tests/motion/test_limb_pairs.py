"""Wrist and ankle pairs hang from their own elbows and knees (motion.limb_pairs): a pair read on each other's limbs
for a few frames while the body stands still is exchanged back, so the solved forearm does not swing across."""

from __future__ import annotations

import numpy as np

from posetracker.motion.limb_pairs import limbs_from_parents
from posetracker.motion.solve import solve_tracks
from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame

SPEC = load_skeleton("human18")
J = {n: SPEC.index(n) for n in SPEC.joint_names}
#: a person seen from behind, 2-D px (x right, y down): the left arm raised above the head, the right hand on the hip
POSE = {"nose": (200, 130), "left_eye": (195, 125), "right_eye": (205, 125), "left_ear": (188, 130),
        "right_ear": (212, 130), "left_shoulder": (170, 180), "right_shoulder": (230, 180),
        "left_elbow": (160, 120), "right_elbow": (265, 230), "left_wrist": (150, 65), "right_wrist": (225, 270),
        "left_hip": (180, 290), "right_hip": (220, 290), "left_knee": (178, 380), "right_knee": (222, 380),
        "left_ankle": (176, 470), "right_ankle": (224, 470), "centre": (200, 300)}


def _frames(swapped: range, pair: str = "wrist", t_len: int = 60) -> list[PoseFrame]:
    """One person standing still (a little noise), the ``pair``'s left and right labels exchanged in ``swapped``."""
    rng = np.random.default_rng(0)
    base = np.array([POSE[n] for n in SPEC.joint_names], np.float32)
    out = []
    for t in range(t_len):
        kp = np.zeros((1, SPEC.num_joints, 3), np.float32)
        kp[0, :, :2] = base + rng.normal(0, 1.0, base.shape)
        kp[0, :, 2] = 3.0
        if t in swapped:
            li, ri = J[f"left_{pair}"], J[f"right_{pair}"]
            kp[0, [li, ri]] = kp[0, [ri, li]]
        out.append(PoseFrame(t, t / 30, kp, np.full((1, SPEC.num_joints), 0.8, np.float32), np.ones(1, np.float32),
                             np.array([0]), (400, 520), world=kp / 100))
    return out


def _forearm_turns(frames: list[PoseFrame], side: str = "left") -> np.ndarray:
    """(T-1,) degrees the forearm's image direction turns a frame."""
    fore = np.array([f.keypoints[0, J[f"{side}_wrist"], :2] - f.keypoints[0, J[f"{side}_elbow"], :2] for f in frames])
    angle = np.unwrap(np.arctan2(fore[:, 1], fore[:, 0]))
    return np.degrees(np.abs(np.diff(angle)))


def test_wrists_read_on_each_others_arm_while_the_body_stands_still_are_exchanged_back():
    frames = _frames(range(20, 26))  # six frames: the raised fist read as the right wrist, the hip hand as the left
    assert _forearm_turns(solve_tracks(frames)).max() > 30  # solved as read: the forearm swings down and back
    fixed, report = limbs_from_parents(frames, SPEC)
    assert report == {0: 6}
    for t in range(60):
        np.testing.assert_allclose(fixed[t].keypoints[0, J["left_wrist"], :2], POSE["left_wrist"], atol=5)
        np.testing.assert_allclose(fixed[t].keypoints[0, J["right_wrist"], :2], POSE["right_wrist"], atol=5)
    assert _forearm_turns(solve_tracks(fixed)).max() < 5  # the forearm stands still, as the body does
    assert fixed[0] is frames[0] and frames[22].keypoints[0, J["left_wrist"], 1] > 200  # the input is not changed


def test_a_pair_that_follows_its_own_motion_stays_when_the_parents_labels_jump():
    frames = _frames(range(20, 24), pair="elbow")  # the elbows read the other way round; the wrists as they were
    fixed, report = limbs_from_parents(frames, SPEC)
    assert report == {}  # the wrists overreach from the exchanged elbows, but exchanging them breaks their motion
    assert all(a is b for a, b in zip(fixed, frames))
