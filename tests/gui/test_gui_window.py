"""The main window driven like a user would, with fake models and a fake camera (offscreen)."""

from __future__ import annotations

import errno
import time

import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from gui_helpers import isolated_settings, make_video, no_modal_dialogs, open_window, window  # noqa: F401
from posetracker.export import exporters
from posetracker.model.weights import WeightsError

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints")]


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("clip") / "clip.mp4", frames=45)


def poses_after(qtbot, window, n=3, timeout=5.0):
    start = window.poses_received
    qtbot.waitUntil(lambda: window.poses_received >= start + n, timeout=int(timeout * 1000))


def test_window_opens_a_video_tracks_and_shows_it(qtbot, window, clip):
    window.state.loop = True  # keeps playing while the status bar is checked
    window.open_source(str(clip))
    poses_after(qtbot, window)
    qtbot.waitUntil(lambda: window.video.frames_shown > 2, timeout=2000)
    qtbot.wait(150)
    assert window.source_info.frame_count == 45
    status = window.status.fields
    assert status["people"].text() == "people 1"
    assert "fps" in status["inference"].text() and "ms" in status["latency"].text()
    window.controller.pause()  # paused: no frozen rates
    qtbot.waitUntil(lambda: status["source"].text() == "source paused", timeout=2000)
    assert status["latency"].text() == "latency -"
    assert window.latest.pose.num_people == 1
    assert window.plots.current_person() == 0
    assert str(clip) in window.state.recent_files


def test_record_then_reopen_the_session(qtbot, window, clip, tmp_path):
    window.open_source(str(clip))
    poses_after(qtbot, window)
    folder = window.start_recording(tmp_path / "session")
    assert window.record_action.isChecked() and "REC" in window.status.fields["recording"].text()
    qtbot.wait(500)
    with qtbot.waitSignal(window.controller.recording_stopped, timeout=3000):
        window.stop_recording()
    summary = window.last_recording
    assert summary.folder == folder and summary.error is None and summary.frames > 5 and summary.poses > 5
    window.open_source(str(folder))
    poses_after(qtbot, window)
    assert window.sequence is not None and len(window.sequence) == summary.poses, "poses replayed from the folder"
    assert window.source_info.frame_count == summary.frames
    qtbot.waitUntil(lambda: "ready" in window.model_panel.model_label.text(), timeout=5000)
    assert "recorded poses (no network runs)" in window.model_panel.model_label.text()  # not a class name
    assert window.windowTitle() == "PoseTracker - session (recording)"  # the recording's name, not video.mp4
    mode = window.model_panel.mode
    assert mode.currentData() == "replay" and not mode.isEnabled()  # not "Live": no model runs
    window.open_source(str(clip))
    poses_after(qtbot, window)
    assert mode.currentData() == "live" and mode.isEnabled() and mode.findData("replay") < 0


def test_switch_source_camera_then_file_leaves_only_the_new_threads(qtbot, window, clip):
    window.open_source("camera:0")
    poses_after(qtbot, window)
    assert window.source_info.is_live
    window.open_source(str(clip))
    poses_after(qtbot, window)
    assert len(window.controller.running_threads()) == 2
    assert not window.source_info.is_live


def test_close_stops_every_thread_within_two_seconds(qtbot, clip):
    window = open_window(qtbot)
    window.open_source("camera:0")
    poses_after(qtbot, window)
    window.start_recording()
    qtbot.wait(200)
    threads = window.controller.threads()
    t0 = time.monotonic()
    window.close()
    assert time.monotonic() - t0 < 2.0
    assert threads and all(t.isFinished() for t in threads)
    assert not window.controller.running_threads()


