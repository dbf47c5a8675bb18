"""File > Open several cameras (ui/multicamera_dialog.py, ui/window_views.py), offscreen: the set-up's checks in
words (posetracker.multiview.process.check_views), a failing or cancelled run as a message, and (slow, with the
real model) 10 frames of the real 4-view trial run to the end in the window, giving the same people as
``posetracker process cam*.mp4 --calibration`` on those frames, shown over the first view and exported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from gui_helpers import fake_services, isolated_settings, make_video, no_modal_dialogs, wait_until  # noqa: F401
from posetracker.multiview.calibration import CalibrationError, read_calibration
from posetracker.multiview.process import cameras_for_views, check_views
from ui.multicamera_dialog import MultiCameraDialog
from ui.services import ModelChoice, with_camera

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise", "does not support activat")]
gui = pytest.mark.gui
TRIAL = ("data", "video", "multiview_pose2sim_multiperson")


def write_toml(path: Path, names: list[str], size=(160, 120)) -> Path:
    """A Pose2Sim-style calibration TOML of cameras ``names`` on a circle, looking at its centre."""
    lines = []
    for i, name in enumerate(names):
        a = np.radians(90 * i)
        centre = np.array([3 * np.cos(a), 3 * np.sin(a), 1.5])
        z = -centre / np.linalg.norm(centre)
        x = np.cross(z, [0, 0, 1.0])
        x /= np.linalg.norm(x)
        R = np.stack([x, np.cross(z, x), z])
        rvec = cv2.Rodrigues(R)[0].ravel()
        t = -R @ centre
        lines += [f"[{name}]", f'name = "{name}"', f"size = [{size[0]}, {size[1]}]",
                  f"matrix = [[150.0, 0.0, {size[0] / 2}], [0.0, 150.0, {size[1] / 2}], [0.0, 0.0, 1.0]]",
                  "distortions = [0.0, 0.0, 0.0, 0.0]", f"rotation = {list(map(float, rvec))}",
                  f"translation = {list(map(float, t))}", "fisheye = false", ""]
    path.write_text("\n".join(lines))
    return path


def opencv_files(folder: Path, names: list[str], size=(160, 120)) -> list[str]:
    """One OpenCV FileStorage YAML per camera (``<name>.yml``: the camera takes the file's name)."""
    paths = []
    for name in names:
        fs = cv2.FileStorage(str(folder / f"{name}.yml"), cv2.FILE_STORAGE_WRITE)
        fs.write("image_width", size[0])
        fs.write("image_height", size[1])
        fs.write("camera_matrix", np.array([[150.0, 0, size[0] / 2], [0, 150.0, size[1] / 2], [0, 0, 1]]))
        fs.release()
        paths.append(str(folder / f"{name}.yml"))
    return paths


@pytest.fixture
def setup(tmp_path):
    """Three small videos cam01-03.mp4 and a calibration of those three cameras."""
    videos = [str(make_video(tmp_path / f"cam0{i}.mp4", frames=12)) for i in (1, 2, 3)]
    return videos, str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02", "cam03"]))


def test_the_set_up_says_what_stops_it(tmp_path, setup):
    videos, calib = setup
    ok = check_views(videos, [calib])
    assert ok.ready and [v.camera for v in ok.views] == ["cam01", "cam02", "cam03"]
    assert [(v.frames, v.fps, v.size) for v in ok.views] == [(12, 30.0, (160, 120))] * 3
    assert check_views(videos[:1], [calib]).problem.startswith("Add at least two videos")
    assert check_views(videos, []).problem.startswith("Choose the calibration file")
    two = write_toml(tmp_path / "two.toml", ["cam01", "cam02"])
    assert check_views(videos, [str(two)]).problem == ("The calibration has 2 cameras (cam01, cam02) for 3 videos: "
                                                       "each video needs its own calibrated camera.")
    (tmp_path / "broken.toml").write_text("[cam01\nmatrix = ")
    assert check_views(videos, [str(tmp_path / "broken.toml")]).problem.startswith("The calibration cannot be read:")
    assert check_views(videos, [str(tmp_path / "calib.json")]).problem.startswith("The calibration cannot be read:")
    other = str(make_video(tmp_path / "side.mp4", frames=5))
    found = check_views([videos[0], other], [calib])
    assert found.problem.startswith("side.mp4: no camera of the calibration is named in its file name")
    missing = check_views([videos[0], str(tmp_path / "cam02-gone.mp4")], [calib])
    assert missing.problem.startswith("cam02-gone.mp4: cannot be read") and missing.views[1].camera == "cam02"
    again = check_views([videos[0], str(make_video(tmp_path / "cam01-copy.mp4", frames=5))], [calib])
    assert again.problem == "cam01-copy.mp4: camera cam01 is another video's already."
    small = check_views([videos[0], str(make_video(tmp_path / "cam02b.mp4", frames=5, size=(80, 60)))], [calib])
    assert small.ready and small.views[1].note == ("the frames are 80x60, camera cam02 was calibrated at 160x120: "
                                                   "the same camera scaled")
    turned = check_views([videos[0], str(make_video(tmp_path / "cam02c.mp4", frames=5, size=(96, 64)))], [calib])
    assert turned.problem.startswith("cam02c.mp4: the frames are 96x64 but camera cam02 was calibrated at 160x120")
    cams = read_calibration(calib)
    with pytest.raises(CalibrationError, match="has 3 cameras .* for 4 videos"):
        cameras_for_views(cams, [*videos, other])
    with pytest.raises(CalibrationError, match="both name camera cam01"):
        cameras_for_views(cams, [videos[0], videos[0].replace("cam01", "cam01b")])


@gui
def test_the_dialog_shows_each_view_and_enables_process_only_when_ready(qtbot, tmp_path, setup):
    videos, calib = setup
    dialog = MultiCameraDialog(lambda: None)
    qtbot.addWidget(dialog)
    assert not dialog.start.isEnabled() and "Add at least two videos" in dialog.message.text()
    dialog.set_inputs(videos)
    assert dialog.table.rowCount() == 3 and not dialog.start.isEnabled()
    assert "Choose the calibration file" in dialog.message.text() and "color" in dialog.message.styleSheet()
    dialog.set_inputs(calibration=str(write_toml(tmp_path / "two.toml", ["cam01", "cam02"])))
    assert "has 2 cameras (cam01, cam02) for 3 videos" in dialog.message.text() and not dialog.start.isEnabled()
    assert [dialog.table.item(r, 1).text() for r in range(3)] == ["cam01", "cam02", "—"]
    assert "no camera of the calibration" in dialog.table.item(2, 5).text()
    dialog.calibration.setText("; ".join(opencv_files(tmp_path, ["cam01", "cam02", "cam03"])))  # one file a camera
    dialog.refresh()
    assert dialog.start.isEnabled() and dialog.message.text().startswith("Ready: 3 videos, cameras cam01, cam02, cam03")
    dialog.set_inputs(calibration=calib)
    assert dialog.start.isEnabled() and dialog.message.text().startswith("Ready: 3 videos, cameras cam01, cam02, cam03")
    assert [dialog.table.item(0, c).text() for c in range(6)] == ["cam01.mp4", "cam01", "12", "30", "160x120", "ok"]
    dialog.table.selectRow(2)
    dialog.move_selected_up()
    assert dialog.views() == [videos[0], videos[2], videos[1]]
    dialog.table.selectRow(0)
    dialog.remove_selected()
    assert dialog.views() == [videos[2], videos[1]] and dialog.start.isEnabled()
    dialog.table.selectRow(0)
    dialog.remove_selected()
    assert not dialog.start.isEnabled() and not dialog.start_run()


@gui
def test_a_calibration_in_millimetres_is_said_in_the_set_up(qtbot, tmp_path, setup):
    """anipose / FreeMoCap write the board's unit, often mm; read as metres, people were 1000 times too big."""
    videos, calib = setup
    text = Path(calib).read_text()
    mm = re.sub(r"translation = \[([^\]]*)\]",
                lambda m: "translation = [" + ", ".join(str(1000 * float(v)) for v in m.group(1).split(",")) + "]", text)
    (tmp_path / "mm.toml").write_text(mm)
    dialog = MultiCameraDialog(lambda: None)
    qtbot.addWidget(dialog)
    dialog.set_inputs(videos, calibration=str(tmp_path / "mm.toml"))
    assert dialog.start.isEnabled() and dialog.message.text().startswith("Ready: 3 videos")
    assert "Note: the calibration's camera positions are read as millimetres" in dialog.message.text()
    dialog.set_inputs(calibration=calib)
    assert "Note" not in dialog.message.text()


@gui
def test_a_failing_run_is_a_message_and_cancel_stops_it(qtbot, setup):
    """The session cannot be made: the error in the dialog, no traceback; a slow run cancelled: 'Cancelled'."""
    from posetracker.refiners import RefinerError

    videos, calib = setup
    broken = fake_services(session_error=RefinerError("no weights for the precision stage"))
    dialog = MultiCameraDialog(lambda: lambda fov: broken.make_session(ModelChoice(fov_deg=fov)))
    qtbot.addWidget(dialog)
    dialog.set_inputs(videos, calib)
    assert dialog.start_run()
    wait_until(qtbot, lambda: not dialog.running(), 10)
    assert dialog.message.text() == "No weights for the precision stage" and dialog.result is None
    slow = fake_services(delay=0.05)
    dialog.sessions = lambda: lambda fov: with_camera(slow.make_session, ModelChoice("human18", "offline"), fov)
    assert dialog.start_run() and not dialog.start_run()  # one run at a time
    wait_until(qtbot, lambda: dialog.progress.value() >= 2, 10)
    assert "Tracking cam01 (view 1 of 3)" in dialog.status.text() and not dialog.add_videos.isEnabled()
    dialog.cancel_run()
    wait_until(qtbot, lambda: not dialog.running(), 10)
    assert dialog.message.text() == "Cancelled: nothing was processed." and dialog.result is None
    assert dialog.progress.value() < 12 and 0 < slow.choices[0].fov_deg < 180
    assert dialog.add_videos.isEnabled() and dialog.start.isEnabled()


@gui
def test_the_window_plays_a_result_over_each_camera_it_picks(qtbot, tmp_path):
    """A fused result of 4 synthetic cameras shown: the first view's video with the people where camera 1 sees
    them; the Camera picker plays camera 3's video (frames 2 later there) with them where camera 3 sees them; the
    result (3-D view, Export) stays the first camera's; another source hides the picker."""
    from posetracker.multiview.fuse import fuse_views, seen_from
    from posetracker.multiview.process import ViewsResult
    from test_multiview import CAMERAS, moving_body
    from test_multiview_fuse import _view_sequences
    from ui.main_window import MainWindow

    fused = fuse_views(CAMERAS, _view_sequences([moving_body(20), moving_body(20, shift=(0.0, 1.2, 0.0))]),
                       solve=False)
    views = [str(make_video(tmp_path / f"{c.name}.mp4", frames=24)) for c in CAMERAS]
    result = ViewsResult(views, fused, [], list(CAMERAS), [0, 1, 2, 0], [])
    dialog = MultiCameraDialog(lambda: None)
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.result_ready):
        dialog._on_done(result)
    assert dialog.status.text().endswith("Views aligned by the people's motion: frames against cam0: cam1 +1, "
                                         "cam2 +2, cam3 +0")
    window = MainWindow(services=fake_services())
    qtbot.addWidget(window)
    assert window.view_picker is None
    window.show_views_result(result)
    assert window.views_result is result and window.sequence is fused and window.state.source == views[0]
    assert [window.view_picker.itemText(i) for i in range(4)] == [c.name for c in CAMERAS]
    assert all(a.isVisible() for a in window._picker_actions)
    wait_until(qtbot, lambda: window.latest is not None and len(window.latest.pose.track_ids) == 2, 10)
    window.controller.pause()
    window.view_picker.setCurrentIndex(2)
    assert window.state.source == views[2] and window.sequence is fused
    assert sum("The video is cam2.mp4 with the people reprojected" in m for m in window.banner.messages()) == 1
    expected = {f.index: f for f in seen_from(fused, CAMERAS, 2, [0, 1, 2, 0]).frames}
    window.latest = None
    wait_until(qtbot, lambda: window.latest is not None and window.latest.pose.image_size == CAMERAS[2].image_size,
               10)
    pose = window.latest.pose
    assert pose.index >= 2  # camera 3's video starts 2 frames before the first's
    np.testing.assert_allclose(pose.keypoints, expected[pose.index].keypoints)
    assert not np.allclose(pose.keypoints[..., :2], fused.frames[pose.index - 2].keypoints[..., :2], atol=20)
    assert window.source_panel.calibration_label.text() == "Calibrated: cam2, one of 4 cameras"
    window.open_source(views[1])
    assert window.views_result is None and not any(a.isVisible() for a in window._picker_actions)
    assert window.source_panel.calibration_label.text() == "Camera: default field of view"  # the file's own again
    window.close()


