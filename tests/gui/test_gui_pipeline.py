"""Pipeline threads without the window: latest-wins slots, fake camera, slow model, faults, stop."""

from __future__ import annotations

import time
from functools import partial

import pytest
from PySide6.QtCore import Qt

from gui_helpers import FakeSession, LookaheadSession, isolated_settings, make_video, no_modal_dialogs  # noqa: F401
from posetracker.capture import FakeCamera, VideoFileSource, WebcamSource
from posetracker.model.weights import WeightsError
from ui.packets import LatestSlot
from ui.pipeline import PipelineController

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_level_fail("WARNING")]


def camera(**kwargs):
    options = {"size": (96, 72), "fps": 30.0, "realtime": True, **kwargs}
    return partial(WebcamSource, 0, opener=FakeCamera.factory(**options))


@pytest.fixture
def controller(qtbot):
    c = PipelineController()
    yield c
    assert c.stop(), "every thread stops within 2 s"
    assert not c.running_threads()


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("clip") / "clip.mp4", frames=45)


def test_latest_slot_keeps_the_newest_and_counts_drops():
    slot: LatestSlot[int] = LatestSlot()
    assert slot.take() is None
    assert slot.put(1) is False
    assert slot.put(2) is True
    assert slot.take(timeout=0.01) == 2 and slot.take() is None
    assert slot.dropped == 1 and slot.delivered == 1


def test_fake_camera_gives_poses_and_stop_ends_every_thread(qtbot, controller):
    with qtbot.waitSignal(controller.pose_ready, timeout=5000) as blocker:
        controller.start(camera(), FakeSession)
    result = blocker.args[0]
    assert result.pose.num_people == 1 and result.frame.index == result.pose.index
    assert len(controller.running_threads()) == 2
    t0 = time.monotonic()
    assert controller.stop()
    assert time.monotonic() - t0 < 2.0
    assert not controller.running_threads()
    assert all(t.isFinished() for t in controller.threads())


def test_slow_model_at_200_fps_drops_frames_with_bounded_latency(qtbot, controller):
    controller.start(camera(fps=200.0, size=(64, 48)), partial(FakeSession, delay=0.05))
    qtbot.waitUntil(lambda: controller.inference is not None and controller.inference.latency.mean() > 0, timeout=5000)
    qtbot.wait(1200)
    stats = controller.snapshot()
    # the source keeps the camera's pace whatever the model takes: several frames read for each one inferred (a
    # source that waited for the model would read as many as it infers); a ratio, so a busy machine cannot fail it
    assert stats.source_fps > 3 * stats.inference_fps, stats
    assert 8 < stats.inference_fps < 25, stats
    assert stats.dropped > 50, "frames the slow model could not take are dropped and counted"
    assert 40 < stats.latency_ms < 150, "latency stays about one inference step"


def test_file_playback_keeps_its_pace_and_drops_frames_for_a_slow_model(qtbot, controller, clip):
    t0 = time.monotonic()
    with qtbot.waitSignal(controller.source_ended, timeout=6000):
        controller.start(partial(VideoFileSource, clip), partial(FakeSession, delay=0.1))
    ready = controller.inference.ready_flag
    elapsed = time.monotonic() - t0
    assert ready and 1.3 < elapsed < 3.0, f"45 frames at 30 fps play in ~1.5 s, took {elapsed:.2f} s"
    assert controller.frames.dropped > 10
    controller.start_inference(FakeSession)  # a new session (e.g. the offline result's replay) counts afresh
    assert controller.snapshot().dropped == 0


def test_seek_and_step_while_paused(qtbot, controller, clip):
    controller.start(partial(VideoFileSource, clip), FakeSession, autoplay=False)
    qtbot.waitUntil(lambda: controller.snapshot().position == 0, timeout=5000)
    for command, expected in ((lambda: controller.seek(20), 20), (lambda: controller.step(1), 21),
                              (lambda: controller.step(-1), 20)):
        command()
        qtbot.waitUntil(lambda e=expected: controller.snapshot().position == e, timeout=3000)
    assert not controller.snapshot().playing


def test_a_lookahead_session_shows_the_frame_stepped_to(qtbot, controller, clip):
    """Paused, seeked or stepped, the pose a look-ahead holds back still comes out (after a short idle)."""
    controller.start(partial(VideoFileSource, clip), LookaheadSession, autoplay=False)
    qtbot.waitUntil(lambda: controller.snapshot().position == 0, timeout=5000)
    for command, expected in ((lambda: controller.seek(20), 20), (lambda: controller.step(1), 21)):
        with qtbot.waitSignal(controller.pose_ready, timeout=3000,
                              check_params_cb=lambda r, e=expected: r.pose.index == e) as blocker:
            command()
        assert blocker.args[0].frame.index == expected


