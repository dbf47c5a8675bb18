"""PoseNet: method A steps 1-3 in one module (CNN -> forward/backward GRU -> heads).

Input frames: (N, T, 3, H, W) float RGB in 0..255, H and W multiples of 32
(the product feeds 256x256 letterboxed frames, see ``preprocess.letterbox``).

Output: a dict of named tensors, h = H/4, w = W/4 (``STRIDE`` = 4):

==================  =====================  ===========================================
key                 shape                  meaning
==================  =====================  ===========================================
heatmap_logits      (N, T, K, h, w)        per-joint heatmap logits; root = body centre
heatmaps            (N, T, K, h, w)        sigmoid of the logits, in [0, 1]
offsets             (N, T, 2K, h, w)       sub-cell (dx, dy) per joint, feature cells
vectors             (N, T, 2E, h, w)       parent -> child (dx, dy) per edge, feature cells
depth               (N, T, 1+E, h, w)      root depth (m), then depth difference per edge (m)
==================  =====================  ===========================================

A feature coordinate u (cells) is the input pixel ``u * STRIDE``.
"""

from __future__ import annotations

from collections import deque

import torch
from torch import nn

from posetracker.model.backbone import STRIDE, MoveNetBackbone
from posetracker.model.heads import PoseHeads
from posetracker.model.temporal import TemporalBlock
from posetracker.skeletons import SkeletonSpec

OUTPUT_KEYS = ("heatmap_logits", "heatmaps", "offsets", "vectors", "depth")


class PoseNet(nn.Module):
    """Backbone (per frame) -> TemporalBlock (over time) -> PoseHeads (per frame)."""

    stride = STRIDE

    def __init__(self, spec: SkeletonSpec):
        super().__init__()
        self.spec = spec
        self.backbone = MoveNetBackbone()
        self.temporal = TemporalBlock(self.backbone.out_channels)
        self.heads = PoseHeads(spec, self.backbone.out_channels)

    def features(self, frames: torch.Tensor) -> torch.Tensor:
        """Method A step 1: (N, T, 3, H, W) -> first features (N, T, C, h, w)."""
        n, t = frames.shape[:2]
        f = self.backbone(frames.flatten(0, 1))
        return f.reshape(n, t, *f.shape[1:])

    def decode_heads(self, target: torch.Tensor) -> dict[str, torch.Tensor]:
        """Method A step 3: target features (N, T, C, h, w) -> output dict (see module docstring)."""
        n, t = target.shape[:2]
        out = self.heads(target.flatten(0, 1))
        out = {k: v.reshape(n, t, *v.shape[1:]) for k, v in out.items()}
        out["heatmaps"] = torch.sigmoid(out["heatmap_logits"])
        return out

    def forward(self, frames: torch.Tensor) -> dict[str, torch.Tensor]:
        """Bidirectional mode over a whole window: (N, T, 3, H, W) -> output dict.

        A still (T = 1) without gradients skips the temporal block: over one frame both directions keep the
        frame and the fusion of two zero differences adds exactly 0, so its output is its input bit for bit
        (the forward direction's context, the one thing it computes, is dropped here). The top-down crops and
        the tiles are read this way (``frame_people``, ``second_look.CropModel``)."""
        feats = self.features(frames)
        if feats.shape[1] == 1 and not torch.is_grad_enabled():
            return self.decode_heads(feats)
        target, _ = self.temporal(feats)  # method A step 2
        return self.decode_heads(target)


class CausalStream:
    """Causal (live) mode: push frames one at a time, get each frame's outputs.

    The forward GRU state is carried across frames; the backward GRU sees
    the frame and its ``lookahead`` successors, so the outputs for frame t
    come out when frame t + lookahead is pushed (latency = lookahead / fps).
    Each pushed frame runs the backbone once; features are cached.
    """

    def __init__(self, net: PoseNet, lookahead: int = 0):
        if lookahead < 0:
            raise ValueError(f"lookahead must be >= 0, got {lookahead}")
        self.net = net
        self.lookahead = lookahead
        self._feats: deque[torch.Tensor] = deque()
        self._h_fwd: torch.Tensor | None = None

    def reset(self) -> None:
        self._feats.clear()
        self._h_fwd = None

    @torch.no_grad()
    def push(self, frame: torch.Tensor) -> dict[str, torch.Tensor] | None:
        """frame: (N, 3, H, W) RGB 0..255. Returns the output dict for the frame
        ``lookahead`` pushes ago, with T = 1, or None while the look-ahead fills."""
        self._feats.append(self.net.features(frame[:, None])[:, 0])
        if len(self._feats) <= self.lookahead:
            return None
        window = torch.stack(list(self._feats), 1)
        target, self._h_fwd = self.net.temporal(window, self._h_fwd, emit=1)
        self._feats.popleft()
        return self.net.decode_heads(target)

    @torch.no_grad()
    def flush(self) -> list[dict[str, torch.Tensor]]:
        """Outputs for the frames still waiting for look-ahead at the end of a stream."""
        outs = []
        while self._feats:
            window = torch.stack(list(self._feats), 1)
            target, self._h_fwd = self.net.temporal(window, self._h_fwd, emit=1)
            self._feats.popleft()
            outs.append(self.net.decode_heads(target))
        return outs
