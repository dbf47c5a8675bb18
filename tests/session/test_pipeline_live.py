"""The two-stage live pipeline (posetracker/pipeline_live.py): the sequential path's poses, bit for bit and in
order, with the same cancel, progress and failure behaviour."""

import threading
import time

import numpy as np
import pytest
import torch

from posetracker.capture import CaptureError
from posetracker.model.network import PoseNet
from posetracker.pipeline_live import live_poses, sequential_poses
from posetracker.session import NetworkSettings, SessionConfig, TrackingSession
from posetracker.types import Frame


def _frames(n=8, size=(96, 128), fail_at=None, error=CaptureError):
    rng = np.random.default_rng(0)
    for i in range(n):
        if i == fail_at:
            raise error("the camera was unplugged")
        yield Frame(i, i / 30.0, rng.integers(0, 255, (*size, 3), dtype=np.uint8))


@pytest.fixture(scope="module")
def tiny_net(human18):
    torch.manual_seed(0)
    return PoseNet(human18).eval()


def _same(a, b):
    assert [f.index for f in a.frames] == [f.index for f in b.frames]
    for x, y in zip(a.frames, b.frames):
        assert x.timestamp == y.timestamp and x.image_size == y.image_size
        for name in ("keypoints", "confidence", "scores", "track_ids", "world"):
            u, v = getattr(x, name), getattr(y, name)
            assert (u is None) == (v is None)
            if u is not None:
                np.testing.assert_array_equal(u, v, err_msg=name)


@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_two_stages_give_the_sequential_poses_bit_for_bit(tiny_net, lookahead):
    runs = {two: TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(lookahead=lookahead,
                                                                                 two_stage=two))).run(_frames(9), 30.0)
            for two in (False, True)}
    assert len(runs[True]) == 9
    _same(runs[False], runs[True])


def test_the_shipped_model_on_the_sample_clip_bit_for_bit(shipped_net):
    """Real people, ids, smoothing, 3-D, the one-graph 8-bit step: the same poses both ways."""
    from conftest import REPO
    from posetracker.capture import VideoFileSource

    seqs = []
    for two in (False, True):
        session = TrackingSession(shipped_net, SessionConfig(network=NetworkSettings(two_stage=two)))
        with VideoFileSource(REPO / "assets" / "sample_dance.mp4") as src:
            seqs.append(session.run((f for _, f in zip(range(24), src)), fps=src.fps))
    assert len(seqs[0]) == 24 and sum(f.num_people for f in seqs[0].frames) >= 20
    _same(*seqs)


def test_order_holds_when_finishing_is_slower_than_the_network(tiny_net):
    session = TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(lookahead=1)))
    finish = session.finish
    delays = iter([0.03, 0.0, 0.02, 0.0, 0.04, 0.0, 0.01, 0.0, 0.0, 0.0])
    threads = set()

    def slow(item):
        threads.add(threading.current_thread().name)
        time.sleep(next(delays))
        return finish(item)

    session.finish = slow
    poses = list(live_poses(session, _frames(10)))
    assert [p.index for p in poses] == list(range(10))
    assert all(name.startswith("posetracker-live") for name in threads)  # finished on the helper thread
    assert not any(t.name.startswith("posetracker-live") for t in threading.enumerate())  # and it is gone


def test_a_capture_failure_mid_stream_keeps_the_frames_read_before(tiny_net):
    seq = TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(lookahead=1))).run(_frames(10, fail_at=6), 30.0)
    assert [f.index for f in seq.frames] == list(range(6))
    assert "unplugged" in seq.metadata["incomplete"]


def test_other_errors_come_out_after_the_poses_before_them(tiny_net):
    session = TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(lookahead=0)))
    got = []
    with pytest.raises(ValueError, match="unplugged"):
        for pose in live_poses(session, _frames(10, fail_at=5, error=ValueError)):
            got.append(pose.index)
    assert got == list(range(5))
    session.reset()
    finish = session.finish

    def broken(item):
        if item.meta.index == 3:
            raise RuntimeError("decoding failed")
        return finish(item)

    session.finish = broken
    got = []
    with pytest.raises(RuntimeError, match="decoding failed"):
        for pose in live_poses(session, _frames(10)):
            got.append(pose.index)
    assert got == [0, 1, 2]
    assert not any(t.name.startswith("posetracker-live") for t in threading.enumerate())


