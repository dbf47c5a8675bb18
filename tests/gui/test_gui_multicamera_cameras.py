"""File > Open several cameras with connected cameras (issue #48), offscreen, the cameras faked (FakeCamera behind
WebcamSource through the window's services; no hardware): chosen from the Add camera menu they tick Live and lock
it, are opened and checked (a frame read, its size against its calibrated camera), run through the CLI's library
call with the same sources, cameras and session settings as ``posetracker process camera:0 camera:1 --mode live
--calibration F``, and the result is shown over the cameras' frames the run kept; a camera that cannot be opened is
said in words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gui_helpers import fake_services, wait_until
from test_gui_multicamera import write_toml

from posetracker.capture import CameraInfo, FakeCamera, WebcamSource, lavfi_available

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise", "does not support activat")]


def camera_services(connected=(0, 1), listed=(0, 1), size=(160, 120), unplug: dict[int, int] | None = None):
    """fake_services whose Cameras list has ``listed`` and whose cameras ``connected`` open (FakeCamera of ``size``,
    real time; camera i unplugged after ``unplug[i]`` frames); the others are not there (CameraNotFoundError, as
    WebcamSource raises). ``opened`` counts opens."""
    services = fake_services()
    services.opened = []

    def open_camera(index: int):
        services.opened.append(index)
        fake = FakeCamera.factory(size=size, fps=30.0, realtime=True, fail_open=index not in connected,
                                  unplug_after=(unplug or {}).get(index))
        return WebcamSource(index, opener=fake)

    services.open_camera = open_camera
    services.list_cameras = lambda: [CameraInfo(i, f"Fake camera {i}") for i in listed]
    return services


def views_dialog(qtbot, services, calibration: str):
    """The main window on ``services`` with File > Open several cameras open on ``calibration`` -> (window, dialog)."""
    from ui.main_window import MainWindow

    window = MainWindow(services=services)
    qtbot.addWidget(window)
    window.ask_open_views(calibration=calibration)
    return window, window.views_dialog


def choose_cameras(dialog, *indices):
    """Pick ``indices`` from the Add camera menu, as the user does."""
    dialog._fill_camera_menu()
    actions = {a.text().split()[0]: a for a in dialog.camera_menu.actions()}
    for i in indices:
        actions[f"camera:{i}"].trigger()


def test_cameras_chosen_tick_live_are_checked_and_run_as_the_cli_runs_them(qtbot, tmp_path, monkeypatch):
    import posetracker.cli.process_live_views as cli_views
    from posetracker.cli import main as cli_main
    from posetracker.multiview import live_run
    from posetracker.multiview.fuse import calibrated_fov
    from posetracker.multiview.process import ViewsError
    from posetracker.session import SessionConfig
    from ui.services import session_config

    calib = str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"]))
    services = camera_services()
    window, dialog = views_dialog(qtbot, services, calib)
    assert dialog.live.isEnabled() and not dialog.live.isChecked() and not dialog.live_note.isVisible()
    choose_cameras(dialog, 0, 1)
    assert dialog.views() == ["camera:0", "camera:1"]
    assert dialog.live.isChecked() and not dialog.live.isEnabled()  # a camera cannot be processed offline
    assert dialog.live_note.isVisible() and "cannot be processed offline" in dialog.live_note.text()
    cells = [[dialog.table.item(r, c).text() for c in range(6)] for r in range(2)]
    assert cells == [["camera:0 (Fake camera 0)", "cam01", "live", "30", "160x120", "ok"],
                     ["camera:1 (Fake camera 1)", "cam02", "live", "30", "160x120", "ok"]]
    assert set(services.opened) == {0, 1}  # each opened (its first frame read) by the check
    opens = len(services.opened)
    dialog.refresh()
    assert len(services.opened) == opens  # once opened, a camera is not opened again by each check
    assert dialog.start.isEnabled() and dialog.message.text().startswith("Ready: 2 connected cameras")
    dialog._fill_camera_menu()
    assert not any(a.isEnabled() for a in dialog.camera_menu.actions())  # both taken already

    calls, kept = [], []

    def record(sources, cameras, make_session, *, calibration_name, paced=False, smoothing=True, rigid_bones=True,
               heights=None, repair_swaps=False, cancel=None, progress=None, opener=None, keep_frames=None):
        configs = []
        kept.append(keep_frames)
        for cam in cameras:
            made = make_session(calibrated_fov(cam))
            configs.append(made if isinstance(made, SessionConfig) else session_config(services.choices[-1])[2])
        calls.append({"sources": list(sources), "cameras": [(c.name, c.K.tolist(), c.image_size) for c in cameras],
                      "calibration": calibration_name, "paced": paced or all(s.startswith("camera:") for s in sources),
                      "smoothing": smoothing, "rigid_bones": rigid_bones, "heights": heights,
                      "repair_swaps": repair_swaps, "configs": configs})
        raise ViewsError("recorded, not run")

    monkeypatch.setattr(live_run, "run_live_sources", record)
    assert dialog.start_run()
    wait_until(qtbot, lambda: not dialog.running(), 10)
    assert dialog.message.text() == "Recorded, not run"  # the worker's ViewsError, said in the dialog
    monkeypatch.setattr(cli_views, "_session", lambda args, fov: cli_views.view_config(args, fov))
    out = tmp_path / "cli.json"
    assert cli_main(["process", "camera:0", "camera:1", "--mode", "live", "--calibration", calib, "--out",
                     str(out)]) == 2
    app, cli = calls
    app_configs, cli_configs = app.pop("configs"), cli.pop("configs")
    assert app == cli  # sources, cameras, calibration, pacing, finishing: the same as the CLI's
    assert app_configs == cli_configs
    assert kept[0].parent == Path(window.state.recordings_dir) and kept[1] is None  # the app keeps the frames

def test_two_cameras_tracked_live_until_cancel_and_shown_over_their_kept_frames(qtbot, tmp_path):
    """The fake cameras run through run_live_sources (the window's services open them); Cancel keeps the instants
    tracked and the window shows them over camera:1's frames, kept by the run in a new recordings folder (one
    video per camera, a frame per instant of the result)."""
    import av

    services = camera_services(size=(320, 240))  # calibrated at 160x120: the same cameras scaled
    window, dialog = views_dialog(qtbot, services, str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"])))
    choose_cameras(dialog, 1, 0)
    assert [dialog.table.item(r, 1).text() for r in range(2)] == ["cam01", "cam02"]  # in order, as the CLI
    assert "the same camera scaled" in dialog.table.item(0, 5).text()
    services.opened.clear()
    assert dialog.start_run()
    assert dialog.progress.maximum() == 0  # a camera has no end: a busy bar
    assert not dialog.table.cellWidget(0, 1).isEnabled()  # no picking while the run holds the cameras
    dialog._pick_camera("camera:1", "cam02")
    assert dialog.picked == {}
    wait_until(qtbot, lambda: dialog.status.text().startswith("Live:"), 20)
    assert sorted(services.opened[-2:]) == [0, 1]  # the run opened the services' cameras
    dialog.cancel_run()
    wait_until(qtbot, lambda: not dialog.running() and window.views_result is not None, 20)
    result = window.views_result
    assert result.views == ["camera:1", "camera:0"] and [c.name for c in result.cameras] == ["cam01", "cam02"]
    assert result.cameras[0].image_size == (320, 240) and len(result.sequence) >= 1
    assert re.match(r"Cancelled, kept what was tracked in \d+ s: \d+ instants, ", dialog.message.text())
    assert "camera:1's frames, kept in " in dialog.message.text()
    assert [Path(p).name for p in result.kept] == ["cam01.mp4", "cam02.mp4"]
    assert Path(result.kept[0]).parent.parent == Path(window.state.recordings_dir)
    for path in result.kept:  # one frame per instant
        with av.open(path) as video:
            assert sum(1 for _ in video.decode(video=0)) == len(result.sequence)
    assert dialog.progress.maximum() == 1 and not dialog.live.isEnabled()  # still cameras: Live stays locked
    assert window.state.source == "camera:1" and window.model_panel.mode.currentData() == "live"
    wait_until(qtbot, lambda: window.source_info is not None, 10)
    assert tuple(window.source_info.size) == (320, 240)
    assert any("camera:1's frames kept in" in m for m in window.banner.messages())
    label = window.source_panel.calibration_label.text()
    assert label == "Calibrated: cam01, one of 2 cameras" and not window.source_panel.clear_calibration.isEnabled()


def test_a_camera_that_cannot_be_opened_is_said_and_nothing_is_lost(qtbot, tmp_path):

    calib = str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"]))
    services = camera_services(connected=(0,), listed=(0, 5))
    window, dialog = views_dialog(qtbot, services, calib)
    choose_cameras(dialog, 0, 5)
    assert dialog.table.item(1, 5).text().startswith("cannot be opened: No camera found at camera index 5")
    assert dialog.message.text().startswith("camera:5: cannot be opened: No camera found at camera index 5")
    assert not dialog.start.isEnabled() and not dialog.start_run()
    assert dialog.views() == ["camera:0", "camera:5"] and dialog.calibration_files() == [calib]  # kept
    tries = services.opened.count(5)
    dialog.refresh()
    assert services.opened.count(5) == tries + 1 and services.opened.count(0) == 1  # the failing one tried again

    def broken(index):
        raise RuntimeError("the driver fell over")

    services.open_camera = broken  # a driver raising anything: said in the row, never a traceback
    dialog.add_camera(0, "Fake camera 0")  # chosen again: opened again
    assert dialog.table.item(0, 5).text() == "cannot be opened: the driver fell over"
    services.list_cameras = list
    dialog._fill_camera_menu()
    assert [a.text() for a in dialog.camera_menu.actions()] == ["No camera found (is one connected?)"]
    dialog.table.selectRow(1)
    dialog.remove_selected()
    dialog.table.selectRow(0)
    dialog.remove_selected()
    assert dialog.live.isEnabled() and not dialog.live_note.isVisible()  # no camera left: Live is free again


def test_cameras_of_another_aspect_than_calibrated_are_refused_not_run_with_a_warning(qtbot, tmp_path):
    """Cameras giving 4:3 frames calibrated at 16:9 (the same camera at another mode, or another camera): their
    calibration does not fit the frames. The dialog said so only as a note and the run went on with a warning,
    triangulating through the wrong cameras; now the dialog says it as the problem, Start stays off, and the
    library call refuses it as ``process`` refuses such a video."""
    from posetracker.multiview.live_run import run_live_sources
    from posetracker.multiview.process import ViewsError
    from posetracker.multiview.calibration import read_calibrations

    calib = str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"]))  # 160x120
    services = camera_services(size=(160, 90))
    window, dialog = views_dialog(qtbot, services, calib)
    choose_cameras(dialog, 0, 1)
    assert "(another aspect)" in dialog.message.text() and not dialog.start.isEnabled() and not dialog.start_run()
    assert dialog.table.item(0, 5).text().startswith("the frames are 160x90 but camera cam01 was calibrated at 160x120")
    cameras = read_calibrations([calib])
    with pytest.raises(ViewsError, match="another aspect.*calibrate it at this one") as caught:
        run_live_sources(["camera:0", "camera:1"], cameras, lambda fov: object(), calibration_name="calib.toml",
                         opener=lambda source: services.open_camera(int(source.split(":")[1])))
    assert caught.value.code == 2


@pytest.mark.skipif(not lavfi_available(), reason="this PyAV has no lavfi")
def test_stand_in_cameras_are_the_apps_cameras():
    """``main.py --stand-in-cameras SOURCE ...`` (demos, screenshots without hardware): camera:N opens SOURCE N."""
    from posetracker.capture import CameraNotFoundError
    from ui.app import parse_args
    from ui.services import Services, stand_in_cameras

    args = parse_args(["--stand-in-cameras", "lavfi:testsrc2=size=64x48:rate=10", "/clips/cam02.mp4",
                       "--views", "camera:0", "camera:1", "--calibration", "c.toml"])
    services = stand_in_cameras(Services(), args.stand_in_cameras)
    assert services.list_cameras() == [CameraInfo(0, "stand-in: lavfi:testsrc2=size=64x48:rate=10"),
                                       CameraInfo(1, "stand-in: cam02.mp4")]
    with services.open_camera(0) as source:
        assert source.size == (64, 48) and source.is_live
    with pytest.raises(CameraNotFoundError, match="camera index 2"):
        services.open_camera(2)
    assert stand_in_cameras(Services(), ["lavfi:movie=/a/cam01.mp4:loop=3"]).list_cameras()[0].name == \
        "stand-in: cam01.mp4"
    with pytest.raises(SystemExit):  # --cameras: one per --views source
        parse_args(["--views", "camera:0", "camera:1", "--calibration", "c.toml", "--cameras", "cam01"])


def test_main_py_cameras_picks_each_views_calibrated_camera(qtbot, tmp_path):
    from ui.main_window import MainWindow

    window = MainWindow(services=camera_services())
    qtbot.addWidget(window)
    calib = str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02", "cam03", "cam04"]))
    window.ask_open_views(["camera:0", "camera:1"], calib, cameras=["cam04", "cam02"])
    dialog = window.views_dialog
    assert dialog.check.ready and [v.camera for v in dialog.check.views] == ["cam04", "cam02"]
    assert dialog.table.item(0, 0).text() == "camera:0 (Fake camera 0)"


def test_a_camera_unplugged_mid_run_keeps_the_instants_before_it(qtbot, tmp_path, monkeypatch):
    """camera:1 stops after 20 frames: the app shows the instants tracked before it, with the camera's error, and
    the CLI writes them and exits 1 (as for one source); before, both dropped them."""
    from gui_helpers import FakeSession

    import posetracker.capture
    import posetracker.cli.process_live_views as cli_views
    from posetracker.cli import main as cli_main

    calib = str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"]))
    services = camera_services(unplug={1: 20})
    window, dialog = views_dialog(qtbot, services, calib)
    choose_cameras(dialog, 0, 1)
    assert dialog.start_run()
    wait_until(qtbot, lambda: not dialog.running() and window.views_result is not None, 20)
    seq = window.views_result.sequence
    assert 1 <= len(seq) <= 20 and "Camera 1 stopped delivering frames" in seq.metadata["failure"]
    assert dialog.message.text().startswith("Stopped: a source failed, kept what was tracked in")
    assert "Error: Camera 1 stopped delivering frames" in dialog.message.text()

    monkeypatch.setattr(posetracker.capture, "open_source", lambda spec: services.open_camera(int(spec[-1])))
    monkeypatch.setattr(cli_views, "_session", lambda args, fov: FakeSession())
    out = tmp_path / "cli.json"
    assert cli_main(["process", "camera:0", "camera:1", "--mode", "live", "--calibration", calib, "--out",
                     str(out)]) == 1
    assert out.is_file()


def test_the_camera_the_window_shows_is_closed_there_before_the_dialog_opens_it(qtbot, tmp_path):
    """A camera is opened by one program at a time (V4L2 refuses a second reader): camera:0 playing live in the
    window is closed there, and the banner says so, before the dialog checks it."""
    from ui.main_window import MainWindow

    services = camera_services()
    window = MainWindow(services=services)
    qtbot.addWidget(window)
    window.open_source("camera:0")
    wait_until(qtbot, lambda: window.source_info is not None and window.controller.capture is not None, 10)
    window.ask_open_views(calibration=str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"])))
    dialog = window.views_dialog
    choose_cameras(dialog, 1)
    assert window.state.source == "camera:0" and window.controller.capture is not None  # camera:1 is not it
    choose_cameras(dialog, 0)
    assert window.controller.capture is None and window.source_info is None and window.state.source == ""
    assert any(m.startswith("camera:0 was closed here") for m in window.banner.messages())
    assert dialog.check.ready


def test_each_cameras_calibrated_camera_picked_as_the_clis_cameras_option(qtbot, tmp_path, monkeypatch):
    """Two cameras and a calibration of four: the CLI's rule (in order) cannot match them; picking cam03 and cam01
    in the Camera column can, and the run reaches run_live_sources with the cameras ``--cameras cam03 cam01``
    gives the CLI."""
    import posetracker.cli.process_live_views as cli_views
    import posetracker.multiview.live_run as live_run
    from posetracker.cli import main as cli_main
    from posetracker.multiview.process import ViewsError
    from ui.main_window import MainWindow

    calib = str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02", "cam03", "cam04"]))
    window = MainWindow(services=camera_services())
    qtbot.addWidget(window)
    window.ask_open_views(calibration=calib)
    dialog = window.views_dialog
    choose_cameras(dialog, 0, 1)
    assert dialog.check.problem.startswith("The calibration has 4 cameras (cam01, cam02, cam03, cam04) for 2 sources")
    pickers = [dialog.table.cellWidget(r, 1) for r in range(2)]
    assert [p.currentText() for p in pickers] == ["—", "—"] and pickers[0].count() == 5
    dialog._pick_camera("camera:0", "cam03")
    wait_until(qtbot, lambda: dialog.check.ready, 5)  # camera:1 takes the first camera left
    assert [dialog.table.cellWidget(r, 1).currentText() for r in range(2)] == ["cam03", "cam01"]
    dialog._pick_camera("camera:1", "cam03")  # taken: the two swap
    wait_until(qtbot, lambda: dialog.table.cellWidget(0, 1).currentText() == "cam01", 5)
    dialog._pick_camera("camera:1", "cam03")
    dialog._pick_camera("camera:0", "cam03")
    wait_until(qtbot, lambda: [dialog.table.item(r, 1).text() for r in range(2)] == ["cam03", "cam01"], 5)

    calls = []

    def record(sources, cameras, make_session, **kwargs):
        calls.append((list(sources), [(c.name, c.K.tolist(), c.image_size) for c in cameras]))
        raise ViewsError("recorded, not run")

    monkeypatch.setattr(live_run, "run_live_sources", record)
    assert dialog.start_run()
    wait_until(qtbot, lambda: not dialog.running(), 10)
    monkeypatch.setattr(cli_views, "_session", lambda args, fov: cli_views.view_config(args, fov))
    assert cli_main(["process", "camera:0", "camera:1", "--mode", "live", "--calibration", calib, "--cameras",
                     "cam03", "cam01", "--out", str(tmp_path / "cli.json")]) == 2
    assert calls[0] == calls[1] and [c[0] for c in calls[0][1]] == ["cam03", "cam01"]
    dialog.set_inputs(calibration=str(write_toml(tmp_path / "other.toml", ["cam01", "cam02"])))
    assert dialog.picked == {} and [dialog.table.item(r, 1).text() for r in range(2)] == ["cam01", "cam02"]
