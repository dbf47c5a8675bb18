"""One calibrated camera for one video or camera (issue #48), in the library (posetracker.multiview.one_view), the
CLI (``process clip.mp4 --calibration FILE``) and the app (File > Camera calibration, ui/window_calibration.py): the
camera picked and checked against the frames, in words; the whole-file result and live tracking use its field of
view and floor as the CLI does. Tools > Calibrate cameras from a board (ui/board_dialog.py) on synthetic board
clips: the report, the saved file, cancel and a board never found."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gui_helpers import (fake_services, isolated_settings, make_video, no_modal_dialogs, wait_until,  # noqa: F401
                         window)
from posetracker.multiview.calibration import CalibrationError, read_calibration
from posetracker.multiview.one_view import read_view
from test_gui_multicamera import write_toml

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise", "does not support activat")]
gui = pytest.mark.gui


@pytest.fixture
def calib(tmp_path):
    """Cameras cam01-03, 160x120 px, focal 150 px, 1.5 m above the floor (z = 0)."""
    return str(write_toml(tmp_path / "calib.toml", ["cam01", "cam02", "cam03"]))


def test_one_view_picks_its_camera_and_checks_the_frames(tmp_path, calib):
    view = read_view(calib, "videos/cam02_walk.mp4")
    assert view.camera.name == "cam02" and view.names == ("cam01", "cam02", "cam03")
    assert read_view(calib, camera="cam03").camera.name == "cam03"
    with pytest.raises(CalibrationError, match=r"has 3 cameras \(cam01, cam02, cam03\): choose one"):
        read_view(calib)
    with pytest.raises(CalibrationError, match=r"side.mp4 names no camera of the calibration \(cam01, cam02, cam03\): "
                                               r"its file name must contain its camera's name, e.g. cam01.mp4"):
        read_view(calib, "side.mp4")
    fov = view.camera_fov()
    assert fov.source == "user" and fov.detail == "calibration calib.toml, camera cam02"
    assert fov.fov_deg == pytest.approx(np.degrees(2 * np.arctan(80 / 150)))
    assert view.describe() == f"cam02, f = 150 px ({fov.fov_deg:.1f} deg), floor"
    assert view.floor()["camera_height_m"] == pytest.approx(1.5) and view.floor()["people_on_it"] is False
    assert view.check_size((160, 120)) == "" and view.check_size(None) == ""
    assert "the same camera scaled" in view.check_size((320, 240))
    with pytest.raises(CalibrationError, match=r"the video is 120x160 but camera cam02 of calib.toml was "
                                               r"calibrated at 160x120"):
        view.check_size((120, 160))
    (tmp_path / "broken.toml").write_text("[cam01\nmatrix = ")
    with pytest.raises(CalibrationError, match="cannot read calibration TOML"):
        read_view(str(tmp_path / "broken.toml"))
    with pytest.raises(CalibrationError, match="calib.json: no such file"):
        read_view(str(tmp_path / "calib.json"))
    (tmp_path / "calib.json").write_text("{}")
    with pytest.raises(CalibrationError, match="not a calibration file this reads"):
        read_view(str(tmp_path / "calib.json"))


def test_the_cli_refuses_another_cameras_frames(tmp_path, calib, capsys):
    from posetracker.cli import main

    clip = make_video(tmp_path / "cam01.mp4", frames=3, size=(96, 64))
    assert main(["process", str(clip), "--calibration", calib, "--out", str(tmp_path / "x.json")]) == 2
    assert "error: the video is 96x64 but camera cam01 of calib.toml was calibrated at 160x120" in \
        capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


# ---------------------------------------------------------------------------------------------------- the app


def _processed(qtbot, window, before=None):
    """The next whole-file result (after ``before``, the one shown until then)."""
    wait_until(qtbot, lambda: window.processed is not None and window.processed is not before and window.model_ok, 15)
    return window.processed


@gui
def test_a_calibration_is_the_whole_file_results_camera_and_floor(qtbot, tmp_path, window, calib):
    clip = make_video(tmp_path / "cam01.mp4", frames=12)
    window.open_source(str(clip), mode="offline")
    plain = _processed(qtbot, window)
    assert plain.metadata["camera"]["source"] != "user" and "floor" not in plain.metadata
    assert window.source_panel.calibration_label.text() == "Camera: default field of view"
    assert window.load_calibration([calib])  # cam01, named in the file name
    seq = _processed(qtbot, window, plain)
    view = read_view(calib, str(clip))
    assert seq.metadata["camera"] == view.camera_fov().as_dict()  # what `process --calibration` writes
    assert seq.metadata["floor"] == view.floor()
    assert window.services.choices[-1].mode == "offline"
    assert window.services.choices[-1].fov_deg == pytest.approx(view.camera_fov().fov_deg)
    assert window.source_panel.calibration_label.text() == f"Calibrated: {view.describe()}"
    assert window.source_panel.calibration_label.text().startswith("Calibrated: cam01, f = 150 px (")
    assert window.source_panel.clear_calibration.isEnabled()
    window.clear_calibration()
    again = _processed(qtbot, window, seq)
    assert again.metadata["camera"] == plain.metadata["camera"] and "floor" not in again.metadata
    assert not window.source_panel.clear_calibration.isEnabled()


@gui
def test_mismatches_are_messages_and_the_calibration_stays(qtbot, tmp_path, window, calib, monkeypatch):
    small = make_video(tmp_path / "cam01_small.mp4", frames=6, size=(96, 64))
    window.open_source(str(small))
    wait_until(qtbot, lambda: window.source_info is not None, 10)
    assert not window.load_calibration([calib])
    assert any("The calibration cannot be used: the video is 96x64 but camera cam01 of calib.toml was calibrated at "
               "160x120" in m for m in window.banner.messages())
    assert window.calibration is None
    (tmp_path / "broken.toml").write_text("[cam01\nmatrix = ")
    assert not window.load_calibration([str(tmp_path / "broken.toml")])
    assert any(m.startswith("The calibration cannot be used: cannot read calibration TOML")
               for m in window.banner.messages())
    other = make_video(tmp_path / "side.mp4", frames=6)  # names no camera: the user picks one
    window.open_source(str(other))
    wait_until(qtbot, lambda: window.source_info is not None, 10)
    asked = []
    monkeypatch.setattr(window, "pick_camera", lambda names, suggested: asked.append(names) or None)
    assert not window.load_calibration([calib]) and asked == [["cam01", "cam02", "cam03"]]  # cancelled
    monkeypatch.setattr(window, "pick_camera", lambda names, suggested: "cam02")
    assert window.load_calibration([calib]) and window.calibration.camera.name == "cam02"
    window.open_source(str(small))  # another source: the calibration is dropped
    assert window.calibration is None and window.source_panel.calibration_label.text().startswith("Camera: default")


@gui
def test_a_calibration_refused_before_its_source_opens_stays_said(qtbot, tmp_path, window, calib):
    """main.py --source cam02.mp4 --calibration FILE loads the calibration before opening the source: its error
    was withdrawn with the previous source's when the source opened, so the app ran uncalibrated in silence."""
    clip = str(make_video(tmp_path / "cam02.mp4", frames=6))
    (tmp_path / "broken.toml").write_text("[cam02\nmatrix = ")
    assert not window.load_calibration([str(tmp_path / "broken.toml")], source=clip)
    window.open_source(clip)
    wait_until(qtbot, lambda: window.source_info is not None, 10)
    assert any(m.startswith("The calibration cannot be used:") and "broken.toml" in m
               for m in window.banner.messages())
    assert window.calibration is None
    assert window.load_calibration([calib])  # a calibration that is used takes the message away
    assert not any(m.startswith("The calibration cannot be used:") for m in window.banner.messages())


