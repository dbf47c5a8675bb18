"""posetracker.evaluation's metrics and joint mapping on synthetic data (no ../shared needed); labelled sets and
the runner: test_labelled_sets.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from posetracker.evaluation import (
    HUMAN18_JOINTS,
    LAYOUTS,
    ImageEval,
    UnknownLayoutError,
    coco_ap,
    detect_layout,
    get_layout,
    human18_from_set,
    human18_sigmas,
    match_people,
    oks_matrix,
    summarize,
    to_human18,
)

K = 12
SIG = np.full(K, 0.1)  # var = (2 * 0.1)^2 = 0.04


def person(x0: float, y0: float, size: float = 100.0, k: int = K) -> np.ndarray:
    """(k, 3) labelled joints spread over a size x size box at (x0, y0); box = exactly that square."""
    t = np.linspace(0.0, 1.0, k)
    xy = np.stack([x0 + size * t, y0 + size * ((np.arange(k) * 7) % k) / (k - 1)], axis=1)
    xy[0] = (x0, y0)
    xy[-1] = (x0 + size, y0 + size)
    return np.concatenate([xy, np.full((k, 1), 2.0)], axis=1)


def box(x0: float, y0: float, size: float = 100.0) -> list[float]:
    return [x0, y0, size, size]


def image(preds, gts, scores=None, conf=None) -> ImageEval:
    pred = np.asarray(preds, dtype=np.float64).reshape(len(preds), K, 3)[..., :2]
    gt = np.asarray(gts, dtype=np.float64).reshape(len(gts), K, 3)
    boxes = np.array([[g[:, 0].min(), g[:, 1].min(), np.ptp(g[:, 0]), np.ptp(g[:, 1])] for g in gt]).reshape(-1, 4)
    p = len(pred)
    return ImageEval(
        pred=pred,
        pred_conf=np.ones((p, K)) if conf is None else np.asarray(conf, dtype=np.float64),
        scores=np.linspace(0.9, 0.5, p) if scores is None else np.asarray(scores, dtype=np.float64),
        gt=gt,
        boxes=boxes,
    )


# ---------------------------------------------------------------- OKS / AP


def test_perfect_predictions_score_one():
    gts = [person(0, 0), person(300, 50)]
    m = summarize([image(gts, gts), image([person(10, 10)], [person(10, 10)])], SIG)
    assert m["pck@0.1"] == 1.0 and m["pck@0.2"] == 1.0
    assert m["ap"] == pytest.approx(1.0) and m["ap50"] == pytest.approx(1.0)
    assert m["recall"] == 1.0
    assert m["people"] == 3 and m["images"] == 2 and m["labelled_joints"] == 3 * K


def test_shifted_prediction_has_the_hand_computed_oks():
    gt = person(0, 0)  # box 100 x 100 -> area 10_000
    pred = gt.copy()
    pred[:, 0] += 20.0  # d^2 = 400 -> e = 400 / (2 * 10_000 * 0.04) = 0.5
    oks = oks_matrix(pred[None, :, :2], np.ones((1, K)), gt[None], np.array([10_000.0]), SIG)
    assert oks[0, 0] == pytest.approx(math.exp(-0.5), rel=1e-9)  # 0.6065
    ap = coco_ap([image([pred], [gt])], SIG)
    # matched at OKS thresholds 0.50, 0.55, 0.60 only -> AP = 3 / 10
    assert ap["ap50"] == pytest.approx(1.0) and ap["ap75"] == 0.0
    assert ap["ap"] == pytest.approx(0.3)
    assert ap["ap_per_threshold"] == pytest.approx([1.0, 1.0, 1.0] + [0.0] * 7)


def test_only_labelled_joints_count_in_oks():
    gt = person(0, 0)
    gt[:4, 2] = 0  # unlabelled
    pred = gt.copy()
    pred[:4, :2] += 500.0  # far off, but only where nothing is labelled
    oks = oks_matrix(pred[None, :, :2], np.ones((1, K)), gt[None], np.array([1e4]), SIG)
    assert oks[0, 0] == pytest.approx(1.0)
    # a joint that is not predicted (confidence 0) contributes 0 to OKS
    conf = np.ones((1, K))
    conf[0, 5] = 0
    oks = oks_matrix(gt[None, :, :2], conf, gt[None], np.array([1e4]), SIG)
    assert oks[0, 0] == pytest.approx((K - 5) / (K - 4))


def test_false_positive_with_high_score_halves_ap():
    gt = person(0, 0)
    fp = person(400, 400)
    # FP first: TP at rank 2 -> precision 1/2 at every recall -> AP 0.5
    high = summarize([image([fp, gt], [gt], scores=[0.9, 0.8])], SIG)
    assert high["ap"] == pytest.approx(0.5) and high["ap50"] == pytest.approx(0.5)
    # FP ranked last: precision 1 until recall 1 is reached -> AP 1
    low = summarize([image([fp, gt], [gt], scores=[0.1, 0.8])], SIG)
    assert low["ap"] == pytest.approx(1.0)
    # PCK and recall do not see false positives
    for m in (high, low):
        assert m["pck@0.1"] == 1.0 and m["recall"] == 1.0 and m["predicted_people"] == 2


def test_a_set_that_labels_one_person_at_a_time_leaves_out_predictions_on_other_people():
    import dataclasses

    gt = person(0, 0)
    elsewhere, duplicate = person(400, 400), person(30, 30)  # an unlabelled person; a second reading of gt
    full = image([elsewhere, gt], [gt], scores=[0.9, 0.8])
    partial = dataclasses.replace(full, every_person_labelled=False)
    assert summarize([full], SIG)["ap"] == pytest.approx(0.5)
    assert summarize([partial], SIG)["ap"] == pytest.approx(1.0)  # neither true nor false positive
    # a prediction overlapping the labelled person still counts against AP
    dup = dataclasses.replace(image([duplicate, gt], [gt], scores=[0.9, 0.8]), every_person_labelled=False)
    assert summarize([dup], SIG)["ap"] == pytest.approx(0.5)


def test_false_positive_pooled_across_images():
    gt = person(0, 0)
    ims = [image([gt], [gt], scores=[0.8]), image([person(50, 50)], [], scores=[0.95])]
    # ranked: FP(0.95), TP(0.8) -> AP 0.5
    assert summarize(ims, SIG)["ap"] == pytest.approx(0.5)


def test_recall_of_tall_people_counts_people_at_least_an_eighth_of_the_image_high():
    import dataclasses

    tall, small, other = person(0, 0, size=200.0), person(400, 0, size=60.0), person(600, 0, size=300.0)
    im = dataclasses.replace(image([tall, small], [tall, small, other]), image_height=800.0)  # 1/8 = 100 px
    m = summarize([im], SIG)
    assert m["tall_people"] == 2 and m["recall_tall"] == 0.5  # tall found, other missed; small not counted
    assert m["recall"] == pytest.approx(2 / 3)
    assert np.isnan(summarize([image([tall], [tall])], SIG)["recall_tall"])  # no image height given


def test_pck_per_joint_counts_each_joint_once():
    gt = person(0, 0)
    pred = gt.copy()
    pred[3, :2] += 50.0  # joint 3 far off (threshold 0.1 * diagonal = 14 px)
    m = summarize([image([pred], [gt, person(400, 0)])], SIG)
    hits, labelled = np.array(m["joint_hits@0.1"]), np.array(m["joint_labelled"])
    assert labelled.tolist() == [2] * K  # both people's joints
    assert hits[3] == 0 and (np.delete(hits, 3) == 1).all()  # the missed person's joints count as misses
    assert hits.sum() / labelled.sum() == pytest.approx(m["pck@0.1"])


def test_paired_bootstrap_interval():
    from posetracker.evaluation.metrics import paired_bootstrap

    d, lo, hi = paired_bootstrap([0.5, 0.6, 0.7, 0.9], [0.4, 0.5, 0.7, 0.6])
    assert d == pytest.approx(0.125) and lo <= d <= hi and lo >= 0.0 and hi <= 0.3
    same = paired_bootstrap([0.3, 0.8], [0.3, 0.8])
    assert same == (0.0, 0.0, 0.0)
    assert all(math.isnan(v) for v in paired_bootstrap([], []))


def test_missing_person():
    a, b = person(0, 0), person(300, 0)
    m = summarize([image([a], [a, b])], SIG)
    assert m["recall"] == 0.5
    assert m["pck@0.1"] == 0.5 and m["pck@0.2"] == 0.5  # b's joints all count as misses
    # one TP at precision 1 up to recall 0.5: recall points 0.00..0.50 -> 51 of 101
    assert m["ap"] == pytest.approx(51 / 101)


def test_no_predictions_at_all():
    a = person(0, 0)
    m = summarize([image([], [a])], SIG)
    assert m["ap"] == 0.0 and m["recall"] == 0.0 and m["pck@0.2"] == 0.0


def test_jittered_predictions_pck():
    gt = person(0, 0)  # box 100 x 100, diagonal 141.42 -> 14.14 px @0.1, 28.28 px @0.2
    pred = gt.copy()
    pred[0:4, 0] += 10.0  # hit at both
    pred[4:8, 1] -= 20.0  # miss @0.1, hit @0.2
    pred[8:10, :2] += 30.0  # 42.4 px: miss at both; joints 10, 11 exact
    m = summarize([image([pred], [gt])], SIG)
    assert m["pck@0.1"] == pytest.approx(6 / K)
    assert m["pck@0.2"] == pytest.approx(10 / K)
    # OKS = (4 e^-0.125 + 4 e^-0.5 + 2 e^-2.25 + 2) / 12 = 0.681 -> found; matched at 0.50 .. 0.65 -> AP 0.4
    oks = (4 * math.exp(-0.125) + 4 * math.exp(-0.5) + 2 * math.exp(-2.25) + 2) / K
    match = match_people(pred[None, :, :2], np.ones((1, K)), gt[None], [1e4], SIG)
    assert match.matched_oks() == pytest.approx([oks])
    assert m["recall"] == 1.0
    assert m["ap"] == pytest.approx(0.4)


def test_small_random_jitter_keeps_everything_high():
    rng = np.random.default_rng(0)
    gts = [person(0, 0), person(200, 0), person(400, 30)]
    preds = [g + np.concatenate([rng.normal(0, 2.0, (K, 2)), np.zeros((K, 1))], axis=1) for g in gts]
    m = summarize([image(preds, gts)], SIG)
    assert m["pck@0.1"] == 1.0 and m["recall"] == 1.0 and m["ap50"] == pytest.approx(1.0) and m["ap"] > 0.8


def test_hungarian_matching_is_global():
    a, b = person(0, 0), person(60, 0)
    # pred 0 sits between a and b (slightly closer to a); pred 1 is exactly a.
    p0 = (a + b) / 2
    p0[:, 0] -= 5
    match = match_people(np.stack([p0, a])[..., :2], np.ones((2, K)), np.stack([a, b]), [1e4, 1e4], SIG)
    assert sorted(map(tuple, match.pairs.tolist())) == [(0, 1), (1, 0)]
    assert list(match.gt_to_pred(2)) == [1, 0]


def test_ignored_ground_truth_is_neither_found_nor_missed():
    a = person(0, 0)
    empty = person(300, 0)
    empty[:, 2] = 0
    m = summarize([image([a], [a, empty])], SIG)
    assert m["people"] == 1 and m["ignored_people"] == 1
    assert m["recall"] == 1.0 and m["pck@0.1"] == 1.0 and m["ap"] == pytest.approx(1.0)
    # a detection inside the ignored person's (grown) box is ignored, not a false positive
    ie = image([a, person(300, 0)], [a, empty], scores=[0.5, 0.9])
    ie = ImageEval(ie.pred, ie.pred_conf, ie.scores, ie.gt, np.array([[0, 0, 100, 100], [300, 0, 100, 100.0]]))
    assert summarize([ie], SIG)["ap"] == pytest.approx(1.0)


def test_detection_outcomes_label_each_prediction_as_ap_counts_it():
    """Real = matched a labelled person at OKS 0.5 in score order; a match to an ignored person is left out."""
    from posetracker.evaluation.metrics import detection_outcomes

    a, empty = person(0, 0), person(300, 0)
    empty[:, 2] = 0
    # scored 0.9: a second reading of a (matched first: real); 0.7: a (taken: false); 0.5: inside the ignored box
    ie = image([person(2, 2), a, person(300, 0)], [a, empty], scores=[0.9, 0.7, 0.5])
    ie = ImageEval(ie.pred, ie.pred_conf, ie.scores, ie.gt, np.array([[0, 0, 100, 100], [300, 0, 100, 100.0]]))
    far = image([person(600, 600)], [person(0, 0)], scores=[0.3])  # matches nobody
    scores, real = detection_outcomes([ie, far], SIG)
    np.testing.assert_array_equal(scores, [0.9, 0.7, 0.3])
    np.testing.assert_array_equal(real, [True, False, False])


def test_coco_ap_without_ground_truth_is_nan():
    assert math.isnan(coco_ap([image([person(0, 0)], [])], SIG)["ap"])


# ---------------------------------------------------------------- mapping

_ANATOMY = {"nose", "left_eye", "right_eye", "left_ear", "right_ear"} | {
    f"{s}_{j}" for s in ("left", "right") for j in ("shoulder", "elbow", "wrist", "hip", "knee", "ankle")
}
_NEVER = {"head_top", "top_head", "head", "head_bottom", "neck", "upper_neck", "thorax", "pelvis", "belly", "hip"}


def test_human18_joints_and_sigmas_match_the_skeleton(human18):
    assert tuple(human18.joint_names) == HUMAN18_JOINTS
    s = human18_sigmas()
    assert s.shape == (18,) and np.isnan(s[17])
    assert s[0] == 0.026 and s[11] == 0.107 and s[15] == 0.089  # COCO sigmas


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_every_layout_maps_only_corresponding_joints(name):
    lay = get_layout(name)
    assert lay.to_h18, name
    for src, dst in lay.to_h18.items():
        assert src == dst and dst in _ANATOMY, (name, src, dst)
    for n in _NEVER & set(lay.keypoint_names):
        assert n in lay.left_out and n not in lay.to_h18
    h, s = to_human18(lay.keypoint_names, layout=name)
    assert [HUMAN18_JOINTS[i] for i in h] == [lay.keypoint_names[j] for j in s]
    assert list(h) == sorted(h) and 17 not in h
    assert detect_layout(lay.keypoint_names).to_h18 == lay.to_h18


def test_layout_specifics():
    limbs = sorted(_ANATOMY - {"nose", "left_eye", "right_eye", "left_ear", "right_ear"})
    for name in ("mpii16", "mhp16", "crowdpose14", "aic14", "jhmdb15", "exlpose14", "mpii_trb40"):
        assert sorted(get_layout(name).to_h18) == limbs, name
    assert len(get_layout("mpii16").keypoint_names) == 16
    assert len(get_layout("crowdpose14").keypoint_names) == 14
    assert len(get_layout("aic14").keypoint_names) == 14
    assert len(get_layout("jhmdb15").keypoint_names) == 15
    assert len(get_layout("exlpose14").keypoint_names) == 14
    assert len(get_layout("halpe136").keypoint_names) == 136
    assert len(get_layout("mpii_trb40").keypoint_names) == 40
    pt = get_layout("posetrack18")
    assert pt.keypoint_names[1:3] == ("head_bottom", "head_top")
    assert sorted(pt.to_h18) == sorted(limbs + ["nose", "left_ear", "right_ear"])
    assert set(get_layout("halpe136").to_h18) == set(HUMAN18_JOINTS[:17])
    assert set(get_layout("coco17").to_h18) == set(HUMAN18_JOINTS[:17])


def test_registry_errors_list_the_choices():
    with pytest.raises(UnknownLayoutError) as e:
        get_layout("nope")
    for name in LAYOUTS:
        assert name in str(e.value)
    with pytest.raises(UnknownLayoutError, match="mpii16.*crowdpose14|registered layouts"):
        to_human18(["a", "b", "c"])
    with pytest.raises(ValueError):
        to_human18(["a"], layout="coco17")


def test_human18_from_set_leaves_unmapped_joints_unlabelled():
    names = get_layout("mpii16").keypoint_names
    kp = np.array([[10.0 * i, 5.0 * i, 2.0] for i in range(16)])
    h = human18_from_set(kp, names)
    assert h.shape == (18, 3)
    assert (h[[0, 1, 2, 3, 4, 17], 2] == 0).all()  # no face joints in MPII, centre is virtual
    assert h[HUMAN18_JOINTS.index("right_ankle")].tolist() == [0.0, 0.0, 2.0]
    assert h[HUMAN18_JOINTS.index("left_wrist")].tolist() == [150.0, 75.0, 2.0]
    with pytest.raises(ValueError):
        human18_from_set(kp[:3], names)
