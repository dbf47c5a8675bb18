"""The precision stage (``crop`` refiner): MoveNet Thunder on a crop around each person."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import REPO
from posetracker.capture import open_source
from posetracker.refiners import RefinerError, build_refiner, load_refiner, refiner_path
from posetracker.session import MotionSettings, NetworkSettings, RefineSettings, SessionConfig, TrackingSession
from posetracker.skeletons import load_skeleton

HUMAN = load_skeleton("human18")
SAMPLE = REPO / "assets" / "sample_dance.mp4"


def test_it_needs_the_coco_joints():
    with pytest.raises(RefinerError, match="COCO-17"):
        build_refiner("crop", load_skeleton("mouse4"))


def test_boxes_from_the_confident_joints_and_a_budget_that_picks_the_least_certain():
    crop = build_refiner("crop", HUMAN)
    xy = np.zeros((3, 18, 2))
    xy[:, :, 0], xy[:, :, 1] = np.arange(18) * 10.0, np.arange(18) * 5.0
    conf = np.full((3, 18), 0.9)
    conf[0, 10:] = 0.0  # person 0: only joints 0-9 confident -> box of those
    conf[1] = 0.05  # person 1: none confident -> box of all joints
    conf[2] = 0.5
    boxes = crop.boxes(xy, conf)
    np.testing.assert_allclose(boxes[0], [0, 0, 90, 45])
    np.testing.assert_allclose(boxes[1], [0, 0, 160, 80])  # the 17 COCO joints (the centre is not one)
    ok = np.ones(3, bool)
    assert crop.choose(conf, ok).tolist() == [0, 1, 2]  # no budget: everyone
    crop.ms_per_crop = 25.0
    assert crop.choose(conf, ok, 30.0).tolist() == [1]  # room for one: the least certain
    assert crop.choose(conf, ok, 1.0).tolist() == [1]  # always at least one
    assert crop.choose(conf, ok, 60.0).tolist() == [1, 2]
    # the longest since its last refinement goes first, whatever its confidence
    assert crop.choose(conf, ok, 30.0, since=np.array([np.inf, 1.0, 2.0])).tolist() == [0]
    assert crop.choose(conf, ok, 60.0, since=np.array([3.0, 1.0, 2.0])).tolist() == [0, 2]


def _two_people(shift: float = 0.0, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Two people side by side: (2, 18, 2) px, boxes 100 x scale px, confidence 0.5."""
    xy = np.zeros((2, 18, 2))
    grid = np.linspace(0, 100 * scale, 18)
    xy[0, :, 0], xy[0, :, 1] = grid + shift, grid
    xy[1, :, 0], xy[1, :, 1] = grid + 400 + shift, grid
    return xy, np.full((2, 18), 0.5)


def test_live_budget_carries_each_persons_last_correction(monkeypatch):
    """One crop a frame for two people: they take turns, and the one not refined keeps its correction
    (scaled to its box), with the refined confidences, for carry_frames frames."""
    crop = build_refiner("crop", HUMAN, carry_frames=2, carry_smoothing=0.0, live_fusion="replace")
    crop.ms_per_crop = 25.0
    refined = []

    def fake_refine(xy, confidence, rgb, boxes, chosen, keep_below=0.0):  # each refinement moves the joints 5 px right
        refined.append(chosen.tolist())
        for p in chosen:
            xy[p, crop.joints, 0] += 5.0
            confidence[p, crop.joints] = 0.9

    monkeypatch.setattr(crop, "_refine", fake_refine)
    rgb = np.zeros((300, 600, 3), np.uint8)
    xy, conf = _two_people()
    out, c = crop.refine_frame(xy, conf, rgb, budget_ms=30.0)
    assert refined[-1] == [0] and np.allclose(out[0, crop.joints, 0] - xy[0, crop.joints, 0], 5.0)
    np.testing.assert_array_equal(out[1], xy[1])  # not refined yet: as read
    xy2, conf2 = _two_people(shift=3.0, scale=1.2)  # both moved and grew by a fifth
    out, c = crop.refine_frame(xy2, conf2, rgb, budget_ms=30.0)
    assert refined[-1] == [1]  # never refined goes first
    np.testing.assert_allclose(out[0, crop.joints, 0] - xy2[0, crop.joints, 0], 6.0)  # 5 px at 100 -> 6 at 120
    np.testing.assert_allclose(c[0, crop.joints], 0.9)
    np.testing.assert_array_equal(out[0, 17], xy2[0, 17])  # the centre is not Thunder's: never moved
    for _ in range(3):  # person 0 refined again on its turn; the other carried meanwhile
        out, c = crop.refine_frame(xy2, conf2, rgb, budget_ms=30.0)
        assert np.allclose(out[:, crop.joints, 0] - xy2[:, crop.joints, 0], [[5.0], [5.0]])
    assert refined[-3:] == [[0], [1], [0]]
    # with no budget (offline) everyone is refined and nothing is carried
    out, _ = crop.refine_frame(xy2, conf2, rgb)
    assert refined[-1] == [0, 1]
    crop.reset()
    out, _ = crop.refine_frame(xy2, conf2, rgb, budget_ms=30.0)
    np.testing.assert_array_equal(out[1], xy2[1])  # forgotten: person 1 as read again


