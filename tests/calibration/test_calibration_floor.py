"""A calibrated camera's floor (issue #48): the calibration's z = 0 plane, not one fitted to the feet, for the
floor frame every export and the feet step read (``metadata["floor"]``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from floor_synthetic import ANKLE, FOCAL, IMAGE, scene
from posetracker.analysis.ground import ground_from_sequence
from posetracker.export import get_exporter
from posetracker.multiview.calibration import Z_UP_TO_Y_UP, CameraCalibration, calibration_floor

YAW = np.radians(30.0)
SHIFT = np.array([2.0, 0.0, -1.0])  # the calibration's origin is not below the camera
RY = np.array([[np.cos(YAW), 0, np.sin(YAW)], [0, 1, 0], [-np.sin(YAW), 0, np.cos(YAW)]])


def _calibrated_scene(depth_scales=(1.0,), people_on_it=True, on_floor_m=None):
    """The synthetic walkers (floor_synthetic.scene; its floor frame Y up, camera 1.4 m up, pitched and rolled)
    and the camera's calibration in a z-up world turned 30 degrees about the vertical and shifted (2, 0, -1) m
    from the scene's floor frame; the sequence carries that calibration's floor."""
    walkers = tuple((35.0 + 20 * i, (-1.6 + 1.4 * i, -5.0), s) for i, s in enumerate(depth_scales))
    sc = scene(walkers=walkers)
    # scene: p_cam = axes @ (p_floor - cam); calibration floor frame q = RY @ p_floor + SHIFT = Z_UP_TO_Y_UP @ p_world
    R = sc.camera_axes @ RY.T @ Z_UP_TO_Y_UP
    t = -sc.camera_axes @ (RY.T @ SHIFT + sc.camera_position)
    K = np.array([[FOCAL, 0, IMAGE[0] / 2], [0, FOCAL, IMAGE[1] / 2], [0, 0, 1]])
    cam = CameraCalibration("cam", IMAGE, K, np.zeros(5), R, t)
    floor = calibration_floor([cam], "calibration test.toml", people_on_it=people_on_it, on_floor_m=on_floor_m)
    return sc, cam, dataclasses.replace(sc.seq, metadata={**sc.seq.metadata, "floor": floor})


def test_the_calibration_floor_is_z_0_up_the_cameras_side():
    _, cam, seq = _calibrated_scene()
    floor = seq.metadata["floor"]
    assert floor["up"] == "+z" and floor["camera_height_m"] == pytest.approx(1.4, abs=1e-9)
    below = dataclasses.replace(cam, R=cam.R @ np.diag([1.0, -1.0, -1.0]), t=cam.t)  # the world turned over
    assert calibration_floor([below], "x", True)["up"] == "-z"
    at_origin = CameraCalibration("c0", IMAGE, cam.K, np.zeros(5), np.eye(3), np.zeros(3))  # anipose: camera 1's frame
    assert calibration_floor([at_origin], "x", True) is None
    assert calibration_floor([cam, below], "x", True) is None  # cameras on both sides: no floor


def test_ground_uses_the_calibration_floor_not_the_feet():
    """The floor frame is the calibration's world turned Y up (its axes and origin, which no fit to the feet can
    find), everyone on it; the report gives the stance ankles' height above it."""
    sc, _, seq = _calibrated_scene()
    ground = ground_from_sequence(seq)
    cam_pts = np.stack([f.world[0] for f in seq.frames]).astype(np.float64)
    np.testing.assert_allclose(ground.frame.to_floor(cam_pts), sc.truth_floor[0] @ RY.T + SHIFT, atol=1e-4)
    assert ground.frame.fitted and ground.frame.person_floor == {0: 0.0}
    assert "calibration test.toml" in ground.frame.report["method"]
    assert ground.frame.report["people"]["0"]["stance_ankle_height_m"] == pytest.approx(ANKLE, abs=0.005)
    assert ground_from_sequence(sc.seq).frame.report["method"].startswith("robust plane fit")  # no floor: fitted


def test_triangulated_people_off_the_floor_keep_their_own():
    """In the calibration's metres: a person whose stance feet are on z = 0 stands on it; one measured 21 cm away
    (on a platform, say) keeps that floor rather than being pulled onto the calibration's."""
    _, _, seq = _calibrated_scene(depth_scales=(1.0, 1.15), people_on_it=True)
    ground = ground_from_sequence(seq)
    assert ground.frame.person_floor[0] == 0.0 and ground.frame.report["people"]["0"]["on_calibration_floor"]
    assert ground.frame.person_floor[1] == pytest.approx(-0.15 * 1.4, abs=0.03)


