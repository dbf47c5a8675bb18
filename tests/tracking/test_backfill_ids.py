import numpy as np

from posetracker.tracking import joint_sigmas
from posetracker.tracking.offline import backfill_ids
from posetracker.types import PoseFrame


def frame(t, people, ids):
    kp = np.stack(people).astype(np.float32) if people else np.zeros((0, 18, 3), np.float32)
    n = len(people)
    return PoseFrame(index=t, timestamp=t / 30, keypoints=kp, confidence=np.full((n, 18), 0.9, np.float32),
                     scores=np.ones(n, np.float32), track_ids=np.asarray(ids, np.int64))


def body(x, y=200.0):
    rng = np.random.default_rng(0)
    kp = np.zeros((18, 3))
    kp[:, 0], kp[:, 1] = x + rng.uniform(-30, 30, 18), y + rng.uniform(-80, 80, 18)
    return kp


def test_first_frames_take_the_id_of_the_track_they_became(human18):
    sig = joint_sigmas(human18)
    a = lambda t: body(100 + 3 * t)  # noqa: E731  walks right slowly
    far_fp = body(600)  # a one-frame false positive elsewhere: never matched, stays -1
    frames = [frame(0, [a(0)], [-1]), frame(1, [a(1), far_fp], [-1, -1]), frame(2, [a(2)], [4]), frame(3, [a(3)], [4])]
    out = backfill_ids(frames, sig)
    assert [f.track_ids.tolist() for f in out] == [[4], [4, -1], [4], [4]]
    assert frames[0].track_ids.tolist() == [-1]  # input untouched


def test_no_duplicate_ids_and_gaps_stop_the_chain(human18):
    sig = joint_sigmas(human18)
    # frame 0 already shows id 2 (someone else): the newcomer there must not take it too
    frames = [frame(0, [body(100), body(400)], [-1, 2]), frame(1, [body(101)], [2])]
    assert [f.track_ids.tolist() for f in backfill_ids(frames, sig)] == [[-1, 2], [2]]
    # a frame without the person breaks the chain
    frames = [frame(0, [body(100)], [-1]), frame(1, [], []), frame(2, [body(100)], [0])]
    assert backfill_ids(frames, sig)[0].track_ids.tolist() == [-1]


def test_tracks_never_read_as_a_likely_person_are_left_out():
    from posetracker.tracking.offline import drop_unsure_tracks
    from posetracker.types import PoseFrame

    def pose(t, ids, scores):
        n = len(ids)
        return PoseFrame(t, t / 30, np.zeros((n, 18, 3), np.float32), np.ones((n, 18), np.float32),
                         np.asarray(scores, np.float32), np.asarray(ids, np.int64), (640, 480))

    # track 0 sure; track 1 never; track 2 sure in a fifth of its frames (kept); id -1 untouched
    frames = [pose(t, [0, 1, 2, -1], [0.9, 0.01, 0.5 if t % 5 == 0 else 0.001, 0.0]) for t in range(20)]
    out, dropped = drop_unsure_tracks(frames, 0.02)
    assert dropped == [1]
    assert all(f.track_ids.tolist() == [0, 2, -1] for f in out)
    assert drop_unsure_tracks(frames, 0.0)[1] == []
