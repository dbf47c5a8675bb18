import onnx
import pytest
import torch

from posetracker.model.network import PoseNet
from posetracker.model.network import CausalStream
from posetracker.model.runtime import OnnxBackbone, OnnxDirection, OnnxHeads, accelerate, plain


def busy_net(spec, seed: int) -> PoseNet:
    """A PoseNet whose temporal block does something (untrained it passes features through)."""
    torch.manual_seed(seed)
    net = PoseNet(spec).eval()
    with torch.no_grad():
        for d in (net.temporal.forward_dir, net.temporal.backward_dir):
            d.gain.fill_(1.0)
            d.gate.weight.normal_(0, 0.5)
    return net


def test_onnx_backbone_matches_torch(human18, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    net = busy_net(human18, seed=0)
    x = torch.rand(2, 3, 3, 256, 256, generator=torch.Generator().manual_seed(3)) * 255
    with torch.no_grad():
        ref = net(x)
        stream = CausalStream(net, lookahead=1)
        ref_live = [stream.push(x[:, i]) for i in range(3)]
    assert accelerate(net) == "onnxruntime"
    assert isinstance(net.temporal.forward_dir, OnnxDirection) and isinstance(net.temporal.backward_dir, OnnxDirection)
    assert isinstance(net.backbone, OnnxBackbone) and list(tmp_path.rglob("*.onnx"))
    assert net.backbone.session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
    graph = onnx.load(str(net.backbone.onnx_path)).graph  # SAME pads folded into the convolutions (same numbers below)
    assert not [n for n in graph.node if n.op_type == "Pad"]
    pads = [list(a.ints) for n in graph.node if n.op_type == "Conv" for a in n.attribute if a.name == "pads"]
    assert [0, 0, 1, 1] in pads
    with torch.no_grad():
        fast = net(x)
        other = net.features(torch.rand(1, 1, 3, 64, 96) * 255)  # any multiple of 32: the same export
        stream = CausalStream(net, lookahead=1)
        fast_live = [stream.push(x[:, i]) for i in range(3)]
    assert not torch.equal(ref["offsets"][:, 1], net.decode_heads(net.features(x)[:, 1:2])["offsets"][:, 0]), \
        "the temporal block must change the features for this test to check its steps"
    for key in ref:
        torch.testing.assert_close(fast[key], ref[key], rtol=0, atol=1e-4)
    assert ref_live[0] is None and fast_live[0] is None
    for r, f in zip(ref_live[1:], fast_live[1:]):
        for key in r:
            torch.testing.assert_close(f[key], r[key], rtol=0, atol=1e-4)
    assert other.shape == (1, 1, 24, 16, 24)
    assert accelerate(net) == "onnxruntime"  # idempotent
    assert isinstance(net.heads, OnnxHeads)
    with torch.enable_grad():  # training sees the torch modules, so gradients flow
        loss = net(x)["depth"].sum()
    loss.backward()
    assert net.heads.fallback.depth.out.weight.grad is not None
    assert net.temporal.forward_dir.fallback.gate.weight.grad is not None
    plain(net)
    assert net.backbone.__class__.__name__ == "MoveNetBackbone"
    assert net.temporal.forward_dir.__class__.__name__ == "Direction"


def test_onnx_runs_aspect_fitted_inputs(human18, tmp_path, monkeypatch):
    """One export serves every input whose sides are multiples of 32 (a 16:9 frame: 160 x 256), exactly as torch."""
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    net = busy_net(human18, seed=1)
    x = torch.rand(1, 3, 3, 160, 256, generator=torch.Generator().manual_seed(4)) * 255
    with torch.no_grad():
        ref = net(x)
    assert accelerate(net) == "onnxruntime"

    def no_torch(*args, **kwargs):
        raise AssertionError("fell back to torch")

    for module in (net.backbone, net.heads):
        monkeypatch.setattr(module.fallback, "forward", no_torch)
    for d in (net.temporal.forward_dir, net.temporal.backward_dir):
        monkeypatch.setattr(d.fallback, "step", no_torch)
    with torch.no_grad():
        fast = net(x)
    assert fast["heatmaps"].shape == (1, 3, 18, 40, 64)
    for key in ref:
        torch.testing.assert_close(fast[key], ref[key], rtol=0, atol=1e-4)


def test_a_checked_onnx_file_is_checked_again_once_it_changes(tmp_path, monkeypatch):
    """Sessions started again on the same ONNX file, in this process or another (the passed check is recorded beside
    the files), skip the check against torch; a file rewritten since (a stale or foreign graph under the same name)
    is checked again and refused."""
    pytest.importorskip("onnxruntime")
    from posetracker.model import onnx_checks
    from posetracker.model.runtime import OnnxThunder, accelerate_thunder
    from posetracker.model.thunder import ThunderNet

    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    monkeypatch.setattr(onnx_checks, "_CHECKED", set())
    torch.manual_seed(0)
    net, other = ThunderNet("lightning").eval(), ThunderNet("lightning").eval()
    calls = []
    forward = ThunderNet.forward
    monkeypatch.setattr(ThunderNet, "forward",  # the check reads a batch of 2 (the export traces a batch of 1)
                        lambda self, x: (len(x) == 2 and calls.append(x.shape)) or forward(self, x))
    assert isinstance(accelerate_thunder(net), OnnxThunder) and len(calls) == 1  # exported and checked
    assert isinstance(accelerate_thunder(net), OnnxThunder) and len(calls) == 1  # the same file: not again
    monkeypatch.setattr(onnx_checks, "_CHECKED", set())  # another process: the check recorded on disk holds
    assert isinstance(accelerate_thunder(net), OnnxThunder) and len(calls) == 1
    (path,) = tmp_path.rglob("thunder-*.onnx")
    accelerate_thunder(other)
    (other_path,) = set(tmp_path.rglob("thunder-*.onnx")) - {path}
    path.write_bytes(other_path.read_bytes())  # another net's graph under the first one's name
    with pytest.warns(RuntimeWarning, match="differs from torch"):
        assert accelerate_thunder(net) is net
