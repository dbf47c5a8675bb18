"""Calibration files a user may get wrong (issue #48): each is refused with one line that says what is wrong,
never a camera silently left out or taken for another; videos whose frames are not their cameras' size are
fitted (the same camera scaled) or refused before any view is tracked."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from posetracker.multiview.calibration import CalibrationError, read_calibration
from posetracker.multiview.one_view import read_view
from posetracker.multiview.process import ViewsError, check_views, fit_views, process_views


def write_toml(path, names, size=(64, 96), drop: tuple[str, str] | None = None, unit: float = 1.0):
    """A Pose2Sim-style TOML of cameras ``names`` (``size`` W, H px; 80 px focal length, 1 m apart, 3 m from the
    origin; positions in metres times ``unit``); ``drop``: (camera, key) left out of that camera's table."""
    lines = []
    for i, n in enumerate(names):
        table = {"name": f'"{n}"', "size": f"[{size[0]}, {size[1]}]",
                 "matrix": f"[[80.0, 0.0, {size[0] / 2}], [0.0, 80.0, {size[1] / 2}], [0.0, 0.0, 1.0]]",
                 "distortions": "[0.0, 0.0, 0.0, 0.0]", "rotation": "[0.0, 0.0, 0.0]",
                 "translation": f"[{float(i) * unit}, 0.0, {3.0 * unit}]"}
        lines += [f"[{n}]"] + [f"{k} = {v}" for k, v in table.items() if drop != (n, k)] + [""]
    path.write_text("\n".join(lines + ["[metadata]", "adjusted = false", "error = 0.0", ""]))
    return str(path)


def write_clip(path, size=(64, 96), frames=3):
    """A grey clip of ``size`` (W, H) px."""
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 30.0, size)
    for _ in range(frames):
        out.write(np.full((size[1], size[0], 3), 90, np.uint8))
    out.release()
    return str(path)


def test_a_camera_table_missing_its_matrix_is_refused_not_left_out(tmp_path):
    calib = write_toml(tmp_path / "calib.toml", ["cam01", "cam02"], drop=("cam02", "matrix"))
    with pytest.raises(CalibrationError, match="camera 'cam02' has no matrix"):
        read_calibration(calib)
    with pytest.raises(CalibrationError, match="camera 'cam02' has no matrix"):  # not cam01, "the only one"
        read_view(calib, "cam02.mp4")
    calib = write_toml(tmp_path / "two.toml", ["cam01", "cam02"], drop=("cam01", "rotation"))
    with pytest.raises(CalibrationError, match="camera 'cam01' has no rotation"):
        read_calibration(calib)
    names = [c.name for c in read_calibration(write_toml(tmp_path / "ok.toml", ["cam01", "cam02"]))]
    assert names == ["cam01", "cam02"]  # [metadata] is not a camera


def test_files_that_are_no_calibration_say_what_they_are(tmp_path):
    with pytest.raises(CalibrationError, match=r"nope\.toml: no such file$"):
        read_calibration(tmp_path / "nope.toml")
    with pytest.raises(CalibrationError, match="is a folder"):
        read_calibration(tmp_path)
    (tmp_path / "calib.json").write_text('{"a": 1}')
    with pytest.raises(CalibrationError, match=r"not a calibration file this reads: Qualisys \.qca\.txt, .*\.toml"):
        read_calibration(tmp_path / "calib.json")
    (tmp_path / "empty.toml").write_text("")
    with pytest.raises(CalibrationError, match="no camera in .*empty.toml"):
        read_calibration(tmp_path / "empty.toml")