@gui
def test_live_tracking_uses_the_calibration_and_a_camera_of_another_size_drops_it(qtbot, tmp_path, calib):
    import dataclasses

    from ui.jobs import finish_live
    from ui.main_window import MainWindow

    window = MainWindow(fake_services(camera={"size": (160, 120)}))
    qtbot.addWidget(window)
    window.open_source("camera:0")
    assert window.load_calibration([calib], camera="cam01")  # opened, not yet open: tracking starts again
    fov = read_view(calib, camera="cam01").camera_fov().fov_deg
    wait_until(qtbot, lambda: window.model_ok and window.poses_received > 2, 10)
    assert window.services.choices[-1].mode == "live" and window.services.choices[-1].fov_deg == pytest.approx(fov)
    window.open_source(str(make_video(tmp_path / "clip.mp4", frames=30)))  # another source: no calibration
    assert window.calibration is None
    wait_until(qtbot, lambda: window.model_ok, 10)  # the clip's session is made
    asked = len(window.services.choices)
    assert window.load_calibration([calib], camera="cam01", source="camera:0")  # for the source about to open
    assert len(window.services.choices) == asked  # the clip shown is not tracked again
    window.open_source("camera:0")  # kept: its tracking starts with it (main.py --calibration)
    wait_until(qtbot, lambda: len(window.services.choices) > asked, 10)
    assert window.calibration is not None and window.services.choices[-1].fov_deg == pytest.approx(fov)
    wait_until(qtbot, lambda: window.model_ok and window.current_sequence() is not None, 15)  # frames tracked
    live = window.current_sequence()
    seq, _ = finish_live(live, calibration=window.calibration)
    assert seq.metadata["camera"]["detail"] == "calibration calib.toml, camera cam01" and "floor" in seq.metadata
    folder = window.start_recording(tmp_path / "rec")  # a live recording keeps its calibration for its export
    wait_until(qtbot, lambda: window.controller.recorder is not None, 15)  # a busy machine: the first frame late
    window.stop_recording()
    kept = json.loads((folder / "meta.json").read_text())["metadata"]["calibration"]
    assert kept == {"files": [str(Path(calib).resolve())], "camera": "cam01", "fov_deg": pytest.approx(fov)}
    replayed = dataclasses.replace(live, metadata={**live.metadata, "calibration": kept})
    seq, notes = finish_live(replayed)
    assert seq.metadata["camera"]["detail"] == "calibration calib.toml, camera cam01" and not notes
    gone = dataclasses.replace(live, metadata={**live.metadata, "calibration": {**kept, "files": ["gone.toml"]}})
    seq, notes = finish_live(gone)
    assert notes[0].startswith("the recording's calibration cannot be read") and "floor" not in seq.metadata
    window.close()
    wide = MainWindow(fake_services(camera={"size": (320, 180)}))
    qtbot.addWidget(wide)
    wide.open_source("camera:0")
    assert wide.load_calibration([calib], camera="cam01")  # the size is checked once the camera opens
    wait_until(qtbot, lambda: wide.calibration is None, 10)
    assert any("The calibration is not used: the video is 320x180 but camera cam01" in m
               for m in wide.banner.messages())
    wait_until(qtbot, lambda: wide.model_ok, 10)
    assert wide.services.choices[-1].fov_deg == 60.0
    wide.close()


