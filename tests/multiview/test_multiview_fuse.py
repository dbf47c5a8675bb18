"""Several calibrated views -> one tracked sequence in metres (issue #48): posetracker.multiview.fuse on
synthetic cameras, and ``posetracker process cam*.mp4 --calibration`` on the real 4-view trial (slow)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import shared_path

from posetracker.multiview.fuse import calibrated_fov, fuse_views
from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame, PoseSequence
from test_multiview import CAMERAS, moving_body

SPEC = load_skeleton("human18")


def _view_sequences(bodies: list[np.ndarray], wrong: tuple[int, int] | None = None) -> list[PoseSequence]:
    """One tracked sequence per synthetic camera: each body (T, 17, 3) world m projected (human18's centre as
    its 2-D box centre), people listed in another order in each view (ids differ by view); ``wrong``: (view,
    joint) read 80 px off in that view."""
    t = len(bodies[0])
    out = []
    for v, cam in enumerate(CAMERAS):
        frames = []
        order = list(range(len(bodies)))[::-1] if v % 2 else list(range(len(bodies)))
        for i in range(t):
            kp = np.zeros((len(bodies), 18, 3), np.float32)
            for p, n in enumerate(order):
                xy = cam.project(bodies[n][i])
                if wrong and wrong[0] == v:
                    xy[wrong[1]] += 80.0
                kp[p, :17, :2] = xy
                kp[p, 17, :2] = 0.5 * (xy.min(0) + xy.max(0))
                kp[p, :, 2] = 3.0
            frames.append(PoseFrame(i, i / 30, kp, np.full((len(bodies), 18), 0.9, np.float32),
                                    np.full(len(bodies), 0.9, np.float32), np.array(order) + 10 * v, cam.image_size,
                                    None))
        out.append(PoseSequence(frames, 30.0, SPEC, {"source": f"{cam.name}.mp4"}))
    return out


def test_two_people_seen_by_four_cameras_come_out_in_the_first_cameras_metres():
    bodies = [moving_body(20), moving_body(20, shift=(0.0, 1.2, 0.0))]
    fused = fuse_views(CAMERAS, _view_sequences(bodies, wrong=(2, 9)), solve=False)
    assert len(fused) == 20 and fused.track_ids() == [0, 1]
    ref = CAMERAS[0]
    for f in fused.frames:
        assert f.num_people == 2
        for p in range(2):
            truth = min(bodies, key=lambda b: np.abs(ref.to_camera(b[f.index]) - f.world[p, :17]).max())
            np.testing.assert_allclose(f.world[p, :17], ref.to_camera(truth[f.index]), atol=2e-3)  # a wrist read
            np.testing.assert_allclose(f.keypoints[p, :17, :2], ref.project(truth[f.index]), atol=0.5)  # 80 px off
            np.testing.assert_allclose(f.keypoints[p, :, 2], f.world[p, :, 2], atol=1e-5)
            assert np.isfinite(f.world[p, 17]).all() and f.confidence[p].min() == pytest.approx(0.9)
    people = fused.metadata["multiview"]["people"]
    assert len(people) == 2 and all(q["triangulated"] == 1.0 for q in people)
    assert fused.metadata["multiview"]["cameras"] == [c.name for c in CAMERAS]


def test_the_fused_people_seen_from_another_camera_lie_where_that_camera_saw_them():
    """seen_from: the first camera's result drawn over camera 2's video (frames 3 later there)."""
    from posetracker.multiview.fuse import seen_from

    bodies = [moving_body(12), moving_body(12, shift=(0.0, 1.2, 0.0))]
    views = _view_sequences(bodies)
    fused = fuse_views(CAMERAS, views, solve=False)
    shown = seen_from(fused, CAMERAS, 2, [0, 0, 3, 0])
    cam = CAMERAS[2]
    assert [f.index for f in shown.frames] == [f.index + 3 for f in fused.frames]
    for f, g in zip(shown.frames, fused.frames):
        assert f.image_size == cam.image_size and f.track_ids.tolist() == g.track_ids.tolist()
        np.testing.assert_array_equal(f.world, g.world)
        for p in range(2):
            truth = min(bodies, key=lambda b: np.abs(cam.project(b[g.index]) - f.keypoints[p, :17, :2]).max())
            np.testing.assert_allclose(f.keypoints[p, :17, :2], cam.project(truth[g.index]), atol=0.5)
            np.testing.assert_allclose(f.keypoints[p, :17, 2], cam.to_camera(truth[g.index])[:, 2], atol=2e-3)
    back = seen_from(fused, CAMERAS, 0)
    np.testing.assert_allclose(back.frames[5].keypoints, fused.frames[5].keypoints, atol=1e-3)


def test_a_person_seen_by_one_camera_only_is_not_invented():
    seqs = _view_sequences([moving_body(10)])
    for seq in seqs[1:]:  # only the first camera sees anyone
        for f in seq.frames:
            f.track_ids[:] = -1
    assert fuse_views(CAMERAS, seqs, solve=False).track_ids() == []


def test_the_calibrated_field_of_view_is_across_the_long_side():
    assert calibrated_fov(CAMERAS[0]) == pytest.approx(np.degrees(2 * np.arctan(1200 / 1800)))


@pytest.mark.slow
def test_process_four_calibrated_views_end_to_end(tmp_path):
    from posetracker.cli import main

    folder = shared_path("data", "video", "multiview_pose2sim_multiperson")
    views = [str(folder / f"cam0{i}.mp4") for i in (1, 2, 3, 4)]
    out = tmp_path / "trial.json"
    assert main(["process", *views, "--calibration", str(folder / "calibration.qca.txt"), "--out", str(out),
                 "--height", "0=1.40"]) == 0
    doc = json.loads(out.read_text())
    meta = doc["metadata"]
    assert len(meta["source"]) == 4 and meta["camera"]["detail"].startswith("calibration")
    people = meta["multiview"]["people"]
    assert len(people) == 2 and all(p["triangulated"] > 0.95 for p in people)
    assert all(np.median(list(p["reprojection_px"].values())) < 12 for p in people)
    # cam03's calibrated pose disagrees with the other three cameras' by ~30 px on the woman: fitted to the people
    assert [a["camera"] for a in meta["multiview"]["pose_adjustments"] if a["kept"]] == ["cam03"]
    # the bones' spread over the frames (median IQR of limb and trunk bones): 4.9 / 7.8 % before, 2.7 / 5.4 % now
    assert people[0]["body_spread_pct"]["iqr"] < 3.5 and people[1]["body_spread_pct"]["iqr"] < 6.5
    assert meta["people"]["0"]["stature_source"] == "given" and meta["people"]["1"]["stature_source"] == "multi-view"
    assert 1.4 < meta["people"]["1"]["stature_m"] < 2.0
    assert main(["export", str(out), "--format", "bvh", "--out", str(tmp_path / "trial.bvh")]) == 0
    assert main(["process", views[0], views[1], "--out", str(tmp_path / "x.json")]) == 2  # no calibration


def test_one_calibrated_view_tracks_with_its_focal_length(tmp_path):
    """``process clip.mp4 --calibration calib.yml``: one camera's focal length sets the field of view."""
    import cv2

    from posetracker.cli import main
    from sample_clips import short_clip

    clip = short_clip(tmp_path / "clip.mp4", 8)
    fs = cv2.FileStorage(str(tmp_path / "clip.yml"), cv2.FILE_STORAGE_WRITE)
    fs.write("image_width", 576), fs.write("image_height", 576)
    fs.write("camera_matrix", np.array([[400.0, 0, 288], [0, 400.0, 288], [0, 0, 1]]))
    fs.release()
    out = tmp_path / "one.json"
    assert main(["process", str(clip), "--calibration", str(tmp_path / "clip.yml"), "--out", str(out)]) == 0
    camera = json.loads(out.read_text())["metadata"]["camera"]
    assert camera["fov_deg"] == pytest.approx(np.degrees(2 * np.arctan(576 / 800)), abs=0.01)
    assert camera["detail"] == "calibration clip.yml, camera clip"
    (tmp_path / "bad.yml").write_text("%YAML:1.0\n---\nnothing: 1\n")
    assert main(["process", str(clip), "--calibration", str(tmp_path / "bad.yml"), "--out", str(out),
                 "--force"]) == 2


