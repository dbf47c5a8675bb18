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


def test_quantised_graph_is_8_bit_in_the_body_and_recurrences_only_and_close(human18, tmp_path):
    net = busy_net(human18, seed=7)
    src = export_live_step(net, 1, tmp_path / "float.onnx")
    ranges = int8.calibrate(src, _feeds(4))
    assert ranges and all(lo <= 0 <= hi for lo, hi in ranges.values())
    assert any("/gru" in k for k in ranges) and not any("/heads/" in k or "/fpn/" in k for k in ranges)
    assert all(lo < hi for lo, hi in ranges.values())  # no tensor that only ever holds zeros
    dst = int8.quantise(src, ranges, tmp_path / "q.onnx")
    model = onnx.load(str(dst))
    convs = {n.name: n for n in model.graph.node if n.op_type == "Conv"}
    # the body (but its stem and first block, KEEP_FLOAT) and both directions' ConvGRUs and gates read
    # dequantised int8 weights; the FPN, the fusion and the heads are float
    quantised = set()
    for name, node in convs.items():
        if node.input[1].endswith("_DequantizeLinear_Output"):
            quantised.add(name)
    expected = {n for n in convs if (n.startswith(int8.BODY) and not any(k in n for k in int8.KEEP_FLOAT))
                or n.startswith(("/gru", "/gate"))}
    assert quantised == expected
    assert not any("/stem/" in n or "/blocks.0/" in n for n in quantised) and any("/blocks.1/" in n for n in quantised)
    assert sum(n.startswith("/gru") for n in quantised) == 6  # 3 GRUs x 2
    assert not any(n.startswith(("/heads/", "/backbone/fpn/", "/fusion")) for n in quantised)
    feed = _feeds(1, seed=9)[0]
    ref, got = _session(src, 1).run(None, feed), _session(dst, 1).run(None, feed)
    names = [o.name for o in _session(src, 1).get_outputs()]
    out = dict(zip(names, zip(ref, got)))
    for key, bound in (("heatmaps", 0.2), ("ctx_out", 0.5)):  # 8-bit: close, not equal
        a, b = out[key]
        assert 0 < np.abs(a - b).max() < bound, key


def test_older_companions_quantise_the_body_only(human18, tmp_path):
    net = busy_net(human18, seed=7)
    src = export_live_step(net, 1, tmp_path / "float.onnx")
    ranges = int8.calibrate(src, _feeds(2), prefixes=int8.OLD_QUANTISE)
    assert ranges and not any("/gru" in k or "/gate" in k for k in ranges)
    model = onnx.load(str(int8.quantise(src, ranges, tmp_path / "q.onnx", prefixes=int8.OLD_QUANTISE)))
    quantised = {n.name for n in model.graph.node
                 if n.op_type == "Conv" and n.input[1].endswith("_DequantizeLinear_Output")}
    assert quantised and all(n.startswith(int8.BODY) for n in quantised)


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
    assert tuple(json.loads(meta["quantise"])) == int8.QUANTISE
    accelerate(net)
    monkeypatch.setattr(int8, "companion_for", lambda n: path)
    stream = live_stream(net, 1, int8=True)
    assert isinstance(stream, FusedStream) and stream.int8
    clip = torch.rand(4, 1, 3, 64, 96, generator=torch.Generator().manual_seed(1)) * 255
    outs = [o for x in clip if (o := stream.push(x)) is not None]
    plain = CausalStream(net, 1)
    floats = [o for x in clip if (o := plain.push(x)) is not None]
    assert len(outs) == len(floats) == 3
    for got, ref in zip(outs, floats):  # the tuned 8-bit graph from the first frame on: close, not equal
        assert not torch.allclose(got["offsets"], ref["offsets"], atol=1e-3)
        torch.testing.assert_close(got["heatmaps"], ref["heatmaps"], rtol=0, atol=0.2)
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
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession

    live = TrackingSession.open(config=SessionConfig(mode="live"))
    assert isinstance(live.stream, FusedStream) and live.stream.int8
    tensors, meta = int8.read_companion(int8.companion_for(live.net))
    assert int8.companion_parts(tensors)[1] is not None  # the body fine-tuned for 8 bits (posetracker train int8-qat)
    assert len(json.loads(meta["ranges"])) > 50 and json.loads(meta["keep_float"]) == list(int8.KEEP_FLOAT)
    assert tuple(json.loads(meta["quantise"])) == int8.QUANTISE  # body and temporal recurrences
    assert not TrackingSession.open(config=SessionConfig(mode="live", network=NetworkSettings(int8=False))).stream.int8
    assert not isinstance(TrackingSession.open(config=SessionConfig(mode="offline")).stream, FusedStream)