def test_the_cli_names_the_file_once_and_says_how_videos_name_cameras(tmp_path, capsys):
    from posetracker.cli import main

    missing = str(tmp_path / "nope.toml")
    assert main(["process", "cam01.mp4", "cam02.mp4", "--calibration", missing]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {missing}: no such file"
    other = write_toml(tmp_path / "other.toml", ["back", "side"])
    assert main(["process", "cam01.mp4", "cam02.mp4", "--calibration", other]) == 2
    err = capsys.readouterr().err.strip()
    assert "cam01.mp4 names no camera of the calibration (back, side)" in err and "e.g. back.mp4" in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_videos_of_their_cameras_size_scaled_are_fitted_and_another_aspect_refused(tmp_path):
    views = [write_clip(tmp_path / "cam01.mp4"), write_clip(tmp_path / "cam02.mp4")]
    full = read_calibration(write_toml(tmp_path / "full.toml", ["cam01", "cam02"], size=(128, 192)))
    said = []
    fitted = fit_views(views, full, said.append)
    assert [c.image_size for c in fitted] == [(64, 96), (64, 96)]
    np.testing.assert_allclose(fitted[0].K[:2], full[0].K[:2] / 2)
    assert len(said) == 2 and "the same camera scaled" in said[0]
    check = check_views(views, [str(tmp_path / "full.toml")])
    assert check.ready and "the same camera scaled" in check.views[0].note

    write_toml(tmp_path / "turned.toml", ["cam01", "cam02"], size=(96, 64))
    turned = read_calibration(tmp_path / "turned.toml")

    def no_session(fov):
        raise AssertionError("a view was tracked before its size was checked")

    with pytest.raises(ViewsError, match="cam01.mp4 is 64x96 but camera cam01 was calibrated at 96x64"):
        process_views(views, turned, no_session, calibration_name="turned.toml")
    check = check_views(views, [str(tmp_path / "turned.toml")])
    assert not check.ready and "calibrated at 96x64" in check.problem


def test_the_same_video_twice_is_said_so(tmp_path):
    from posetracker.multiview.process import cameras_for_views

    cams = read_calibration(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"]))
    with pytest.raises(CalibrationError, match="cam01.mp4 is given twice"):  # was "cam01.mp4 and cam01.mp4 both name"
        cameras_for_views(cams, [str(tmp_path / "cam01.mp4"), str(tmp_path / "cam01.mp4")])
    with pytest.raises(CalibrationError, match="cam01b.mp4 and cam01.mp4 both name camera cam01"):
        cameras_for_views(cams, [str(tmp_path / "cam01.mp4"), str(tmp_path / "cam01b.mp4")])


def test_a_calibration_in_millimetres_is_read_in_metres_and_said(tmp_path):
    """anipose / FreeMoCap write the board's unit, often mm: read as metres, people came out 1637 m tall."""
    from posetracker.multiview.calibration import read_calibrations, unit_note

    metres = read_calibrations([write_toml(tmp_path / "m.toml", ["cam01", "cam02"])])
    mm = read_calibrations([write_toml(tmp_path / "mm.toml", ["cam01", "cam02"], unit=1000.0)])
    assert [c.unit for c in metres] == ["m", "m"] and unit_note(metres) == ""
    assert [c.unit for c in mm] == ["mm", "mm"]
    for a, b in zip(metres, mm):
        np.testing.assert_allclose(b.t, a.t)
        np.testing.assert_allclose(b.center, a.center)
    assert "read as millimetres" in unit_note(mm)
    views = [write_clip(tmp_path / "cam01.mp4"), write_clip(tmp_path / "cam02.mp4")]
    check = check_views(views, [str(tmp_path / "mm.toml")])
    assert check.ready and "read as millimetres" in check.note
    assert check_views(views, [str(tmp_path / "m.toml")]).note == ""


def test_sleaps_anipose_calibration_of_a_mouse_rig_is_read_in_metres():
    from conftest import shared_path

    from posetracker.multiview.calibration import read_calibrations

    rig = read_calibrations([shared_path("data", "animal", "sleap_mouse_multiview_minsession", "cameras",
                                         "minimal_session", "calibration.toml")])
    assert len(rig) == 8 and {c.unit for c in rig} == {"mm"}  # its cameras 0.4-0.8 m from its origin
    assert 0.2 < max(np.linalg.norm(c.center) for c in rig) < 2.0


def test_ctrl_c_during_several_views_says_nothing_was_written(tmp_path, capsys, monkeypatch):
    """One view's run keeps the frames tracked on Ctrl-C; several views cannot (triangulated once all are
    tracked), and the console said only "interrupted"."""
    import posetracker.multiview.process as views
    from posetracker.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(views, "process_views", interrupted)
    calib = write_toml(tmp_path / "calib.toml", ["cam01", "cam02"])
    out = tmp_path / "o.json"
    assert main(["process", "cam01.mp4", "cam02.mp4", "--calibration", calib, "--out", str(out)]) == 130
    assert f"interrupted: nothing was written to {out}" in capsys.readouterr().err and not out.exists()


def test_a_result_with_nobody_in_it_says_why_it_may_be(tmp_path):
    """Six frames, or videos of other cameras: '0 people in 3-D', exit 0 and nothing else said."""
    from posetracker.multiview.process import NO_PEOPLE
    from posetracker.skeletons import load_skeleton
    from posetracker.types import PoseFrame, PoseSequence

    class Nobody:  # a session that sees no one
        def run(self, source, fps, total=None, progress=None, cancel=None, metadata=None):
            skeleton = load_skeleton("human18")
            frames = [PoseFrame.empty(i, i / 30, skeleton.num_joints, (64, 96)) for i in range(6)]
            return PoseSequence(frames, fps=30.0, skeleton=skeleton, metadata=dict(metadata or {}))

    views = [write_clip(tmp_path / "cam01.mp4", frames=6), write_clip(tmp_path / "cam02.mp4", frames=6)]
    cameras = read_calibration(write_toml(tmp_path / "calib.toml", ["cam01", "cam02"]))
    result = process_views(views, cameras, lambda fov: Nobody(), calibration_name="calib.toml")
    assert not result.sequence.track_ids() and result.warnings[0] == NO_PEOPLE


def test_a_calibration_file_given_twice_is_said_so(tmp_path):
    from posetracker.multiview.calibration import read_calibrations

    calib = write_toml(tmp_path / "calib.toml", ["cam01", "cam02"])
    with pytest.raises(CalibrationError, match=r"calib\.toml is given twice"):  # was "two cameras share a name in
        read_calibrations([calib, calib])                                  # calib.toml, calib.toml: ['cam01', ...]"
    other = write_toml(tmp_path / "other.toml", ["cam02", "cam03"])
    with pytest.raises(CalibrationError, match=r"two cameras share a name \(cam02\) in "):
        read_calibrations([calib, other])
