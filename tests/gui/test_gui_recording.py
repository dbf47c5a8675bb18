"""Session recorder / replay (posetracker.recording), no Qt; the live angle history and the angle plot's choices."""

from __future__ import annotations

import dataclasses
import errno
import json
import shutil

import numpy as np
import pytest

from gui_helpers import FakeSession
from posetracker.analysis import AngleHistory, angle_names, compute_angles, frame_angles
from posetracker.recording import RecordingError, ReplaySession, SessionRecorder, open_recording, replay_source
from posetracker.skeletons import load_skeleton
from posetracker.types import Frame, PoseSequence

SPEC = load_skeleton("human18")


def frames(n, size=(96, 72), start=0):
    for i in range(start, start + n):
        img = np.full((size[1], size[0], 3), (i * 7) % 255, np.uint8)
        yield Frame(i, i / 25.0, img)


def record(folder, n=30, every=1, close=True, **kwargs):
    session = FakeSession()
    rec = SessionRecorder(folder, 25.0, (96, 72), SPEC, {"source": "test"}, **kwargs)
    for f in frames(n):
        rec.write(f, session.pose_for(f) if f.index % every == 0 else None)
    if close:
        rec.close()
    return rec


def test_recording_round_trip(tmp_path):
    rec = record(tmp_path / "r", n=30, every=2)
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["frames"] == 30 and meta["poses"] == 15
    video, seq = open_recording(tmp_path / "r")
    assert video.frame_count == 30 and video.size == (96, 72)
    assert [f.index for f in seq.frames] == list(range(0, 30, 2))
    replay = ReplaySession(seq)
    held = replay.step(next(iter(video)))
    assert held.num_people == 1 and held.index == 0
    assert replay.step(Frame(3, 0.12, np.zeros((72, 96, 3), np.uint8))).index == 3, "holds the pose of frame 2"
    video.close()
    assert rec.closed


def test_a_crash_keeps_poses_and_video_up_to_the_last_second(tmp_path):
    record(tmp_path / "live", n=60, close=False, sync_interval=0.0)
    shutil.copytree(tmp_path / "live", tmp_path / "crashed")  # the files as a power cut would leave them
    video, seq = open_recording(tmp_path / "crashed")
    assert len(seq) == 60, "every pose line was flushed"
    assert video is not None and sum(1 for _ in video) >= 50, "fragments of one second are complete"
    meta = json.loads((tmp_path / "crashed" / "meta.json").read_text())
    assert meta["status"] == "recording"


def test_reopening_an_interrupted_recording_says_so(tmp_path):
    from ui.jobs import recording_session

    record(tmp_path / "crashed", n=10, close=False)  # the app died while recording
    assert any("interrupted" in n for n in recording_session(str(tmp_path / "crashed")).notices)
    record(tmp_path / "whole", n=10)
    assert recording_session(str(tmp_path / "whole")).notices == []


def test_a_cut_pose_line_and_a_lost_video_still_replay(tmp_path):
    record(tmp_path / "r", n=10)
    with open(tmp_path / "r" / "poses.jsonl", "a") as fh:
        fh.write('{"index": 10, "time_s": 0.4, "peo')
    (tmp_path / "r" / "video.mp4").write_bytes(b"\x00\x00\x00\x18ftypisom")
    source, seq = replay_source(tmp_path / "r")
    assert len(seq) == 10 and source.frame_count == 10 and source.size == (96, 72)


def test_disk_full_stops_the_recording_and_keeps_what_was_written(tmp_path):
    rec = record(tmp_path / "r", n=12, close=False)

    def full(*_):
        raise OSError(errno.ENOSPC, "No space left on device")

    rec._poses.write = full
    with pytest.raises(RecordingError, match="No space left"):
        f = next(frames(1, start=12))
        rec.write(f, FakeSession().pose_for(f))
    assert rec.closed
    with pytest.raises(RecordingError):
        rec.write(next(frames(1, start=13)))
    _, seq = open_recording(tmp_path / "r")
    assert len(seq) == 12
    assert json.loads((tmp_path / "r" / "meta.json").read_text())["status"] == "failed"


def test_refuses_to_overwrite_a_recording(tmp_path):
    record(tmp_path / "r", n=2)
    with pytest.raises(RecordingError, match="already holds"):
        SessionRecorder(tmp_path / "r", 25.0, (96, 72), SPEC)


def test_angle_history_and_series_follow_a_track():
    session = FakeSession()
    poses = [session.pose_for(f) for f in frames(20)]
    history = AngleHistory(SPEC, seconds=0.5)
    assert history.names == tuple(angle_names(SPEC))
    for p in poses:
        history.add(p)
    t, a = history.series(0)
    assert history.track_ids() == [0] and len(t) == 13 and a.shape == (13, len(angle_names(SPEC)))
    last = frame_angles(poses[-1], SPEC)
    assert t[-1] == poses[-1].timestamp
    np.testing.assert_allclose(a[-1], [last[k][0] for k in history.names])
    history.add(poses[0])  # time went backwards (a seek): history restarts
    assert len(history.series(0)[0]) == 1
    table = compute_angles(PoseSequence(poses, 25.0, SPEC))  # the same angles over the whole sequence
    for name, side in history.names:
        deg, methods = table.series(0, name, side)
        assert len(deg) == 20 and np.isfinite(deg).all() and set(methods) == {"2d"}  # FakeSession has no depth


