"""A handheld camera that tilts fast before anyone's stance feet are found (motion.camera_tilt.carry_tilt, run by
motion.moving_floor in the finishing step): the street-dance crowd's camera tilts 4.9 degrees in the 12 frames
before its first stance feet, and a floor carried across them from the frames after left people 43-76 cm above
it. Here three walkers on one floor are seen by a camera that tilts 8 degrees in its first 0.3 s (the feet move
in the image, so no stance is found there), then drifts slowly: the floor of those first frames follows the
camera, fitted to the walkers' lower ankles, and they stand on it where they are seen (carried from the frames
after, the floor is 8.6 degrees off at frame 0 and the feet step pulls the walkers' knees and ankles up to 8
degrees off their image rays onto it)."""

from __future__ import annotations

import numpy as np
import pytest
from floor_synthetic import FOCAL, turning_camera

from posetracker.analysis.held_ground import held_ground
from posetracker.depth.camera_meta import CameraFov
from posetracker.motion.finish import finish_sequence

FOV = float(np.degrees(2 * np.arctan(640 / FOCAL)))  # floor_synthetic's camera (focal 1000 px, 1280 wide)
FAST_S, FAST_DEG = 0.3, 8.0  # the first tilt: 8 degrees in 0.3 s (27 degrees a second)


@pytest.fixture(scope="module")
def fast_start():
    t = np.arange(180) / 30.0
    late = np.maximum(t - FAST_S, 0.0)  # then a slow drift with a wobble: one floor does not fit the stance feet
    pitch = np.where(t < FAST_S, FAST_DEG * (1 - t / FAST_S), 0.8 * late + 0.8 * np.sin(2 * np.pi * 0.3 * late))
    seq, truth = turning_camera(pitch)
    done, _ = finish_sequence(seq, CameraFov(FOV, "user"), rigid_bones=False)
    return seq, truth, done


def test_the_floor_follows_the_camera_before_the_first_stance_feet(fast_start):
    _, truth, done = fast_start
    ground = held_ground(done)
    assert ground.frame.fitted and ground.frame.turn is not None
    first = min(p.start for phases in ground.phases.values() for p in phases)
    assert first >= 6  # no stance feet found while the camera tilts fast
    normals = np.einsum("tji,j->ti", ground.frame.turn, ground.frame.rotation[1])  # each frame's own camera
    err = np.degrees(np.arccos(np.clip((normals * truth).sum(1), -1.0, 1.0)))
    assert err[:first].max() < 1.5  # degrees; carried from the frames after: 8.6 at frame 0
    assert np.median(err[first:]) < 0.3
    assert done.metadata["feet"]["floor"]["report"]["camera_turn"]["carried_frames"] >= first


def test_the_walkers_stand_on_that_floor_on_their_image(fast_start):
    seq, _, done = fast_start
    ground = held_ground(done)
    first = min(p.start for phases in ground.phases.values() for p in phases)
    spec = done.skeleton
    ankles = [spec.index("left_ankle"), spec.index("right_ankle")]
    for tid in ground.phases:
        world = np.stack([f.world[list(f.track_ids).index(tid)] for f in done.frames])[:, ankles]
        height = ground.frame.world_to_floor(world)[:first, :, 1].min(1) - ground.frame.ankle_height[tid]
        assert np.abs(height).max() < 0.08  # m, the lower ankle over the frames before the first stance feet
    for a, b in zip(seq.frames[:first], done.frames[:first]):  # stood on the floor along their rays, not across
        cos = (a.world * b.world).sum(-1) / np.linalg.norm(a.world, axis=-1) / np.linalg.norm(b.world, axis=-1)
        assert np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))).max() < 1.5  # carried: knees and ankles 8 degrees off
