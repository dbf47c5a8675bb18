"""Each connected camera's frames kept by a several-camera live run (``posetracker.multiview.live_videos``): one
video per camera, each instant written once at its frame number, played back with frame i = the result's instant
of index i (frames the pairing dropped show the instant before); a folder that cannot be written is said."""

from __future__ import annotations

import av
import numpy as np
import pytest

from posetracker.multiview.live_videos import KeptFrames, ViewVideos, ViewVideosError, video_names


def _colours(path) -> list[np.ndarray]:
    """Each frame's mean colour (3,) RGB."""
    with av.open(str(path)) as video:
        return [f.to_ndarray(format="rgb24").reshape(-1, 3).mean(0) for f in video.decode(video=0)]


def _solid(rgb, size=(64, 48)) -> np.ndarray:
    return np.broadcast_to(np.array(rgb, np.uint8), (size[1], size[0], 3)).copy()


def test_each_instant_is_kept_once_and_played_back_at_its_frame_number(tmp_path):
    """Instants at frame numbers 0, 1, 4, 40 (the others dropped by the pairing): each file holds those 4 frames
    (a variable rate: nothing encoded twice), and played back (KeptFrames) frame i is the instant of index i or the
    last one before it, read in order or after a seek."""
    red, green, blue, white = (220, 30, 30), (30, 220, 30), (30, 30, 220), (230, 230, 230)
    videos = ViewVideos(tmp_path / "kept", ["cam01", "cam02"], [(64, 48), (32, 24)], fps=30.0)
    for index, (a, b) in zip((0, 1, 4, 40), ((red, blue), (green, green), (blue, red), (white, white))):
        videos.write(index, [_solid(a), _solid(b, (32, 24))])
    videos.write(4, [_solid(red), _solid(red, (32, 24))])  # not past the last one: skipped
    paths = videos.close()
    assert [p.name for p in paths] == ["cam01.mp4", "cam02.mp4"] and videos.problem() == "" and videos.rate == 30
    assert len(_colours(paths[0])) == len(_colours(paths[1])) == 4
    played = KeptFrames(paths[0], videos.rate)
    assert played.frame_count == 41 and played.size == (64, 48) and played.seekable
    frames = list(played)
    assert [f.index for f in frames] == list(range(41))
    want = [red, green, green, green] + [blue] * 36 + [white]
    for frame, colour in zip(frames, want):
        np.testing.assert_allclose(frame.image.reshape(-1, 3).mean(0), colour, atol=12)
    for index, colour in ((20, blue), (1, green), (40, white), (0, red), (3, green)):
        played.seek(index)
        frame = played.read()
        assert frame.index == index
        np.testing.assert_allclose(frame.image.reshape(-1, 3).mean(0), colour, atol=12)
    played.close()
    with av.open(str(paths[1])) as video:
        assert (video.streams.video[0].width, video.streams.video[0].height) == (32, 24)


def test_a_folder_that_cannot_be_written_is_said(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ViewVideosError, match="cannot keep the cameras' frames"):
        ViewVideos(blocker / "kept", ["cam01"], [(64, 48)], fps=30.0)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "cam01.mp4").write_bytes(b"")
    with pytest.raises(ViewVideosError, match="exists already"):  # never written over
        ViewVideos(tmp_path / "old", ["cam01"], [(64, 48)], fps=30.0)


def test_file_names_are_the_cameras_made_safe_and_distinct():
    assert video_names(["cam01", "Left cam/1", "cam01", ""]) == ["cam01.mp4", "Left_cam_1.mp4", "cam01_3.mp4",
                                                                 "view4.mp4"]


def test_a_seek_past_the_first_keyframes_lands_on_the_instant(tmp_path):
    """100 instants at every other frame number (several keyframes): a seek to any frame shows the instant at or
    before it (each instant's grey level is its number)."""
    videos = ViewVideos(tmp_path, ["cam01"], [(64, 48)], fps=30.0)
    for n in range(100):
        videos.write(2 * n, [_solid((2 * n + 20,) * 3)])
    path = videos.close()[0]
    played = KeptFrames(path, videos.rate)
    assert played.frame_count == 199
    for index in (150, 151, 7, 198, 60, 61):
        played.seek(index)
        frame = played.read()
        assert frame.index == index
        assert abs(frame.image.mean() - (index - index % 2 + 20)) < 4