def test_two_live_views_keep_everyone_on_the_floor_their_feet_give():
    """``on_floor_m`` 0 (two live views: ankle heights read to a few cm): a person whose stance feet are 1.4 cm
    off z = 0 keeps that floor, where the default (3 cm) stands them on the calibration's, in the calibration's
    metres still (not sized to it as one view is)."""
    for near, expected in ((None, 0.0), (0.0, -0.01 * 1.4)):
        _, _, seq = _calibrated_scene(depth_scales=(1.01,), people_on_it=True, on_floor_m=near)
        ground = ground_from_sequence(seq)
        assert ground.frame.person_floor[0] == pytest.approx(expected, abs=0.004)
    assert ground.frame.report["method"].endswith("each person's own floor along its normal, from their stance feet")


def test_one_view_keeps_each_persons_floor_along_the_calibrated_normal():
    """One view: a person read 15 % too far stands on a floor below the true one (scaled about the camera);
    their own floor is measured from their feet along the calibration's normal, the other stays at 0."""
    _, _, seq = _calibrated_scene(depth_scales=(1.0, 1.15), people_on_it=False)
    ground = ground_from_sequence(seq)
    pf = ground.frame.person_floor
    assert abs(pf[0]) < 0.005 and pf[1] < -0.15  # 15 % of the camera's 1.4 m height below, roughly
    assert pf[1] == pytest.approx(-0.15 * 1.4, abs=0.03)


def test_trc_on_the_floor_is_in_the_calibration_world(tmp_path):
    sc, _, seq = _calibrated_scene()
    path = get_exporter("trc").write(seq, tmp_path / "p.trc", origin="floor")[0]
    rows = [line.split("\t") for line in path.read_text().splitlines()[6:]]
    names = [n for n in path.read_text().splitlines()[3].split("\t")[2:] if n]
    j = names.index("left_ankle")
    got = np.array([[float(v) for v in r[2 + 3 * j:5 + 3 * j]] for r in rows])  # (T, 3) mm
    want = (sc.truth_floor[0][:, seq.skeleton.index("left_ankle")] @ RY.T + SHIFT) * 1000.0
    np.testing.assert_allclose(got, want, atol=0.2)


def test_process_one_calibrated_view_carries_its_floor(tmp_path):
    """``process clip.mp4 --calibration clip.yml`` with the camera's pose: the result carries the calibration's
    floor (each person on their own, along its normal); a calibration without a pose has none."""
    import json

    import cv2

    from posetracker.cli import main
    from posetracker.multiview.one_view import read_view
    from sample_clips import short_clip

    R = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])  # level, looking along world +y, z up
    for name, pose in (("posed", True), ("bare", False)):
        fs = cv2.FileStorage(str(tmp_path / f"{name}.yml"), cv2.FILE_STORAGE_WRITE)
        fs.write("image_width", 576), fs.write("image_height", 576)
        fs.write("camera_matrix", np.array([[500.0, 0, 288], [0, 500.0, 288], [0, 0, 1]]))
        if pose:
            fs.write("R", R), fs.write("T", -R @ np.array([0.0, -3.0, 1.5]))  # 1.5 m above the floor
        fs.release()
    assert read_view([str(tmp_path / "bare.yml")], "clip.mp4").floor() is None
    clip = short_clip(tmp_path / "clip.mp4", 4)
    out = tmp_path / "posed.json"
    assert main(["process", str(clip), "--calibration", str(tmp_path / "posed.yml"), "--out", str(out)]) == 0
    floor = json.loads(out.read_text())["metadata"]["floor"]
    assert floor["people_on_it"] is False and floor["camera_height_m"] == pytest.approx(1.5)
    np.testing.assert_allclose(floor["rotation"], [[1, 0, 0], [0, -1, 0], [0, 0, -1]], atol=1e-9)


