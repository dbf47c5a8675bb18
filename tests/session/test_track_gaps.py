"""Offline top-down: a track missing an animal for a few frames between two readings is searched there with the
crop model (``posetracker.track_gaps``, issue #49)."""

from __future__ import annotations

import dataclasses

import numpy as np

from posetracker.decoding import DecodedPeople
from posetracker.decoding.top_down import CropReading
from posetracker.session_config import PeopleSettings, SessionConfig
from posetracker.skeletons import load_skeleton
from posetracker.track_gaps import MAX_GAP, TrackGaps
from posetracker.types import PoseFrame

K = 13
SPREAD = np.stack([np.arange(K) * 3.0, np.zeros(K)], -1)  # (K, 2) px: a fly's joints along x from its root


class _Session:
    """What TrackGaps uses of an offline TrackingSession; the crop model reads a fly at each crop's centre,
    surely where the crop is bright (mean > 0), not at all where it is black."""

    def __init__(self):
        self.config = SessionConfig(mode="offline", people=PeopleSettings(max_people=2, known_count=2))
        fly = load_skeleton("fly13")  # read unturned: the stand-in reads a fly lying along x, not upright
        self.spec = dataclasses.replace(fly, top_down={k: v for k, v in fly.top_down.items() if k != "align"})
        self.crop_reading = CropReading()  # one crop, one round, no search
        self.crops = 0

    def _crop_people(self, crops: np.ndarray) -> list[DecodedPeople]:
        self.crops += len(crops)
        out = []
        for c in crops:
            n = int(c.mean() > 0)
            kp = np.repeat((c.shape[0] / 2 + SPREAD - SPREAD[self.spec.root])[None], n, 0).astype(np.float32)
            out.append(DecodedPeople(kp, np.full((n, K), 0.6, np.float32), np.ones(n, np.float32),
                                     np.full((n, K), np.nan), kp.copy()))
        return out


def _pose(i: int, flies: dict[int, float]) -> PoseFrame:
    """Frame ``i`` with a fly per track id, its root at (x, 400)."""
    ids = sorted(flies)
    xy = np.stack([np.array([flies[t], 400.0]) + SPREAD for t in ids]) if ids else np.zeros((0, K, 2))
    kp = np.concatenate([xy, np.zeros((len(ids), K, 1))], -1).astype(np.float32)
    return PoseFrame(i, i / 30, kp, np.full((len(ids), K), 0.9, np.float32), np.ones(len(ids), np.float32),
                     np.array(ids, np.int64), (800, 800))


def _run(poses: list[PoseFrame], images: list[np.ndarray]) -> tuple[list[PoseFrame], TrackGaps]:
    gaps, out = TrackGaps(_Session()), []
    for p, rgb in zip(poses, images):
        out += gaps.push(p, rgb)
    return out + gaps.flush(), gaps


def test_a_fly_missing_between_two_readings_is_read_where_the_track_says():
    """Fly 0 walks 10 px a frame and is not read in frames 2-3; fly 1 stands at x 600. The crops at the track's
    interpolated roots (120, 130) read it there, with its id; a black frame (nothing read) or a gap longer
    than MAX_GAP is left as it was."""
    bright = np.full((800, 800, 3), 255, np.uint8)
    poses = [_pose(i, {0: 100.0 + 10 * i, 1: 600.0} if i not in (2, 3) else {1: 600.0}) for i in range(6)]
    out, gaps = _run(poses, [bright] * 6)
    assert [p.index for p in out] == list(range(6)) and gaps.searched == 2 and gaps.filled == 2
    for i in (2, 3):
        assert sorted(out[i].track_ids.tolist()) == [0, 1]
        fly = out[i].keypoints[out[i].track_ids == 0][0]
        np.testing.assert_allclose(fly[:, :2], 100 * np.array([0, 4]) + SPREAD + [100 + 10 * i, 0], atol=1.0)

    images = [bright] * 6
    images[3] = np.zeros_like(bright)  # frame 3: the crop reads nothing
    out, gaps = _run(poses, images)
    assert gaps.filled == 1 and out[3].num_people == 1 and out[2].num_people == 2

    long = [_pose(i, {1: 600.0} if 0 < i <= MAX_GAP + 1 else {0: 100.0, 1: 600.0}) for i in range(MAX_GAP + 3)]
    out, gaps = _run(long, [bright] * len(long))
    assert gaps.searched == 0 and [p.num_people for p in out[1:-1]] == [1] * (MAX_GAP + 1)


def test_a_crop_that_reads_the_other_fly_again_is_dropped():
    """Fly 0's track jumps onto fly 1 (both roots near x 600 in the gap): the crop reads fly 1 again, dropped."""
    bright = np.full((800, 800, 3), 255, np.uint8)
    poses = [_pose(0, {0: 590.0, 1: 600.0}), _pose(1, {1: 600.0}), _pose(2, {0: 590.0, 1: 600.0})]
    out, gaps = _run(poses, [bright] * 3)
    assert gaps.searched == 1 and gaps.filled == 0 and out[1].num_people == 1


def test_an_unlinked_reading_of_the_missing_fly_takes_its_track():
    """Frame 1 read fly 0 but the tracker did not link it (id -1, left out at the end of a run): the crop at the
    track's pose reads the same fly, which replaces the unlinked one with the track's id."""
    bright = np.full((800, 800, 3), 255, np.uint8)
    middle = _pose(1, {0: 110.0, 1: 600.0})
    middle = PoseFrame(1, middle.timestamp, middle.keypoints, middle.confidence, middle.scores,
                       np.array([-1, 1], np.int64), middle.image_size)
    poses = [_pose(0, {0: 100.0, 1: 600.0}), middle, _pose(2, {0: 120.0, 1: 600.0})]
    out, gaps = _run(poses, [bright] * 3)
    assert gaps.filled == 1 and sorted(out[1].track_ids.tolist()) == [0, 1]
