"""A batch of stills as one graph: backbone and the heatmap heads in one ONNX Runtime call (``StillStep``).

The top-down crops of a frame (every animal x every turn) are read as stills: for one frame the temporal
block is the identity (``PoseNet.forward``), so a crop's reading is backbone -> heads. Run as
``runtime.accelerate`` leaves it, that is two runtime calls (the backbone, then all five heads dense over
every crop). Here it is one call that stops after the two heatmap heads and hands out the heads' input, as
the live graph does (``live_graph.LiveStep(sparse=True)``); the offset, vector and depth heads are then
evaluated only at the cells the decoder reads (``heads_at_cells.CellHeads``).

    inputs   images          (N, 3, H, W)   RGB 0..255, H and W multiples of 32 (the crops: 256 x 256)
    outputs  heatmaps        (N, K, h, w)   sigmoid of the heatmap logits
             head_features   (N, C, h, w)   the heads' input (C = 24)

(h = H/4, w = W/4.) The outputs equal the separate calls' to float32 rounding (tests/model/test_still_graph.py).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from posetracker.model.live_graph import torch_parts
from posetracker.model.network import PoseNet
from posetracker.model.onnx_checks import identity, mark_checked, was_checked
from posetracker.model.onnx_pads import fold_pads
from posetracker.model.weights import weights_key

OUTPUTS = ("heatmaps", "head_features")


class StillStep(nn.Module):
    """Backbone and heatmap heads of ``net`` (its torch modules) for stills; see the module docstring."""

    def __init__(self, net: PoseNet):
        super().__init__()
        self.backbone, _, _, self.heads, _ = torch_parts(net)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.backbone(images)
        return torch.sigmoid(self.heads.heatmap_logits(features)), features


def still_key(net: PoseNet) -> str:
    """Names the graph by the weights of the backbone and heads."""
    backbone, _, _, heads, _ = torch_parts(net)
    return f"{weights_key(backbone)}-{weights_key(heads)}"


def export_still_step(net: PoseNet, path: Path, size: int = 256) -> Path:
    """Export :class:`StillStep` to ONNX (dynamic batch and size; the backbone's SAME pads folded), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = path.with_suffix(f".{os.getpid()}.raw.onnx")  # two processes exporting at once do not share a file
    axes = {k: {0: "n", 2: "h", 3: "w"} for k in ("images", *OUTPUTS)}
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(StillStep(net).eval(), (torch.rand(1, 3, size, size) * 255,), str(raw),
                              input_names=["images"], output_names=list(OUTPUTS), dynamic_axes=axes, opset_version=17,
                              dynamo=False)
        fold_pads(raw, path)  # written atomically
    finally:
        raw.unlink(missing_ok=True)
    return path


class StillGraph:
    """``StillStep`` of a network in ONNX Runtime: ``graph(images)`` with images (N, 3, H, W) float32 0..255
    (H, W multiples of 32) -> (heatmaps (N, K, h, w), head_features (N, C, h, w)) float32 numpy."""

    def __init__(self, session):
        self.session = session

    def __call__(self, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        heat, features = self.session.run(None, {"images": np.ascontiguousarray(images, np.float32)})
        return heat, features


def still_graph(net: PoseNet, threads: int = 1) -> StillGraph | None:
    """``net``'s still graph (exported once and cached beside the other exports), checked against torch on a
    random batch once per file (``onnx_checks``); None when onnxruntime is missing or the export or check fails (the caller keeps its path)."""
    from posetracker.model.runtime import _session, cache_dir

    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    path = cache_dir() / f"still-{still_key(net)}.onnx"
    try:
        if not path.exists():
            export_still_step(net, path)
        graph = StillGraph(_session(path, threads))
        files = identity([path])
        if not was_checked(files, cache_dir()):
            x = torch.rand(2, 3, 64, 96, generator=torch.Generator().manual_seed(0)) * 255
            with torch.no_grad():
                ref = StillStep(net).eval()(x)
            got = graph(x.numpy())
            worst = max(float(np.abs(g - r.numpy()).max()) / max(1.0, float(r.abs().max())) for g, r in zip(got, ref))
            if not np.isfinite(worst) or worst > 1e-3:
                raise RuntimeError(f"ONNX still graph differs from torch by {worst:.2e} of its outputs' scale")
            mark_checked(files, cache_dir())
        return graph
    except Exception as exc:  # any export/runtime problem: the caller's separate calls, say why
        warnings.warn(f"still graph not used ({exc}); separate runtime calls", RuntimeWarning, stacklevel=2)
        path.unlink(missing_ok=True)
        return None


__all__ = ["OUTPUTS", "StillGraph", "StillStep", "export_still_step", "still_graph", "still_key"]
