"""The rebuilt network reproduces the original MoveNet MultiPose graph.

Two references:

1. The TF.js runtime itself (wasm backend, outputs stored in
   tests/data/movenet_parity.npz by tools/make_parity_fixture.py). Heatmaps
   (probabilities, what the decoder reads) agree within 1e-4. The raw fields
   (logits, regression, offsets, up to ~50 in magnitude) agree within the
   runtime's own float32 spread: its cpu and wasm backends differ from each
   other by up to ~3e-3 there, and from an exact float64 evaluation by ~2e-3.
2. An independent float64 numpy interpreter of the original graph
   (tools/tfjs_reference/graph_f64.py, reading the .json/.bin): our network in
   float64 agrees with it within 1e-6 on every output, on real images.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from conftest import REPO, SHARED, shared_path
from posetracker.model.preprocess import letterbox

FIXTURE = REPO / "tests" / "data" / "movenet_parity.npz"


@pytest.fixture(scope="module")
def fx():
    return np.load(FIXTURE)


def _input(fx, i: int) -> np.ndarray:
    if f"input_{i}" in fx:
        return fx[f"input_{i}"]
    path = shared_path(*str(fx[f"path_{i}"]).split("/"))
    img, _ = letterbox(cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB))
    assert hashlib.sha256(img.tobytes()).hexdigest() == str(fx[f"sha256_{i}"]), "letterbox differs from the fixture's"
    return img


def _run(net, img: np.ndarray, dtype=torch.float32) -> dict[str, np.ndarray]:
    """Our outputs in MoveNet's layout: (64, 64, C) with (dy, dx) pairs and the regression r(k)."""
    x = torch.from_numpy(img).to(dtype).permute(2, 0, 1)[None]
    with torch.no_grad():
        out = net.heads(net.backbone(x))
    spec = net.spec
    logits = out["heatmap_logits"][0].double().numpy()
    off = out["offsets"][0].double().numpy()
    vec = out["vectors"][0].double().numpy()
    # The regression r(k) is the sum of the tree vectors along the path centre -> k.
    pos = {spec.root: np.zeros((2, 64, 64))}
    for e, (p, c) in enumerate(spec.edges):
        pos[c] = pos[p] + vec[2 * e : 2 * e + 2]
    coco = [j for j in range(spec.num_joints) if j != spec.root]
    regress = np.concatenate([pos[k][::-1] for k in coco])  # (dy, dx) per joint
    offsets = np.concatenate([off[2 * k : 2 * k + 2][::-1] for k in coco])
    hwc = lambda a: a.transpose(1, 2, 0)  # noqa: E731
    return {
        "centre": hwc(logits[spec.root : spec.root + 1]),
        "heatmap": hwc(logits[coco]),
        "regress": hwc(regress),
        "offset": hwc(offsets),
    }


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


@pytest.fixture(scope="module")
def converted_net():
    """A fresh conversion of the MoveNet files in ../shared (the shipped weights fine-tune some heads)."""
    from posetracker.model.weights import build_from_movenet
    from posetracker.skeletons import load_skeleton

    torch.set_num_threads(1)
    return build_from_movenet(shared_path("pretrained", "movenet", "movenet-multipose.json"), load_skeleton("human18"))


def _untrained(net) -> tuple[str, ...]:
    """The outputs (MoveNet's names) of ``net`` that no training step has changed: the shipped weights
    name their fine-tuned parts ("keypoints": the keypoint heatmap and offset heads)."""
    trained = set(net.meta.get("trained", "").split(","))
    return ("centre", "regress") if "keypoints" in trained else ("centre", "heatmap", "regress", "offset")


def _check_against_tfjs(fx, net, i: int, keys: tuple[str, ...]) -> None:
    if i >= int(fx["n_inputs"]):
        pytest.skip("fixture has fewer inputs")
    img = _input(fx, i)
    ours = _run(net, img)
    spread = json.loads(str(fx["cpu_vs_wasm_maxabs"]))
    for key in {"centre", "heatmap"} & set(keys):
        ref = fx[f"{key}_{i}"][0]
        assert np.abs(_sigmoid(ours[key]) - _sigmoid(ref)).max() <= 1e-4, key
    for key in keys:
        ref = fx[f"{key}_{i}"][0]
        diff = np.abs(ours[key] - ref).max()
        assert diff <= max(1e-4, spread[key]), f"{key}: {diff:.2e} > runtime spread {spread[key]:.2e}"


@pytest.mark.parametrize("i", [0, 1, 2, 3])
def test_shipped_untrained_outputs_match_tfjs_runtime(fx, shipped_net, i):
    """Without ../shared: the shipped network's outputs that no training changed equal MoveNet's."""
    _check_against_tfjs(fx, shipped_net, i, _untrained(shipped_net))


@pytest.mark.parametrize("i", [0, 1, 2, 3])
def test_conversion_matches_tfjs_runtime(fx, converted_net, i):
    _check_against_tfjs(fx, converted_net, i, ("centre", "heatmap", "regress", "offset"))


@pytest.fixture(scope="module")
def graph_f64():
    shared_path("pretrained", "movenet", "movenet-multipose.json")
    sys.path.insert(0, str(REPO / "tools" / "tfjs_reference"))
    import graph_f64 as g

    model, weights = g.load_weights(SHARED / "pretrained" / "movenet" / "movenet-multipose.json")
    return g, model, weights


@pytest.mark.parametrize("i", [0, 1])
def test_matches_float64_graph_interpreter(fx, graph_f64, converted_net, i):
    g, model, weights = graph_f64
    img = _input(fx, i)
    ref = g.run_graph(model, weights, img, list(g.HEAD_NODES.values()))
    net64 = converted_net.double()
    try:
        ours = _run(net64, img, torch.float64)
    finally:
        converted_net.float()
    for key in ("centre", "heatmap", "regress", "offset"):
        diff = np.abs(ours[key] - ref[g.HEAD_NODES[key]][0]).max()
        assert diff <= 1e-6, f"{key}: {diff:.2e}"