def test_cancel_and_progress_as_the_sequential_path(tiny_net):
    out = {}
    for name, run in (("sequential", sequential_poses), ("two stages", live_poses)):
        session = TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(lookahead=1)))
        calls = []
        poses = list(run(session, _frames(10), total=10, progress=lambda d, t: calls.append((d, t)),
                         cancel=lambda: len(calls) >= 4))
        out[name] = ([p.index for p in poses], calls)
    assert out["sequential"] == out["two stages"]
    assert out["two stages"] == ([0, 1, 2, 3], [(1, 10), (2, 10), (3, 10), (4, 10)])


def test_on_finish_sees_each_pose_on_the_helper_thread(tiny_net):
    session = TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(lookahead=1)))
    seen = []
    poses = list(live_poses(session, _frames(5), on_finish=lambda p: seen.append((p.index, threading.current_thread().name))))
    assert [i for i, _ in seen] == [p.index for p in poses] == list(range(5))
    assert all(name.startswith("posetracker-live") for _, name in seen)


def test_step_is_the_three_stages(tiny_net):
    """The app's worker calls step(); it is prepare, infer and finish in a row."""
    a = TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(lookahead=1)))
    b = TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(lookahead=1)))
    for frame in _frames(4):
        one = a.step(frame)
        item = b.infer(b.prepare(frame))
        two = None if item is None else b.finish(item)
        assert (one is None) == (two is None)
        if one is not None:
            np.testing.assert_array_equal(one.keypoints, two.keypoints)
    assert [p.index for p in a.flush()] == [p.index for p in map(b.finish, b.infer_flush())] == [3]


def test_finisher_keeps_order_bounds_the_wait_and_hands_errors_back(tiny_net):
    from posetracker.pipeline_live import Finisher

    session = TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(lookahead=0)))
    got = []
    finisher = Finisher(session, lambda pose, tag: got.append((pose.index, tag, threading.current_thread().name)))
    items = [session.infer(session.prepare(f)) for f in _frames(6)]
    for item in items[:4]:
        finisher.submit(item, f"t{item.meta.index}")
        assert len(finisher._posts) <= finisher.limit
    finisher.drain()
    assert [(i, t) for i, t, _ in got] == [(i, f"t{i}") for i in range(4)]
    assert all(name.startswith("posetracker-finish") for *_, name in got)
    finish = session.finish
    session.finish = lambda item: (_ for _ in ()).throw(RuntimeError("decoding failed"))
    finisher.submit(items[4])
    with pytest.raises(RuntimeError, match="decoding failed"):
        finisher.drain()
    session.finish = finish
    finisher.submit(items[5])
    finisher.drain()
    assert got[-1][0] == 5
    finisher.close()


def test_two_stages_by_default_only_where_more_than_one_cpu_is_usable(tiny_net, monkeypatch):
    import posetracker.pipeline_live as pl

    used = []
    monkeypatch.setattr(pl, "live_poses", lambda *a, **k: used.append("two") or iter(()))
    monkeypatch.setattr(pl, "sequential_poses", lambda *a, **k: used.append("one") or iter(()))
    for cpus, forced, want in ((1, None, "one"), (2, None, "two"), (1, True, "two"), (4, False, "one")):
        monkeypatch.setattr(pl, "usable_cpus", lambda n=cpus: n)
        TrackingSession(tiny_net, SessionConfig(network=NetworkSettings(two_stage=forced))).run(_frames(2), 30.0)
        assert used[-1] == want, (cpus, forced)
    monkeypatch.undo()
    assert 1 <= pl.usable_cpus() <= (__import__("os").cpu_count() or 1)
