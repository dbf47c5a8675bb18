import numpy as np
import pytest

from posetracker.skeletons import load_skeleton
from posetracker.types import Frame, PoseFrame, PoseSequence, ShapeError


def test_frame_validates_image():
    f = Frame(0, 0.0, np.zeros((4, 6, 3), np.uint8))
    assert f.size == (6, 4)
    with pytest.raises(ShapeError, match="Frame.image: expected shape"):
        Frame(0, 0.0, np.zeros((4, 6), np.uint8))
    with pytest.raises(ShapeError, match="Frame.image: expected dtype uint8"):
        Frame(0, 0.0, np.zeros((4, 6, 3), np.float32))


def _pose(p=2, k=18):
    return dict(index=0, timestamp=0.0, keypoints=np.zeros((p, k, 3), np.float32),
                confidence=np.zeros((p, k), np.float32), scores=np.zeros(p, np.float32),
                track_ids=np.zeros(p, np.int64))


def test_poseframe_names_bad_field():
    PoseFrame(**_pose())
    bad = _pose(); bad["confidence"] = np.zeros((2, 17), np.float32)
    with pytest.raises(ShapeError, match=r"PoseFrame.confidence: expected shape \(2, 18\)"):
        PoseFrame(**bad)
    bad = _pose(); bad["track_ids"] = np.zeros(2, np.float32)
    with pytest.raises(ShapeError, match="PoseFrame.track_ids: expected dtype"):
        PoseFrame(**bad)
    bad = _pose(); bad["world"] = np.zeros((2, 18, 2), np.float32)
    with pytest.raises(ShapeError, match="PoseFrame.world"):
        PoseFrame(**bad)


def test_sequence_checks_joint_count():
    spec = load_skeleton("human18")
    seq = PoseSequence([PoseFrame(**_pose()), PoseFrame.empty(1, 0.1, 18)], fps=10.0, skeleton=spec)
    assert len(seq) == 2 and seq.track_ids() == [0]
    with pytest.raises(ShapeError, match=r"frames\[0\].*K=18"):
        PoseSequence([PoseFrame(**_pose(k=17))], fps=10.0, skeleton=spec)
    with pytest.raises(ShapeError, match="fps"):
        PoseSequence([], fps=0.0, skeleton=spec)


def test_a_live_results_instants_are_held_for_half_a_second_of_its_sources_frames():
    """A live result of instants every 3rd frame of a 30 fps source (fps = 10 instants per second): its index rate
    is the source's 30, and the replay holds an instant for 0.5 s of frame numbers (15), not 0.5 s of instants (5
    frames, which left the people blinking out where the pairing stalled)."""
    from posetracker.recording import ReplaySession

    spec = load_skeleton("human18")
    k = spec.num_joints

    def person(i: int) -> PoseFrame:
        return PoseFrame(i, i / 30.0, np.zeros((1, k, 3), np.float32), np.ones((1, k), np.float32),
                         np.ones(1, np.float32), np.zeros(1, np.int64), (4, 4))

    poses = [person(i) for i in (0, 3, 6, 40)]
    seq = PoseSequence(poses, 10.0, spec)
    assert seq.index_rate() == pytest.approx(30.0)
    assert PoseSequence(poses[:1], 10.0, spec).index_rate() == 10.0
    replay = ReplaySession(seq)
    image = np.zeros((4, 4, 3), np.uint8)
    seen = {i: replay.step(Frame(i, i / 30.0, image)).num_people for i in (7, 12, 21, 22, 40)}
    assert seen == {7: 1, 12: 1, 21: 1, 22: 0, 40: 1}  # frame 6's person held until frame 21