def test_camera_unplugged_mid_session_is_reported(qtbot, controller):
    with qtbot.waitSignal(controller.failed, timeout=5000) as blocker:
        controller.start(camera(unplug_after=10), FakeSession)
    assert "stopped delivering frames" in blocker.args[0]
    qtbot.waitUntil(lambda: len(controller.running_threads()) == 1, timeout=2000)  # inference waits for frames


def test_missing_camera_is_reported(qtbot, controller):
    with qtbot.waitSignal(controller.failed, timeout=5000) as blocker:
        controller.start(camera(fail_open=True), FakeSession)
    assert "No camera found" in blocker.args[0]


def test_missing_weights_are_reported_and_video_keeps_flowing(qtbot, controller):
    def broken():
        raise WeightsError("model weights not found: models/posenet-x.safetensors")

    with qtbot.waitSignal(controller.failed, timeout=5000) as blocker:
        controller.start(camera(), broken)
    assert "Could not load the model" in blocker.args[0] and "not found" in blocker.args[0]
    controller.preview.take()
    qtbot.waitUntil(lambda: controller.preview.take() is not None, timeout=2000)


def test_recording_through_the_pipeline_and_reopening(qtbot, controller, tmp_path):
    from posetracker.recording import SessionRecorder, open_recording
    from posetracker.skeletons import load_skeleton

    with qtbot.waitSignal(controller.pose_ready, timeout=5000):
        controller.start(camera(), FakeSession)
    folder = tmp_path / "rec"
    controller.start_recording(partial(SessionRecorder, folder, 30.0, (96, 72), load_skeleton("human18")))
    qtbot.wait(700)
    with qtbot.waitSignal(controller.recording_stopped, timeout=3000) as blocker:
        controller.stop_recording()
    summary = blocker.args[0]
    assert summary.error is None and summary.frames >= 10 and summary.poses >= 5
    video, seq = open_recording(folder)
    assert video is not None and video.frame_count == summary.frames
    video.close()
    assert len(seq) == summary.poses


def test_a_seek_or_loop_keeps_ids_going(qtbot, controller, clip):
    """Issue #24 item 13: a seek (a loop is one) resets the session but keeps its ids unique in the recording."""
    made = []

    def factory():
        made.append(FakeSession())
        return made[-1]

    controller.start(partial(VideoFileSource, clip), factory, autoplay=False)
    qtbot.waitUntil(lambda: controller.snapshot().position == 0, timeout=5000)
    qtbot.waitUntil(lambda: bool(made) and made[0].resets >= 2, timeout=3000)  # warm-up, then the first frame
    assert made[0].kept_ids is False  # a new source starts afresh
    controller.seek(20)
    qtbot.waitUntil(lambda: controller.snapshot().position == 20, timeout=3000)
    qtbot.waitUntil(lambda: made[0].kept_ids is True, timeout=3000)


def test_poses_reach_the_gui_in_batches_and_old_ones_drop_their_frames(qtbot):
    """A GUI thread behind the model: one poses_ready for all that waited, every pose in order, only the newest
    FRAMES_KEPT still holding their image; at MAX_WAITING the worker waits until the GUI takes them."""
    import threading

    import numpy as np

    from posetracker.types import Frame, PoseFrame
    from ui.packets import LatestSlot, PoseResult
    from ui.inference_worker import NO_IMAGE, InferenceWorker

    worker = InferenceWorker(LatestSlot(), LatestSlot(), lambda: None)
    signals: list[int] = []
    worker.poses_ready.connect(lambda: signals.append(1), Qt.ConnectionType.DirectConnection)

    def result(i: int) -> PoseResult:
        pose = PoseFrame(i, i / 30, np.zeros((0, 18, 3), np.float32), np.zeros((0, 18), np.float32),
                         np.zeros(0, np.float32), np.zeros(0, np.int64), (8, 8), None)
        return PoseResult(Frame(i, i / 30, np.zeros((8, 8, 3), np.uint8)), pose, 0.0, 0)

    n = InferenceWorker.FRAMES_KEPT + 4
    for i in range(n):
        worker._deliver(result(i))
    assert len(signals) == 1
    got = worker.take_poses()
    assert [r.pose.index for r in got] == list(range(n))
    assert [r.frame.image is NO_IMAGE for r in got] == [True] * 4 + [False] * InferenceWorker.FRAMES_KEPT
    worker._deliver(result(n))
    assert len(signals) == 2 and worker.take_poses()[0].pose.index == n

    def fill() -> None:
        for i in range(InferenceWorker.MAX_WAITING + 1):
            worker._deliver(result(i))

    filler = threading.Thread(target=fill)
    filler.start()
    filler.join(timeout=2.0)
    assert filler.is_alive()  # waiting for the GUI
    assert len(worker.take_poses()) == InferenceWorker.MAX_WAITING
    filler.join(timeout=2.0)
    assert not filler.is_alive() and len(worker.take_poses()) == 1


