"""Decoding several people at once (method A step 8): encode known scenes, decode them back.

Scenes keep the same joint of two people at least 3 feature cells (12 px) apart:
closer than ~2 cells, a stride-4 heatmap cannot hold two separate peaks of one
joint. Different joints of different people may be as close as they like.
"""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.decoding import TreeDecoder, fill_virtual_joints, path_matrix
from posetracker.decoding.synthetic import ideal_outputs, make_person
from posetracker.depth import joint_depths
from posetracker.skeletons import load_skeleton

PX_TOL = 0.5
Z_TOL = 1e-3
MIN_SAME_JOINT_PX = 12.0


@pytest.fixture(scope="module")
def human():
    return load_skeleton("human18")


def full_pose(spec, people, visible=None, depth=None):
    return fill_virtual_joints(people, spec, visible, depth)


def check_scene(spec, people: np.ndarray) -> np.ndarray:
    """Assert the scene's preconditions; returns the full poses (virtual root filled)."""
    full, _ = full_pose(spec, people)
    for a in range(len(full)):
        for b in range(a + 1, len(full)):
            d = np.linalg.norm(full[a] - full[b], axis=-1)
            assert np.nanmin(d) >= MIN_SAME_JOINT_PX, f"people {a} and {b}: same joint {np.nanmin(d):.1f} px apart"
    return full


def decode(spec, people, visible=None, depth=None, **kw):
    out = ideal_outputs(people, spec, visible=visible, depth=depth)
    return TreeDecoder(spec, **kw).decode(out)


def matched(dec, truth, root):
    d = np.linalg.norm(truth[:, None, root] - dec.keypoints[None, :, root], axis=-1)
    idx = d.argmin(axis=1)
    assert sorted(idx.tolist()) == list(range(dec.num_people))
    return idx


def crossing_pair(spec):
    """Two people whose centres are 12 px apart; B's right arm reaches across A's chest."""
    a = make_person(spec, (120.0, 130.0), 180.0, pose={"left_elbow": (0.20, -0.10), "left_wrist": (0.36, -0.18)})
    b = make_person(spec, (147.5, 118.5), 140.0, angle_deg=8.0, pose={
        "right_elbow": (-0.22, -0.20), "right_wrist": (-0.42, -0.26),
        "left_knee": (0.14, 0.22), "left_ankle": (0.22, 0.44),
        "right_knee": (-0.15, 0.22), "right_ankle": (-0.20, 0.44),
    })
    return np.stack([a, b])


@pytest.mark.parametrize("assign", ["greedy", "hungarian"])
def test_two_people_crossing(human, assign):
    people = crossing_pair(human)
    full = check_scene(human, people)
    assert abs(np.linalg.norm(full[0, human.root] - full[1, human.root]) - 12.0) < 0.5
    cross = np.linalg.norm(full[0, :, None] - full[1, None, :], axis=-1)
    assert (cross < 8.0).sum() >= 3  # limbs of one pass near the other's joints
    depth = np.array([[3.0] * 18, [3.4] * 18]) + np.linspace(-0.2, 0.2, 18)
    depth[:, human.root] = np.nan
    dec = decode(human, people, depth=depth, assign=assign)
    assert dec.num_people == 2
    idx = matched(dec, full, human.root)
    _, z = full_pose(human, people, depth=depth)
    np.testing.assert_allclose(dec.keypoints[idx], full, atol=PX_TOL)
    np.testing.assert_allclose(joint_depths(dec.depth_reads, path_matrix(human))[idx], z, atol=Z_TOL)
    assert dec.confidence.min() > 0.5


def six_people(spec):
    rng = np.random.default_rng(11)
    people = []
    for i in range(6):
        col, row = i % 3, i // 3
        origin = (45.0 + 83.0 * col + rng.uniform(-4, 4), 66.0 + 122.0 * row + rng.uniform(-3, 3))
        people.append(make_person(spec, origin, rng.uniform(85.0, 112.0), angle_deg=rng.uniform(-12, 12)))
    return np.stack(people)


def test_six_people(human):
    people = six_people(human)
    full = check_scene(human, people)
    depth = np.linspace(2.0, 6.0, 6)[:, None] + np.random.default_rng(2).uniform(-0.3, 0.3, (6, 18))
    depth[:, human.root] = np.nan
    dec = decode(human, people, depth=depth)
    assert dec.num_people == 6
    idx = matched(dec, full, human.root)
    _, z = full_pose(human, people, depth=depth)
    np.testing.assert_allclose(dec.keypoints[idx], full, atol=PX_TOL)
    np.testing.assert_allclose(joint_depths(dec.depth_reads, path_matrix(human))[idx], z, atol=Z_TOL)
    assert np.all(np.diff(dec.scores) <= 0)  # strongest first
    assert TreeDecoder(human, max_people=4).decode(
        ideal_outputs(people, human)).num_people == 4


