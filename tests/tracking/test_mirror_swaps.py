"""Left/right consistency in the tracker (tracking/mirror.py): a misread side is swapped back, real motion is not."""

from __future__ import annotations

import dataclasses

import numpy as np

from posetracker.tracking import PoseTracker
from posetracker.tracking.mirror import count_swaps, crossed_pairs, mirror_pairs
from posetracker.train.metrics import sequence_tracks
from posetracker.types import PoseSequence
from test_tracking import SPEC, make_frame, person

PAIRS = mirror_pairs(SPEC)

J = {name: i for i, name in enumerate(SPEC.joint_names)}


def swap(xy: np.ndarray, *names: str) -> np.ndarray:
    """xy (K, 2) with the named joints traded with their mirrors."""
    out = xy.copy()
    for n in names:
        a, b = J[n], SPEC.mirror_index[J[n]]
        out[[a, b]] = xy[[b, a]]
    return out


def run(poses: list[np.ndarray], **kw) -> tuple[PoseSequence, PoseTracker]:
    tracker = PoseTracker(SPEC, **kw)
    frames = [tracker.update(make_frame(i, [p])) for i, p in enumerate(poses)]
    return PoseSequence(frames, 30.0, SPEC), tracker


def walking(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [person(200 + 4 * i, 300, rng, noise=1.0) for i in range(n)]


def test_mirror_pairs_of_human18():
    pairs = {(SPEC.joint_names[a], SPEC.joint_names[b]) for a, b in mirror_pairs(SPEC)}
    assert ("left_knee", "right_knee") in pairs and ("left_shoulder", "right_shoulder") in pairs
    assert len(pairs) == 8


def test_a_misread_frame_is_swapped_back():
    poses = walking(20)
    truth = [p.copy() for p in poses]
    poses[10] = swap(poses[10], "left_knee", "left_ankle")  # one frame, both legs read the other way
    poses[14] = swap(poses[14], "left_shoulder")
    seq, tracker = run(poses)
    assert tracker.swaps_fixed == 3
    for f, t in zip(seq.frames, truth):
        np.testing.assert_allclose(f.keypoints[0, :, :2], t, atol=1e-3)
    d = sequence_tracks(seq)
    assert count_swaps(d["xy"], d["ok"], PAIRS)[0] == 0


def test_without_the_fix_the_swap_is_counted():
    poses = walking(20)
    poses[10] = swap(poses[10], "left_knee")
    seq, tracker = run(poses, fix_swaps=False)
    assert tracker.swaps_fixed == 0
    d = sequence_tracks(seq)
    swaps, frames = count_swaps(d["xy"], d["ok"], PAIRS)
    assert swaps == 2 and frames >= 18  # into the misread frame and out of it


def test_a_body_turning_and_legs_crossing_are_left_alone():
    """A person turning round (left and right trade image sides over 20 frames) and ankles passing each other
    in a stride: real motion the prediction follows, never swapped."""
    rng = np.random.default_rng(1)
    base = person(300, 300, rng, noise=0.0)
    poses = []
    for i in range(40):
        p = base.copy()
        c = np.cos(np.pi * min(i, 20) / 20)  # 1 -> -1: the body turns by 180 degrees
        p[:, 0] = 300 + (base[:, 0] - 300) * c
        phase = np.sin(2 * np.pi * i / 16)  # stride: the ankles swing past each other
        p[J["left_ankle"], 0] = 300 + 40 * phase
        p[J["right_ankle"], 0] = 300 - 40 * phase
        poses.append(p + rng.normal(0, 0.5, p.shape))
    seq, tracker = run(poses)
    assert tracker.swaps_fixed == 0
    for f, p in zip(seq.frames, poses):
        np.testing.assert_allclose(f.keypoints[0, :, :2], p, atol=1e-3)


def test_close_pairs_do_not_trade_on_noise():
    det = np.zeros((1, SPEC.num_joints, 2))
    ref = det.copy()
    det[0, J["left_eye"]], det[0, J["right_eye"]] = (101, 100), (99, 100)  # crossed, but 2 px apart
    ref[0, J["left_eye"]], ref[0, J["right_eye"]] = (99, 100), (101, 100)
    det[0, J["left_ankle"]], ref[0, J["left_ankle"]] = (100, 300), (100, 300)  # a tall person
    ok = np.ones(det.shape[:2], bool)
    assert not crossed_pairs(det, ok, ref, ok, mirror_pairs(SPEC)).any()


def test_the_refined_reading_takes_the_tracked_sides():
    """The precision stage's reading of a person (the output) has its knees the other way round from the
    tracked bottom-up reading (what the tracker's swap repair saw): same_sides swaps them back, joints,
    confidences and world together, and leaves an agreeing reading as it is."""
    from posetracker.tracking.mirror import same_sides

    rng = np.random.default_rng(0)
    tracked = make_frame(0, [person(200, 300, rng, noise=0.0)])
    xy = tracked.keypoints[0, :, :2].astype(np.float64)
    refined_xy = swap(xy + 1.0, "left_knee")
    conf = np.linspace(0.5, 0.9, SPEC.num_joints).astype(np.float32)
    refined = dataclasses.replace(
        tracked, keypoints=np.concatenate([refined_xy[None], tracked.keypoints[..., 2:]], -1).astype(np.float32),
        confidence=conf[None], world=np.arange(SPEC.num_joints * 3, dtype=np.float32).reshape(1, -1, 3))
    out = same_sides(refined, tracked, PAIRS)
    np.testing.assert_allclose(out.keypoints[0, :, :2], xy + 1.0, atol=1e-4)
    lk, rk = J["left_knee"], J["right_knee"]
    assert out.confidence[0, lk] == conf[rk] and out.world[0, lk, 0] == refined.world[0, rk, 0]
    assert same_sides(out, tracked, PAIRS) is out  # nothing crossed: the same frame back


def test_against_a_reference_a_one_frame_crossing_is_no_swap_and_a_misread_is_one():
    """The ankles trade image places within one frame: the frame-to-frame count takes it for a swap; against a
    reference that reads the same crossing it is none; a reading crossed against the reference is one."""
    from posetracker.train.metrics import crossed_against, crossed_onsets

    def onsets(pred, ok, ref):
        return crossed_onsets(*crossed_against(pred, ok, ref, ok, PAIRS))

    rng = np.random.default_rng(2)
    base = person(300, 300, rng, noise=0.0)
    la, ra = J["left_ankle"], J["right_ankle"]
    ref = np.repeat(base[None, None], 12, axis=0)  # (T, 1, K, 2)
    ref[:, 0, la, 0], ref[:, 0, ra, 0] = 280.0, 320.0
    ref[6:, 0, la, 0], ref[6:, 0, ra, 0] = 320.0, 280.0  # a fast step: crossed within frame 5 -> 6
    ok = np.ones(ref.shape[:3], bool)
    assert count_swaps(ref, ok, PAIRS)[0] == 1
    assert onsets(ref, ok, ref) == 0
    misread = ref.copy()
    misread[8:10, 0, [la, ra]] = ref[8:10, 0, [ra, la]]  # two frames read the other way round
    assert onsets(misread, ok, ref) == 1
