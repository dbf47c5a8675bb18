import pytest
import torch

from posetracker.model.network import PoseNet
from posetracker.model.runtime import OnnxBackbone, OnnxHeads, accelerate, plain


def test_onnx_backbone_matches_torch(human18, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    torch.manual_seed(0)
    net = PoseNet(human18).eval()
    x = torch.rand(2, 1, 3, 256, 256, generator=torch.Generator().manual_seed(3)) * 255
    with torch.no_grad():
        ref = net(x)
    assert accelerate(net) == "onnxruntime"
    assert isinstance(net.backbone, OnnxBackbone) and list(tmp_path.rglob("*.onnx"))
    with torch.no_grad():
        fast = net(x)
        other = net.features(torch.rand(1, 1, 3, 64, 64) * 255)  # other sizes fall back to torch
    for key in ref:
        torch.testing.assert_close(fast[key], ref[key], rtol=0, atol=1e-4)
    assert other.shape == (1, 1, 24, 16, 16)
    assert accelerate(net) == "onnxruntime"  # idempotent
    assert isinstance(net.heads, OnnxHeads)
    with torch.enable_grad():  # training sees the torch modules, so gradients flow
        loss = net(x)["depth"].sum()
    loss.backward()
    assert net.heads.fallback.depth.out.weight.grad is not None
    assert plain(net).backbone.__class__.__name__ == "MoveNetBackbone"