def test_live_corrections_are_low_passed():
    """Refined again, a person's correction is carry_smoothing x the carried one + the rest x the new one."""
    crop = build_refiner("crop", HUMAN, carry_smoothing=0.75, live_fusion="replace")
    crop.ms_per_crop = 25.0
    shifts = iter([8.0, 0.0, 0.0, 2.0])

    def fake_refine(xy, confidence, rgb, boxes, chosen, keep_below=0.0):
        xy[chosen[:, None], crop.joints, 0] += next(shifts)

    crop._refine = fake_refine
    xy, conf = _two_people()
    xy, conf = xy[:1], conf[:1]
    rgb = np.zeros((300, 600, 3), np.uint8)
    got = [float(crop.refine_frame(xy, conf, rgb, budget_ms=30.0)[0][0, 0, 0] - xy[0, 0, 0]) for _ in range(3)]
    np.testing.assert_allclose(got, [8.0, 6.0, 4.5])  # the first reading whole, then 0.75 of the carried each frame
    out, _ = crop.refine_frame(xy, conf, rgb)  # no budget (offline): this frame's reading, nothing blended
    assert float(out[0, 0, 0] - xy[0, 0, 0]) == 2.0


def test_live_weighted_fusion_moves_each_joint_by_its_share_of_the_confidences():
    crop = build_refiner("crop-fast", HUMAN, carry_smoothing=0.0)  # weighted is the default live fusion
    assert crop.live_fusion == "weighted"

    def fake_refine(xy, confidence, rgb, boxes, chosen, keep_below=0.0):
        xy[chosen[:, None], crop.joints, 0] += 8.0
        confidence[chosen[:, None], crop.joints] = 0.3

    crop._refine = fake_refine
    xy, conf = _two_people()
    xy, conf = xy[:1], np.full((1, 18), 0.9)
    conf[0, crop.joints[0]] = 0.1  # the nose: the bottom-up network is unsure of it
    out, c = crop.refine_frame(xy, conf, np.zeros((300, 600, 3), np.uint8), budget_ms=30.0)
    moved = out[0, crop.joints, 0] - xy[0, crop.joints, 0]
    np.testing.assert_allclose(moved[0], 8.0 * 0.3 / 0.4)  # unsure: most of the correction
    np.testing.assert_allclose(moved[1:], 8.0 * 0.3 / 1.2)  # sure: a quarter of it
    np.testing.assert_allclose(c[0, crop.joints[1]], 0.25 * 0.3 + 0.75 * 0.9)
    with pytest.raises(RefinerError, match="live_fusion"):
        build_refiner("crop", HUMAN, live_fusion="average")