def test_person_partly_outside_the_image(human):
    inside = make_person(human, (70.0, 120.0), 160.0)
    low = make_person(human, (200.0, 186.0), 200.0)  # ankles ~22 px below the image
    left = make_person(human, (150.0, 60.0), 100.0, pose={"left_elbow": (0.30, -0.2), "left_wrist": (0.50, -0.25)})
    left[:, 0] -= 140.0  # the wrist leaves the image on the left
    people = np.stack([inside, low, left])
    visible = ((people >= 0) & (people < 256)).all(axis=-1)
    assert (~visible[1, :17]).sum() == 2 and (~visible[2, :17]).sum() >= 1
    full = check_scene(human, people)
    full, _ = full_pose(human, people, visible)
    dec = decode(human, people, visible=visible)
    assert dec.num_people == 3
    idx = matched(dec, full, human.root)
    np.testing.assert_allclose(dec.keypoints[idx], full, atol=PX_TOL)
    out = ~visible
    out[:, human.root] = False
    assert (dec.confidence[idx][out] < 0.1).all()
    assert (dec.confidence[idx][~out] > 0.5).all()


@pytest.mark.parametrize("assign", ["greedy", "hungarian"])
def test_missing_joint_does_not_steal_a_neighbours_peak(human, assign):
    """A's left wrist is unseen; B's left wrist is inside A's search window. B keeps its
    peak, A keeps its prediction with a low confidence."""
    a = make_person(human, (90.0, 128.0), 160.0, pose={"left_elbow": (0.25, -0.12), "left_wrist": (0.40, -0.10)})
    b = make_person(human, (175.0, 128.0), 150.0, pose={"left_elbow": (0.04, -0.16), "left_wrist": (-0.04, -0.08)})
    people = np.stack([a, b])
    full = check_scene(human, people)
    wrist = human.index("left_wrist")
    gap = np.linalg.norm(full[0, wrist] - full[1, wrist])
    assert gap < 20.0  # B's wrist is a tempting candidate for A
    visible = np.ones((2, 18), bool)
    visible[0, wrist] = False
    full, _ = full_pose(human, people, visible)  # A's centre: bounding box of its visible joints
    dec = decode(human, people, visible=visible, assign=assign)
    idx = matched(dec, full, human.root)
    np.testing.assert_allclose(dec.keypoints[idx], full, atol=PX_TOL)
    conf = dec.confidence[idx]
    assert conf[0, wrist] < 0.1 and conf[1, wrist] > 0.5
    # B's wrist lies inside A's search window (radius 0.3 x twice A's longest centre->first vector).
    first = list(human.first_keypoints)
    size = 2.0 * np.linalg.norm(full[0, first] - full[0, human.root], axis=-1).max() / 4.0
    assert gap / 4.0 < 0.3 * size


def test_weak_centre_and_threshold(human):
    people = np.stack([make_person(human, (80.0, 128.0), 150.0), make_person(human, (180.0, 128.0), 150.0)])
    out = ideal_outputs(people, human)
    full, _ = full_pose(human, people)
    cx, cy = np.rint(full[1, human.root] / 4).astype(int)
    out["heatmaps"][human.root, cy - 3 : cy + 4, cx - 3 : cx + 4] *= 0.05  # person 1's centre barely seen
    dec = TreeDecoder(human).decode(out)
    assert dec.num_people == 1
    np.testing.assert_allclose(dec.keypoints[0], full[0], atol=PX_TOL)
    dec = TreeDecoder(human, score_threshold=0.01).decode(out)
    assert dec.num_people == 2 and dec.scores[1] < 0.1 * dec.scores[0]


def test_a_crowd_beyond_movenets_six_is_decoded_up_to_max_people(human):
    """Issue #20: MoveNet's own decode stops at 6 people; the session's decoder takes up to the user's Max people
    (default 10): a crowd of 9 comes out whole, and the cap is the setting."""
    from posetracker.defaults import DEFAULT_MAX_PEOPLE

    xs, ys = np.meshgrid([40.0, 128.0, 216.0], [50.0, 128.0, 206.0])
    people = np.stack([make_person(human, (x, y), 60.0) for x, y in zip(xs.ravel(), ys.ravel())])
    out = ideal_outputs(people, human)
    assert DEFAULT_MAX_PEOPLE >= 9
    assert TreeDecoder(human, max_people=DEFAULT_MAX_PEOPLE).decode(out).num_people == 9
    assert TreeDecoder(human, max_people=7).decode(out).num_people == 7