def _walking(frames: int, seed: int = 0) -> np.ndarray:
    """(T, 17, 3) the body walking on an uneven path (speed and direction change), world m."""
    from test_multiview import BODY

    rng = np.random.default_rng(seed)
    step = np.cumsum(rng.normal(0, 0.01, (frames, 3)) * [1, 1, 0], axis=0)
    return BODY[None] + np.cumsum(step, axis=0)[:, None, :] * 0.5


def test_views_started_at_different_frames_are_aligned_by_the_motion():
    import dataclasses

    from posetracker.multiview.sync import align, frame_offsets

    seqs = _view_sequences([_walking(80)])
    late = [seqs[0], dataclasses.replace(seqs[1], frames=seqs[1].frames[6:]), seqs[2],
            dataclasses.replace(seqs[3], frames=seqs[3].frames[:-9])]
    offsets = frame_offsets(CAMERAS, late)
    assert offsets == [0, -6, 0, 0]
    aligned = align(late, offsets)
    assert {len(s) for s in aligned} == {65} and aligned[1].frames[0].index == aligned[0].frames[0].index == 6
    fused = fuse_views(CAMERAS, aligned, solve=False)
    truth = _walking(80)
    f = fused.frames[10]
    np.testing.assert_allclose(f.world[0, :17], CAMERAS[0].to_camera(truth[f.index]), atol=2e-3)
    assert frame_offsets(CAMERAS, seqs) == [0, 0, 0, 0]  # started together
    still = _view_sequences([moving_body(40) * 0 + moving_body(40)[:1]])  # nobody moves: no evidence, 0
    assert frame_offsets(CAMERAS, [still[0], dataclasses.replace(still[1], frames=still[1].frames[5:])])[1] == 0
