"""The 8-bit live graph (model/int8.py): calibration, quantisation with shipped ranges, the companion file."""

import json

import numpy as np
import onnx
import pytest
import torch
from test_runtime import busy_net

from posetracker.model import int8
from posetracker.model.fused import FusedStream, export_live_step, live_stream
from posetracker.model.network import CausalStream
from posetracker.model.runtime import _session, accelerate

pytest.importorskip("onnxruntime")


def _feeds(n: int, h: int = 64, w: int = 96, seed: int = 0) -> list[dict[str, np.ndarray]]:
    g = np.random.default_rng(seed)
    return [{"images": (g.random((1, 3, h, w)) * 255).astype(np.float32),
             "window": g.normal(0, 1, (1, 1, 24, h // 4, w // 4)).astype(np.float32),
             "ctx": g.normal(0, 0.3, (1, 32, h // 8, w // 8)).astype(np.float32),
             "s": g.normal(0, 1, (1, 24, h // 4, w // 4)).astype(np.float32)} for _ in range(n)]


def test_quantised_graph_is_8_bit_in_the_body_only_and_close(human18, tmp_path):
    net = busy_net(human18, seed=7)
    src = export_live_step(net, 1, tmp_path / "float.onnx")
    ranges = int8.calibrate(src, _feeds(4))
    assert ranges and all(lo <= 0 <= hi and hi > lo for lo, hi in ranges.values())
    assert all("/body/" in k for k in ranges), [k for k in ranges if "/body/" not in k][:5]  # the body's tensors only
    dst = int8.quantise(src, ranges, tmp_path / "q.onnx")
    model = onnx.load(str(dst))
    convs = {n.name: n for n in model.graph.node if n.op_type == "Conv"}
    # every body conv but the stem reads dequantised int8 weights; the stem, FPN, temporal block and heads are float
    for name, node in convs.items():
        int8_weight = node.input[1].endswith("_DequantizeLinear_Output")
        in_body = name.startswith(int8.BODY) and "/stem/" not in name
        assert int8_weight == in_body, name
    feed = _feeds(1, seed=9)[0]
    ref, got = _session(src, 1).run(None, feed), _session(dst, 1).run(None, feed)
    names = [o.name for o in _session(src, 1).get_outputs()]
    out = dict(zip(names, zip(ref, got)))
    assert np.array_equal(out["ctx_out"][0], out["ctx_out"][1])  # frame t's forward step reads no new features
    heat = out["heatmaps"]
    assert 0 < np.abs(heat[0] - heat[1]).max() < 0.2  # 8-bit: close, not equal


def test_companion_round_trip_and_weights_check(human18, tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    net = busy_net(human18, seed=8)
    src = export_live_step(net, 1, tmp_path / "float.onnx")
    ranges = int8.calibrate(src, _feeds(3))
    tuned = busy_net(human18, seed=8).backbone.fpn
    with torch.no_grad():
        tuned.lateral2.conv.bias.add_(0.5)  # a different FPN: what the companion's graph must use
    path = tmp_path / "posenet-human18.int8.safetensors"
    int8.write_companion(path, tuned, net, ranges, note="test")
    tensors, meta = int8.read_companion(path)
    assert {k[4:] for k in tensors} == set(tuned.state_dict()) and meta["note"] == "test"
    accelerate(net)
    monkeypatch.setattr(int8, "companion_for", lambda n: path)
    stream = live_stream(net, 1, int8=True)
    assert isinstance(stream, FusedStream) and stream.int8
    clip = torch.rand(4, 1, 3, 64, 96, generator=torch.Generator().manual_seed(1)) * 255
    outs = [o for x in clip if (o := stream.push(x)) is not None]
    plain = CausalStream(net, 1)
    floats = [o for x in clip if (o := plain.push(x)) is not None]
    assert len(outs) == len(floats) == 3
    torch.testing.assert_close(outs[0]["heatmaps"], floats[0]["heatmaps"], rtol=0, atol=1e-5)  # first: float calls
    assert not torch.allclose(outs[2]["offsets"], floats[2]["offsets"], atol=1e-3)  # then the tuned 8-bit graph
    other = busy_net(human18, seed=9)  # other weights: the companion does not fit, no 8-bit session
    assert int8.int8_session(other, 1, path) is None


def test_no_companion_keeps_the_float_graph(human18, tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    net = busy_net(human18, seed=10)
    assert int8.companion_for(net) is None  # the shipped companion was made for other weights
    accelerate(net)
    stream = live_stream(net, 0, int8=True)
    assert isinstance(stream, FusedStream) and not stream.int8


def test_the_shipped_model_runs_live_with_the_8_bit_body():
    """The companion in models/ fits the shipped weights: live sessions use it, int8=False and offline do not."""
    from posetracker.session import SessionConfig, TrackingSession

    live = TrackingSession.open(config=SessionConfig(mode="live"))
    assert isinstance(live.stream, FusedStream) and live.stream.int8
    _, meta = int8.read_companion(int8.companion_for(live.net))
    assert len(json.loads(meta["ranges"])) > 50 and json.loads(meta["keep_float"]) == list(int8.KEEP_FLOAT)
    assert not TrackingSession.open(config=SessionConfig(mode="live", int8=False)).stream.int8
    assert not isinstance(TrackingSession.open(config=SessionConfig(mode="offline")).stream, FusedStream)