def test_a_tracking_session_runs_in_two_stages_with_the_poses_of_one_step_at_a_time(qtbot, controller, clip):
    """The worker runs the network on the newest frame and finishes each pose on a helper thread
    (pipeline_live.Finisher): every inferred frame's pose comes out, in order, equal to step() on those frames."""
    import numpy as np
    import torch

    from posetracker.model.network import PoseNet
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton

    torch.manual_seed(0)
    net = PoseNet(load_skeleton("human18")).eval()
    results = []
    controller.pose_ready.connect(results.append)
    with qtbot.waitSignal(controller.source_ended, timeout=15000):
        controller.start(partial(VideoFileSource, clip), lambda: TrackingSession(net, SessionConfig(network=NetworkSettings(lookahead=1))))
    qtbot.waitUntil(lambda: results and results[-1].pose.index == 44, timeout=5000)  # the held pose, flushed
    indices = [r.pose.index for r in results]
    assert indices == sorted(set(indices)) and all(r.frame.index == r.pose.index for r in results)
    again = TrackingSession(net, SessionConfig(network=NetworkSettings(lookahead=1)))
    with VideoFileSource(clip) as src:
        frames = {f.index: f for f in src}
    poses = [p for i in indices if (p := again.step(frames[i])) is not None] + again.flush()
    assert [p.index for p in poses] == indices
    for r, p in zip(results, poses):
        np.testing.assert_array_equal(r.pose.keypoints, p.keypoints)
        np.testing.assert_array_equal(r.pose.track_ids, p.track_ids)


def _watch_threads():
    """(a VideoFileSource that records the thread converting each frame, a FakeSession that records the threads
    inferring, the conversion threads list, the inference threads set)."""
    import threading

    converted_on, inferred_on = [], set()

    class Watched(VideoFileSource):
        def read_pending(self):
            item = super().read_pending()
            if item is not None and item._convert is not None:
                convert = item._convert
                item._convert = lambda: (converted_on.append(threading.get_ident()), convert())[1]
            return item

    class Recorded(FakeSession):
        def step(self, frame):
            inferred_on.add(threading.get_ident())
            return super().step(frame)

    return Watched, Recorded, converted_on, inferred_on


def test_a_slow_model_takes_frames_the_capture_thread_converted(qtbot, controller, clip):
    """A model slower than the source skips frames; each frame is converted once, on the capture thread (which
    waits for the next frame's time anyway), never on the inference thread."""
    Watched, Slow, converted_on, inferred_on = _watch_threads()
    seen = []
    controller.pose_ready.connect(lambda r: seen.append(r.pose.index))
    with qtbot.waitSignal(controller.source_ended, timeout=6000):
        controller.start(partial(Watched, clip), partial(Slow, delay=0.1))
    qtbot.waitUntil(lambda: len(seen) == controller.frames.delivered, timeout=3000)
    assert controller.frames.dropped > 10 and seen
    assert len(converted_on) >= len(seen) + controller.frames.dropped - 1  # every frame, once
    assert not inferred_on & set(converted_on)


def test_a_model_that_keeps_up_gets_frames_converted_by_the_capture_thread(qtbot, controller, clip):
    """The model waits for each frame: the capture thread converts it before handing it over."""
    Watched, Quick, converted_on, inferred_on = _watch_threads()
    with qtbot.waitSignal(controller.source_ended, timeout=6000):
        controller.start(partial(Watched, clip), Quick)
    assert len(converted_on) > 30 and controller.frames.dropped < 10
    on_inference = sum(t in inferred_on for t in converted_on)
    assert on_inference <= 0.2 * len(converted_on), (on_inference, len(converted_on))