def test_bad_inputs_give_messages_and_the_app_keeps_working(qtbot, window, clip, tmp_path):
    window.open_source(str(tmp_path / "missing.mp4"))
    qtbot.waitUntil(lambda: any("not found" in m for m in window.banner.messages()), timeout=3000)
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(np.random.default_rng(0).integers(0, 255, 5000, dtype=np.uint8).tobytes())
    window.open_source(str(junk))
    # the new source's error replaces the previous source's: messages do not pile up
    qtbot.waitUntil(lambda: len(window.banner.messages()) == 1
                    and not any("missing.mp4" in m for m in window.banner.messages()), timeout=3000)
    window.open_source("camera:7x")
    assert "bad camera source" in window.banner.messages()[-1]
    window.open_source(str(clip))
    poses_after(qtbot, window)


def test_a_truncated_file_plays_up_to_the_damage_then_says_so(qtbot, window, tmp_path):
    whole = make_video(tmp_path / "cut.mkv", frames=60).read_bytes()
    (tmp_path / "cut.mkv").write_bytes(whole[: len(whole) // 2])
    window.state.speed = 4.0  # applied when the source opens
    window.open_source(str(tmp_path / "cut.mkv"))
    qtbot.waitUntil(lambda: any("ends early" in m or "damaged" in m for m in window.banner.messages()), timeout=6000)
    assert window.poses_received > 0, "the frames before the damage were tracked"


def test_camera_unplugged_mid_session(qtbot):
    window = open_window(qtbot, camera={"unplug_after": 15})
    window.open_source("camera:0")
    qtbot.waitUntil(lambda: any("stopped delivering" in m for m in window.banner.messages()), timeout=5000)
    assert window.poses_received > 0
    window.close()


def test_a_model_notice_shows_and_tracking_goes_on(qtbot, clip):
    window = open_window(qtbot, session_notices=("Pose prior not used (joint depths from the depth head alone): bad file",))
    window.open_source(str(clip))
    qtbot.waitUntil(lambda: any("Pose prior not used" in m for m in window.banner.messages()), timeout=5000)
    poses_after(qtbot, window)
    window.close()


def test_missing_weights_show_a_message_and_the_video_still_plays(qtbot, clip):
    window = open_window(qtbot, session_error=WeightsError("model weights not found: models/posenet-human18.safetensors"))
    window.open_source(str(clip))
    qtbot.waitUntil(lambda: any("Could not load the model" in m for m in window.banner.messages()), timeout=5000)
    qtbot.waitUntil(lambda: window.video.frames_shown > 5, timeout=3000)
    assert window.poses_received == 0
    window.close()


def test_disk_full_while_recording_keeps_what_was_written(qtbot, window, clip, tmp_path, monkeypatch):
    from posetracker.recording import SessionRecorder, open_recording

    original = SessionRecorder._write_pose
    calls = []

    def failing(self, pose, n):
        calls.append(n)
        if len(calls) > 4:
            raise OSError(errno.ENOSPC, "No space left on device")
        original(self, pose, n)

    monkeypatch.setattr(SessionRecorder, "_write_pose", failing)
    window.open_source(str(clip))
    poses_after(qtbot, window)
    folder = window.start_recording(tmp_path / "full")
    qtbot.waitUntil(lambda: any("No space left" in m for m in window.banner.messages()), timeout=5000)
    qtbot.waitUntil(lambda: not window.record_action.isChecked(), timeout=3000)
    _, seq = open_recording(folder)
    assert len(seq) == 4
    poses_after(qtbot, window)  # tracking goes on


def test_tiny_window_gets_a_message_and_keeps_running(qtbot, window, clip):
    window.open_source(str(clip))
    window.resize(200, 150)
    qtbot.wait(100)
    assert window.width() < 520 and window.height() < 360
    assert any("too small" in m for m in window.banner.messages())
    poses_after(qtbot, window)
    window.resize(1100, 750)
    qtbot.wait(50)
    assert not any("too small" in m for m in window.banner.messages())


def test_export_with_every_registered_exporter(qtbot, window, clip, tmp_path):
    window.open_source(str(clip))
    poses_after(qtbot, window, n=5)
    for name, exporter in exporters().items():
        target = tmp_path / f"poses{exporter.suffixes[0]}"
        assert window.export_to(target, name) is not None
        qtbot.waitUntil(lambda: not window._jobs, timeout=5000)
        assert target.exists() and target.stat().st_size > 0, name
    assert set(exporters()) <= {a.text().split(" ")[0].lower() for a in window.export_menu.actions()}


def test_bvh_export_of_a_crowd_writes_who_it_can_and_says_who_not(qtbot, window, tmp_path):
    from test_bvh_synthetic import make_sequence

    seq = make_sequence(12, people=2)
    for f in seq.frames:
        f.world[1, 11:13] = np.nan  # person 1: no hips in 3-D
    window.sequence = seq
    assert window.export_to(tmp_path / "crowd.bvh", "bvh") is not None
    qtbot.waitUntil(lambda: not window._jobs, timeout=5000)
    assert (tmp_path / "crowd_person0.bvh").is_file() and not (tmp_path / "crowd_person1.bvh").exists()
    qtbot.waitUntil(lambda: any("person 1 not exported" in m for m in window.banner.messages()), timeout=2000)


def test_offline_mode_processes_the_whole_file_then_plays_it(qtbot, window, clip):
    window.open_source(str(clip), mode="offline")
    with qtbot.waitSignal(window.controller.processing_done, timeout=8000) as blocker:
        pass
    assert len(blocker.args[0]) == 45
    camera = blocker.args[0].metadata["camera"]  # chosen as posetracker process --fov auto does: no tag, too few people
    assert camera["source"] == "default" and camera["fov_deg"] == 60.0 and "not estimated" in camera["detail"]
    poses_after(qtbot, window)
    assert window.sequence is blocker.args[0] and window.state.mode == "offline"


def test_cancelling_offline_processing_returns_to_live_tracking(qtbot, clip):
    window = open_window(qtbot, delay=0.05)
    window.open_source(str(clip), mode="offline")
    qtbot.waitUntil(lambda: window.controller.offline is not None, timeout=3000)
    with qtbot.waitSignal(window.controller.processing_finished, timeout=3000):
        window.source_panel.cancel.click()
    poses_after(qtbot, window)
    assert window.state.mode == "live" and window.sequence is None
    assert window.model_panel.mode.currentData() == "live"
    window.close()


def test_cancelling_a_later_whole_file_pass_plays_on(qtbot, clip):
    window = open_window(qtbot, delay=0.05)
    window.open_source(str(clip))
    poses_after(qtbot, window)
    window.process_whole_file()
    qtbot.waitUntil(lambda: window.controller.offline is not None, timeout=3000)
    with qtbot.waitSignal(window.controller.processing_finished, timeout=3000):
        window.source_panel.cancel.click()
    qtbot.waitUntil(lambda: window.controller.snapshot().playing, timeout=3000)
    poses_after(qtbot, window)
    window.close()


def test_lookahead_restarts_inference_and_shows_its_cost(qtbot, window, clip):
    from posetracker.defaults import DEFAULT_LOOKAHEAD

    window.open_source(str(clip))
    poses_after(qtbot, window)
    assert window.services.choices[-1].lookahead == DEFAULT_LOOKAHEAD == window.model_panel.lookahead.value() == 1
    assert window.model_panel.cost.text() == "\u2265 +33 ms latency at 30 fps, smoother"
    window.model_panel.lookahead.setValue(3)
    poses_after(qtbot, window)
    assert window.services.choices[-1].lookahead == 3 and window.services.choices[-1].mode == "live"
    assert window.model_panel.cost.text() == "\u2265 +100 ms latency at 30 fps, smoother"
    window.model_panel.lookahead.setValue(0)
    assert window.model_panel.cost.text().startswith("lowest latency")


def test_drop_a_file_opens_it(qtbot, window, clip):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(clip))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    poses_after(qtbot, window)
    assert window.state.source == str(clip)


def test_settings_persist_between_runs(qtbot, clip):
    window = open_window(qtbot)
    window.labels_action.setChecked(False)
    window.model_panel.lookahead.setValue(2)
    window.open_source(str(clip))
    window.close()
    again = open_window(qtbot)
    assert not again.state.show_labels and not again.labels_action.isChecked()
    assert again.state.lookahead == 2 and again.state.recent_files[0] == str(clip)
    again.close()


def test_panels_offer_the_right_choices(qtbot, window):
    from ui.skeleton_view import gl_available, to_scene

    assert (window.skeleton_view.gl is None) == (not gl_available()), "without GL: a placeholder"
    assert to_scene(np.array([1.0, 2.0, 3.0])).tolist() == [1.0, 3.0, -2.0]
    skeletons = window.model_panel.skeleton
    enabled = [skeletons.itemData(i) for i in range(skeletons.count()) if skeletons.model().item(i).isEnabled()]
    assert enabled == ["human18", "fly13", "mouse4"]  # the skeletons with shipped weights, human first
    names, note = window.services.refiner_names("human18")  # the refiners trained for human18
    assert window.model_panel.refiners.isEnabled() == bool(names)
    assert [b.property("kind") for b in window.model_panel.refiner_boxes] == names
    assert window.model_panel.refiner_note.text() == (note or "")
    assert ("Process whole file always runs: Precision stage." in (note or "")) == ("crop" in names)
    assert window.source_panel.cameras.item(0).text() == "0: Fake camera"


def test_skeleton_view_draws_with_opengl(qtbot):
    """Runs where a GL context exists (QT_QPA_PLATFORM=xcb under xvfb-run); skipped offscreen."""
    from gui_helpers import FakeSession
    from posetracker.types import Frame
    from ui.skeleton_view import SkeletonView, gl_available

    if not gl_available():
        pytest.skip("no OpenGL context on this platform (offscreen)")
    view = SkeletonView()
    qtbot.addWidget(view)
    session = FakeSession(people=2)
    view.set_spec(session.spec)
    view.show()
    view.set_pose(session.pose_for(Frame(0, 0.0, np.zeros((120, 160, 3), np.uint8))))
    qtbot.wait(200)
    image = view.grab_image()
    assert image is not None and not image.isNull()
    pixels = np.array([image.pixelColor(x, y).red() for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)])
    assert (pixels > 150).any(), "coloured skeleton pixels were rendered"
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest

    before = view.gl.opts["azimuth"]
    QTest.mousePress(view.gl, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(50, 50))
    QTest.mouseMove(view.gl, QPoint(90, 55))
    QTest.mouseRelease(view.gl, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(90, 55))
    assert view.gl.opts["azimuth"] != before, "dragging in the 3-D window orbits the camera"


