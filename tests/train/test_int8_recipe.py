"""The recipe of the 8-bit companion file as CLI verbs: ``posetracker train int8-calibrate`` then ``int8-qat``
(posetracker.train.int8_calibration, posetracker.train.int8_qat)."""

import json

import pytest
import torch
import yaml
from conftest import REPO, shared_path
from torch import nn

from posetracker.cli import main
from posetracker.model import int8
from posetracker.train.int8_qat import SimulatedInt8Conv, onnx_node, plain_state, simulate

pytest.importorskip("onnxruntime")


def test_body_modules_map_to_the_live_graphs_nodes_and_back():
    assert onnx_node("blocks.3.expand.conv") == "/backbone/body/blocks.3/expand/conv/Conv"
    assert onnx_node("stem.conv") == "/backbone/body/stem/conv/Conv"
    body = nn.Sequential()
    body.add_module("stem", nn.Sequential())
    body.stem.add_module("conv", nn.Conv2d(3, 4, 3))
    body.add_module("blocks", nn.Sequential(nn.Sequential()))
    body.blocks[0].add_module("conv", nn.Conv2d(4, 4, 1))
    before = {k: v.clone() for k, v in body.state_dict().items()}
    inputs = {onnx_node("stem.conv"): "x", onnx_node("blocks.0.conv"): "t"}
    assert simulate(body, inputs, {"t": [0.0, 6.0]}, keep_float=("/body/stem/",)) == 1
    assert isinstance(body.blocks[0].conv, SimulatedInt8Conv) and body.blocks[0].conv.in_range == (0.0, 6.0)
    assert isinstance(body.stem.conv, nn.Conv2d)  # kept in float
    state = plain_state(body)
    assert state.keys() == before.keys() and all(torch.equal(state[k], before[k]) for k in before)


@pytest.mark.slow
def test_the_two_verbs_make_a_companion_the_8_bit_graph_loads(tmp_path, shipped_net, monkeypatch):
    """One training and one held-out clip, a few frames: the calibrated companion, then the tuned body in it,
    both made for the shipped weights and read by the live graph's loader."""
    shared_path("data", "video", "more", "peekingduck_test_videos", "wave.mp4")
    cfg = yaml.safe_load((REPO / "configs" / "distill_quick.yaml").read_text())
    cfg["clips"]["train"] = ["more/peekingduck_test_videos/wave.mp4"]
    cfg["clips"]["val"] = ["more/tfjs_pose_test_data/pose_1.mp4"]
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(cfg))
    calibrated, tuned = tmp_path / "cal.int8.safetensors", tmp_path / "qat.int8.safetensors"
    assert main(["train", "int8-calibrate", "--config", str(config), "--out", str(calibrated), "--calib", "2",
                 "--frames", "2"]) == 0
    tensors, meta = int8.read_companion(calibrated)
    assert meta["body"] == int8.part_hash(shipped_net, "body") and json.loads(meta["keep_float"]) == list(int8.KEEP_FLOAT)
    assert any("/gru" in k for k in json.loads(meta["ranges"]))
    fpn, body = int8.companion_parts(tensors)
    assert body is None and all(torch.equal(fpn[k], v) for k, v in shipped_net.backbone.fpn.state_dict().items())
    note = json.loads(meta["note"])
    assert note["calibration_feeds"] == 4 and note["fidelity"]["val"]["features"] > 0

    assert main(["train", "int8-qat", "--config", str(config), "--companion", str(calibrated), "--out", str(tuned),
                 "--steps", "2", "--batch", "2", "--frames-per-clip", "4", "--threads", "1"]) == 0
    tensors2, meta2 = int8.read_companion(tuned)
    assert meta2["ranges"] == meta["ranges"] and meta2["body"] == meta["body"]
    error = json.loads(meta2["note"])["qat"]["simulated_feature_error"]
    assert error["after"] < error["before"]
    _, body = int8.companion_parts(tensors2)
    own = shipped_net.backbone.body.state_dict()
    # the float body, tuned a little (2 steps of 5e-6: the simulated error fell) and stored in float16
    assert body.keys() == own.keys() and all(torch.allclose(body[k], own[k].float(), atol=1e-2) for k in body)
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))  # its graph is built and cached there
    assert int8.int8_session(shipped_net, 1, tuned) is not None  # made for these weights: the live graph uses it

    assert main(["train", "int8-qat", "--config", str(config), "--companion", str(tuned), "--out",
                 str(tmp_path / "x.safetensors"), "--steps", "1", "--batch", "1", "--frames-per-clip", "1",
                 "--threads", "1"]) == 0  # the shipped-style companion (with a body) is a valid start too
