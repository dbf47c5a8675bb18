"""Left and right decided once (posetracker.motion.sides): where the feet's left / right labels swap (side views
name the front foot "left"), each track's legs are exchanged back in the PoseFrames themselves; a swap the trunk
speaks against (a step in place facing the camera: the hips would cross the shoulders) is not undone, one in a side
view (the trunk says nothing) is. A live result gets the step when it is finished (motion.finish); every output
then reads the same legs (tests/motion/test_bvh_legs.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
from gait_synthetic import walker, with_frames

from posetracker.depth.camera_meta import CameraFov
from posetracker.motion.finish import finish_sequence
from posetracker.motion.sides import (
    exchange_legs,
    feet_swaps,
    leg_pairs,
    legs_against_facing,
    one_leg_each,
    trunk_checked,
    trunk_crossed,
)
from posetracker.skeletons import load_skeleton
from posetracker.tracks import PersonTrack
from posetracker.types import PoseFrame, PoseSequence

SPEC = load_skeleton("human18")
LEGS = ("hip", "knee", "ankle")


def _track(hip_dx: np.ndarray, shoulder_dx: np.ndarray) -> PersonTrack:
    """A person (T frames), hips and shoulders ``dx`` px apart (left minus right) about x = 100, torso 100 px."""
    t = len(hip_dx)
    kp = np.zeros((t, SPEC.num_joints, 3))
    j = SPEC.index
    kp[:, j("left_hip"), 0], kp[:, j("right_hip"), 0] = 100 + hip_dx / 2, 100 - hip_dx / 2
    kp[:, j("left_shoulder"), 0], kp[:, j("right_shoulder"), 0] = 100 + shoulder_dx / 2, 100 - shoulder_dx / 2
    kp[:, [j("left_hip"), j("right_hip")], 1] = 300.0
    kp[:, [j("left_shoulder"), j("right_shoulder")], 1] = 200.0
    return PersonTrack(0, np.arange(t), np.arange(t) / 30.0, np.ones(t, bool), kp, np.ones((t, SPEC.num_joints)),
                       np.zeros((t, SPEC.num_joints, 3)))


def test_facing_the_camera_the_trunk_is_informative_and_side_on_it_is_not():
    facing = _track(np.full(10, 40.0), np.full(10, 60.0))
    side = _track(np.full(10, 5.0), np.full(10, -8.0))  # overlapping: 0.05-0.08 torso lengths apart
    informative, crossed = trunk_crossed(facing, SPEC)
    assert informative.all() and not crossed.any()
    informative, crossed = trunk_crossed(side, SPEC)
    assert not informative.any() and not crossed.any()
    informative, crossed = trunk_crossed(_track(np.full(10, -40.0), np.full(10, 60.0)), SPEC)
    assert informative.all() and crossed.all()


def test_a_step_in_place_facing_the_camera_is_not_undone_a_crossed_span_is():
    t = 60
    uncrossed = _track(np.full(t, 40.0), np.full(t, 60.0))
    inf, cr = trunk_crossed(uncrossed, SPEC)
    assert trunk_checked(np.array([20, 40]), inf, cr).tolist() == []  # exchanging the legs would cross the hips
    hip = np.full(t, 40.0)
    hip[20:40] = -40.0  # the network named the hips (with the legs) the other way round from 20 to 39
    inf, cr = trunk_crossed(_track(hip, np.full(t, 60.0)), SPEC)
    assert trunk_checked(np.array([20, 40]), inf, cr).tolist() == [20, 40]
    # the first swap vetoed, the second judged with the legs as they are then (not exchanged)
    hip[20:40], hip[40:] = 40.0, -40.0
    inf, cr = trunk_crossed(_track(hip, np.full(t, 60.0)), SPEC)
    assert trunk_checked(np.array([20, 40]), inf, cr).tolist() == [40]


def test_side_on_the_feet_decide():
    side = _track(np.full(60, 5.0), np.full(60, -8.0))
    inf, cr = trunk_crossed(side, SPEC)
    assert trunk_checked(np.array([10, 30, 50]), inf, cr).tolist() == [10, 30, 50]


def _from_behind(knee_dx: np.ndarray) -> PersonTrack:
    """A person seen from behind (3 m away, T frames): left shoulder and hip on the image's left, hips 10 px apart
    (a narrow stance: the trunk check says nothing), knees ``knee_dx`` px apart (left minus right)."""
    t = len(knee_dx)
    track = _track(np.full(t, -10.0), np.full(t, -60.0))
    j = SPEC.index
    kp, world = track.keypoints.copy(), track.world.copy()
    kp[:, j("left_knee"), 0], kp[:, j("right_knee"), 0] = 100 + knee_dx / 2, 100 - knee_dx / 2
    kp[:, [j("left_knee"), j("right_knee")], 1] = 400.0
    world[..., 2] = 3.0
    world[..., :2] = (kp[..., :2] - 100) * 3.0 / 1000  # camera metres, the same layout
    return dataclasses.replace(track, keypoints=kp, world=world)


def test_from_behind_a_weight_shift_is_not_a_swap_a_crossed_span_is():
    """The fashion model standing with her back to the camera (frames 188-216): the feet read a weight shift
    as a swap and the trunk (hips 0.1 torso apart) could not veto it; the facing does: her left knee is on the
    image's left, where seen from behind it belongs, so exchanging the legs would put it on the right."""
    t = 60
    inf, against = legs_against_facing(_from_behind(np.full(t, -40.0)), SPEC)
    assert inf.all() and not against.any()
    assert trunk_checked(np.array([20, 40]), inf, against).tolist() == []
    knees = np.full(t, -40.0)
    knees[20:40] = 40.0  # the knees named the other way round from 20 to 39: a real swap, kept
    inf, against = legs_against_facing(_from_behind(knees), SPEC)
    assert trunk_checked(np.array([20, 40]), inf, against).tolist() == [20, 40]
    inf, _ = legs_against_facing(_from_behind(np.full(t, -5.0)), SPEC)  # knees together: nothing said
    assert not inf.any()


