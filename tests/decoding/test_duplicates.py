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


def test_a_weak_copy_of_a_person_is_dropped_a_weak_person_elsewhere_kept(human18):
    """A weak second centre peak on one body lands near that body's joints with confidences under 0.1 almost
    everywhere (one joint taken strongly): compared over all its joints it repeats the body and goes; a weak
    person of their own is kept, and so is the same copy scoring like a real person (the old rule)."""
    rng = np.random.default_rng(1)
    a = _person(rng, np.array([100.0, 300.0]))
    copy = a + rng.normal(0, 6, a.shape)  # a shifted, noisy copy: OKS ~0.4-0.6 over all joints
    far = _person(rng, np.array([400.0, 300.0]))
    kp = np.stack([a, copy, far]).astype(np.float32)
    conf = np.full((3, 18), 0.8, np.float32)
    conf[1] = 0.05
    conf[1, 5] = 0.8  # the copy holds one joint confidently (a's is weak there)
    conf[0, 5] = 0.05
    conf[2] = 0.05
    sig = joint_sigmas(human18)

    def people(scores):
        return DecodedPeople(kp, conf, np.array(scores, np.float32), np.zeros((3, 18), np.float32), kp)

    out = suppress_duplicates(people([0.5, 0.02, 0.02]), sig)
    np.testing.assert_allclose(out.keypoints[:, 0], kp[[0, 2], 0])  # the copy went, the weak far one stayed
    assert suppress_duplicates(people([0.5, 0.2, 0.02]), sig).num_people == 3  # not weak: confident joints only
    assert suppress_duplicates(people([0.5, 0.02, 0.02]), sig, weak_score=0.0).num_people == 3  # the old rule


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
