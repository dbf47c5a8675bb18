"""The crop model's still graph with an 8-bit body (model/still_int8.py): it reads a synthetic fly crop within a
tolerance of the float still graph, and the same check fails when the quantisation is broken."""

import json

import cv2
import numpy as np
import onnx
import pytest
from test_runtime import busy_net

from posetracker.model import int8
from posetracker.model.live_graph import torch_parts
from posetracker.model.runtime import _session
from posetracker.model.still_int8 import PREFIXES, calibrate_still, quantised_still_path
from posetracker.model.weights import MODELS_DIR, load_posenet
from posetracker.skeletons import load_skeleton

pytest.importorskip("onnxruntime")

SIZE = 128  # crops (N, 3, SIZE, SIZE); the shipped crops are 256, a smaller one keeps the test fast


def fly_crops(n: int, seed: int) -> np.ndarray:
    """(n, 3, SIZE, SIZE) float32 0..255: a dark fly-like shape (abdomen, thorax, head, six legs, two wings) on a
    light, noisy background, turned at random about the crop's centre."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        img = np.full((SIZE, SIZE, 3), 190, np.uint8)
        c = SIZE // 2
        cv2.ellipse(img, (c, c + 12), (7, 16), 0, 0, 360, (60, 55, 50), -1)  # abdomen
        cv2.ellipse(img, (c, c - 6), (6, 8), 0, 0, 360, (40, 35, 30), -1)  # thorax
        cv2.circle(img, (c, c - 17), 5, (50, 40, 40), -1)  # head
        for side in (-1, 1):
            cv2.ellipse(img, (c + side * 9, c + 14), (5, 16), side * 20, 0, 360, (150, 150, 150), -1)  # wing
            for dy, dx in ((-10, 16), (-4, 18), (4, 17)):  # legs
                cv2.line(img, (c + side * 4, c - 6), (c + side * dx, c + dy - 6 + dy // 2), (30, 30, 30), 2)
        turn = cv2.getRotationMatrix2D((c, c), float(rng.uniform(0, 360)), 1.0)
        img = cv2.warpAffine(img, turn, (SIZE, SIZE), borderValue=(190, 190, 190))
        noisy = np.clip(img.astype(np.float32) + rng.normal(0, 6, img.shape), 0, 255)
        out.append(noisy.transpose(2, 0, 1))
    return np.stack(out).astype(np.float32)


def _companion(net, ranges, path):
    int8.write_companion(path, torch_parts(net)[0].fpn, net, ranges, int8.KEEP_FLOAT, "test", PREFIXES)
    return path


def _feature_gap(float_path, q_path, crops) -> float:
    """||float - 8-bit|| / ||float|| of the two graphs' head features (N, C, h, w) on ``crops``."""
    a = _session(float_path, 1).run(["head_features"], {"images": crops})[0]
    b = _session(q_path, 1).run(["head_features"], {"images": crops})[0]
    return float(np.linalg.norm(a - b) / np.linalg.norm(a))


def _heat_gap(float_path, q_path, crops) -> tuple[float, float]:
    """(mean, max) abs difference of the two graphs' heatmaps (N, K, h, w) on ``crops``."""
    a = _session(float_path, 1).run(["heatmaps"], {"images": crops})[0]
    b = _session(q_path, 1).run(["heatmaps"], {"images": crops})[0]
    d = np.abs(a - b)
    return float(d.mean()), float(d.max())


def test_the_8_bit_crop_graph_reads_a_synthetic_crop_close_to_float_and_broken_ranges_do_not(tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    net = load_posenet(MODELS_DIR / "posenet-fly13-crops.safetensors", load_skeleton("fly13"))
    float_path = tmp_path / "float.onnx"
    ranges = calibrate_still(net, [fly_crops(2, seed=0), fly_crops(2, seed=1)], 99.99, float_path)
    assert ranges and all(lo <= 0 <= hi for lo, hi in ranges.values())
    assert all(k.startswith(int8.BODY) for k in ranges)  # the body's tensors only: FPN and heads stay float
    q_path = quantised_still_path(net, _companion(net, ranges, tmp_path / "c.int8.safetensors"))
    model = onnx.load(str(q_path))
    quantised = {n.name for n in model.graph.node
                 if n.op_type == "Conv" and n.input[1].endswith("_DequantizeLinear_Output")}
    body = {n.name for n in model.graph.node if n.op_type == "Conv" and n.name.startswith(int8.BODY)}
    assert quantised == {n for n in body if not any(k in n for k in int8.KEEP_FLOAT)} and len(quantised) > 40

    crop = fly_crops(1, seed=5)  # not among the calibration crops
    mean, worst = _heat_gap(float_path, q_path, crop)
    assert 0 < mean < 0.003 and worst < 0.5, (mean, worst)  # 8 bits: close, not equal (measured 3e-4, 0.26)

    # broken quantisation: every range a hundredth as wide (the activations clipped) reads far off. Compared on the
    # features the heads read (relative L2 gap): the heatmaps of a synthetic dark-on-light crop are faint (peak 0.13
    # for the crop model of 2026-12-07), so an 8-bit graph that reads nothing is near them too
    assert _feature_gap(float_path, q_path, crop) < 0.15  # measured 0.06
    narrow = {k: [lo / 100, hi / 100] for k, (lo, hi) in ranges.items()}
    broken = quantised_still_path(net, _companion(net, narrow, tmp_path / "narrow.int8.safetensors"))
    assert _feature_gap(float_path, broken, crop) > 0.5  # measured 0.83


def test_a_companion_of_other_weights_gives_no_8_bit_graph(tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    spec = load_skeleton("fly13")
    net, other = busy_net(spec, seed=1), busy_net(spec, seed=2)
    ranges = calibrate_still(net, [fly_crops(1, seed=0)], 99.99, tmp_path / "float.onnx")
    path = _companion(net, ranges, tmp_path / "c.int8.safetensors")
    assert int8.companion_fits(net, path) and not int8.companion_fits(other, path)
    assert quantised_still_path(other, path) is None
    assert json.loads(int8.read_companion(path)[1]["quantise"]) == list(PREFIXES)


@pytest.mark.slow
def test_fly13_live_reads_its_crops_with_the_shipped_8_bit_body():
    """models/posenet-fly13-crops.int8.safetensors fits the shipped crop model: live sessions read the crops with
    it; offline and int8=False read them in float. Its ranges come from training frames only (before 800)."""
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession

    path = MODELS_DIR / "posenet-fly13-crops.int8.safetensors"
    live = TrackingSession.open("fly13", None, SessionConfig(mode="live"))
    assert live.crop_model.int8 and int8.companion_fits(live.crop_model.net, path)
    meta = int8.read_companion(path)[1]
    first, last, _ = json.loads(meta["note"])["frames"]
    assert 0 <= first <= last < 800
    assert "/body/blocks.2/" in json.loads(meta["keep_float"])
    assert not TrackingSession.open("fly13", None, SessionConfig(mode="offline")).crop_model.int8
    float_live = SessionConfig(mode="live", network=NetworkSettings(int8=False))
    assert not TrackingSession.open("fly13", None, float_live).crop_model.int8
