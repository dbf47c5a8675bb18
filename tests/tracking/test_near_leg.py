"""The side-view leg repair (posetracker.tracking.near_leg): knees and ankles handed over to the other leg."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from floor_synthetic import scene
from posetracker.tracking.near_leg import NearLegSettings, apart, repair_near_leg, repair_states, segments
from posetracker.types import PoseFrame

KNEES = ("left_knee", "right_knee")
ANKLES = ("left_ankle", "right_ankle")


def walk(heading: float = 0.0) -> list[PoseFrame]:
    """A walker across the image (heading 0: a side view, one hip 0.2 m nearer), three-quarters towards the
    camera (50) or towards it (90)."""
    start = {0.0: (-2.8, -6.0), 50.0: (-2.0, -8.0)}.get(heading, (0.0, -9.0))
    return scene(n=160, pitch_deg=8.0, roll_deg=0.0, walkers=((heading, start, 1.0),)).seq.frames


def exchanged(frames: list[PoseFrame], where: np.ndarray, pairs: tuple[tuple[str, str], ...]) -> list[PoseFrame]:
    """``frames`` with the joints of ``pairs`` exchanged (keypoints, confidence, world) in the frames ``where``."""
    spec = scene(n=2).seq.skeleton
    perm = np.arange(spec.num_joints)
    for a, b in pairs:
        perm[spec.index(a)], perm[spec.index(b)] = spec.index(b), spec.index(a)
    out = []
    for f, swap in zip(frames, where):
        if swap:
            f = dataclasses.replace(f, keypoints=f.keypoints[:, perm], confidence=f.confidence[:, perm],
                                    world=f.world[:, perm])
        out.append(f)
    return out


def handover(frames: list[PoseFrame]) -> np.ndarray:
    """(T,) bool: the labels handed over to the other leg halfway through one stride segment, and kept there over
    the next (two crossings of the real legs later they are back): as seen on a side-view walker."""
    spec = scene(n=2).seq.skeleton
    xy = np.stack([f.keypoints[0, :, :2] for f in frames])
    seg = segments(xy, np.ones(xy.shape[:2], bool), spec)
    assert seg.max() >= 4  # several strides in view (a run between two crossings of the ankles)
    first = np.flatnonzero(seg == 2)
    end = np.flatnonzero(seg == 4)[0]
    where = np.zeros(len(frames), bool)
    where[first[len(first) // 2]:end] = True
    return where


def keypoints(frames: list[PoseFrame]) -> np.ndarray:
    return np.stack([f.keypoints[0] for f in frames])


def test_a_clean_side_view_walk_is_left_alone():
    frames = walk()
    out, report = repair_near_leg(frames, scene(n=2).seq.skeleton)
    assert report == {}
    np.testing.assert_array_equal(keypoints(out), keypoints(frames))


def test_legs_handed_over_in_a_side_view_are_exchanged_back():
    frames = walk()
    where = handover(frames)
    read = exchanged(frames, where, (KNEES, ANKLES))
    spec = scene(n=2).seq.skeleton
    out, report = repair_near_leg(read, spec)
    assert abs(report[0] - where.sum()) <= 2
    kp, clean = keypoints(out), keypoints(frames)
    wrong = np.abs(kp - clean).max(axis=(1, 2)) > 1e-3
    # where the labels bounced back the ankles are close: the frames between the runs split halfway, a frame or
    # two off, the joints there within a fraction of the torso of their places
    assert wrong.sum() <= 2
    assert not (wrong & apart(clean[..., :2], np.ones(clean.shape[:2], bool), spec, 0.3)).any()
    np.testing.assert_allclose(np.stack([f.world[0] for f in out])[~wrong], np.stack([f.world[0] for f in frames])[~wrong])


def test_a_knee_alone_on_the_other_leg_is_not_a_handover():
    frames = walk()
    read = exchanged(frames, handover(frames), (KNEES,))
    out, report = repair_near_leg(read, scene(n=2).seq.skeleton)
    assert report == {}
    np.testing.assert_array_equal(keypoints(out), keypoints(read))


def test_a_walker_facing_the_camera_is_no_side_view():
    frames = walk(heading=90.0)
    read = exchanged(frames, np.arange(len(frames)) >= 60, (KNEES, ANKLES))
    spec = scene(n=2).seq.skeleton
    kp, world = keypoints(read), np.stack([f.world[0] for f in read])
    conf = np.stack([f.confidence[0] for f in read])
    assert not repair_states(kp[..., :2], world, conf, spec).any()


def test_a_walker_seen_three_quarters_keeps_the_legs_the_stride_puts_nearer():
    frames = walk(heading=50.0)  # the front foot is much nearer than the back one, whichever leg it is
    spec = scene(n=2).seq.skeleton
    assert repair_near_leg(frames, spec)[1] == {}
    # read as a side view, the stride's depths would say the legs were exchanged in every other stride
    assert repair_near_leg(frames, spec, NearLegSettings(min_turn_deg=0.0))[1]


def test_unseen_joints_and_bad_settings():
    frames = walk()
    where = handover(frames)
    read = exchanged(frames, where, (KNEES, ANKLES))
    spec = scene(n=2).seq.skeleton
    kp, world = keypoints(read), np.stack([f.world[0] for f in read])
    conf = np.stack([f.confidence[0] for f in read])
    assert repair_states(kp[..., :2], world, conf, spec).any()
    conf[:, spec.index("left_hip")] = 0.1  # the hips not seen: no side view to read
    assert not repair_states(kp[..., :2], world, conf, spec).any()
    assert repair_near_leg([], spec) == ([], {})
    no_world = [dataclasses.replace(f, world=None) for f in read]
    assert repair_near_leg(no_world, spec)[1] == {}
    with pytest.raises(ValueError):
        repair_states(kp[..., :2], world, conf, spec, NearLegSettings(min_votes=0))
    with pytest.raises(ValueError):
        repair_states(kp[..., :2], world, conf, spec, NearLegSettings(min_turn_deg=90.0))