def _people(n: int = 40) -> list[PoseFrame]:
    """n frames of two tracks (ids 0 and 3) with world coordinates, every joint its own value."""
    rng = np.random.default_rng(1)
    k = SPEC.num_joints
    return [PoseFrame(100 + i, i / 30.0, rng.normal(size=(2, k, 3)).astype(np.float32),
                      rng.uniform(0.2, 1.0, (2, k)).astype(np.float32), np.ones(2, np.float32),
                      np.array([3, 0], np.int64), (640, 480), rng.normal(size=(2, k, 3)).astype(np.float32))
            for i in range(n)]


def _trunk(frames: list[PoseFrame], hips_agree: bool) -> list[PoseFrame]:
    """Track 0's hips and shoulders in 3-D: the left shoulder at +x, the left hip at +x (agree) or -x."""
    out = []
    for f in frames:
        world = f.world.copy()
        for name, x in (("left_shoulder", 0.2), ("right_shoulder", -0.2), ("left_hip", 0.1), ("right_hip", -0.1)):
            world[1, SPEC.index(name)] = (x if hips_agree or "shoulder" in name else -x, 0.0, 3.0)
        out.append(dataclasses.replace(f, world=world))
    return out


def test_the_legs_are_exchanged_in_the_frames_from_each_swap_on():
    frames = _trunk(_people(), hips_agree=False)  # the hips were named the other way round with the feet
    keep = [dataclasses.replace(f, keypoints=f.keypoints.copy()) for f in frames]
    out = exchange_legs(frames, SPEC, {0: [110, 130]})  # source frame indices: positions 10 and 30
    pairs = leg_pairs(SPEC)
    assert {(SPEC.joint_names[a], SPEC.joint_names[b]) for a, b in pairs} == {(f"left_{n}", f"right_{n}") for n in LEGS}
    left, right = zip(*pairs)
    for t, (f, o) in enumerate(zip(frames, out)):
        np.testing.assert_array_equal(o.keypoints[0], f.keypoints[0])  # track 3 (the first person) never
        for arr in ("keypoints", "confidence", "world"):
            a, b = getattr(f, arr)[1], getattr(o, arr)[1]
            if 10 <= t < 30:
                np.testing.assert_array_equal(b[list(left)], a[list(right)])
                np.testing.assert_array_equal(b[list(right)], a[list(left)])
                others = [j for j in range(SPEC.num_joints) if j not in left + right]
                np.testing.assert_array_equal(b[others], a[others])
            else:
                np.testing.assert_array_equal(b, a)
    for f, k in zip(frames, keep):
        np.testing.assert_array_equal(f.keypoints, k.keypoints)  # the input is not changed
    assert exchange_legs(frames, SPEC, {}) == frames


