import numpy as np

from posetracker.decoding.duplicates import suppress_duplicates
from posetracker.decoding.people import DecodedPeople
from posetracker.tracking import PoseTracker, joint_sigmas
from posetracker.types import PoseFrame


def _person(rng, origin, k=18):
    return origin + rng.normal(0, 30, (k, 2))


def test_a_person_found_twice_is_kept_once(human18):
    rng = np.random.default_rng(0)
    a = _person(rng, np.array([100.0, 100.0]))
    b = _person(rng, np.array([180.0, 100.0]))
    kp = np.stack([a, a + 1.5, b]).astype(np.float32)  # person 1 repeats person 0
    conf = np.full((3, 18), 0.8, np.float32)
    people = DecodedPeople(kp, conf, np.array([0.9, 0.5, 0.7], np.float32), np.zeros((3, 18), np.float32), kp)
    out = suppress_duplicates(people, joint_sigmas(human18))
    assert out.num_people == 2
    np.testing.assert_allclose(out.scores, [0.9, 0.7], rtol=1e-6)


def _frame(i, people):
    kp = np.zeros((len(people), 18, 3), np.float32)
    kp[..., :2] = np.stack(people)
    n = len(people)
    return PoseFrame(i, i / 30, kp, np.full((n, 18), 0.9, np.float32), np.ones(n, np.float32), np.full(n, -1, np.int64))


def test_a_tentative_duplicate_cannot_steal_a_confirmed_track(human18):
    rng = np.random.default_rng(1)
    body = _person(rng, np.array([300.0, 200.0]))
    tracker = PoseTracker(human18)
    for i in range(5):
        out = tracker.update(_frame(i, [body]))
    assert out.track_ids.tolist() == [0]
    # A duplicate detection 14 px below the person starts a tentative track; in the
    # next frame the person really is there. The detection is closer to the
    # tentative track than to the confirmed one, yet it must stay with track 0.
    shift = np.array([0.0, 14.0])
    assert tracker.update(_frame(5, [body + shift, body])).track_ids.tolist() == [-1, 0]
    out = tracker.update(_frame(6, [body + shift]))
    assert out.track_ids.tolist() == [0]