@pytest.mark.parametrize("lookahead", [0, 2])
def test_the_shipped_model_at_another_look_ahead_runs_the_8_bit_body(lookahead, recwarn):
    """The shipped ranges were calibrated on the look-ahead-1 graph; at another look-ahead (the app offers
    0-15) the body is still 8-bit and the recurrences float, with no warning and outputs close to float."""
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession

    live = TrackingSession.open(config=SessionConfig(mode="live", network=NetworkSettings(lookahead=lookahead)))
    assert isinstance(live.stream, FusedStream) and live.stream.int8
    assert not [w for w in recwarn if "8-bit" in str(w.message)]
    model = onnx.load(str(live.stream.session._model_path))
    quantised = {n.name for n in model.graph.node
                 if n.op_type == "Conv" and n.input[1].endswith("_DequantizeLinear_Output")}
    assert quantised and all(n.startswith(int8.BODY) for n in quantised)


def test_a_companion_with_a_tuned_body_builds_the_graph_on_it(human18, tmp_path, monkeypatch):
    """``body.*`` in the companion (posetracker train int8-qat): stored in float16, read back in float32, and the 8-bit
    graph is built on that body (another graph than the float body's, the same body hash check)."""
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    net = busy_net(human18, seed=11)
    src = export_live_step(net, 1, tmp_path / "float.onnx")
    ranges = int8.calibrate(src, _feeds(3))
    body = {k: v + 0.01 for k, v in net.backbone.body.state_dict().items()}  # a tuned body
    plain_path, tuned_path = tmp_path / "plain.int8.safetensors", tmp_path / "tuned.int8.safetensors"
    int8.write_companion(plain_path, net.backbone.fpn, net, ranges)
    int8.write_companion(tuned_path, net.backbone.fpn, net, ranges, body=body)
    tensors, meta = int8.read_companion(tuned_path)
    assert {k for k in tensors if k.startswith("body.")} == {f"body.{k}" for k in body}
    assert all(v.dtype == torch.float16 for k, v in tensors.items() if k.startswith("body."))
    fpn, read_body = int8.companion_parts(tensors)
    assert set(fpn) == set(net.backbone.fpn.state_dict()) and int8.companion_parts(int8.read_companion(plain_path)[0])[1] is None
    for k, v in body.items():
        torch.testing.assert_close(read_body[k], v, rtol=1e-3, atol=1e-3)
    copy = int8.with_fpn(net, fpn, read_body)
    torch.testing.assert_close(copy.backbone.body.state_dict()["stem.conv.weight"], read_body["stem.conv.weight"])
    assert meta["body"] == int8.part_hash(net, "body")  # made for the float body, which the net keeps
    accelerate(net)
    x = torch.rand(1, 3, 64, 96, generator=torch.Generator().manual_seed(2)) * 255
    outs = {}
    for name, path in (("plain", plain_path), ("tuned", tuned_path)):
        session = int8.int8_session(net, 1, path)
        feeds = {"images": x.numpy(), "window": np.zeros((1, 1, 24, 16, 24), np.float32),
                 "ctx": np.zeros((1, 32, 8, 12), np.float32), "s": np.zeros((1, 24, 16, 24), np.float32)}
        outs[name] = session.run(["window_out"], feeds)[0]
    assert not np.allclose(outs["plain"], outs["tuned"], atol=1e-3)
