"""File > Open several cameras with Live ticked (issue #48's stretch goal), offscreen: the videos are played as
cameras through ``posetracker.multiview.live_run.run_live_sources`` with live sessions whose 2-D is not smoothed,
and the result is shown in the window as an offline one is."""

from __future__ import annotations

import pytest

from gui_helpers import fake_services, make_video, wait_until
from test_gui_multicamera import write_toml

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
    assert [(c.mode, c.smoothing, c.refiners) for c in services.choices] == [("live", False, None)] * 2
    assert window.model_panel.mode.currentData() == "live"  # tracked live: the Mode panel says so
    assert all(0 < c.fov_deg < 180 for c in services.choices)
    meta = window.views_result.sequence.metadata
    live = meta["multiview"]["live"]
    assert live["paced"] and live["read"][1] >= 14 and live["instants"] >= 1 and meta["mode"] == "live"
    wait_until(qtbot, dialog.live.isEnabled, 20)  # unlocked once the job's thread has ended (after the result)
    assert dialog.message.text().startswith("Done in")
    assert window.state.source == videos[0]
    window.ask_open_views(live=False)
    assert not dialog.live.isChecked()


def test_live_cancelled_keeps_and_shows_what_was_tracked(qtbot, tmp_path):
    """Cancel stops the cameras and keeps the instants tracked so far, as the CLI's Ctrl-C writes them: the
    result is offered to the window, which shows it."""
    from ui.main_window import MainWindow

    videos = [str(make_video(tmp_path / f"cam0{i}.mp4", frames=90)) for i in (1, 2)]
    window = MainWindow(services=fake_services(delay=0.05))
    qtbot.addWidget(window)
    window.ask_open_views(videos, str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"])), start=True, live=True)
    dialog = window.views_dialog
    wait_until(qtbot, lambda: dialog.status.text().startswith("Live:"), 20)
    dialog.cancel_run()
    wait_until(qtbot, lambda: not dialog.running(), 20)
    assert dialog.message.text().startswith("Cancelled, kept what was tracked in")
    assert dialog.result is not None and window.views_result is dialog.result
    seq = dialog.result.sequence
    assert "incomplete" in seq.metadata and 1 <= len(seq) < 90
    assert window.sequence is not None and window.model_panel.mode.currentData() == "live"


def test_live_sessions_are_the_clis(tmp_path):
    """The app's Live box and ``process SRC1 SRC2 --mode live`` open each view's session with the same settings
    (the live mode's default refiners, its 2-D not smoothed)."""
    from types import SimpleNamespace

    from posetracker.cli import build_parser
    from posetracker.cli.process_live_views import view_config
    from posetracker.defaults import DEFAULT_MAX_PEOPLE
    from ui.services import session_config
    from ui.window_views import WindowViews

    args = build_parser().parse_args(["process", "a.mp4", "b.mp4", "--mode", "live", "--calibration", "c.toml"])
    cli = view_config(args, 50.0)
    window = SimpleNamespace(state=SimpleNamespace(max_people=DEFAULT_MAX_PEOPLE),
                             services=SimpleNamespace(make_session=lambda choice: choice))
    app = session_config(WindowViews.views_sessions(window, live=True)(50.0))[2]
    assert (app.mode, app.refine.refiners, app.motion.smoothing, app.depth.fov_deg, app.network.lookahead,
            app.people.max_people) == (cli.mode, cli.refine.refiners, cli.motion.smoothing, cli.depth.fov_deg,
                                       cli.network.lookahead, cli.people.max_people)
