"""Method A step 2: temporal features from a forward and a backward GRU.

The per-frame features (T, C, h, w) (stride 4) are average-pooled to stride
8, where a forward and a backward 3x3 convolutional GRU run over time (a 3x3
ConvGRU step costs a quarter of what it does at stride 4). The two hidden
states of each frame are fused (concatenate + 1x1 conv, no bias), up-sampled
back to stride 4 and added to that frame's features. Each direction
contributes its *context*: its state minus the state the same GRU reaches from
that frame alone (``g(x_t, 0)``):

    target[t] = first[t] + up(fuse([h_fwd[t] - g_fwd(x_t, 0), h_bwd[t] - g_bwd(x_t, 0)]))

So a frame with no neighbours (a still image, the first frame of a live
stream, the backward GRU at look-ahead 0) gets exactly the per-frame
(pretrained) features: the block can only change what time tells it, and the
2-D accuracy on still images is the image model's by construction. The fusion
starts at zero, so the untrained block is an exact pass-through everywhere.

Modes:
- bidirectional (files): both GRUs run over the whole window.
- causal (live, look-ahead L >= 0): the forward GRU's state is carried from
  frame to frame; the backward GRU runs over frame t and its L look-ahead
  frames only. L = 0 adds no latency; each look-ahead frame adds 1/fps.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

GRU_HIDDEN = 32


class ConvGRUCell(nn.Module):
    """Convolutional GRU cell: x (N, Cin, h, w), state (N, Ch, h, w) -> new state (N, Ch, h, w)."""

    def __init__(self, cin: int, hidden: int = GRU_HIDDEN, kernel: int = 3):
        super().__init__()
        self.hidden = hidden
        self.gates = nn.Conv2d(cin + hidden, 2 * hidden, kernel, padding=kernel // 2)
        self.candidate = nn.Conv2d(cin + hidden, hidden, kernel, padding=kernel // 2)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None) -> torch.Tensor:
        if h is None:
            h = x.new_zeros(x.shape[0], self.hidden, *x.shape[2:])
        z, r = torch.sigmoid(self.gates(torch.cat([x, h], 1))).chunk(2, 1)
        n = torch.tanh(self.candidate(torch.cat([x, r * h], 1)))
        return (1 - z) * h + z * n


class TemporalBlock(nn.Module):
    """Forward + backward ConvGRU over time, fused and added residually to the features."""

    def __init__(self, channels: int = 24, hidden: int = GRU_HIDDEN):
        super().__init__()
        self.forward_gru = ConvGRUCell(channels, hidden)
        self.backward_gru = ConvGRUCell(channels, hidden)
        self.fuse = nn.Conv2d(2 * hidden, channels, 1, bias=False)  # no bias: zero context -> zero change
        nn.init.zeros_(self.fuse.weight)

    def forward(self, feats: torch.Tensor, h_fwd: torch.Tensor | None = None,
                emit: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Run over a window.

        feats: (N, T, C, h, w) first features of T consecutive frames
        h_fwd: (N, hidden, h/2, w/2) forward state carried from the frame before the window, or None
        emit:  number of leading frames to return (default all T); the rest are look-ahead only
        Returns (target features (N, emit, C, h, w), forward state after the last emitted frame).
        """
        n, t, c, h, w = feats.shape
        emit = t if emit is None else emit
        small = F.avg_pool2d(feats.reshape(n * t, c, h, w), 2).reshape(n, t, c, h // 2, w // 2)
        fwd = []
        for i in range(emit):
            h_fwd = self.forward_gru(small[:, i], h_fwd)
            fwd.append(h_fwd)
        bwd: list[torch.Tensor] = [None] * t  # type: ignore[list-item]
        h_bwd = None
        for i in range(t - 1, -1, -1):
            h_bwd = self.backward_gru(small[:, i], h_bwd)
            bwd[i] = h_bwd
        alone = small[:, :emit].flatten(0, 1)  # each emitted frame on its own: the no-context states
        fwd_ctx = torch.stack(fwd, 1).flatten(0, 1) - self.forward_gru(alone, None)
        bwd_ctx = torch.stack(bwd[:emit], 1).flatten(0, 1) - self.backward_gru(alone, None)
        fused = self.fuse(torch.cat([fwd_ctx, bwd_ctx], 1))
        up = F.interpolate(fused, size=(h, w), mode="bilinear", align_corners=False)
        out = feats[:, :emit] + up.reshape(n, emit, c, h, w)
        return out, h_fwd