@gui
def test_heights_given_with_views_scale_the_result_when_it_comes(qtbot, tmp_path):
    """main.py --views ... --height 0=1.6 ran the set-up and dropped the height: the result, arriving later,
    reset the heights as a new source does (seen under Xvfb: #0 "estimated", nothing scaled)."""
    from posetracker.depth.camera_meta import CameraFov
    from posetracker.motion.finish import finish_sequence
    from posetracker.motion.heights import Heights
    from posetracker.multiview.fuse import fuse_views
    from posetracker.multiview.process import ViewsResult
    from test_multiview import CAMERAS, moving_body
    from test_multiview_fuse import _view_sequences
    from ui.app import parse_args
    from ui.main_window import MainWindow

    fused = fuse_views(CAMERAS, _view_sequences([moving_body(20), moving_body(20, shift=(0.0, 1.2, 0.0))]))
    seq, _ = finish_sequence(fused, CameraFov(60.0, "user", "calibration"), rigid_bones=True)
    views = [str(make_video(tmp_path / f"{c.name}.mp4", frames=24)) for c in CAMERAS]
    window = MainWindow(services=fake_services())
    qtbot.addWidget(window)
    args = parse_args(["--views", *views, "--calibration", "c.toml", "--height", "0=1.6"])
    window.ask_open_views(None, None, heights=args.height)  # as main.py passes them (start: the run)
    window.show_views_result(ViewsResult(views, seq, [], list(CAMERAS), [0, 0, 0, 0], []))
    assert window.heights == Heights(None, {0: 1.6})
    people = window.sequence.metadata["people"]
    assert people["0"]["stature_source"] == "given" and people["0"]["stature_m"] == 1.6
    assert people["1"]["stature_source"] == "multi-view"
    window.show_views_result(ViewsResult(views, seq, [], list(CAMERAS), [0, 0, 0, 0], []))  # given once
    assert window.heights == Heights() and window.sequence.metadata["people"]["0"]["stature_source"] == "multi-view"
    window.close()


