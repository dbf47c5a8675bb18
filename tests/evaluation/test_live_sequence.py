"""Held-out video frames scored through the live or the offline path as a stream (``evaluation.live_sequence``,
``held-out-eval --sequence``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posetracker.evaluation.datasets import LabelledItem
from posetracker.evaluation.live_sequence import frame_runs, live_poses_at, sequence_predictor
from posetracker.types import Frame, PoseFrame


def _item(video: str, i: int) -> LabelledItem:
    return LabelledItem(None, Path(video), i, 64, 48, ())


def test_labelled_frames_are_played_in_runs_from_a_few_frames_before():
    items = [_item("a.mp4", i) for i in (5, 3, 4, 100, 101)] + [_item("b.mp4", 0)]
    assert frame_runs(items, warmup=10, gap=30) == [(Path("a.mp4"), 0, 5), (Path("a.mp4"), 90, 101),
                                                     (Path("b.mp4"), 0, 0)]
    with pytest.raises(ValueError, match="still image"):
        frame_runs([LabelledItem(Path("x.png"), None, None, 64, 48, ())])


class _Session:
    """A live session's step / flush with a look-ahead of one frame; each PoseFrame says which frame it is."""

    def __init__(self):
        self.resets, self._held = 0, None

    def reset(self):
        self.resets, self._held = self.resets + 1, None

    def _pose(self, f: Frame) -> PoseFrame:
        return PoseFrame(f.index, f.timestamp, np.full((1, 2, 3), f.index, np.float32), np.ones((1, 2), np.float32),
                         np.ones(1, np.float32), np.zeros(1, np.int64), (64, 48))

    def step(self, frame):
        out, self._held = self._held, frame
        return None if out is None else self._pose(out)

    def flush(self):
        out, self._held = self._held, None
        return [] if out is None else [self._pose(out)]


def _cache(last: int | None):
    """A FrameCache stand-in: frame i of any video (15 fps) is (48, 64, 3) filled with i; past ``last`` an IndexError
    (the video ends there; None: never)."""

    class Cache:
        def __init__(self, keep):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def fps(self, video):
            return 15.0

        def frame(self, video, i):
            if last is not None and i > last:
                raise IndexError(i)
            return np.full((48, 64, 3), i, np.uint8)

    return Cache


def test_each_labelled_frame_gets_the_stream_s_pose_of_that_frame(monkeypatch):
    import posetracker.evaluation.live_sequence as live_sequence

    monkeypatch.setattr(live_sequence, "FrameCache", _cache(None))
    items = [_item("a.mp4", i) for i in (12, 14, 60)]
    session = _Session()
    poses = live_poses_at(session, items, warmup=2)
    assert session.resets == 2 and sorted(i for _, i in poses) == [10, 11, 12, 13, 14, 58, 59, 60]
    predict = sequence_predictor(poses, items)
    assert [int(predict(None).keypoints[0, 0, 0]) for _ in items] == [12, 14, 60]
    assert poses[(Path("a.mp4"), 60)].timestamp == pytest.approx(4.0)  # the video's own rate: 60 / 15 fps


class _OfflineSession:
    """An offline session's ``run``: records each run's frame indices and hands back one PoseFrame a frame."""

    def __init__(self):
        self.runs: list[list[int]] = []
        self.rates: list[tuple[float, float]] = []  # each run's fps and its last frame's timestamp x fps / index

    def run(self, frames, fps, total=None):
        got = list(frames)
        self.runs.append([f.index for f in got])
        self.rates.append((fps, got[-1].timestamp * fps / got[-1].index))
        poses = [_Session()._pose(f) for f in got]
        return type("Seq", (), {"frames": poses})()


def test_offline_each_run_is_processed_as_one_video_with_context_either_side(monkeypatch):
    import posetracker.evaluation.live_sequence as live_sequence

    monkeypatch.setattr(live_sequence, "FrameCache", _cache(62))  # the video ends at frame 62
    items = [_item("a.mp4", i) for i in (12, 14, 60)]
    session = _OfflineSession()
    poses = live_sequence.offline_poses_at(session, items, context=2)
    assert session.runs == [[10, 11, 12, 13, 14, 15, 16], [58, 59, 60, 61, 62]]  # the second ends with the video
    # solved at the video's own rate (the motion solve's smoothing, the tracker's gaps in seconds), not 30 fps
    assert session.rates == [(15.0, pytest.approx(1.0))] * 2
    predict = sequence_predictor(poses, items)
    assert [int(predict(None).keypoints[0, 0, 0]) for _ in items] == [12, 14, 60]

