"""Checkpoint selection on validation frames (``select_every``): validation items' samples leave the training set,
and the weights of the best-scoring step (not the last) are the ones put back."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posetracker.evaluation.datasets import Instance, LabelledItem
from posetracker.model.network import PoseNet
from posetracker.refiners import build_refiner
from posetracker.skeletons import load_skeleton
from posetracker.train.checkpoint_select import (
    Selector,
    drop_items,
    peak_points,
    warp_counts,
)
from posetracker.train.detector_samples import LabelledSamples


@pytest.fixture(scope="module")
def fly():
    spec = load_skeleton("fly13")
    assert spec.top_down, "fly13 ships as a top-down skeleton"
    return spec


def _taps(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    r = np.random.default_rng(seed)
    shapes = {"c2": (40, 64, 64), "c3": (48, 32, 32), "c4": (96, 16, 16), "c5": (1280, 8, 8)}
    return {k: r.normal(0, 1, (n, *s)).astype(np.float16) for k, s in shapes.items()}


def _item(frame: int, n_flies: int, k: int) -> LabelledItem:
    inst = [Instance(np.column_stack([np.full(k, 100.0 + 50 * i), np.full(k, 80.0), np.ones(k)]))
            for i in range(n_flies)]
    return LabelledItem(image=None, video="v.mp4", frame_idx=frame, width=384, height=384, instances=inst, file="f")


def test_validation_items_leave_the_training_samples(fly):
    k = fly.num_joints
    items = [_item(0, 2, k), _item(1, 1, k), _item(2, 2, k)]
    counts = warp_counts(items, np.arange(k), fly, variants=3, samples="centred")
    assert counts.tolist() == [6, 3, 6]  # 3 warps per fly
    n = int(counts.sum())
    pts = np.arange(n, dtype=np.float32)[:, None, None, None] * np.ones((n, 1, k, 2), np.float32)
    data = LabelledSamples(_taps(n), np.zeros((n, 256, 256, 3), np.uint8), pts, np.ones((n, k), bool))
    kept = drop_items(data, counts, np.array([False, True, False]))
    assert len(kept) == 12 and kept.labelled.shape == (12, k)
    assert kept.points[:, 0, 0, 0].tolist() == [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14]  # item 1's 6-8 gone
    assert np.array_equal(kept.taps["c4"], data.taps["c4"][np.r_[0:6, 9:15]])


def test_the_best_step_is_restored_not_the_last(fly):
    torch.manual_seed(0)
    net, graph = PoseNet(fly).eval(), build_refiner("graph", fly)
    taps = _taps(4, seed=1)
    truth = peak_points(net, taps)[:, None]  # the first state reads the validation crops exactly
    sel = Selector([("val", LabelledSamples(taps, np.zeros((4, 256, 256, 3), np.uint8), truth))], lambda m: None)
    sel(250, net, graph)
    first = {k: v.clone() for k, v in net.state_dict().items()}
    with torch.no_grad():  # a later step: other heads, other readings
        for p in net.heads.parameters():
            p.add_(torch.randn_like(p))
    sel(500, net, graph)
    assert sel.scores[0]["score"] == pytest.approx(0.0, abs=1e-3) and sel.scores[1]["score"] > 1.0
    assert sel.restore(net, graph) == 250
    assert all(torch.equal(v, first[k]) for k, v in net.state_dict().items())


def test_the_walking_selection_config_loads():
    from posetracker.train.detector import REPO, load_detector_config

    cfg = load_detector_config(REPO / "configs/fly13-crops-walking-select.yaml")
    assert cfg.select_every == 250 and cfg.select_val == [[700, 800]] and cfg.train_seed == 1
    assert cfg.extra_data[0]["val"] == [[500, 550], [850, 900]]
    assert cfg.extra_data[0]["held_out"] == [[100, 200], [600, 700]]  # the scored segments: not validation frames
