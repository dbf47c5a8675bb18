"""Left / right swaps judged against a truth that is not the track's own labels (posetracker.evaluation.side_swaps)."""

from __future__ import annotations

import numpy as np

from posetracker.evaluation.side_swaps import (
    PAIRS,
    RIGHT,
    SWAPPED,
    UNDECIDED,
    eye_verdicts,
    reference_sides,
    summary,
    view_verdicts,
)
from posetracker.skeletons import load_skeleton

SPEC = load_skeleton("human18")


def upright(t: int, mirrored: bool = False) -> np.ndarray:
    """(t, K, 2) px of a person facing the camera (their left on the image's right), arms and legs apart;
    mirrored: every pair's labels exchanged."""
    x = {"shoulder": 40, "elbow": 60, "wrist": 70, "hip": 25, "knee": 30, "ankle": 35, "eye": 8, "ear": 15}
    y = {"shoulder": 100, "elbow": 150, "wrist": 200, "hip": 200, "knee": 280, "ankle": 360, "eye": 60, "ear": 62}
    out = np.zeros((t, SPEC.num_joints, 2))
    for k, name in enumerate(SPEC.joint_names):
        side, _, part = name.partition("_")
        s = {"left": 1, "right": -1}.get(side, 0) * (-1 if mirrored else 1)
        out[:, k] = (300 + s * x.get(part, 0), y.get(part, 150 if name == "centre" else 55))
    return out


def test_eye_facing_and_from_behind() -> None:
    xy = np.concatenate([upright(3), upright(3, mirrored=True)])
    seen = np.ones(xy.shape[:2], bool)
    facing = np.array([1, 1, 1, -1, -1, -1])  # the same drawing: right facing the camera, right from behind
    v = eye_verdicts(xy, seen, facing, SPEC)
    assert (v[:3] == RIGHT).all() and (v[3:] == RIGHT).all()
    v = eye_verdicts(xy, seen, -facing, SPEC)
    assert (v == SWAPPED).all()


def test_eye_limb_follows_its_own_trunk() -> None:
    xy = upright(4)
    e, w = SPEC.index("left_elbow"), SPEC.index("right_elbow")
    xy[2:, [e, w]] = xy[2:, [w, e]]  # the elbows' labels exchanged in frames 2-3
    v = eye_verdicts(xy, np.ones(xy.shape[:2], bool), np.ones(4), SPEC)
    g = PAIRS.index("elbow")
    assert (v[:2, g] == RIGHT).all() and (v[2:, g] == SWAPPED).all()
    assert (v[:, PAIRS.index("wrist")] == RIGHT).all()  # judged against the true elbows, not the elbows' labels
    assert (v[:, PAIRS.index("shoulder")] == RIGHT).all()
    s = summary(v, np.ones(4, bool))
    assert s["arms"]["swapped"] == 2 and s["arms"]["events"] == 1 and s["legs"]["swapped"] == 0


def test_eye_side_view_and_unmarked_are_undecided() -> None:
    xy = upright(2)
    xy[:, :, 0] = 300 + 0.05 * (xy[:, :, 0] - 300)  # turned side-on: every pair on top of each other
    v = eye_verdicts(xy, np.ones(xy.shape[:2], bool), np.array([1, 0]), SPEC)
    assert (v == UNDECIDED).all()


def body3d(t: int, facing_y: float = -1.0) -> np.ndarray:
    """(t, K, 3) world metres (z up) of a person facing along y = ``facing_y``, left and right labelled right."""
    out = np.zeros((t, SPEC.num_joints, 3))
    half = {"shoulder": 0.18, "elbow": 0.22, "wrist": 0.24, "hip": 0.12, "knee": 0.11, "ankle": 0.1, "eye": 0.03,
            "ear": 0.07}
    height = {"shoulder": 1.4, "elbow": 1.15, "wrist": 0.9, "hip": 0.95, "knee": 0.5, "ankle": 0.1, "eye": 1.6,
              "ear": 1.58, "nose": 1.57}
    for k, name in enumerate(SPEC.joint_names):
        side, _, part = name.partition("_")
        s = {"left": 1, "right": -1}.get(side, 0)
        # facing -y, the person's left is +x (left = up x forward)
        x = s * half.get(part, 0.0) * (-facing_y)
        fwd = 0.1 if name == "nose" else 0.0
        out[:, k] = (x, fwd * facing_y, height.get(part, height.get(name, 1.2)))
    return out + np.random.default_rng(0).normal(0, 0.002, out.shape)


def test_reference_sides_from_the_head() -> None:
    xyz = body3d(12)
    ref = reference_sides(xyz, SPEC)
    np.testing.assert_allclose(ref[:, :17], xyz[:, :17])  # labelled right: unchanged
    mirrored = xyz[:, SPEC.mirror_index]
    ref = reference_sides(mirrored, SPEC)
    for pair in PAIRS:
        i = SPEC.index(f"left_{pair}")
        np.testing.assert_allclose(ref[:, i], xyz[:, i])  # the labels the triangulation swapped are undone


def test_view_verdicts_against_projected_truth() -> None:
    truth = upright(3)
    seen = np.ones(truth.shape[:2], bool)
    v = view_verdicts(truth, seen, truth, SPEC)
    assert (v == RIGHT).all()
    v = view_verdicts(upright(3, mirrored=True), seen, truth, SPEC)
    assert (v == SWAPPED).all()