def test_video_view_downscales_the_frame_but_keeps_source_coordinates(qtbot):
    """A big frame is resized to the view's pixels on the GUI thread; the overlay stays in source pixels."""
    from gui_helpers import FakeSession
    from posetracker.types import Frame
    from ui.video_view import VideoView, display_size

    assert display_size((1280, 720), (640, 480)) == (640, 360)
    assert display_size((320, 240), (640, 480)) is None, "never enlarged"
    view = VideoView()
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.show()
    qtbot.waitExposed(view)
    session = FakeSession(people=2)
    view.set_spec(session.spec)
    frame = Frame(0, 0.0, np.full((720, 1280, 3), 90, np.uint8))
    pose = session.pose_for(frame)
    view.show_frame(frame.image, pose)
    shown = view.image.image
    port = view.graphics.viewport().width() * view.devicePixelRatioF()
    assert shown.shape[1] <= port / 0.9 and shown.shape[1] < 1280 and shown.dtype == np.uint8
    rect = view.image.mapRectToParent(view.image.boundingRect())
    assert (round(rect.width()), round(rect.height())) == (1280, 720)
    assert view.image.levels is None, "no per-pixel level scaling"
    spots = len(view.joints.data)
    view.show_frame(None, pose)  # same pose again: nothing redrawn
    assert len(view.joints.data) == spots > 0


