"""PoseTracker on synthetic walking people (human18, pixels, 30 fps)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from posetracker.skeletons import load_skeleton
from posetracker.tracking import PoseTracker, joint_sigmas, oks_matrix
from posetracker.types import PoseFrame, ShapeError
from synthetic_people import STANDING

SPEC = load_skeleton("human18")
FPS = 30.0


def person(x: float, y: float, rng: np.random.Generator, noise: float = 1.5) -> np.ndarray:
    """(K, 2) pixel keypoints of a person centred at (x, y)."""
    return STANDING + [x, y] + rng.normal(0, noise, STANDING.shape)


def make_frame(i: int, people: list[np.ndarray], conf: list[np.ndarray] | None = None) -> PoseFrame:
    p = len(people)
    kp = np.zeros((p, SPEC.num_joints, 3), np.float32)
    if p:
        kp[..., :2] = np.stack(people)
        kp[..., 2] = np.nan
    c = np.stack(conf).astype(np.float32) if conf else np.full((p, SPEC.num_joints), 0.9, np.float32)
    return PoseFrame(
        index=i,
        timestamp=i / FPS,
        keypoints=kp,
        confidence=c,
        scores=np.full(p, 0.9, np.float32),
        track_ids=np.full(p, -1, np.int64),
    )


def run(tracker: PoseTracker, frames: list[tuple[list[int], list[np.ndarray]]], seed: int = 0) -> list[dict[int, int]]:
    """Feed frames of (true person labels, keypoints) in shuffled order; per frame {label: id}."""
    rng = np.random.default_rng(seed)
    out = []
    for i, (labels, people) in enumerate(frames):
        order = rng.permutation(len(people))
        res = tracker.update(make_frame(i, [people[j] for j in order]))
        out.append({labels[j]: int(res.track_ids[n]) for n, j in enumerate(order)})
    return out


def ids_of(result: list[dict[int, int]], label: int, start: int = 0) -> set[int]:
    return {r[label] for r in result[start:] if label in r}


def crossing(noise: float = 1.5, hide_b: range = range(0)) -> list[tuple[list[int], list[np.ndarray]]]:
    """A walks right, B walks left 40 px lower; they overlap around frame 37."""
    rng = np.random.default_rng(7)
    frames = []
    for i in range(75):
        a = person(100 + 8 * i, 300, rng, noise)
        b = person(700 - 8 * i, 340, rng, noise)
        frames.append(([0], [a]) if i in hide_b else ([0, 1], [a, b]))
    return frames


@pytest.mark.parametrize("hide_b", [range(0), range(35, 40)])
def test_crossing_people_keep_ids(hide_b: range) -> None:
    res = run(PoseTracker(SPEC), crossing(hide_b=hide_b))
    assert [r[0] for r in res[:2]] == [-1, -1]  # min_hits = 3
    a, b = ids_of(res, 0, 2), ids_of(res, 1, 2)
    assert len(a) == len(b) == 1 and a | b == {0, 1}


def test_ids_deterministic() -> None:
    a = run(PoseTracker(SPEC), crossing(), seed=3)
    b = run(PoseTracker(SPEC), crossing(), seed=3)
    assert a == b


def walker(n: int, gone: range, seed: int = 0) -> list[tuple[list[int], list[np.ndarray]]]:
    """Person 0 walks right and is hidden during ``gone``; person 1 stands still."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n):
        labels, people = [1], [person(1200, 400, rng)]
        if i not in gone:
            labels.append(0)
            people.append(person(200 + 5 * i, 400, rng))
        frames.append((labels, people))
    return frames


def test_short_disappearance_keeps_id() -> None:
    res = run(PoseTracker(SPEC), walker(60, range(20, 28)))  # 8 frames = 0.27 s hidden
    a, b = ids_of(res, 0, 2), ids_of(res, 1, 2)
    assert len(a) == len(b) == 1 and a | b == {0, 1}


