"""File > Open several cameras with Live ticked (issue #48's stretch goal), offscreen: the videos are played as
cameras through ``posetracker.multiview.live_run.run_live_sources`` with live sessions whose 2-D is not smoothed,
and the result is shown in the window as an offline one is."""

from __future__ import annotations

import pytest

from gui_helpers import fake_services, make_video, wait_until
from test_gui_multicamera import write_toml
from ui.multicamera_dialog import MultiCameraDialog

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise", "does not support activat")]


def test_live_plays_the_videos_as_cameras_and_the_window_shows_the_result(qtbot, tmp_path):
    from ui.main_window import MainWindow

    videos = [str(make_video(tmp_path / f"cam0{i}.mp4", frames=15)) for i in (1, 2)]
    calib = str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"]))
    services = fake_services()
    window = MainWindow(services=services)
    qtbot.addWidget(window)
    window.ask_open_views(videos, calib, start=True, live=True)
    dialog = window.views_dialog
    assert dialog.live.isChecked() and not dialog.live.isEnabled()  # locked while it runs
    wait_until(qtbot, lambda: window.views_result is not None, 20)
    assert [(c.mode, c.smoothing) for c in services.choices] == [("live", False)] * 2
    assert all(0 < c.fov_deg < 180 for c in services.choices)
    meta = window.views_result.sequence.metadata
    live = meta["multiview"]["live"]
    assert live["paced"] and live["read"][1] >= 14 and live["instants"] >= 1 and meta["mode"] == "live"
    assert dialog.message.text().startswith("Done in") and dialog.live.isEnabled()
    assert window.state.source == videos[0]
    window.ask_open_views(live=False)
    assert not dialog.live.isChecked()


def test_live_cancelled_says_so(qtbot, tmp_path):
    videos = [str(make_video(tmp_path / f"cam0{i}.mp4", frames=90)) for i in (1, 2)]
    slow = fake_services(delay=0.05)
    from ui.services import ModelChoice, with_camera

    dialog = MultiCameraDialog(lambda: None, live_sessions=lambda: lambda fov: with_camera(
        slow.make_session, ModelChoice("human18", "live", smoothing=False), fov))
    qtbot.addWidget(dialog)
    dialog.set_inputs(videos, str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"])))
    dialog.live.setChecked(True)
    assert dialog.start_run()
    wait_until(qtbot, lambda: dialog.status.text().startswith("Live:"), 20)
    dialog.cancel_run()
    wait_until(qtbot, lambda: not dialog.running(), 20)
    assert dialog.message.text() == "Cancelled: nothing was processed." and dialog.result is None