@gui
def test_tracking_the_first_video_again_keeps_the_cameras_result(qtbot, tmp_path):
    """Process whole file (or the Mode, or Calibration…) on a several-camera result re-tracked its first video
    alone and replaced the triangulated result, under a banner still saying the cameras' result was shown."""
    from posetracker.depth.camera_meta import CameraFov
    from posetracker.motion.finish import finish_sequence
    from posetracker.multiview.fuse import fuse_views
    from posetracker.multiview.process import ViewsResult
    from test_multiview import CAMERAS, moving_body
    from test_multiview_fuse import _view_sequences
    from ui.main_window import MainWindow

    fused = fuse_views(CAMERAS, _view_sequences([moving_body(20), moving_body(20, shift=(0.0, 1.2, 0.0))]))
    seq, _ = finish_sequence(fused, CameraFov(60.0, "user", "calibration"), rigid_bones=True)
    views = [str(make_video(tmp_path / f"{c.name}.mp4", frames=24)) for c in CAMERAS]
    window = MainWindow(services=fake_services())
    qtbot.addWidget(window)
    window.show_views_result(ViewsResult(views, seq, [], list(CAMERAS), [0, 0, 0, 0], []))
    wait_until(qtbot, lambda: window.source_info is not None, 10)
    calib = str(write_toml(tmp_path / "calib.toml", ["cam0"]))
    for again in (window.process_whole_file, lambda: window.set_mode("live"), lambda: window.load_calibration([calib])):
        again()
        qtbot.wait(300)
        assert window.views_result is not None and window.sequence is seq and window.calibration is None
        assert any(m.startswith("This is the result of 4 calibrated cameras, kept") for m in window.banner.messages())
        assert window.state.mode == "offline"
    window.open_source(views[1])  # another source still opens (and drops the result, as before)
    assert window.views_result is None
    window.close()