@gui
@pytest.mark.slow
def test_the_windows_result_is_the_clis_on_the_real_trial(qtbot, tmp_path):
    """cam01 of the 4-view trial, 6 frames, its Qualisys calibration: the window's whole-file result has the
    camera, floor and people of ``posetracker process cam01.mp4 --calibration calibration.qca.txt``."""
    import cv2

    from conftest import shared_path
    from posetracker.cli import main
    from posetracker.export.json_io import sequence_from_dict
    from ui.main_window import MainWindow
    from ui.services import Services

    folder = shared_path("data", "video", "multiview_pose2sim_multiperson")
    cap = cv2.VideoCapture(str(folder / "cam01.mp4"))
    clip = tmp_path / "cam01.mp4"
    out = None
    for _ in range(6):
        ok, img = cap.read()
        if out is None:
            out = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"mp4v"), 60.0, img.shape[1::-1])
        out.write(img)
    out.release()
    cap.release()
    calib = str(folder / "calibration.qca.txt")
    assert main(["process", str(clip), "--calibration", calib, "--out", str(tmp_path / "cli.json")]) == 0
    cli = sequence_from_dict(json.loads((tmp_path / "cli.json").read_text()))
    window = MainWindow(services=Services())
    qtbot.addWidget(window)
    window.state.refiners = ()  # the offline defaults only, as process runs (the app adds its live ones)
    window.open_source(str(clip), mode="offline")
    assert window.load_calibration([calib])
    seq = _processed_with(qtbot, window, "calibration calibration.qca.txt, camera cam01")
    for key in ("camera", "floor", "people"):
        assert seq.metadata[key] == cli.metadata[key], key
    assert cli.metadata["camera"]["fov_deg"] == pytest.approx(59.46, abs=0.01)
    for ours, theirs in zip(seq.frames, cli.frames):
        assert ours.track_ids.tolist() == theirs.track_ids.tolist()
        np.testing.assert_allclose(ours.world, theirs.world, atol=1e-3)
    window.close()