def test_retired_after_max_age_and_ids_never_reused() -> None:
    """A person who comes after someone else's track is retired gets a new id, not theirs."""
    tracker = PoseTracker(SPEC, max_age=0.5)
    rng = np.random.default_rng(1)
    retired_at = None
    seen: dict[str, set[int]] = {"a": set(), "b": set(), "c": set(), "d": set()}
    for i in range(45):
        people = {}
        if i < 10:
            people["a"] = person(300, 400, rng)  # A: last seen in frame 9 (t = 0.3 s)
        people["b"] = person(1200, 400, rng)
        if i >= 15:
            people["c"] = person(700, 400, rng)  # C: while A's track is still alive
        if i >= 30:
            people["d"] = person(300, 400, rng)  # D: where A was, after A is retired
        names = list(people)
        res = tracker.update(make_frame(i, [people[n] for n in names]))
        for n, tid in zip(names, res.track_ids.tolist()):
            seen[n].add(tid)
        if tracker.last_retired:
            retired_at = (i, tracker.last_retired)
    assert retired_at == (25, (0,))  # first frame with t - 0.3 > 0.5
    assert seen["a"] == {-1, 0} and seen["b"] == {-1, 1}
    assert seen["c"] == {-1, 2}
    assert seen["d"] == {-1, 3}  # where A was, after A is retired: still a new id
    assert tracker.active_ids == [1, 2, 3]


def test_single_frame_false_positive_never_confirmed() -> None:
    tracker = PoseTracker(SPEC)
    rng = np.random.default_rng(2)
    for i in range(30):
        people = [person(300, 400, rng), person(900, 400, rng)]
        if i in (10, 20, 21):  # a one-frame and a two-frame false positive
            people.append(person(rng.uniform(500, 700), rng.uniform(200, 600), rng, noise=20))
        res = tracker.update(make_frame(i, people))
        if i >= 2:
            assert res.track_ids[:2].tolist() == [0, 1]
        if len(people) == 3:
            assert res.track_ids[2] == -1
    assert tracker.active_ids == [0, 1]
    # The next real person gets id 2: no id was used up by the false positives.
    for i in range(30, 33):
        res = tracker.update(make_frame(i, [person(300, 400, rng), person(900, 400, rng), person(600, 700, rng)]))
    assert res.track_ids.tolist() == [0, 1, 2]


def six_people(n: int = 120) -> list[tuple[list[int], list[np.ndarray]]]:
    rng = np.random.default_rng(5)
    start = np.array([[150, 250], [1750, 280], [900, 230], [150, 750], [1750, 780], [900, 730]], float)
    vel = np.array([[9, 0], [-9, 0], [2, 1], [7, 0.5], [-7, -0.5], [-3, 0]], float)
    frames = []
    for i in range(n):
        labels, people = [], []
        for j in range(6):
            if i > 5 and rng.random() < 0.05:  # missed detections
                continue
            labels.append(j)
            people.append(person(*(start[j] + vel[j] * i), rng))
        frames.append((labels, people))
    return frames


def test_six_people_keep_distinct_ids_and_fast() -> None:
    tracker = PoseTracker(SPEC)
    frames = six_people()
    t0 = time.perf_counter()
    res = run(tracker, frames)
    per_frame = (time.perf_counter() - t0) / len(frames)
    ids = [ids_of(res, j, 3) - {-1} for j in range(6)]
    assert all(len(s) == 1 for s in ids)
    assert set().union(*ids) == set(range(6))
    assert per_frame < 3e-3  # ~0.3 ms measured; loose for slow CI machines


def test_oks_matrix_basics() -> None:
    rng = np.random.default_rng(0)
    a = person(300, 400, rng)[None]
    ok = np.ones((1, SPEC.num_joints), bool)
    sig = joint_sigmas(SPEC)
    assert np.all(np.isfinite(sig)) and sig[SPEC.root] == pytest.approx(np.nanmean(SPEC.sigmas))
    area = np.array([100.0 * 276])
    assert oks_matrix(a, ok, area, a, ok, area, sig)[0, 0] == pytest.approx(1.0)
    far = oks_matrix(a, ok, area, a + 200, ok, area, sig)[0, 0]
    assert far < 0.01
    none = oks_matrix(a, ok, area, a, ~ok, area, sig)[0, 0]
    assert none == 0.0
    assert oks_matrix(a[:0], ok[:0], area[:0], a, ok, area, sig).shape == (0, 1)


