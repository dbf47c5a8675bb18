"""People's heights (issue #48): a given stature puts that person in true metres along the camera's rays; every
person's stature and bones are reported with where they came from; process, export and batch take it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from floor_synthetic import STATURE, scene
from posetracker.analysis.stature import stature
from posetracker.motion.heights import HeightError, Heights, apply_heights, parse_heights
from sample_clips import short_clip


def test_heights_are_read_for_everyone_or_per_track():
    assert parse_heights("1.72") == Heights(1.72)
    assert parse_heights(" 0=1.72, 1=1.40 ,*=1.6") == Heights(1.6, {0: 1.72, 1: 1.40})
    assert parse_heights(None) == Heights() and not parse_heights("")
    assert parse_heights("0=1.8").of(0) == 1.8 and parse_heights("0=1.8").of(3) is None
    for bad, words in (("172", "not 172 cm"), ("tall", "expected metres"), ("x=1.7", "not a track id"),
                       ("nan", "not a number")):
        with pytest.raises(HeightError, match=words):
            parse_heights(bad)


def test_typos_in_heights_are_refused_not_read_as_another_height():
    """A decimal comma, two heights for everyone or two for one person were read as something else (1,72: 72 m
    refused; 1.72,1.40: everyone 1.40 m; 0=1.72,0=1.5: person 0 1.5 m), silently or with a misleading message."""
    for bad, words in (("1,72", r"decimal point \(1\.72\)"), (" 1 , 8 ", r"decimal point \(1\.8\)"),
                       ("1.72,1.40", r"two heights for everyone \(1\.72, 1\.4\).*0=1\.72,1=1\.40"),
                       ("*=1.7,1.6", "two heights for everyone"), ("0=1.72,0=1.5", "person 0 is given two heights")):
        with pytest.raises(HeightError, match=words):
            parse_heights(bad)
    assert parse_heights("0=1.72,1.6") == Heights(1.6, {0: 1.72})  # a bare height is everyone else's


def _measured(seq, tid: int) -> float:
    world = np.stack([f.world[f.track_ids == tid][0] for f in seq.frames])
    return stature(world, np.ones(world.shape[:2], bool), seq.skeleton)


def test_a_given_height_scales_the_person_along_the_camera_rays():
    # two walkers read 20 % too small and 10 % too large by depth (same pixels, wrong distance)
    seq = scene(n=60, walkers=((35.0, (-1.6, -5.0), 0.8), (-20.0, (1.0, -6.0), 1.1))).seq
    assert _measured(seq, 0) == pytest.approx(0.8 * STATURE, rel=0.02)
    out, warnings = apply_heights(seq, Heights(per_track={0: round(STATURE, 3)}))
    assert warnings == []
    assert _measured(out, 0) == pytest.approx(STATURE, rel=1e-3)
    assert _measured(out, 1) == pytest.approx(_measured(seq, 1))  # no height given: as it was
    for a, b in zip(seq.frames, out.frames):
        np.testing.assert_allclose(a.keypoints[..., :2], b.keypoints[..., :2])  # the overlay does not move
        np.testing.assert_allclose(b.keypoints[0, :, 2], b.world[0, :, 2], rtol=1e-6)  # depth with world
    people = out.metadata["people"]
    assert people["0"]["stature_source"] == "given" and people["0"]["stature_m"] == round(STATURE, 3)
    assert people["0"]["scale"] == pytest.approx(1 / 0.8, rel=0.02)
    assert people["1"]["stature_source"] == "estimated" and people["1"]["stature_m"] == pytest.approx(
        1.1 * STATURE, rel=0.02)
    thigh = people["0"]["bones_m"]["left_hip-left_knee"]
    assert thigh == pytest.approx(np.linalg.norm(  # the scaled track's own thigh
        out.frames[0].world[0, 11] - out.frames[0].world[0, 13]), rel=0.05)
    again, _ = apply_heights(out)  # exported again without heights: still the given size, still "given"
    assert again.metadata["people"]["0"]["stature_source"] == "given"
    assert _measured(again, 0) == pytest.approx(STATURE, rel=1e-3)


def test_a_height_for_nobody_or_for_an_unmeasurable_person_says_so():
    seq = scene(n=30).seq
    _, warnings = apply_heights(seq, Heights(per_track={0: 1.7, 5: 1.6}))
    assert any("track ids not in the result: 5" in w for w in warnings)
    no_legs = scene(n=30).seq
    for f in no_legs.frames:
        f.world[:, 13:17] = np.nan  # knees and ankles never seen
    out, warnings = apply_heights(no_legs, Heights(1.7))
    assert out.metadata["people"]["0"]["stature_source"] == "unknown"
    assert any("not applied" in w for w in warnings)


def test_process_export_and_batch_take_the_height(tmp_path):
    from posetracker.batch import BatchSettings, process_file
    from posetracker.cli import main

    clip = str(short_clip(tmp_path / "clip.mp4", 20))
    plain, tall = tmp_path / "plain.json", tmp_path / "tall.json"
    assert main(["process", clip, "--out", str(plain)]) == 0
    assert main(["process", clip, "--out", str(tall), "--height", "1.9"]) == 0
    a, b = json.loads(plain.read_text()), json.loads(tall.read_text())
    assert a["metadata"]["people"]["0"]["stature_source"] == "estimated"
    assert b["metadata"]["people"]["0"] == {**b["metadata"]["people"]["0"], "stature_m": 1.9, "stature_source": "given"}
    pa, pb = a["frames"][5]["people"][0], b["frames"][5]["people"][0]
    np.testing.assert_allclose(np.array(pa["keypoints"])[:, :2], np.array(pb["keypoints"])[:, :2])
    ratio = np.array(pb["world"])[:, 2] / np.array(pa["world"])[:, 2]
    assert ratio == pytest.approx(np.full_like(ratio, b["metadata"]["people"]["0"]["scale"]), rel=1e-3)

    exported = tmp_path / "exported.json"  # export --height on the plain result gives the same people
    assert main(["export", str(plain), "--out", str(exported), "--height", "1.9"]) == 0
    assert json.loads(exported.read_text())["metadata"]["people"] == b["metadata"]["people"]

    record = process_file(clip, "clip.mp4", str(tmp_path / "batch"),
                          BatchSettings(formats=("json",), chunk_s=0, height="1.9"), "m", "s")
    assert record["status"] == "done", record["error"]
    assert (tmp_path / "batch" / "clip.poses.json").read_bytes() == tall.read_bytes()
    with pytest.raises(ValueError, match="not a person.s stature"):
        BatchSettings(height="190")
    assert BatchSettings().key() == BatchSettings(height=None).key()


def test_an_animal_result_is_finished_without_statures():
    """fly13 / mouse4 have no ankle-to-ear chain: the finishing step leaves them as they are (a regression of
    the heights step stopped every animal mode's process with "no joint 'left_ankle'")."""
    from posetracker.motion.finish import finish_sequence
    from posetracker.skeletons import load_skeleton
    from posetracker.types import PoseFrame, PoseSequence

    spec = load_skeleton("mouse4")
    k = spec.num_joints
    frames = [PoseFrame(t, t / 30, np.full((1, k, 3), 1.0, np.float32), np.ones((1, k), np.float32),
                        np.ones(1, np.float32), np.zeros(1, np.int64), (640, 480), np.ones((1, k, 3), np.float32))
              for t in range(5)]
    seq = PoseSequence(frames, 30.0, spec, {"mode": "offline"})
    out, _ = apply_heights(seq)
    assert out is seq
    _, warnings = apply_heights(seq, Heights(1.7))
    assert any("apply to people" in w for w in warnings)
    from posetracker.depth.camera_meta import CameraFov

    finished, _ = finish_sequence(seq, CameraFov(60.0, "user"), rigid_bones=True)
    assert "camera" in finished.metadata and "people" not in finished.metadata