@pytest.fixture
def trial_clips(tmp_path):
    """The real trial's 4 views cut to their first 10 frames (cam01-04.mp4) and its calibration."""
    from conftest import shared_path

    folder = shared_path(*TRIAL)
    views = []
    for i in (1, 2, 3, 4):
        cap = cv2.VideoCapture(str(folder / f"cam0{i}.mp4"))
        ok, img = cap.read()
        h, w = img.shape[:2]
        out = cv2.VideoWriter(str(tmp_path / f"cam0{i}.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), 60.0, (w, h))
        for _ in range(10):
            out.write(img)
            ok, img = cap.read()
        out.release()
        cap.release()
        views.append(str(tmp_path / f"cam0{i}.mp4"))
    return views, str(folder / "calibration.qca.txt")


@gui
@pytest.mark.slow
def test_four_views_run_to_the_end_in_the_window_as_the_cli_runs_them(qtbot, tmp_path, trial_clips):
    from posetracker.cli import main
    from posetracker.export.json_io import sequence_from_dict
    from ui.main_window import MainWindow
    from ui.services import Services

    views, calib = trial_clips
    out = tmp_path / "cli.json"
    assert main(["process", *views, "--calibration", calib, "--out", str(out)]) == 0
    cli = sequence_from_dict(json.loads(out.read_text()))
    window = MainWindow(services=Services())
    qtbot.addWidget(window)
    window.ask_open_views(views, calib, start=True)
    dialog = window.views_dialog
    wait_until(qtbot, lambda: window.views_result is not None, 240)
    seq = window.sequence
    assert re.match(r"Done in \d+ s: 10 frames, 2 people in 3-D", dialog.message.text())
    assert dialog.progress.value() == dialog.progress.maximum() == 40
    assert window.state.source == views[0] and any("cam01.mp4 with the people reprojected" in m
                                                     for m in window.banner.messages())
    assert seq.metadata["multiview"]["cameras"] == ["cam01", "cam02", "cam03", "cam04"]
    assert seq.metadata["camera"]["detail"] == "calibration calibration.qca.txt, camera cam01"
    assert len(seq) == len(cli) == 10
    for ours, theirs in zip(seq.frames, cli.frames):  # the same people, in the same place
        assert ours.track_ids.tolist() == theirs.track_ids.tolist() and len(ours.track_ids) == 2
        np.testing.assert_allclose(ours.world, theirs.world, atol=1e-3)
    wait_until(qtbot, lambda: window.latest is not None and len(window.latest.pose.track_ids) == 2, 30)
    assert window.latest.pose.image_size == (1088, 1920)
    jobs = [window.export_to(tmp_path / f"trial.{s}", None, {}) for s in ("bvh", "trc", "csv")]
    wait_until(qtbot, lambda: not window._jobs, 60)
    assert all(j is not None for j in jobs) and not any("failed" in m for m in window.banner.messages())
    assert sorted(p.name for p in tmp_path.glob("trial*")) == [  # one BVH and TRC per person, as for one view
        "trial.csv", "trial_person0.bvh", "trial_person0.bvh.json", "trial_person0.trc", "trial_person1.bvh",
        "trial_person1.bvh.json", "trial_person1.trc"]
    window.close()