def test_low_confidence_and_empty_frames() -> None:
    tracker = PoseTracker(SPEC, min_hits=1)
    rng = np.random.default_rng(0)
    res = tracker.update(PoseFrame.empty(0, 0.0, SPEC.num_joints))
    assert res.track_ids.shape == (0,)
    dim = np.full(SPEC.num_joints, 0.1)
    res = tracker.update(make_frame(1, [person(300, 400, rng)], [dim]))
    assert res.track_ids.tolist() == [-1]  # too few confident joints to start a track
    res = tracker.update(make_frame(2, [person(300, 400, rng)]))
    assert res.track_ids.tolist() == [0]  # min_hits = 1: confirmed at once
    with pytest.raises(ShapeError):
        tracker.update(PoseFrame.empty(3, 0.1, 5))


def test_seek_back_resets() -> None:
    tracker = PoseTracker(SPEC, min_hits=1)
    rng = np.random.default_rng(0)
    for i in range(5):
        res = tracker.update(make_frame(i, [person(300, 400, rng), person(900, 400, rng)]))
    assert res.track_ids.tolist() == [0, 1]
    res = tracker.update(make_frame(0, [person(900, 400, rng)]))  # back to t = 0
    assert res.track_ids.tolist() == [0] and tracker.active_ids == [0]


def test_one_subject_keeps_one_id_through_a_misread_frame() -> None:
    """One subject (``PoseTracker.one_subject``, the session's for max people 1): a detection far from the
    prediction for one frame (another blob read as the subject) starts no second id: it stays unconfirmed and
    the subject's track goes on; a subject read end to end keeps its centre and its id; 0.2 (several people)
    starts new ids."""
    rng = np.random.default_rng(0)
    frames = [([0], [person(100 + 2 * i, 120, rng)]) for i in range(10)]
    frames[6] = ([0], [person(400, 300, rng)])  # one misread frame, far away
    frames[8] = ([0], [(STANDING * [1, -1]) + [116, 120]])  # read upside down, in place
    frames += [([0], [person(120 + 2 * i, 120, rng)]) for i in range(10, 16)]
    result = run(PoseTracker.one_subject(SPEC), frames)
    assert ids_of(result, 0, 2) - {-1} == {0} and result[6][0] == -1 and result[8][0] == 0
    assert ids_of(run(PoseTracker(SPEC, oks_threshold=0.0), frames), 0, 2) == {0}  # any detection: the glitch too
    assert len(ids_of(run(PoseTracker(SPEC), frames), 0, 2)) > 1


def test_one_subject_that_changes_gets_a_new_id() -> None:
    """Max people 1 on a clip with two people: the one person the detector keeps moves from one to the other,
    900 px away, and stays there. The second person gets a new id; continuing the first's id (any detection
    continues) made the motion solve glide one body across the image between the two."""
    rng = np.random.default_rng(0)
    frames = [([0], [person(200 + 2 * i, 300, rng)]) for i in range(10)]
    frames += [([1], [person(1100 - 3 * i, 500, rng)]) for i in range(10, 30)]
    result = run(PoseTracker.one_subject(SPEC), frames)
    assert ids_of(result, 0, 2) == {0} and ids_of(result, 1, 13) == {1}
    assert ids_of(run(PoseTracker(SPEC, oks_threshold=0.0), frames), 1, 13) == {0}


def test_session_tracks_one_subject_with_any_match() -> None:
    from posetracker.model.network import PoseNet
    from posetracker.session import NetworkSettings, PeopleSettings, SessionConfig, TrackingSession

    net = PoseNet(SPEC)
    assert TrackingSession(net, SessionConfig(network=NetworkSettings(runtime="torch"),
                                              people=PeopleSettings(max_people=1))).tracker.max_jump is not None
    assert TrackingSession(net, SessionConfig(network=NetworkSettings(runtime="torch"),
                                              people=PeopleSettings(max_people=2))).tracker.oks_threshold == 0.2