def _processed_with(qtbot, window, detail: str, timeout: float = 240):
    wait_until(qtbot, lambda: window.processed is not None
               and window.processed.metadata["camera"]["detail"] == detail, timeout)
    return window.processed


# ---------------------------------------------------------------------------------------------------- board


@pytest.fixture(scope="module")
def board_clips(tmp_path_factory):
    from board_clips import rig, write_clips
    from posetracker.calibration import Board

    board = Board("charuco", (7, 5), 0.08, 0.06)
    cams = rig(2)
    return cams, [str(p) for p in write_clips(tmp_path_factory.mktemp("board"), cams, board, frames=30, still=6)]


def _dialog(qtbot, clips, out: Path):
    from ui.board_dialog import BoardDialog

    dialog = BoardDialog()
    qtbot.addWidget(dialog)
    assert not dialog.start.isEnabled() and dialog.message.text() == "Add the board clips, one per camera."
    dialog.set_clips(clips)
    dialog.out.setText(str(out))
    dialog.square_mm.setValue(80.0)
    dialog.marker_mm.setValue(60.0)
    dialog.refresh()
    return dialog


@gui
def test_the_board_dialog_calibrates_synthetic_clips_and_saves_them(qtbot, tmp_path, board_clips):
    cams, clips = board_clips
    dialog = _dialog(qtbot, clips, tmp_path / "rig.toml")
    assert dialog.clips.item(0).text() == "cam1.mp4: camera cam1, 30 frames, 960x720"
    assert dialog.start.isEnabled() and dialog.message.text() == "Ready: 2 clip(s)."
    assert not dialog.use_source.isEnabled()
    assert dialog.start_run() and not dialog.start_run()  # one run at a time
    wait_until(qtbot, lambda: not dialog.running(), 120)
    assert dialog.message.text() == f"Saved 2 camera(s) (cam1, cam2) to {tmp_path / 'rig.toml'}."
    report = dialog.report.toPlainText().splitlines()
    assert report[0].startswith("cam1: board in ") and "reprojection rms: intrinsics" in report[0]
    assert report[-1].startswith("Floor: board lying still in frames")
    assert dialog.progress.value() == dialog.progress.maximum() == 60
    saved = read_calibration(tmp_path / "rig.toml")
    assert [c.name for c in saved] == ["cam1", "cam2"]
    for got, truth in zip(saved, cams):
        assert got.K[0, 0] == pytest.approx(truth.K[0, 0], rel=0.02)
        assert abs(got.center[2] - 1.7) < 0.03  # the floor: z = 0 where the board lay
    with qtbot.waitSignal(dialog.use_for_source) as used:
        dialog.use_source.click()
    assert used.args == [str(tmp_path / "rig.toml")]
    with qtbot.waitSignal(dialog.use_for_views):
        dialog.use_views.click()


