"""The steady-state live step as one graph: backbone, temporal step and heads (``LiveStep``), its ONNX export
and the names of its inputs and outputs. ``model/fused.py`` runs it per frame (``FusedStream``), ``model/int8.py``
quantises the same export; both build on this module, neither on the other's graph code.

    inputs   images  (N, 3, H, W)       the new frame t+L, RGB 0..255, H and W multiples of 32
             window  (N, L, C, h, w)    first features of frames t .. t+L-1 (absent at L = 0)
             ctx     (N, G, h/2, w/2)   forward direction's context state after frame t-1
             s       (N, C, h, w)       forward direction's smoothed features after frame t-1
    outputs  window_out (N, L, C, h, w) features of frames t+1 .. t+L (absent at L = 0)
             ctx_out, s_out             the forward state after frame t
             heatmap_logits, heatmaps, offsets, vectors, depth  of frame t, (N, ., h, w)
             (``sparse``: heatmap_logits, heatmaps, head_features (N, C, h, w): the offset,
             vector and depth heads are left to ``heads_at_cells``, which evaluates them only where the
             decoder reads them)

(h = H/4, w = W/4, C = 24 features, G = 32 context channels.)
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import torch
from torch import nn

from posetracker.model.heads_at_cells import SPARSE_KEYS
from posetracker.model.network import OUTPUT_KEYS, PoseNet
from posetracker.model.onnx_pads import fold_pads
from posetracker.model.weights import weights_key


def torch_parts(net: PoseNet) -> tuple[nn.Module, nn.Module, nn.Module, nn.Module, nn.Module]:
    """(backbone, forward direction, backward direction, heads, fusion) as torch modules, unwrapping the
    ONNX Runtime drop-ins of ``runtime.accelerate``."""
    def plain(m: nn.Module) -> nn.Module:
        return getattr(m, "fallback", m)

    t = net.temporal
    return plain(net.backbone), plain(t.forward_dir), plain(t.backward_dir), plain(net.heads), t.fusion


def output_keys(sparse: bool = False) -> tuple[str, ...]:
    """The heads' outputs of a live step; ``sparse``: the heatmaps and the heads' input features instead of the
    offset, vector and depth maps (``heads_at_cells``)."""
    return tuple(k for k in OUTPUT_KEYS if k not in SPARSE_KEYS) + ("head_features",) if sparse else OUTPUT_KEYS


class LiveStep(nn.Module):
    """The steady-state live step at look-ahead ``lookahead`` as one module (see the module docstring for
    the inputs and outputs); the same arithmetic as ``CausalStream.push`` with the forward state set.
    ``sparse``: only the heatmap heads run; the heads' input is an output (``output_keys``)."""

    def __init__(self, net: PoseNet, lookahead: int, sparse: bool = False):
        super().__init__()
        self.backbone, self.fwd, self.bwd, self.heads, self.fusion = torch_parts(net)
        self.lookahead = lookahead
        self.keys = output_keys(sparse)

    def forward(self, images: torch.Tensor, *state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.lookahead:
            window, ctx, s = state
            feats = [window[:, i] for i in range(self.lookahead)] + [self.backbone(images)]
        else:
            ctx, s = state
            feats = [self.backbone(images)]
        x = feats[0]
        ctx_out, s_out = self.fwd.step(x, ctx, s)
        b_ctx, b_s = None, None
        for i in range(self.lookahead, -1, -1):  # the backward direction over the window, newest frame first
            b_ctx, b_s = self.bwd.step(feats[i], b_ctx, b_s, last=i == 0)
        target = x + self.fusion(torch.cat([s_out - x, b_s - x], 1))
        sparse = "head_features" in self.keys
        out = {"heatmap_logits": self.heads.heatmap_logits(target), "head_features": target} if sparse \
            else self.heads(target)
        out["heatmaps"] = torch.sigmoid(out["heatmap_logits"])
        heads = tuple(out[k] for k in self.keys)
        lead = (torch.stack(feats[1:], 1),) if self.lookahead else ()
        return (*lead, ctx_out, s_out, *heads)


def io_names(net: PoseNet, lookahead: int, sparse: bool = False) -> tuple[list[str], list[str]]:
    window = ["window"] if lookahead else []
    outs = (["window_out"] if lookahead else []) + ["ctx_out", "s_out"] + list(output_keys(sparse))
    return ["images", *window, "ctx", "s"], outs


def fused_key(net: PoseNet, lookahead: int, sparse: bool = False) -> str:
    """Names the graph: the weights of every part, the look-ahead, whether its heads are sparse."""
    h = hashlib.sha256(f"la{lookahead}{'-sparse' if sparse else ''}".encode())
    for m in torch_parts(net):
        h.update(weights_key(m).encode())
    return h.hexdigest()[:16]


def export_live_step(net: PoseNet, lookahead: int, path: Path, size: tuple[int, int] = (256, 256),
                     sparse: bool = False) -> Path:
    """Export :class:`LiveStep` to ONNX (dynamic batch and size; the backbone's SAME pads folded), atomically."""
    h, w = size
    step = LiveStep(net, lookahead, sparse).eval()
    c, g = step.backbone.out_channels, step.fwd.gru.hidden
    dummies = [torch.rand(1, 3, h, w) * 255]
    if lookahead:
        dummies.append(torch.rand(1, lookahead, c, h // 4, w // 4))
    dummies += [torch.rand(1, g, h // 8, w // 8), torch.rand(1, c, h // 4, w // 4)]
    inputs, outs = io_names(net, lookahead, sparse)
    # spatial axes: 2 and 3 of the 4-D tensors; 3 and 4 of the 5-D windows (n, L, C, h, w)
    axes = {k: ({0: "n", 3: "h", 4: "w"} if k.startswith("window") else {0: "n", 2: "h", 3: "w"})
            for k in (*inputs, *outs)}
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = path.with_suffix(".raw.onnx")
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(step, tuple(dummies), str(raw), input_names=inputs, output_names=outs,
                              dynamic_axes=axes, opset_version=17, dynamo=False)
        fold_pads(raw, path)
    finally:
        raw.unlink(missing_ok=True)
    return path
