"""PoseSpill: the app's pose history on disk; exact round trip, latest pose per frame, flat memory."""

from __future__ import annotations

import tracemalloc

import numpy as np

from posetracker.recording import PoseSpill
from posetracker.types import PoseFrame


def pose(index: int, people: int = 2, world: bool = True) -> PoseFrame:
    rng = np.random.default_rng(index)
    kp = rng.normal(size=(people, 18, 3)).astype(np.float32)
    if people:
        kp[0, 3] = np.nan  # an unknown joint
    return PoseFrame(index, index / 30, kp, rng.random((people, 18), np.float32), rng.random(people, np.float32),
                     np.arange(people, dtype=np.int64) - 1, (640, 480),
                     rng.normal(size=(people, 18, 3)).astype(np.float32) if world else None)


def same(a: PoseFrame, b: PoseFrame) -> bool:
    arrays = ("keypoints", "confidence", "scores", "track_ids")
    return (a.index == b.index and a.timestamp == b.timestamp and a.image_size == b.image_size
            and all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in arrays)
            and ((a.world is None and b.world is None) or np.array_equal(a.world, b.world)))


def test_round_trip_in_frame_order_with_the_latest_pose_per_frame():
    spill = PoseSpill()
    poses = [pose(3), pose(1, people=0), pose(2, world=False), pose(5, people=1)]
    for p in poses:
        spill.put(p)
    spill.put(pose(3, people=1))  # frame 3 again (a seek back): it replaces the first
    got = spill.frames()
    assert [f.index for f in got] == [1, 2, 3, 5] and len(spill) == 5
    assert same(got[0], poses[1]) and same(got[1], poses[2]) and same(got[3], poses[3])
    assert same(got[2], pose(3, people=1))
    got[0].keypoints[...] = 0  # writeable copies, not views of the file's buffer
    spill.clear()
    assert len(spill) == 0 and spill.frames() == []


def test_memory_stays_flat_over_an_hour_of_poses():
    """An hour at 30 fps with 3 people: what stays in memory does not grow with the poses."""
    spill = PoseSpill()
    p = pose(0, people=3)
    tracemalloc.start()
    for i in range(2_000):
        spill.put(p)
    base, _ = tracemalloc.get_traced_memory()
    for i in range(106_000):  # the rest of the hour
        spill.put(p)
    now, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(spill) == 108_000
    assert now - base < 64 * 1024, f"grew by {(now - base) / 1024:.0f} KiB"