def test_live_two_readings_far_apart_are_two_places_not_a_point_between():
    """Where the crop reads a joint more than ``apart`` box sides from the bottom-up reading (the swinging foot
    against the standing one), the joint takes one of the two whole, the one nearer its last output; a
    correction that jumps is taken as it is, not low-passed."""
    crop = build_refiner("crop-fast", HUMAN)  # weighted fusion, carry_smoothing 0.6, apart 0.1
    assert crop.apart == 0.1
    shift = {"x": 0.0}

    def fake_refine(xy, confidence, rgb, boxes, chosen, keep_below=0.0):
        xy[chosen[:, None], crop.joints, 0] += shift["x"]
        confidence[chosen[:, None], crop.joints] = 0.5

    crop._refine = fake_refine
    xy, conf = _two_people()
    xy, conf = xy[:1], conf[:1]  # box ~94 px: apart = 9.4 px
    rgb = np.zeros((300, 600, 3), np.uint8)
    lo = crop.joints[0]

    def moved() -> float:
        out, _ = crop.refine_frame(xy, conf, rgb, budget_ms=30.0)
        return float(out[0, lo, 0] - xy[0, lo, 0])

    assert moved() == 0.0  # both agree
    shift["x"] = 30.0  # the crop now reads the joint 30 px away; the last output sat on the bottom-up one
    assert moved() == 0.0  # not 15 px between the two (equal confidences): the bottom-up reading, whole
    crop.reset()
    assert moved() == 15.0  # a person's first frame has no last output: the weighted fusion
    crop.reset()
    shift["x"] = 0.0
    moved()
    # the bottom-up reading jumps 30 px away while the crop's stays: the last output follows the crop's
    xy2 = xy.copy()
    xy2[0, lo, 0] += 30.0
    shift["x"] = -30.0
    out, _ = crop.refine_frame(xy2, conf, rgb, budget_ms=30.0)
    assert float(out[0, lo, 0] - xy[0, lo, 0]) == 0.0  # the crop's reading, whole (its correction not low-passed)


def test_a_carried_correction_expires():
    """carry_frames 1, three people, one crop a frame: a correction lives one frame after its refinement."""
    crop = build_refiner("crop", HUMAN, carry_frames=1, live_fusion="replace")
    crop.ms_per_crop = 25.0
    order = []

    def fake_refine(xy, confidence, rgb, boxes, chosen, keep_below=0.0):
        order.append(chosen.tolist())
        xy[chosen[:, None], crop.joints, 0] += 5.0

    crop._refine = fake_refine
    xy, conf = _two_people()
    xy = np.concatenate([xy, xy[1:] + [400.0, 0.0]])  # a third person further right
    conf = np.full((3, 18), 0.5)
    rgb = np.zeros((300, 1000, 3), np.uint8)
    moved = []
    for _ in range(3):
        out, _ = crop.refine_frame(xy, conf, rgb, budget_ms=30.0)
        moved.append((out[:, crop.joints[0], 0] - xy[:, crop.joints[0], 0]).tolist())
    assert order == [[0], [1], [2]]
    assert moved == [[5, 0, 0], [5, 5, 0], [0, 5, 5]]  # person 0's correction: refined, carried once, gone


def test_box_iou():
    from posetracker.refiners.crop import box_iou

    a = np.array([[0, 0, 10, 10], [0, 0, 0, 0]], float)
    b = np.array([[5, 0, 15, 10], [20, 20, 30, 30]], float)
    np.testing.assert_allclose(box_iou(a, b), [[50 / 150, 0], [0, 0]])


@pytest.fixture(scope="module")
def frames():
    with open_source(str(SAMPLE)) as src:
        return [f for _, f in zip(range(6), src)]


@pytest.mark.parametrize("kind", ["crop", "crop-fast"])
def test_the_shipped_stage_replaces_the_coco_joints_of_each_person(frames, kind):
    assert refiner_path(kind, "human18").is_file()
    plain = TrackingSession.open(config=SessionConfig(mode="offline", refine=RefineSettings(refiners=()),
                                                      motion=MotionSettings(smoothing=False)))
    refined = TrackingSession.open(config=SessionConfig(mode="offline", refine=RefineSettings(refiners=(kind,)),
                                                        motion=MotionSettings(smoothing=False)))
    a, b = plain.process_image(frames[3].image), refined.process_image(frames[3].image)
    assert a.num_people == b.num_people == 1
    moved = np.abs(a.keypoints[0, :17, :2] - b.keypoints[0, :17, :2]).max(axis=1)
    assert (moved > 0).sum() >= 10  # Thunder's own joints
    assert moved.max() < 40  # on the same person (the dancer is ~230 px tall)
    np.testing.assert_array_equal(a.keypoints[0, 17, :2], b.keypoints[0, 17, :2])  # the centre is not Thunder's
    assert not np.array_equal(a.confidence[0, :17], b.confidence[0, :17])