def test_a_bare_number_as_source_hints_at_the_camera(qtbot, window):
    window.open_source("0")
    assert any("camera:0" in m for m in window.banner.messages())


def test_a_failed_open_clears_the_title_and_a_good_one_clears_old_errors(qtbot, window, clip, tmp_path):
    window.open_source(str(clip))
    qtbot.waitUntil(lambda: "clip.mp4" in window.windowTitle(), timeout=5000)
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video at all")
    window.open_source(str(broken))
    qtbot.waitUntil(lambda: len(window.banner.messages()) > 0, timeout=5000)
    assert window.windowTitle() == "PoseTracker"  # not the previous file's name
    window.open_source(str(clip))
    qtbot.waitUntil(lambda: "clip.mp4" in window.windowTitle(), timeout=5000)
    assert not any("broken.mp4" in m for m in window.banner.messages())


def test_a_model_that_fails_to_load_is_not_left_loading(qtbot, clip):
    from posetracker.model.weights import WeightsError

    window = open_window(qtbot, session_error=WeightsError("model weights not found: models/x.safetensors"))
    try:
        window.open_source(str(clip))
        qtbot.waitUntil(lambda: "not running" in window.model_panel.model_label.text(), timeout=5000)
        assert any("not found" in m for m in window.banner.messages())
    finally:
        window.close()


