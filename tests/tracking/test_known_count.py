"""A known number of animals: the tracker's fragments joined into that many identities (tracking.known_count)."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.session_config import PeopleSettings, SessionConfig
from posetracker.tracking.known_count import join_fragments
from posetracker.types import PoseFrame

K = 3  # root joint 0


def frames_of(paths: dict[int, dict[int, tuple[float, float]]], n: int) -> list[PoseFrame]:
    """{track id: {frame: root (x, y)}} -> n PoseFrames (each animal a 3-joint body 20 px long at its root)."""
    out = []
    for t in range(n):
        here = [(tid, xy[t]) for tid, xy in paths.items() if t in xy]
        kp = np.array([[[x, y, 1.0], [x + 10, y, 1.0], [x - 10, y, 1.0]] for _, (x, y) in here], np.float32)
        kp = kp.reshape(len(here), K, 3)
        out.append(PoseFrame(t, t / 30.0, kp, np.ones((len(here), K), np.float32), np.ones(len(here), np.float32),
                             np.array([tid for tid, _ in here], np.int64)))
    return out


def walk(x0: float, y0: float, vx: float, frames: range) -> dict[int, tuple[float, float]]:
    return {t: (x0 + vx * t, y0) for t in frames}


def test_fragments_of_two_animals_become_two_ids():
    """Animal A (track 0) walks right along y = 100; animal B along y = 300, lost twice: tracks 1, 5 and 9
    are its pieces. A fragment filling a hole of an identity (B's track 1 is absent 40-49 while track 5
    is seen) joins it."""
    a = walk(0, 100, 2, range(0, 120))
    b1 = walk(500, 300, -2, range(0, 40))
    b1.update(walk(500, 300, -2, range(50, 60)))
    b5 = walk(500, 300, -2, range(40, 50))
    b9 = walk(500, 300, -2, range(70, 120))  # after 10 frames unseen
    frames = frames_of({0: a, 1: b1, 5: b5, 9: b9}, 120)
    out, report = join_fragments(frames, 2, root=0)
    assert report == {"fragments": 4, "identities": 2, "extra": 0}
    for t in (10, 45, 55, 100):
        ids = dict(zip(out[t].track_ids.tolist(), out[t].keypoints[:, 0, 1].tolist()))
        assert ids == {0: 100.0, 1: 300.0}, (t, ids)
    assert frames[45].track_ids.tolist() == [0, 5]  # the input is not modified


def test_more_animals_at_once_than_said_keep_extra_ids():
    frames = frames_of({0: walk(0, 0, 1, range(10)), 1: walk(0, 200, 1, range(10)), 2: walk(0, 400, 1, range(5, 10))},
                       10)
    out, report = join_fragments(frames, 2, root=0)
    assert report["extra"] == 1 and set(out[7].track_ids.tolist()) == {0, 1, 2}


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="animals"):
        join_fragments([], 0, root=0)
    with pytest.raises(ValueError, match="known_count"):
        SessionConfig(people=PeopleSettings(known_count=0))