def test_live_mode_runs_it_within_the_budget(frames):
    session = TrackingSession.open(config=SessionConfig(mode="live", network=NetworkSettings(lookahead=0),
                                                        refine=RefineSettings(refiners=("crop",))))
    crop = session.refiners.refiners[0]
    budgets = []
    choose = crop.choose
    crop.choose = lambda conf, ok, budget_ms=None, since=None: budgets.append(budget_ms) or choose(conf, ok, budget_ms,
                                                                                                  since)
    poses = [session.step(f) for f in frames]
    assert all(p is not None for p in poses) and crop.last_refined == 1
    assert set(budgets) == {session.config.refine.crop_budget_ms}  # the live budget reaches the stage every frame
    assert crop.__dict__.get("_runner") is not None  # ONNX Runtime (or torch where it is missing)
    assert crop._carried  # a correction carried for the dancer
    session.reset(keep_ids=True)  # a seek: the corrections are forgotten with the tracks
    assert crop._carried == []


def test_offline_runs_it_by_default_and_live_its_fast_form_on_two_cpus(tmp_path, monkeypatch):
    import posetracker.cpu_threads as cpu_threads

    assert TrackingSession.open(config=SessionConfig(mode="offline")).refiners.names == ["crop"]
    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: 2)
    assert TrackingSession.open(config=SessionConfig(mode="live")).refiners.names == ["crop-fast"]
    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: 1)  # no second thread for it: live runs none
    assert TrackingSession.open(config=SessionConfig(mode="live")).refiners.names == []
    assert TrackingSession.open(config=SessionConfig(mode="offline")).refiners.names == ["crop"]
    assert TrackingSession.open(config=SessionConfig(mode="offline",
                                                     refine=RefineSettings(refiners=()))).refiners.names == []
    # custom weights without a crop refiner beside them: the default finds none there, and says nothing
    from posetracker.model.weights import default_weights_path

    (tmp_path / "mine.safetensors").write_bytes(default_weights_path("human18").read_bytes())
    assert TrackingSession.open(weights=tmp_path / "mine.safetensors",
                                config=SessionConfig(mode="offline")).refiners.names == []


def test_weights_load_exactly():
    crop = load_refiner(refiner_path("crop", "human18"), HUMAN)
    assert float(crop.centre_weight.max()) > 0 and crop.kind == "crop"


def test_a_crop_reading_of_someone_else_is_refused():
    """In a crowd Thunder can read the neighbour at the crop's centre: that person keeps their own joints."""
    crop = build_refiner("crop", HUMAN)
    xy, _ = _two_people()
    mine = xy[0, crop.joints]
    sure = np.full(17, 0.9)
    assert crop.agrees(mine, sure, mine + 3.0, sure)  # a few px off: the same person, refined
    assert not crop.agrees(mine, sure, mine + [160.0, 0.0], sure)  # beyond a body width: someone else
    unsure = np.full(17, 0.1)
    unsure[:2] = 0.9
    assert crop.agrees(mine, unsure, mine + [120.0, 0.0], sure)  # two joints in common: too little to refuse


