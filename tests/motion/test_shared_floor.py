"""One camera sees one floor (motion.shared_floor, run by motion.finish): two people whose depths are read with
different errors are each scaled about the camera's centre so that both stand on one floor; the pixels stay."""

from __future__ import annotations

import numpy as np
import pytest
from floor_synthetic import STATURE, scene

from posetracker.analysis.stature import stature
from posetracker.depth.camera_meta import CameraFov
from posetracker.motion.finish import finish_sequence
from posetracker.motion.heights import Heights
from posetracker.motion.shared_floor import scale_to_floor

FOV = float(np.degrees(2 * np.arctan(640 / 1000)))  # floor_synthetic's camera (focal 1000 px, 1280 wide)
DEPTH_SCALE = 0.75  # walker 1 read at 3/4 of their distance (and size): their floor 35 cm above walker 0's


@pytest.fixture(scope="module")
def two_walkers():
    return scene(n=150, walkers=((35.0, (-1.6, -5.0), 1.0), (-20.0, (1.0, -6.5), DEPTH_SCALE))).seq


def _statures(seq) -> list[float]:
    out = []
    for tid in (0, 1):
        world = np.stack([f.world[list(f.track_ids).index(tid)] for f in seq.frames])
        out.append(stature(world, np.ones(world.shape[:2], bool), seq.skeleton))
    return out


def test_two_people_read_at_different_depths_stand_on_one_floor(two_walkers):
    done, _ = finish_sequence(two_walkers, CameraFov(FOV, "user"), rigid_bones=False)
    floors = done.metadata["feet"]["floor"]["person_floor"]
    assert abs(floors["0"] - floors["1"]) < 0.01  # m (the old finishing step: 0.35 apart)
    scales = {int(k): p["scale"] for k, p in done.metadata["shared_floor"]["people"].items()}
    assert scales[1] / scales[0] == pytest.approx(1 / DEPTH_SCALE, rel=0.02)
    assert scales[0] * scales[1] == pytest.approx(1.0, abs=0.01)  # the gauge: the product of the scales is 1
    tall = _statures(done)
    assert tall[0] == pytest.approx(tall[1], rel=0.02)  # the same walker, read alike
    assert done.metadata["people"]["1"]["floor_scale"] == pytest.approx(scales[1], abs=1e-4)
    assert done.metadata["people"]["1"]["stature_m"] == pytest.approx(tall[1], rel=0.01)
    for a, b in zip(two_walkers.frames, done.frames):
        np.testing.assert_allclose(a.keypoints[..., :2], b.keypoints[..., :2], atol=1e-3)  # no pixel moves


def test_a_given_height_fixes_that_persons_scale_and_sizes_the_other(two_walkers):
    done, _ = finish_sequence(two_walkers, CameraFov(FOV, "user"), rigid_bones=False,
                              heights=Heights(per_track={0: round(STATURE, 3)}))
    assert done.metadata["shared_floor"]["people"]["0"]["scale"] == 1.0
    assert "heights given" in done.metadata["shared_floor"]["gauge"]
    assert _statures(done) == pytest.approx([STATURE, STATURE], rel=0.02)  # walker 1 read 25 % small before
    floors = done.metadata["feet"]["floor"]["person_floor"]
    assert abs(floors["0"] - floors["1"]) < 0.01


def test_one_person_or_a_calibrated_floor_is_left_as_it_is(two_walkers):
    one = scene(n=150).seq
    out, report = scale_to_floor(one)
    assert out is one and not report["scaled"] and "shared_floor" not in (out.metadata or {})
    calibrated = two_walkers.__class__(two_walkers.frames, two_walkers.fps, two_walkers.skeleton,
                                       {**two_walkers.metadata, "floor": {"source": "test"}})
    out, report = scale_to_floor(calibrated)
    assert out is calibrated and not report["scaled"]