@gui
def test_the_board_dialog_says_what_went_wrong(qtbot, tmp_path, board_clips):
    _, clips = board_clips
    (tmp_path / "taken.toml").write_text("")
    dialog = _dialog(qtbot, clips, tmp_path / "taken.toml")
    assert not dialog.start.isEnabled() and dialog.message.text().startswith("taken.toml exists: Save as… to replace")
    dialog.out.setText(str(tmp_path / "new.toml"))
    dialog.kind.setCurrentIndex(1)  # a checkerboard: not the board in the clips
    assert not dialog.marker_mm.isEnabled()
    dialog.columns.setValue(7)
    dialog.rows.setValue(6)
    assert dialog.start_run()
    wait_until(qtbot, lambda: not dialog.running(), 120)
    message = dialog.message.text()  # was "Cam1: the ...", the camera's name capitalised
    assert message.startswith("Camera cam1: the checkerboard 7x6, squares 80 mm was found in 0 frame(s)")
    assert "color" in dialog.message.styleSheet() and not (tmp_path / "new.toml").exists()
    dialog.kind.setCurrentIndex(0)
    dialog.rows.setValue(5)
    assert dialog.start_run()
    dialog.cancel_run()
    wait_until(qtbot, lambda: not dialog.running(), 60)
    assert dialog.message.text() == "Cancelled: no calibration was made." and not (tmp_path / "new.toml").exists()
    assert dialog.start.isEnabled() and not dialog.use_source.isEnabled()


@gui
def test_the_window_uses_a_board_calibration_for_its_source(qtbot, tmp_path, window, board_clips):
    """Tools > Calibrate cameras from a board: the saved file used for the current source (the video named after
    its camera) and offered to Open several cameras."""
    _, clips = board_clips
    from board_clips import rig
    from posetracker.multiview.calibration import write_toml as write_cameras

    path = write_cameras(rig(2), tmp_path / "rig.toml")
    clip = make_video(tmp_path / "cam2.mp4", frames=6, size=(960, 720))
    window.open_source(str(clip))
    wait_until(qtbot, lambda: window.source_info is not None, 10)
    window.ask_calibrate_board(clips)
    dialog = window.board_dialog
    assert dialog.clip_paths() == clips and dialog.isVisible()
    dialog.use_for_source.emit(str(path))
    assert window.calibration is not None and window.calibration.camera.name == "cam2"
    assert window.source_panel.calibration_label.text().startswith("Calibrated: cam2, f = 780 px (")
    dialog.use_for_views.emit(str(path))
    assert window.views_dialog.calibration_files() == [str(path)]
    window.views_dialog.close()
    dialog.close()


def test_main_takes_a_sources_calibration_and_board_clips():
    from ui.app import parse_args

    args = parse_args(["--source", "cam01.mp4", "--calibration", "calib.qca.txt"])
    assert args.calibration == ["calib.qca.txt"] and args.views is None
    args = parse_args(["--calibrate-board", "cam1.mp4", "cam2.mp4", "--board", "checkerboard:7x6:80"])
    assert args.calibrate_board == ["cam1.mp4", "cam2.mp4"] and args.board == ("checkerboard", 7, 6, 80.0, None)
    assert parse_args([]).board == ("charuco", 7, 5, 40.0, 30.0)
    for bad in (["--views", "a.mp4", "b.mp4"], ["--views", "a.mp4", "--calibration", "c", "--source", "x"],
                ["--board", "charuco"]):
        with pytest.raises(SystemExit):
            parse_args(bad)