def test_a_joint_thunder_does_not_see_keeps_the_bottom_up_reading(monkeypatch):
    """Offline fusion (step 5): Thunder's joints replace the bottom-up ones, except a joint Thunder scores below
    keep_below where the bottom-up network is more confident; live (a budget) leaves that to its weighted fusion."""
    import posetracker.refiners.crop as crop_module

    crop = build_refiner("crop", HUMAN)
    assert crop.keep_below == 0.05
    xy, _ = _two_people()
    xy, conf = xy[:1], np.full((1, 18), 0.6)
    found = np.zeros((17, 3))
    found[:, :2], found[:, 2] = 0.5, 0.8  # every joint read at the crop's centre, score 0.8 ...
    found[0, 2], found[1, 2] = 0.02, 0.02  # ... but the nose and left eye at 0.02
    conf[0, crop.joints[1]] = 0.01  # the bottom-up network is even less sure of the left eye
    monkeypatch.setattr(crop_module, "decode_thunder", lambda *a: found.copy())
    size = crop.net.input_size // 4
    fake = {k: torch.zeros(1, 1, size, size) for k in ("centre", "heatmap", "regress", "offset")}
    object.__setattr__(crop, "_runner", lambda batch: fake)
    out, c = crop.refine_frame(xy, conf, np.zeros((300, 600, 3), np.uint8))
    moved = ~np.isclose(out[0], xy[0]).all(axis=1)
    nose, eye = crop.joints[0], crop.joints[1]
    assert not moved[nose] and c[0, nose] == 0.6  # kept: the bottom-up reading and its confidence
    assert moved[eye] and c[0, eye] == pytest.approx(0.02)  # both unsure: Thunder's reading
    assert moved[crop.joints[2:]].all() and np.allclose(c[0, crop.joints[2:]], 0.8)
    assert not moved[17]  # the body centre is not Thunder's
    crop.keep_below = 0.0
    out, _ = crop.refine_frame(xy, conf, np.zeros((300, 600, 3), np.uint8))
    assert not np.isclose(out[0, nose], xy[0, nose]).all()  # off: every joint replaced


def test_people_are_linked_by_their_bottom_up_joints_and_keep_the_refined_ones(frames):
    """A crop reading that jumps (a crowd's neighbour read at the crop's centre) must not break the track:
    the tracker links the bottom-up joints; the output keeps the refined ones."""
    session = TrackingSession.open(config=SessionConfig(mode="live", network=NetworkSettings(lookahead=0),
                                                        refine=RefineSettings(refiners=("crop",)),
                                                        motion=MotionSettings(smoothing=False)))
    crop = session.refiners.refiners[0]
    jumps = {3}

    def jumpy(xy, confidence, rgb, budget_ms=None):  # frame 3's reading lands 300 px to the right
        out = xy.copy()
        if index[0] in jumps:
            out[:, crop.joints, 0] += 300.0
        return out, confidence

    index = [0]
    session.refiners.refine_frame = jumpy
    poses = []
    for i, f in enumerate(frames):
        index[0] = i
        poses.append(session.step(f))
    ids = [int(p.track_ids[0]) for p in poses]
    assert all(p.num_people == 1 for p in poses)
    assert ids[2] >= 0 and ids[2:] == [ids[2]] * (len(ids) - 2)  # one id through the jump
    assert poses[3].keypoints[0, 0, 0] > poses[2].keypoints[0, 0, 0] + 200  # the refined joints are what comes out


def test_live_with_only_the_frame_stage_keeps_the_heads_at_cells(frames, monkeypatch):
    """The crop stage reads the frame, not the heads' maps: live mode keeps the offset, vector and depth heads at
    the cells the decoder reads (no dense maps), with the same poses as dense maps."""
    import posetracker.session as session_module
    from posetracker.refiners.base import RefinerChain

    dense_calls = []
    real_dense = session_module.dense_maps
    monkeypatch.setattr(session_module, "dense_maps", lambda *a: dense_calls.append(1) or real_dense(*a))

    def run() -> list:
        session = TrackingSession.open(config=SessionConfig(mode="live", network=NetworkSettings(lookahead=0),
                                                            refine=RefineSettings(refiners=("crop-fast",))))
        return [session.step(f) for f in frames]

    assert not RefinerChain([build_refiner("crop-fast", HUMAN)]).needs_maps
    assert RefinerChain([build_refiner("graph", HUMAN)]).needs_maps
    sparse = run()
    assert dense_calls == []
    monkeypatch.setattr(RefinerChain, "needs_maps", property(lambda self: True))  # as before: dense maps
    dense = run()
    assert len(dense_calls) >= len(frames) - 1  # every frame the live graph ran with sparse heads
    for a, b in zip(sparse, dense):
        np.testing.assert_allclose(a.keypoints[..., :2], b.keypoints[..., :2], atol=1e-2)
