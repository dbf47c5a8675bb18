"""The live set-up check (posetracker.multiview.live_check.check_sources) with connected cameras faked
(WebcamSource over FakeCamera, no hardware): each camera opened and one frame read, matched to the calibration's
cameras in order as ``process camera:0 camera:1 --mode live`` matches them, its size against its camera, and a
camera that cannot be opened said in words; the grey frames a camera's result is played over."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.capture import CaptureError, FakeCamera, WebcamSource
from posetracker.capture.blank import BlankSource
from posetracker.multiview.calibration import CalibrationError, read_calibrations
from posetracker.multiview.live_check import cameras_for_sources, check_sources, is_camera
from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame, PoseSequence


def write_toml(path, names, size=(160, 120)):
    """A Pose2Sim-style TOML: cameras ``names`` (identity pose, 150 px focal length) of ``size``."""
    text = "".join(f'[{n}]\nname = "{n}"\nsize = [{size[0]}, {size[1]}]\n'
                   f"matrix = [[150.0, 0.0, {size[0] / 2}], [0.0, 150.0, {size[1] / 2}], [0.0, 0.0, 1.0]]\n"
                   f"distortions = [0.0, 0.0, 0.0, 0.0]\nrotation = [0.0, 0.0, 0.0]\n"
                   f"translation = [{i}.0, 0.0, 0.0]\nfisheye = false\n\n" for i, n in enumerate(names))
    path.write_text(text)
    return str(path)


def fake_opener(sizes: dict[str, tuple[int, int]]):
    """``camera:N`` -> a WebcamSource over a FakeCamera of ``sizes[spec]``; a camera not in ``sizes`` is not
    connected (CameraNotFoundError, as WebcamSource raises for a missing index)."""
    opened = []

    def opener(spec: str):
        index = int(spec.split(":")[1])
        fake = FakeCamera.factory(size=sizes.get(spec, (1, 1)), fail_open=spec not in sizes)
        source = WebcamSource(index, opener=fake)
        opened.append(source)
        return source

    opener.opened = opened
    return opener


def test_cameras_take_the_calibrations_cameras_in_order_with_their_size_checked(tmp_path):
    calib = write_toml(tmp_path / "calib.toml", ["cam01", "cam02"])
    opener = fake_opener({"camera:0": (160, 120), "camera:1": (320, 240)})
    check = check_sources(["camera:0", "camera:1"], [calib], opener)
    assert check.ready and check.cameras == ["cam01", "cam02"]
    assert [(v.camera, v.frames, v.fps, v.size) for v in check.views] == [("cam01", None, 30.0, (160, 120)),
                                                                         ("cam02", None, 30.0, (320, 240))]
    assert check.views[0].note == "" and "the same camera scaled" in check.views[1].note
    assert [s.frame_count for s in opener.opened] == [None, None]  # each opened (one frame read) ...
    with pytest.raises(CaptureError):
        opener.opened[0].read()  # ... and closed again
    again = check_sources(["camera:0", "camera:1"], [calib], opener, known={v.path: v for v in check.views})
    assert again == check and len(opener.opened) == 2  # known: not opened again
    assert [c.name for c in cameras_for_sources(read_calibrations([calib]), ["camera:1", "camera:0"])] == \
        ["cam01", "cam02"]  # in order, whatever their numbers


def test_a_camera_that_cannot_be_opened_is_said_in_words(tmp_path):
    calib = write_toml(tmp_path / "calib.toml", ["cam01", "cam02"])
    check = check_sources(["camera:0", "camera:7"], [calib], fake_opener({"camera:0": (160, 120)}))
    assert not check.ready
    assert check.views[1].problem.startswith("cannot be opened: No camera found at camera index 7")
    assert check.problem.startswith("camera:7: cannot be opened: No camera found")


def test_the_set_ups_problems(tmp_path):
    opener = fake_opener({"camera:0": (160, 120), "camera:1": (160, 120), "camera:2": (160, 120)})
    two = write_toml(tmp_path / "two.toml", ["cam01", "cam02"])
    assert check_sources(["camera:0"], [two], opener).problem.startswith("Add at least two sources")
    assert check_sources(["camera:0", "camera:1"], [], opener).problem.startswith("Choose the calibration file")
    three = check_sources(["camera:0", "camera:1", "camera:2"], [two], opener)
    assert three.problem.startswith("The calibration has 2 cameras (cam01, cam02) for 3 sources")
    (tmp_path / "broken.toml").write_text("[cam01\n")
    assert check_sources(["camera:0", "camera:1"], [str(tmp_path / "broken.toml")],
                         opener).problem.startswith("The calibration cannot be read:")
    with pytest.raises(CalibrationError):
        cameras_for_sources(read_calibrations([two]), ["camera:0", "camera:1", "camera:2"])
    assert is_camera("camera:0") and not is_camera("cam01.mp4")


def test_the_cli_takes_the_same_rule():
    from posetracker.cli import process_live_views

    assert process_live_views.cameras_for_sources is cameras_for_sources


def test_blank_frames_stand_in_for_a_camera_and_the_rate_they_play_at():
    with pytest.raises(CaptureError):
        BlankSource((0, 10), 30.0, 5)
    src = BlankSource((8, 6), 20.0, 3, "camera:0")
    frames = list(src)
    assert [(f.index, f.timestamp, f.image.shape) for f in frames] == [(0, 0.0, (6, 8, 3)), (1, 0.05, (6, 8, 3)),
                                                                       (2, 0.1, (6, 8, 3))]
    src.seek(1)
    assert src.read().index == 1 and src.frame_count == 3 and src.seekable
    poses = [PoseFrame.empty(i, i / 30.0, 18) for i in (3, 5, 33)]  # frames 3 .. 33 of a 30 fps camera, some dropped
    assert PoseSequence(poses, 12.0, load_skeleton("human18")).index_rate() == pytest.approx(30.0)
    assert PoseSequence(poses[:1], 12.0, load_skeleton("human18")).index_rate() == 12.0
    assert np.all(frames[0].image == frames[0].image[0, 0])


def test_cameras_named_for_the_sources_as_process_cameras_takes_them(tmp_path, capsys):
    from posetracker.cli import main as cli_main

    cams = read_calibrations([write_toml(tmp_path / "four.toml", ["cam01", "cam02", "cam03", "cam04"])])
    sources = ["camera:0", "camera:1"]
    assert [c.name for c in cameras_for_sources(cams, sources, ["CAM03", "cam01"])] == ["cam03", "cam01"]
    for names, says in ((["cam03"], "1 camera names for 2 sources"), (["cam03", "cam09"], "no camera 'cam09'"),
                        (["cam03", "cam03"], "a camera is named for two sources")):
        with pytest.raises(CalibrationError, match=says):
            cameras_for_sources(cams, sources, names)
    opener = fake_opener({"camera:0": (160, 120), "camera:1": (160, 120)})
    check = check_sources(sources, [str(tmp_path / "four.toml")], opener, names=["cam04", "cam02"])
    assert check.ready and [v.camera for v in check.views] == ["cam04", "cam02"]
    assert cli_main(["process", "a.mp4", "--cameras", "cam01"]) == 2
    assert "--cameras names the calibrated camera of each of several videos or live sources" in \
        capsys.readouterr().err


def test_cameras_named_for_videos_whose_file_names_name_none(tmp_path, capsys):
    """Offline, a video's camera was only ever read from its file name (GX010123.MP4 names none: rename the files);
    ``--cameras`` was refused there. Now it names each video's camera, as for live sources."""
    from posetracker.cli import main as cli_main
    from posetracker.multiview.process import cameras_for_views

    cams = read_calibrations([write_toml(tmp_path / "four.toml", ["cam01", "cam02", "cam03", "cam04"])])
    videos = ["GX010123.MP4", "GX020123.MP4"]
    assert [c.name for c in cameras_for_views(cams, videos, ["cam03", "CAM01"])] == ["cam03", "cam01"]
    with pytest.raises(CalibrationError, match="GX010123.MP4 names no camera"):
        cameras_for_views(cams, videos)
    for names, says in ((["cam03"], "1 camera names for 2 videos"), (["cam03", "cam03"], "named for two videos")):
        with pytest.raises(CalibrationError, match=says):
            cameras_for_views(cams, videos, names)
    assert cli_main(["process", str(tmp_path / videos[0]), str(tmp_path / videos[1]), "--calibration",
                     str(tmp_path / "four.toml"), "--cameras", "cam01", "cam02"]) == 2
    err = capsys.readouterr().err  # past the cameras, to the videos (absent here)
    assert "--cameras" not in err and "names no camera" not in err and "GX010123.MP4" in err
