"""Method A step 1: the per-frame CNN ("first features").

A faithful PyTorch rebuild of MoveNet MultiPose Lightning's feature
extractor: a MobileNetV2 body (width multiplier 1.5) and a three-stage FPN
that ends at stride 4 with 24 channels. Layers are named by role; the
converter in ``model/convert/movenet.py`` maps the original graph's weights
onto these names.

Two TensorFlow conventions are kept exactly, because they change the numbers:

- ``SAME`` padding on stride-2 convolutions pads the bottom/right more than
  the top/left (``tf_same_pad``);
- the FPN's up-sampling is TF's bilinear resize with half-pixel centres
  (``upsample2x_tf``), which PyTorch's ``align_corners=False`` matches.

Input: (N, 3, H, W) float RGB in 0..255 (H, W multiples of 32).
Output: (N, 24, H/4, W/4) float features.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

# MoveNet's own input normalisation, as stored in its graph (float16 values):
# x * 0.00784302 - 1.0 (i.e. x / 127.5 - 1 rounded to half precision).
INPUT_SCALE = 0.0078430176
INPUT_SHIFT = -1.0

# (expand ratio, output channels, stride) for each inverted-residual block of
# MobileNetV2 at width 1.5, in order: expanded_conv, block_1 .. block_16.
MOBILENET_V2_BLOCKS: tuple[tuple[int, int, int], ...] = (
    (1, 24, 1),
    (6, 40, 2), (6, 40, 1),
    (6, 48, 2), (6, 48, 1), (6, 48, 1),
    (6, 96, 2), (6, 96, 1), (6, 96, 1), (6, 96, 1),
    (6, 144, 1), (6, 144, 1), (6, 144, 1),
    (6, 240, 2), (6, 240, 1), (6, 240, 1),
    (6, 480, 1),
)
STEM_CHANNELS = 48
TOP_CHANNELS = 1280
# Block indices whose outputs feed the FPN: stride 4, 8, 16 and the top (32).
TAP_BLOCKS = {"c2": 2, "c3": 5, "c4": 9}
FEATURE_CHANNELS = 24
STRIDE = 4


def tf_same_pad(x: torch.Tensor, kernel: int, stride: int) -> torch.Tensor:
    """Pad (N, C, H, W) the way TensorFlow's SAME padding does for this conv."""
    if stride == 1:
        p = (kernel - 1) // 2
        return F.pad(x, (p, kernel - 1 - p, p, kernel - 1 - p))
    pads = []
    for size in (x.shape[-1], x.shape[-2]):
        total = max((math.ceil(size / stride) - 1) * stride + kernel - size, 0)
        pads += [total // 2, total - total // 2]
    return F.pad(x, pads)


def upsample2x_tf(x: torch.Tensor) -> torch.Tensor:
    """TF ResizeBilinear x2 with half-pixel centres: (N, C, H, W) -> (N, C, 2H, 2W).

    The same sampling as PyTorch's bilinear ``align_corners=False``.
    """
    return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)


class Conv(nn.Module):
    """Convolution with bias (batch norm already folded in) and an optional activation."""

    def __init__(self, cin: int, cout: int, kernel: int = 1, stride: int = 1, groups: int = 1,
                 act: str | None = None, bias: bool = True):
        super().__init__()
        # Stride 1: TF's SAME padding is symmetric and the conv pads itself;
        # stride 2 pads explicitly (bottom/right heavier) in forward().
        self.pad_explicitly = kernel > 1 and stride > 1
        self.kernel, self.stride = kernel, stride
        padding = 0 if self.pad_explicitly else (kernel - 1) // 2
        self.conv = nn.Conv2d(cin, cout, kernel, stride, padding=padding, groups=groups, bias=bias)
        self.act = {"relu": nn.ReLU(), "relu6": nn.ReLU6(), None: nn.Identity()}[act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pad_explicitly:
            x = tf_same_pad(x, self.kernel, self.stride)
        return self.act(self.conv(x))


class InvertedResidual(nn.Module):
    """MobileNetV2 block: 1x1 expand (ReLU6) -> 3x3 depthwise (ReLU6) -> 1x1 project, residual if shapes match."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.expand = Conv(cin, hidden, act="relu6") if expand != 1 else nn.Identity()
        self.depthwise = Conv(hidden, hidden, 3, stride, groups=hidden, act="relu6")
        self.project = Conv(hidden, cout)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.depthwise(self.expand(x)))
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    """MobileNetV2 body; returns the stride-4, 8, 16 taps and the stride-32 top."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = Conv(3, STEM_CHANNELS, 3, 2, act="relu6")
        blocks, cin = [], STEM_CHANNELS
        for expand, cout, stride in MOBILENET_V2_BLOCKS:
            blocks.append(InvertedResidual(cin, cout, stride, expand))
            cin = cout
        self.blocks = nn.ModuleList(blocks)
        self.top = Conv(cin, TOP_CHANNELS, act="relu6")

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        taps: dict[str, torch.Tensor] = {}
        x = self.stem(x)
        for i, block in enumerate(self.blocks):
            x = block(x)
            for name, idx in TAP_BLOCKS.items():
                if idx == i:
                    taps[name] = x
        taps["c5"] = self.top(x)
        return taps


class SeparableConv(nn.Module):
    """Depthwise 3x3 (no bias) then pointwise 1x1 with bias and ReLU (Keras SeparableConv2D)."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.depthwise = Conv(cin, cin, 3, groups=cin, bias=False)
        self.pointwise = Conv(cin, cout, act="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


class FPN(nn.Module):
    """Top-down feature pyramid: stride 32 -> 16 -> 8 -> 4, ending with 24 channels."""

    def __init__(self) -> None:
        super().__init__()
        self.lateral5 = Conv(TOP_CHANNELS, 64)
        self.lateral4 = Conv(96, 64)
        self.lateral3 = Conv(48, 32)
        self.lateral2 = Conv(40, 24)
        self.smooth4 = SeparableConv(64, 32)
        self.smooth3 = SeparableConv(32, 24)
        self.smooth2 = SeparableConv(24, FEATURE_CHANNELS)

    def forward(self, taps: dict[str, torch.Tensor]) -> torch.Tensor:
        x = upsample2x_tf(self.lateral5(taps["c5"])) + self.lateral4(taps["c4"])
        x = upsample2x_tf(self.smooth4(x)) + self.lateral3(taps["c3"])
        x = upsample2x_tf(self.smooth3(x)) + self.lateral2(taps["c2"])
        return self.smooth2(x)


class MoveNetBackbone(nn.Module):
    """(N, 3, H, W) RGB 0..255 -> (N, 24, H/4, W/4) features (method A's first features)."""

    out_channels = FEATURE_CHANNELS
    stride = STRIDE

    def __init__(self) -> None:
        super().__init__()
        self.body = MobileNetV2()
        self.fpn = FPN()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images * INPUT_SCALE + INPUT_SHIFT
        return self.fpn(self.body(x))