def test_people_held_on_their_own_floors_are_scaled_onto_one_and_the_held_feet_follow(two_walkers):
    """keep_one_floor after the feet step: each person scaled onto the feet step's shared floor, and the floor, the
    ankle heights and the held points of metadata["feet"] moved with them (what every export reads)."""
    from posetracker.analysis.held_ground import held_ground
    from posetracker.motion.feet import plant_feet
    from posetracker.motion.shared_floor import keep_one_floor

    planted, _ = plant_feet(two_walkers)  # each on their own floor, 0.36 m apart
    assert abs(planted.metadata["feet"]["floor"]["person_floor"]["1"]) > 0.3
    out = keep_one_floor(planted, {"scaled": True, "people": {"0": {"scale": 1.0}, "1": {"scale": 1.0}}})
    floor = out.metadata["feet"]["floor"]
    assert abs(floor["person_floor"]["0"] - floor["person_floor"]["1"]) < 1e-6
    scales = out.metadata["shared_floor"]["people"]
    assert scales["1"]["scale"] / scales["0"]["scale"] == pytest.approx(1 / DEPTH_SCALE, rel=0.02)
    ground = held_ground(out)
    spec = out.skeleton
    for tid, phases in ground.phases.items():
        points = out.metadata["feet"]["people"][str(tid)]["phases"]
        for p, held in zip(phases, points):
            ankle = spec.index(("left_ankle", "right_ankle")[p.foot])
            mid = (p.start + p.stop) // 2
            world = out.frames[mid].world[list(out.frames[mid].track_ids).index(tid), ankle]
            at = ground.frame.to_person_floor(world, tid)
            np.testing.assert_allclose(at, held["point_m"], atol=0.01)  # m: the held point is where the ankle is
            assert at[1] == pytest.approx(ground.frame.ankle_height[tid], abs=0.01)


def _held_off(seq) -> float:
    """Metres the farthest stance ankle (mid-phase) lies from the point its phase holds (``metadata["feet"]``)."""
    from posetracker.analysis.held_ground import held_ground

    ground, spec, worst = held_ground(seq), seq.skeleton, 0.0
    for tid, phases in ground.phases.items():
        for p, held in zip(phases, seq.metadata["feet"]["people"][str(tid)]["phases"]):
            fr = seq.frames[(p.start + p.stop) // 2]
            world = fr.world[list(fr.track_ids).index(tid), spec.index(("left_ankle", "right_ankle")[p.foot])]
            worst = max(worst, float(np.abs(ground.frame.to_person_floor(world, tid) - held["point_m"]).max()))
    return worst


def test_a_height_given_to_a_finished_result_moves_its_held_feet_and_the_people_on_its_floor(two_walkers):
    """``posetracker export --height`` on a finished result (motion.heights.apply_heights): the feet step's record
    moves with the people scaled (the old code left it: a single walker's stance ankles 6 cm off the floor every
    export stands them on), and the people sharing the floor follow the one given a height."""
    from posetracker.motion.heights import apply_heights

    one, _ = finish_sequence(scene(n=150).seq, CameraFov(FOV, "user"), rigid_bones=False)
    assert _held_off(one) < 0.01
    taller, _ = apply_heights(one, Heights(everyone=1.9))
    assert _held_off(taller) < 0.01  # m
    assert taller.metadata["feet"]["floor"]["person_floor"]["0"] == pytest.approx(0.0, abs=1e-6)
    done, _ = finish_sequence(two_walkers, CameraFov(FOV, "user"), rigid_bones=False)
    given, _ = apply_heights(done, Heights(per_track={0: round(STATURE, 3)}))
    assert _statures(given) == pytest.approx([STATURE, STATURE], rel=0.02)  # walker 1 follows walker 0
    floors = given.metadata["feet"]["floor"]["person_floor"]
    assert floors["0"] == pytest.approx(floors["1"], abs=0.01) and _held_off(given) < 0.01
