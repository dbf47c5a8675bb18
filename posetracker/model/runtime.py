"""Faster inference for the frozen backbone: ONNX Runtime when available, else torch.

The backbone (method A step 1) is the bulk of the per-frame cost and is
frozen after the MoveNet import, so for inference it is exported once to
ONNX (cached under ``~/.cache/posetracker/onnx/``, keyed by a hash of its
weights) and run by ONNX Runtime, which runs this MobileNetV2 2-2.5x faster
than torch eager on one CPU thread here (``posetracker bench`` shows the
numbers). Training and the temporal block and heads stay in torch.
``accelerate`` swaps ``net.backbone`` in place and returns which runtime
the network now uses; without onnxruntime it leaves torch in place.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from posetracker.model.backbone import MoveNetBackbone
from posetracker.model.network import PoseNet

INPUT_SIZE = 256


def cache_dir() -> Path:
    root = os.environ.get("POSETRACKER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "posetracker")
    return Path(root) / "onnx"


def _weights_key(module: nn.Module) -> str:
    h = hashlib.sha256(torch.__version__.encode())
    for name, t in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


class OnnxBackbone(nn.Module):
    """Drop-in for MoveNetBackbone: (N, 3, 256, 256) RGB 0..255 -> (N, 24, 64, 64), via ONNX Runtime.

    Other input sizes fall back to the torch module it was exported from.
    """

    out_channels = MoveNetBackbone.out_channels
    stride = MoveNetBackbone.stride

    def __init__(self, torch_backbone: MoveNetBackbone, onnx_path: Path, threads: int = 1):
        super().__init__()
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = max(1, threads)
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        self.fallback = torch_backbone
        self.onnx_path = onnx_path

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.shape[-2:] != (INPUT_SIZE, INPUT_SIZE) or images.requires_grad:
            return self.fallback(images)
        x = images.detach().float().contiguous().numpy()
        (out,) = self.session.run(None, {"images": x})
        return torch.from_numpy(out)


def export_backbone(backbone: MoveNetBackbone, path: Path) -> Path:
    """Export the backbone to ONNX (dynamic batch, 256x256); written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    dummy = torch.zeros(1, 3, INPUT_SIZE, INPUT_SIZE)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(backbone.eval(), (dummy,), str(tmp), input_names=["images"], output_names=["features"],
                          dynamic_axes={"images": {0: "n"}, "features": {0: "n"}}, opset_version=17, dynamo=False)
    tmp.replace(path)
    return path


def accelerate(net: PoseNet, threads: int = 1, check: bool = True) -> str:
    """Run ``net``'s backbone with ONNX Runtime if possible; returns "onnxruntime" or "torch"."""
    if isinstance(net.backbone, OnnxBackbone):
        return "onnxruntime"
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "torch"
    backbone = net.backbone
    path = cache_dir() / f"backbone-{_weights_key(backbone)}.onnx"
    try:
        if not path.exists():
            export_backbone(backbone, path)
        fast = OnnxBackbone(backbone, path, threads)
        if check:
            x = torch.rand(1, 3, INPUT_SIZE, INPUT_SIZE, generator=torch.Generator().manual_seed(0)) * 255
            with torch.no_grad():
                err = float((fast(x) - backbone(x)).abs().max())
            if not np.isfinite(err) or err > 1e-3:
                raise RuntimeError(f"ONNX backbone differs from torch by {err:.2e}")
    except Exception as exc:  # any export/runtime problem: keep torch, say why
        warnings.warn(f"ONNX Runtime not used ({exc}); running the backbone in torch", RuntimeWarning, stacklevel=2)
        path.unlink(missing_ok=True)
        return "torch"
    net.backbone = fast
    return "onnxruntime"
