"""The precision stage (``crop`` refiner): MoveNet Thunder on a crop around each person."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import REPO
from posetracker.capture import open_source
from posetracker.refiners import RefinerError, build_refiner, load_refiner, refiner_path
from posetracker.session import SessionConfig, TrackingSession
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


@pytest.fixture(scope="module")
def frames():
    with open_source(str(SAMPLE)) as src:
        return [f for _, f in zip(range(6), src)]


def test_the_shipped_stage_replaces_the_coco_joints_of_each_person(frames):
    assert refiner_path("crop", "human18").is_file()
    plain = TrackingSession.open(config=SessionConfig(mode="offline", smoothing=False, refiners=()))
    refined = TrackingSession.open(config=SessionConfig(mode="offline", smoothing=False, refiners=("crop",)))
    a, b = plain.process_image(frames[3].image), refined.process_image(frames[3].image)
    assert a.num_people == b.num_people == 1
    moved = np.abs(a.keypoints[0, :17, :2] - b.keypoints[0, :17, :2]).max(axis=1)
    assert (moved > 0).sum() >= 10  # Thunder's own joints
    assert moved.max() < 40  # on the same person (the dancer is ~230 px tall)
    np.testing.assert_array_equal(a.keypoints[0, 17, :2], b.keypoints[0, 17, :2])  # the centre is not Thunder's
    assert not np.array_equal(a.confidence[0, :17], b.confidence[0, :17])


def test_live_mode_runs_it_within_the_budget(frames):
    session = TrackingSession.open(config=SessionConfig(mode="live", lookahead=0, refiners=("crop",)))
    crop = session.refiners.refiners[0]
    budgets = []
    choose = crop.choose
    crop.choose = lambda conf, ok, budget_ms=None: budgets.append(budget_ms) or choose(conf, ok, budget_ms)
    poses = [session.step(f) for f in frames]
    assert all(p is not None for p in poses) and crop.last_refined == 1
    assert set(budgets) == {session.config.crop_budget_ms}  # the live budget reaches the stage every frame
    assert crop.__dict__.get("_runner") is not None  # ONNX Runtime (or torch where it is missing)


def test_offline_runs_it_by_default_and_live_does_not(tmp_path):
    assert TrackingSession.open(config=SessionConfig(mode="offline")).refiners.names == ["crop"]
    assert TrackingSession.open(config=SessionConfig(mode="live")).refiners.names == []
    assert TrackingSession.open(config=SessionConfig(mode="offline", refiners=())).refiners.names == []
    # custom weights without a crop refiner beside them: the default finds none there, and says nothing
    from posetracker.model.weights import default_weights_path

    (tmp_path / "mine.safetensors").write_bytes(default_weights_path("human18").read_bytes())
    assert TrackingSession.open(weights=tmp_path / "mine.safetensors",
                                config=SessionConfig(mode="offline")).refiners.names == []


def test_weights_load_exactly():
    crop = load_refiner(refiner_path("crop", "human18"), HUMAN)
    assert float(crop.centre_weight.max()) > 0 and crop.kind == "crop"
