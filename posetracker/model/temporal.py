"""Method A step 2: temporal features from a forward and a backward GRU, fused per frame.

Each direction is a gated recurrence over the first features x[t] (N, C, h, w)
(stride 4), a GRU whose candidate is the frame's own features:

    s_fwd[t] = s_fwd[t-1] + (1 - m_fwd[t]) * (x[t] - s_fwd[t-1]),   s_fwd[first] = x[first]
    s_bwd[t] = s_bwd[t+1] + (1 - m_bwd[t]) * (x[t] - s_bwd[t+1]),   s_bwd[last]  = x[last]

The memory m in [0, MAX_MEMORY] (per channel and pixel) is the GRU's update
gate. It comes from a 3x3 convolutional GRU that runs at stride 8 (a quarter
of the cost) over the pooled features, and from how much the frame differs
from the running state, so it can hold still parts steady and let moving
joints through. Fusion of the two directions, per frame, learnt:

    target[t] = x[t] + W [s_fwd[t] - x[t] ; s_bwd[t] - x[t]]

W a 1x1 convolution (2C -> C, no bias) that mixes what each direction adds
to the frame across channels. It starts at W = [I I], i.e. s_fwd + s_bwd - x:
a two-sided exponential smoother (weights 1 - 2m on the frame itself and
(1 - m) m^|k| on the frame k steps away, summing to 1), the form chosen after
measuring that fixed feature-space smoothing halves the decoded keypoint
jitter with almost no 2-D cost; the temporal stage then trains W with the
recurrences for keypoint accuracy against the teacher (see models/README.md).
Weights from before the learnt fusion load with W = [I I].

Properties (tested): a frame with no neighbours (a still image) gets exactly
its own features, whatever W (both differences are zero), and the backward side
adds nothing at look-ahead 0 (live mode is then x + W_fwd (s_fwd - x)); the
untrained block (gains 0) is an exact pass-through.

Modes:
- bidirectional (files): both recurrences run over the whole window.
- causal (live, look-ahead L >= 0): the forward state (context GRU state,
  s_fwd) is carried from frame to frame; the backward recurrence runs over
  frame t and its L look-ahead frames only. L = 0 adds no latency; each
  look-ahead frame adds 1/fps.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

GRU_HIDDEN = 32
MAX_MEMORY = 0.45  # keeps the frame's own weight 1 - 2m >= 0.1 in the two-sided smoother

State = tuple  # forward state carried between windows: (context (N, hidden, h/2, w/2), s_fwd (N, C, h, w))


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


class Direction(nn.Module):
    """One direction: context ConvGRU at stride 8 + memory gate for the full-resolution recurrence."""

    def __init__(self, channels: int, hidden: int):
        super().__init__()
        self.gru = ConvGRUCell(channels, hidden)
        self.gate = nn.Conv2d(hidden + channels, channels, 1)  # memory logits from context and |change|
        self.gain = nn.Parameter(torch.zeros(channels))  # per-channel memory scale; 0 = pass-through
        nn.init.zeros_(self.gate.weight)
        nn.init.zeros_(self.gate.bias)

    def step(self, x: torch.Tensor, ctx: torch.Tensor | None, s: torch.Tensor | None, last: bool = False
             ) -> tuple[torch.Tensor | None, torch.Tensor]:
        """x (N, C, h, w) one frame; ctx (N, hidden, h/2, w/2) | None; s (N, C, h, w) | None -> (ctx, s).

        ``last``: no step follows and the state is not kept, so a first step (s None) needs no context.
        """
        if s is None and last:
            return None, x
        ctx = self.gru(F.avg_pool2d(x, 2), ctx)
        if s is None:
            return ctx, x
        change = F.avg_pool2d((x - s).abs(), 2)
        logits = F.interpolate(self.gate(torch.cat([ctx, change], 1)), size=x.shape[-2:], mode="bilinear",
                               align_corners=False)
        memory = MAX_MEMORY * self.gain.clamp(0.0, 1.0)[None, :, None, None] * torch.sigmoid(logits)
        return ctx, x + memory * (s - x)  # = s + (1 - m)(x - s); exactly x when m = 0


class TemporalBlock(nn.Module):
    """Forward + backward gated recurrences over time, fused into each frame's target features."""

    def __init__(self, channels: int = 24, hidden: int = GRU_HIDDEN):
        super().__init__()
        self.channels = channels
        self.forward_dir = Direction(channels, hidden)
        self.backward_dir = Direction(channels, hidden)
        self.fusion = nn.Conv2d(2 * channels, channels, 1, bias=False)  # W: (C, 2C, 1, 1)
        with torch.no_grad():
            self.fusion.weight.copy_(fixed_fusion_weight(channels))

    def forward(self, feats: torch.Tensor, state: State | None = None,
                emit: int | None = None) -> tuple[torch.Tensor, State]:
        """Run over a window.

        feats: (N, T, C, h, w) first features of T consecutive frames
        state: forward state carried from the frame before the window (see ``State``), or None
        emit:  number of leading frames to return (default all T); the rest are look-ahead only
        Returns (target features (N, emit, C, h, w), forward state after the last emitted frame).
        """
        t = feats.shape[1]
        emit = t if emit is None else emit
        ctx, s = state if state is not None else (None, None)
        fwd = []
        for i in range(emit):
            ctx, s = self.forward_dir.step(feats[:, i], ctx, s)
            fwd.append(s)
        bwd: list[torch.Tensor] = [None] * emit  # type: ignore[list-item]
        b_ctx, b_s = None, None
        for i in range(t - 1, -1, -1):
            b_ctx, b_s = self.backward_dir.step(feats[:, i], b_ctx, b_s, last=i == 0)
            if i < emit:
                bwd[i] = b_s
        x = feats[:, :emit]
        diffs = torch.cat([torch.stack(fwd, 1) - x, torch.stack(bwd, 1) - x], 2)  # (N, emit, 2C, h, w)
        out = x + self.fusion(diffs.flatten(0, 1)).reshape(x.shape)  # exact pass-through when both are zero
        return out, (ctx, s)


def fixed_fusion_weight(channels: int) -> torch.Tensor:
    """W = [I I] (C, 2C, 1, 1): the fusion s_fwd + s_bwd - x, where the learnt fusion starts."""
    eye = torch.eye(channels)
    return torch.cat([eye, eye], 1)[:, :, None, None]
