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
