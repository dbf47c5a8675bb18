"""A camera that tilts (motion.moving_floor, run by motion.finish): people walking on one flat floor, seen by a
handheld camera whose pitch and roll swing by a few degrees, stand on a floor that turns with the camera; a
camera that stands still keeps the one floor it had."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from floor_synthetic import FOCAL, turning_camera

from posetracker.analysis.held_ground import held_ground
from posetracker.depth.camera_meta import CameraFov
from posetracker.evaluation.feet_on_floor import joint_positions, motion_frames
from posetracker.export.bvh import BvhOptions, solve_person
from posetracker.motion.finish import finish_sequence
from posetracker.tracks import person_tracks

FOV = float(np.degrees(2 * np.arctan(640 / FOCAL)))  # floor_synthetic's camera (focal 1000 px, 1280 wide)


def _angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


@pytest.fixture(scope="module")
def tilting():
    t = np.arange(180) / 30.0  # pitch drifts 6 degrees and wobbles, roll swings: the feet still stand in the image
    seq, truth = turning_camera(t - 3.0 + np.sin(2 * np.pi * 0.3 * t), 1.5 * np.sin(2 * np.pi * 0.2 * t + 1.0))
    done, _ = finish_sequence(seq, CameraFov(FOV, "user"), rigid_bones=False)
    return seq, truth, done


def test_a_tilting_camera_gets_a_floor_that_turns_with_it(tilting):
    seq, truth, done = tilting
    ground = held_ground(done)
    assert ground.frame.fitted  # one floor in camera space: the ankles scatter 10+ cm and nothing was fitted
    assert ground.frame.turn is not None and ground.frame.turn.shape == (len(seq.frames), 3, 3)
    assert done.metadata["feet"]["planted"]
    normals = np.einsum("tji,j->ti", ground.frame.turn, ground.frame.rotation[1])  # each frame's own camera
    err = _angle_deg(normals, truth)
    assert np.median(err) < 0.5 and err.max() < 1.0  # degrees (the camera turns by 6 and more)


def test_the_stance_feet_stand_on_the_turned_floor(tilting):
    seq, _, done = tilting
    ground = held_ground(done)
    spec = done.skeleton
    ankles = [spec.index("left_ankle"), spec.index("right_ankle")]
    held = 0
    for tid, phases in ground.phases.items():
        world = np.stack([f.world[list(f.track_ids).index(tid)] for f in done.frames])[:, ankles]
        floor = ground.frame.world_to_floor(world, tid)  # (T, 2, 3) the person's floor at Y = 0
        stand = ground.frame.ankle_height[tid]
        for p in phases:
            seg = floor[p.start:p.stop, p.foot]
            assert np.abs(seg[:, 1] - stand).max() < 0.02  # m off standing height, every stance frame
            assert np.linalg.norm(seg[:, None] - seg[None], axis=-1).max() < 0.02  # m of slide over the phase
            held += 1
    assert held >= 15
    for a, b in zip(seq.frames, done.frames):
        np.testing.assert_allclose(a.keypoints[..., :2], b.keypoints[..., :2], atol=1e-3)  # no pixel moves


def test_a_still_camera_keeps_one_floor():
    n = 180
    seq, _ = turning_camera(np.zeros(n), np.zeros(n))
    done, _ = finish_sequence(seq, CameraFov(FOV, "user"), rigid_bones=False)
    floor = done.metadata["feet"]["floor"]
    assert floor["fitted"] and "turn" not in floor and "camera_turn" not in floor["report"]


def _bvh_stance_heights(done, ground) -> np.ndarray:
    """The BVH's stance ankles' heights above standing (m), every held phase's frames, everyone."""
    out = []
    for tid, track in person_tracks(done).items():
        motion = solve_person(track, done.skeleton, done.fps, BvhOptions(), ground)
        pos = joint_positions(motion)  # (M, J, 3) BVH metres, Y = 0 the person's floor
        feet = [motion.rig.names.index("LeftFoot"), motion.rig.names.index("RightFoot")]
        where = motion_frames(track, motion)
        for p in ground.phases[tid]:
            rows = where[p.start:p.stop]
            out.append(pos[rows[rows >= 0], feet[p.foot], 1] - ground.frame.ankle_height[tid])
        if ground.frame.turn is not None:
            assert motion.report["floor"]["turn"]["frames"] == [int(v) for v in track.frames]
    return np.concatenate(out)


def test_the_bvh_stands_each_frame_on_the_turned_floor(tilting):
    _, _, done = tilting
    ground = held_ground(done)
    held = np.abs(_bvh_stance_heights(done, ground))
    assert np.median(held) < 0.02 and np.percentile(held, 90) < 0.04  # m (1 cm noise, the rig's bones constant)
    one = dataclasses.replace(ground, frame=dataclasses.replace(ground.frame, turn=None))  # one floor frame
    assert np.median(np.abs(_bvh_stance_heights(done, one))) > 0.1  # one floor frame for every frame: 0.2 m