def test_angle_history_add_many_equals_adding_one_by_one():
    """The GUI measures the poses of a refresh in one call: the same series as pose by pose, seeks included."""
    session = FakeSession()
    poses = [session.pose_for(f) for f in frames(12)]
    two = [dataclasses.replace(p, keypoints=np.concatenate([p.keypoints, p.keypoints[:, ::-1]]),
                               confidence=np.concatenate([p.confidence, p.confidence]),
                               scores=np.concatenate([p.scores, p.scores]), track_ids=np.array([0, -1 if i % 3 else 5]),
                               world=None if p.world is None else np.concatenate([p.world, p.world]))
           for i, p in enumerate(poses)]  # a second person, sometimes unconfirmed
    stream = two[:8] + poses[3:6] + two[8:]  # goes back in time once (a seek)
    one, many = AngleHistory(SPEC, seconds=0.3), AngleHistory(SPEC, seconds=0.3)
    for p in stream:
        one.add(p)
    many.add_many(stream[:5])
    many.add_many(stream[5:])
    assert one.track_ids() == many.track_ids() == [0, 5] and one.latest_ids == many.latest_ids
    for tid in (0, 5):
        (t1, a1), (t2, a2) = one.series(tid), many.series(tid)
        np.testing.assert_array_equal(t1, t2)
        np.testing.assert_allclose(a1, a2)
    assert len(one.series(0)[0]) == 6  # after the seek: 0.16, 0.20, then 0.32-0.44 (0.3 s at 25 fps)


def test_angle_history_breaks_its_series_at_gaps():
    """A track unseen for seconds gets a nan row in the gap, so the plot draws no line across it."""
    session = FakeSession()
    poses = [session.pose_for(f) for f in frames(20)]  # 25 fps
    history = AngleHistory(SPEC)
    for p in poses[:10]:
        history.add(p)
    for p in poses[10:]:  # the same person, 3 s later
        history.add(dataclasses.replace(p, timestamp=p.timestamp + 3.0))
    t, a = history.series(0)
    assert len(t) == 20 and np.isfinite(a).all()  # plain series: only the samples
    t, a = history.series(0, break_gaps=True)
    assert len(t) == 21 and np.isnan(a[10]).all() and np.isfinite(np.delete(a, 10, 0)).all()
    assert t[9] < t[10] < t[11] and t[11] - t[9] > 3.0
    history.clear()
    for p in poses:  # no gap: nothing inserted
        history.add(p)
    assert len(history.series(0, break_gaps=True)[0]) == 20


def test_angle_history_keeps_the_chosen_angles_in_order():
    names = [("elbow_flexion", "right"), ("knee_flexion", "left")]
    history = AngleHistory(SPEC, names)
    pose = FakeSession().pose_for(next(frames(1)))
    history.add(pose)
    _, a = history.series(0)
    want = frame_angles(pose, SPEC, names)
    assert history.column("knee_flexion", "left") == 1
    np.testing.assert_allclose(a[0], [want[names[0]][0], want[names[1]][0]])
    assert a[0, 0] != pytest.approx(a[0, 1])  # two different angles, not one column twice
    with pytest.raises(ValueError, match="left knee"):
        AngleHistory(SPEC, [("left knee", "left")])


@pytest.mark.gui
def test_angle_plot_offers_the_angle_table(qtbot):
    from ui.plots import AnglePlot, angle_label

    plot = AnglePlot()
    qtbot.addWidget(plot)
    plot.set_spec(SPEC, ["left knee", "right elbow", "trunk lean", "no such angle"])  # old names still load
    labels = [plot.angle_list.item(i).text() for i in range(plot.angle_list.count())]
    assert labels == [angle_label(*k) for k in angle_names(SPEC)]
    assert {"left knee flexion", "right knee flexion", "left elbow flexion", "left hip flexion",
            "right shoulder abduction", "left shoulder flexion", "trunk lean"} <= set(labels)
    assert plot.chosen() == ["left knee flexion", "right elbow flexion", "trunk lean"]
    session = FakeSession()
    for f in frames(10):
        plot.add_pose(session.pose_for(f))
    plot.refresh()
    assert set(plot._curves) == {("knee_flexion", "left"), ("elbow_flexion", "right"), ("trunk_lean", "centre")}
    knee = plot._curves[("knee_flexion", "left")].getData()[1]
    _, a = plot.history.series(0, plot.seconds)
    np.testing.assert_allclose(knee, a[:, plot.history.column("knee_flexion", "left")])
    assert len(knee) == 10 and np.isfinite(knee).all()
    plot.set_spec(load_skeleton("mouse4"), plot.chosen())  # the human choice means nothing for a mouse: all its own
    assert plot.chosen() == ["head turn"] and plot.empty.text() == ""
    plot.set_spec(SPEC, [])  # nothing chosen stays nothing
    assert plot.chosen() == []


def test_angle_plot_list_is_its_legend(qtbot):
    """Issue #24 item 13: no legend over the curves; each checked angle's name in its curve's colour, none cut."""
    from ui.plots import AnglePlot

    plot = AnglePlot()
    qtbot.addWidget(plot)
    plot.set_spec(SPEC, ["left knee flexion", "right shoulder abduction"])
    assert plot.plot.getPlotItem().legend is None
    items = {plot.angle_list.item(i).text(): plot.angle_list.item(i) for i in range(plot.angle_list.count())}
    for name, key in (("left knee flexion", ("knee_flexion", "left")),
                      ("right shoulder abduction", ("shoulder_abduction", "right"))):
        assert items[name].foreground().color() == plot._curves[key].opts["pen"].color()
    assert items["left hip flexion"].foreground().color() != plot._curves[("knee_flexion", "left")].opts["pen"].color()
    widest = max(plot.angle_list.fontMetrics().horizontalAdvance(n) for n in items)
    assert plot.angle_list.width() >= widest + 20  # the check box and the longest name fit