def test_file_menu_opens_an_image_folder(qtbot, window, tmp_path, monkeypatch):
    """Issue #24 item 13: image folders are in the Open choices (File > Open image folder…)."""
    import cv2
    from PySide6.QtWidgets import QFileDialog

    folder = tmp_path / "frames"
    folder.mkdir()
    for i in range(6):
        cv2.imwrite(str(folder / f"{i:03d}.png"), np.full((120, 160, 3), 40 * i, np.uint8))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(folder)))
    menu = window.menuBar().actions()[0].menu()
    action = next(a for a in menu.actions() if a.text() == "Open image folder…")
    action.trigger()
    qtbot.waitUntil(lambda: window.source_info is not None, timeout=5000)
    assert window.state.source == str(folder) and window.source_info.frame_count == 6


def test_the_3d_view_and_plots_are_drawn_less_often_while_inference_lags(qtbot, window, monkeypatch):
    from ui.packets import PipelineStats
    from ui.window_events import LAGGING_EVERY, SLOW_EVERY

    window.timer.stop()
    drawn = {"3d": 0, "plots": 0}
    monkeypatch.setattr(window.skeleton_view, "set_pose", lambda *a: drawn.__setitem__("3d", drawn["3d"] + 1))
    monkeypatch.setattr(window.plots, "refresh", lambda: drawn.__setitem__("plots", drawn["plots"] + 1))

    def ticks(stats, n=24):
        monkeypatch.setattr(window.controller, "snapshot", lambda: stats)
        for i in range(LAGGING_EVERY + n):  # the first ticks see the rates change
            if i == LAGGING_EVERY:
                drawn.update({"3d": 0, "plots": 0})
            window._pose_3d, window._plots_stale = object(), True
            window.on_timer_tick()
        return dict(drawn)

    keeping_up = ticks(PipelineStats(source_fps=30.0, inference_fps=29.5, playing=True))
    lagging = ticks(PipelineStats(source_fps=50.0, inference_fps=25.0, playing=True))
    assert keeping_up == {"3d": 24 // SLOW_EVERY, "plots": 24 // SLOW_EVERY}
    assert lagging == {"3d": 24 // LAGGING_EVERY, "plots": 24 // LAGGING_EVERY}
    assert ticks(PipelineStats(source_fps=50.0, inference_fps=25.0, playing=False)) == keeping_up  # paused
