"""One skeleton per real person: scores from the final pose, duplicates merged after the refiners, and the
metrics that read predictions as a user does (issue #47)."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.decoding.person_scores import calibrated, pose_scores
from posetracker.evaluation.metrics import ImageEval, summarize
from posetracker.evaluation.people_sets import claim_people, duplicate_count, people_set_metrics
from posetracker.refiners.base import Refiner, RefinerChain
from posetracker.session import PeopleSettings, RefineSettings, SessionConfig, TrackingSession

K = 5
SIGMAS = np.full(K, 0.08)


def _person(x0: float, y0: float, size: float = 100.0) -> np.ndarray:
    """(K, 2) a small figure: head, shoulders, hips."""
    return np.array([[0.5, 0.0], [0.2, 0.3], [0.8, 0.3], [0.3, 1.0], [0.7, 1.0]]) * size + (x0, y0)


def _gt(*people: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    gt = np.stack([np.concatenate([p, np.full((K, 1), 2.0)], 1) for p in people])
    boxes = np.array([[p[:, 0].min(), p[:, 1].min(), np.ptp(p[:, 0]), np.ptp(p[:, 1])] for p in people])
    return gt, boxes


def test_a_junk_skeleton_cannot_stand_in_for_a_wrong_sure_one():
    """Hungarian PCK takes a person's best candidate; PCK with one skeleton per person takes the sure one."""
    truth = _person(0, 0)
    wrong = truth + np.array([20.0, 0.0])  # the sure skeleton is off by 20 px (PCK@0.1: 14 px)
    junk = truth + 1.0  # a 0.01 skeleton that happens to lie right
    gt, boxes = _gt(truth)
    im = ImageEval(np.stack([wrong, junk]), np.ones((2, K)), np.array([0.9, 0.01]), gt, boxes)
    assert summarize([im], SIGMAS)["pck@0.1"] == 1.0  # inflated by the junk
    m = people_set_metrics([im], SIGMAS)
    assert m["pck_first@0.1"] == 0.0
    assert m["weak_skeletons"] == 1


def test_claims_go_strongest_first_and_each_person_once():
    a, b = _person(0, 0), _person(300, 0)
    gt, boxes = _gt(a, b)
    from posetracker.evaluation.metrics import oks_matrix

    pred = np.stack([a + 2, a + 3, b + 2])
    o = oks_matrix(pred, np.ones((3, K)), gt, boxes[:, 2] * boxes[:, 3], SIGMAS)
    owner = claim_people(o, np.array([0.5, 0.9, 0.7]))
    assert owner.tolist() == [1, 2]  # person a goes to the 0.9 skeleton, not the 0.5 duplicate


def test_sure_share_counts_found_people_scored_at_least_a_quarter():
    a, b = _person(0, 0), _person(300, 0)
    gt, boxes = _gt(a, b)
    im = ImageEval(np.stack([a + 1, b + 1]), np.ones((2, K)), np.array([0.9, 0.1]), gt, boxes)
    m = people_set_metrics([im], SIGMAS)
    assert m["found_first"] == 2 and m["sure_share"] == 0.5


def test_duplicates_need_overlap_with_a_stronger_one():
    a = _person(0, 0)
    pred = np.stack([a, a + 2, a + 300])
    assert duplicate_count(pred, np.ones((3, K)), np.array([0.9, 0.5, 0.4]), SIGMAS) == 1
    assert duplicate_count(pred[[0, 2]], np.ones((2, K)), np.array([0.9, 0.4]), SIGMAS) == 0


def test_pose_score_is_the_root_times_the_other_joints():
    conf = np.array([[0.5, 0.5, 1.0], [0.2, 0.0, 0.5]])
    np.testing.assert_allclose(pose_scores(conf, root=2), [0.5, 0.05])


class _FrameStage(Refiner):
    """A frame-stage refiner for the tests: sets every non-root joint's confidence, and puts every person after
    the first onto the first one's joints (a precision stage pulling a fragment onto a person already found)."""

    kind = "test-frame"

    def __init__(self, spec, confidence: float, pull: bool):
        super().__init__(spec)
        self.confidence, self.pull = confidence, pull

    def refine_frame(self, xy, confidence, rgb, budget_ms=None):
        xy, confidence = xy.copy(), confidence.copy()
        others = [k for k in range(confidence.shape[1]) if k != self.spec.root]
        confidence[:, others] = self.confidence
        if self.pull and len(xy) > 1:
            xy[1:] = xy[0] + 1.0
        return xy, confidence


@pytest.fixture(scope="module")
def frame():
    from conftest import REPO
    from posetracker.capture import VideoFileSource

    with VideoFileSource(REPO / "assets" / "sample_dance.mp4") as src:
        one = src.read().image
    return np.concatenate([one, one[:, ::-1]], axis=1)  # the dancer and her mirror image: two people


def _session(net, refiner: Refiner | None, people: PeopleSettings = PeopleSettings()) -> TrackingSession:
    session = TrackingSession(net, SessionConfig(mode="offline", people=people,
                                                 refine=RefineSettings(refiners=(), tile_grid=1)))
    if refiner is not None:
        session.refiners = RefinerChain([refiner])
    return session


def test_the_score_comes_from_the_final_pose(shipped_net, frame):
    spec = shipped_net.spec
    plain = _session(shipped_net, None).process_image(frame)
    assert plain.num_people == 2
    sure = _session(shipped_net, _FrameStage(spec, 0.95, pull=False)).process_image(frame)
    root = sure.confidence[:, spec.root].astype(np.float64)
    np.testing.assert_allclose(sure.scores, calibrated(root * 0.95, spec.score_calibration), rtol=1e-5)
    assert (sure.scores > plain.scores.max()).all() or (sure.scores > 0.99).all()
    unsure = _session(shipped_net, _FrameStage(spec, 0.01, pull=False), people=PeopleSettings(min_person_probability=0.0))
    assert (unsure.process_image(frame).scores < plain.scores.min()).all()
    # a final pose the refiners could not find is not shown at the default threshold
    assert _session(shipped_net, _FrameStage(spec, 0.01, pull=False)).process_image(frame).num_people == 0


def test_two_readings_the_refiners_put_on_one_body_are_one_person(shipped_net, frame):
    one = _session(shipped_net, _FrameStage(shipped_net.spec, 0.9, pull=True)).process_image(frame)
    assert one.num_people == 1


def test_live_shows_a_track_once_it_was_read_as_a_likely_person(shipped_net):
    from posetracker.types import PoseFrame

    session = TrackingSession(shipped_net, SessionConfig(mode="live", refine=RefineSettings(refiners=())))

    def pose(scores, ids):
        n = len(ids)
        return PoseFrame(0, 0.0, np.zeros((n, 18, 3), np.float32), np.ones((n, 18), np.float32),
                         np.asarray(scores, np.float32), np.asarray(ids, np.int64))

    assert session._shown(pose([0.9, 0.01, 0.01], [0, 1, -1])).track_ids.tolist() == [0]  # 1 never sure yet
    assert session._shown(pose([0.5, 0.3], [0, 1])).track_ids.tolist() == [0, 1]
    assert session._shown(pose([0.005, 0.005], [0, 1])).track_ids.tolist() == [0, 1]  # sure once: kept
    session.reset()
    assert session._shown(pose([0.005], [1])).num_people == 0