def test_hips_that_lie_as_the_shoulders_do_stay_where_only_the_feet_labels_swapped():
    """A side view names the front foot "left": where the hips already agree with the shoulders in 3-D, only the
    knees, ankles and feet are exchanged (exchanging the hips would turn the pelvis by half a turn)."""
    frames = _trunk(_people(), hips_agree=True)
    out = exchange_legs(frames, SPEC, {0: [110, 130]})
    hips = [SPEC.index("left_hip"), SPEC.index("right_hip")]
    below = [(SPEC.index(f"left_{n}"), SPEC.index(f"right_{n}")) for n in ("knee", "ankle")]
    for t, (f, o) in enumerate(zip(frames, out)):
        np.testing.assert_array_equal(o.world[1, hips], f.world[1, hips])
        for a, b in below:
            if 10 <= t < 30:
                np.testing.assert_array_equal(o.keypoints[1, a], f.keypoints[1, b])
            else:
                np.testing.assert_array_equal(o.keypoints[1, a], f.keypoints[1, a])


def _front_is_left(seq: PoseSequence) -> tuple[PoseSequence, int]:
    """The walk as a side-view network names it: "left" is the front foot, so the labels swap at every crossing."""
    legs = [(SPEC.index(f"left_{n}"), SPEC.index(f"right_{n}")) for n in LEGS]
    kp0 = np.stack([f.keypoints[0] for f in seq.frames])
    front_is_left = kp0[:, legs[2][0], 0] >= kp0[:, legs[2][1], 0]

    def swap(index, kp, conf):
        if not front_is_left[index]:
            for a, b in legs:
                kp[0, [a, b]] = kp[0, [b, a]]

    return with_frames(seq, swap), int(np.abs(np.diff(front_is_left.astype(int))).sum())


def _same_left(a: PoseSequence, b: PoseSequence) -> np.ndarray:
    """(T,) bool: the left ankle of ``a`` is the left ankle of ``b`` in the frame (first person, image px)."""
    la = SPEC.index("left_ankle")
    return np.array([np.allclose(f.keypoints[0, la, :2], g.keypoints[0, la, :2]) for f, g in zip(a.frames, b.frames)])


def test_a_side_view_walks_label_swaps_are_undone_once():
    w = walker()
    swapped, made = _front_is_left(w.seq)
    assert made >= 8
    frames, swaps = one_leg_each(swapped.frames, SPEC, swapped.fps)
    fixed = dataclasses.replace(swapped, frames=frames)
    assert list(swaps) == [0] and made - 1 <= len(swaps[0]) <= made
    same = _same_left(fixed, w.seq)
    if not same[:10].mean() > 0.5:  # which leg the track first calls "left" is arbitrary: the first swap decides
        same = ~same
    off = np.flatnonzero(~same)  # only where a swap is found a frame late: single frames at the crossings
    assert len(off) <= made and not (np.diff(off) == 1).any(), off
    assert feet_swaps(frames, SPEC, swapped.fps) == {}  # decided: a second look finds nothing to undo
    clean, none = one_leg_each(w.seq.frames, SPEC, w.seq.fps)
    assert none == {} and clean == w.seq.frames


def test_a_live_result_gets_one_leg_each_when_finished_an_offline_one_as_its_session_left_it():
    w = walker()
    swapped, made = _front_is_left(w.seq)
    camera = CameraFov(60.0, "user", "--fov")
    live = dataclasses.replace(swapped, metadata={"mode": "live", "source": "camera 0"})
    done, _ = finish_sequence(live, camera, rigid_bones=False)
    frames, swaps = one_leg_each(swapped.frames, SPEC, swapped.fps)
    assert done.metadata["feet_swaps"] == {"0": swaps[0]}
    assert _same_left(done, dataclasses.replace(swapped, frames=frames)).all()
    again, _ = finish_sequence(done, camera, rigid_bones=False)
    assert again is done  # finished once
    kept, _ = finish_sequence(live, camera, rigid_bones=False, fix_legs=False)  # process --no-leg-repair
    assert "feet_swaps" not in kept.metadata and _same_left(kept, swapped).all()
    offline = dataclasses.replace(swapped, metadata={"mode": "offline"})  # its session decided (or was told not to)
    as_left, _ = finish_sequence(offline, camera, rigid_bones=False)
    assert "feet_swaps" not in as_left.metadata and _same_left(as_left, swapped).all()