def test_one_calibrated_view_sizes_people_by_its_floor():
    """One view, no height given: each person scaled about the camera so their stance ankles stand an ankle
    height above the calibration's floor; the one read 15 % far comes back to their true size."""
    from floor_synthetic import STATURE

    from posetracker.motion.heights import Heights, apply_heights

    _, _, seq = _calibrated_scene(depth_scales=(1.0, 1.15), people_on_it=False)
    done, warnings = apply_heights(seq)
    people = done.metadata["people"]
    assert not warnings and {p["stature_source"] for p in people.values()} == {"floor"}
    assert people["0"]["scale"] == pytest.approx(1.0, abs=0.01)
    assert people["1"]["scale"] == pytest.approx(1 / 1.15, abs=0.01)
    assert people["1"]["stature_m"] == pytest.approx(STATURE, rel=0.01)
    assert all(abs(f) < 0.01 for f in ground_from_sequence(done).frame.person_floor.values())  # both on it now
    again, _ = apply_heights(done)  # a finished result exported again: sized once
    assert again.metadata["people"]["1"]["scale"] == 1.0 and again.metadata["people"]["1"]["stature_source"] == "floor"
    given, _ = apply_heights(seq, Heights(1.9))
    assert {p["stature_source"] for p in given.metadata["people"].values()} == {"given"}
    _, _, triangulated = _calibrated_scene(depth_scales=(1.0, 1.15), people_on_it=True)
    assert {p["stature_source"] for p in apply_heights(triangulated)[0].metadata["people"].values()} == {"estimated"}


def test_a_height_given_to_triangulated_people_keeps_them_where_the_cameras_measured_them():
    """Several calibrated cameras measure where a person stands; a given height sizes their body, not their place.
    Scaled about the camera's centre (as one view's people are), a person 2 % smaller moved ~10 cm towards the
    camera and their stance feet ~3 cm off the calibrated floor; now each frame is scaled about the floor point
    under the person's root. A finished result exported again moves its held feet the same way."""
    from posetracker.analysis.held_ground import held_ground
    from posetracker.analysis.stature import stature
    from posetracker.motion.feet import plant_feet
    from posetracker.motion.heights import Heights, apply_heights

    sc, _, seq = _calibrated_scene()
    seq = dataclasses.replace(seq, metadata={**seq.metadata, "multiview": {"cameras": ["cam", "cam2"]}})
    world = np.stack([f.world[0] for f in seq.frames]).astype(np.float64)
    measured = stature(world, np.ones(world.shape[:2], bool), seq.skeleton)
    given = round(0.98 * measured, 3)
    out, warnings = apply_heights(seq, Heights(given))
    assert warnings == [] and out.metadata["people"]["0"]["stature_source"] == "given"
    after = np.stack([f.world[0] for f in out.frames]).astype(np.float64)
    assert stature(after, np.ones(after.shape[:2], bool), seq.skeleton) == pytest.approx(given, rel=1e-3)
    frame = ground_from_sequence(seq).frame
    root = seq.skeleton.root
    before_f, after_f = frame.to_floor(world[:, root]), frame.to_floor(after[:, root])
    np.testing.assert_allclose(after_f[:, [0, 2]], before_f[:, [0, 2]], atol=1e-4)  # same place on the floor
    np.testing.assert_allclose(after_f[:, 1], before_f[:, 1] * given / measured, rtol=1e-4)
    report = ground_from_sequence(out).frame.report["people"]["0"]
    assert report["stance_ankle_height_m"] == pytest.approx(ANKLE * given / measured, abs=0.002)  # still standing
    for f in out.frames:  # depth is the world's z
        np.testing.assert_allclose(f.keypoints[0, :, 2], f.world[0, :, 2], rtol=1e-5)

    # a finished result (feet held) given a height afterwards: its held points stay under the scaled ankles
    def off(result) -> float:  # the farthest a held ankle is from its phase's recorded point, m
        ground = held_ground(result)
        ankles = np.stack([f.world[0] for f in result.frames]).astype(np.float64)
        worst = 0.0
        for phase, rec in zip(ground.phases[0], result.metadata["feet"]["people"]["0"]["phases"]):
            joint = seq.skeleton.index(("left_ankle", "right_ankle")[phase.foot])
            own = ground.frame.to_person_floor(ankles[phase.start:phase.stop, joint], 0)
            worst = max(worst, float(np.abs(own - np.asarray(rec["point_m"])).max()))
        return worst

    held, _ = plant_feet(seq)
    again, _ = apply_heights(held, Heights(given))
    assert held_ground(again).frame.person_floor[0] == pytest.approx(0.0, abs=1e-9)
    assert len(held_ground(again).phases[0]) >= 4
    assert off(again) < off(held) + 0.005  # each phase about its mean floor point: the root moves over a stance
