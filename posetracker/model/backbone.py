"""Method A step 1: the per-frame CNN ("first features").

A faithful PyTorch rebuild of MoveNet's CenterNet feature extractor: a
MobileNetV2 body and a three-stage FPN that ends at stride 4 with 24
channels. ``MobileNetV2FPNConfig`` holds the numbers: ``MULTIPOSE`` (MoveNet
MultiPose Lightning, width 1.5; the product's backbone and the default) and
``THUNDER`` / ``LIGHTNING`` (MoveNet SinglePose Thunder, width 1.75, and
Lightning, width 1.0: the precision stage on crops and training-time
teachers). Layers are named by role; the converter in
``model/convert/movenet.py`` maps the original graphs' weights onto these
names.

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
from dataclasses import dataclass

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


@dataclass(frozen=True)
class MobileNetV2FPNConfig:
    """The numbers of one MobileNetV2 + FPN feature extractor (read from the TF.js graph).

    - ``blocks``: (expand ratio, output channels, stride) per inverted-residual
      block, in order: expanded_conv, block_1 .. block_16;
    - ``taps``: block indices (c2, c3, c4) whose outputs feed the FPN laterals
      at strides 4, 8, 16 (the top conv gives c5, stride 32);
    - ``lateral``: output widths of the 1x1 laterals on (c5, c4, c3, c2);
    - ``smooth``: output widths of the separable convs after the additions at
      strides 16, 8, 4 (``smooth[-1]`` is the feature width).
    """

    name: str
    stem: int
    blocks: tuple[tuple[int, int, int], ...]
    top: int
    taps: tuple[int, int, int]
    lateral: tuple[int, int, int, int]
    smooth: tuple[int, int, int]

    def __post_init__(self) -> None:
        l5, l4, l3, l2 = self.lateral
        s4, s3, _ = self.smooth
        if l5 != l4 or s4 != l3 or s3 != l2:
            raise ValueError(f"{self.name}: FPN widths do not add up: lateral {self.lateral}, smooth {self.smooth}")
        if sorted(self.taps) != list(self.taps) or self.taps[-1] >= len(self.blocks):
            raise ValueError(f"{self.name}: bad taps {self.taps}")

    @property
    def tap_channels(self) -> tuple[int, int, int]:
        """Channels of (c2, c3, c4)."""
        return tuple(self.blocks[i][1] for i in self.taps)  # type: ignore[return-value]

    @property
    def out_channels(self) -> int:
        return self.smooth[-1]


# MoveNet MultiPose Lightning (width 1.5): the numbers above.
MULTIPOSE = MobileNetV2FPNConfig(
    name="multipose", stem=STEM_CHANNELS, blocks=MOBILENET_V2_BLOCKS, top=TOP_CHANNELS,
    taps=(TAP_BLOCKS["c2"], TAP_BLOCKS["c3"], TAP_BLOCKS["c4"]),
    lateral=(64, 64, 32, 24), smooth=(32, 24, FEATURE_CHANNELS),
)

# MoveNet SinglePose Thunder (width 1.75), from movenet-thunder.json: same taps
# and FPN widths, wider body.
THUNDER = MobileNetV2FPNConfig(
    name="thunder", stem=56,
    blocks=(
        (1, 32, 1),
        (6, 40, 2), (6, 40, 1),
        (6, 56, 2), (6, 56, 1), (6, 56, 1),
        (6, 112, 2), (6, 112, 1), (6, 112, 1), (6, 112, 1),
        (6, 168, 1), (6, 168, 1), (6, 168, 1),
        (6, 280, 2), (6, 280, 1), (6, 280, 1),
        (6, 560, 1),
    ),
    top=1280, taps=(2, 5, 9), lateral=(64, 64, 32, 24), smooth=(32, 24, 24),
)

# MoveNet SinglePose Lightning (width 1.0, 192 x 192 input), from movenet-lightning.json: same taps and FPN
# widths, the plain MobileNetV2 body.
LIGHTNING = MobileNetV2FPNConfig(
    name="lightning", stem=32,
    blocks=(
        (1, 16, 1),
        (6, 24, 2), (6, 24, 1),
        (6, 32, 2), (6, 32, 1), (6, 32, 1),
        (6, 64, 2), (6, 64, 1), (6, 64, 1), (6, 64, 1),
        (6, 96, 1), (6, 96, 1), (6, 96, 1),
        (6, 160, 2), (6, 160, 1), (6, 160, 1),
        (6, 320, 1),
    ),
    top=1280, taps=(2, 5, 9), lateral=(64, 64, 32, 24), smooth=(32, 24, 24),
)


def tf_same_pad(x: torch.Tensor, kernel: int, stride: int) -> torch.Tensor:
    """Pad (N, C, H, W) the way TensorFlow's SAME padding does for this conv."""
    if stride == 1:
        p = (kernel - 1) // 2
        return F.pad(x, (p, kernel - 1 - p, p, kernel - 1 - p))
    pads = []
    for size in (int(x.shape[-1]), int(x.shape[-2])):  # ints: constant pads in an ONNX export
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
    """MobileNetV2 body: (N, 3, H, W) normalised -> {c2: stride 4, c3: 8, c4: 16, c5: 32 (the top conv)}."""

    def __init__(self, config: MobileNetV2FPNConfig = MULTIPOSE) -> None:
        super().__init__()
        self.stem = Conv(3, config.stem, 3, 2, act="relu6")
        blocks, cin = [], config.stem
        for expand, cout, stride in config.blocks:
            blocks.append(InvertedResidual(cin, cout, stride, expand))
            cin = cout
        self.blocks = nn.ModuleList(blocks)
        self.top = Conv(cin, config.top, act="relu6")
        self.taps = dict(zip(("c2", "c3", "c4"), config.taps))

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self._blocks_from(0, self.stem(x))

    def after(self, tap: str, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """The taps past ``tap`` ("c2", "c3" or "c4") from that tap's output ``x``: what :meth:`forward` gives
        from there on (a detector trains the later blocks from cached earlier taps)."""
        return self._blocks_from(self.taps[tap] + 1, x)

    def _blocks_from(self, first: int, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Blocks ``first``.. and the top conv on ``x`` -> the taps they give."""
        taps: dict[str, torch.Tensor] = {}
        for i in range(first, len(self.blocks)):
            x = self.blocks[i](x)
            for name, idx in self.taps.items():
                if idx == i:
                    taps[name] = x
        taps["c5"] = self.top(x)
        return taps

    def parameters_after(self, tap: str) -> list[nn.Parameter]:
        """The parameters of what :meth:`after` runs: the blocks past ``tap`` and the top conv."""
        later = [*self.blocks[self.taps[tap] + 1 :], self.top]
        return [p for m in later for p in m.parameters()]


class SeparableConv(nn.Module):
    """Depthwise 3x3 (no bias) then pointwise 1x1 with bias and ReLU (Keras SeparableConv2D)."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.depthwise = Conv(cin, cin, 3, groups=cin, bias=False)
        self.pointwise = Conv(cin, cout, act="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


class FPN(nn.Module):
    """Top-down feature pyramid: stride 32 -> 16 -> 8 -> 4; (N, config.out_channels, H/4, W/4) out."""

    def __init__(self, config: MobileNetV2FPNConfig = MULTIPOSE) -> None:
        super().__init__()
        c2, c3, c4 = config.tap_channels
        l5, l4, l3, l2 = config.lateral
        s4, s3, s2 = config.smooth
        self.lateral5 = Conv(config.top, l5)
        self.lateral4 = Conv(c4, l4)
        self.lateral3 = Conv(c3, l3)
        self.lateral2 = Conv(c2, l2)
        self.smooth4 = SeparableConv(l4, s4)
        self.smooth3 = SeparableConv(l3, s3)
        self.smooth2 = SeparableConv(l2, s2)

    def forward(self, taps: dict[str, torch.Tensor]) -> torch.Tensor:
        x = upsample2x_tf(self.lateral5(taps["c5"])) + self.lateral4(taps["c4"])
        x = upsample2x_tf(self.smooth4(x)) + self.lateral3(taps["c3"])
        x = upsample2x_tf(self.smooth3(x)) + self.lateral2(taps["c2"])
        return self.smooth2(x)


class MoveNetBackbone(nn.Module):
    """(N, 3, H, W) RGB 0..255 -> (N, 24, H/4, W/4) features (method A's first features).

    ``config`` picks the variant (``MULTIPOSE``, the default, ``THUNDER`` or ``LIGHTNING``);
    parameter names are the same for both, only the shapes differ.
    """

    out_channels = FEATURE_CHANNELS
    stride = STRIDE

    def __init__(self, config: MobileNetV2FPNConfig = MULTIPOSE) -> None:
        super().__init__()
        self.config = config
        self.out_channels = config.out_channels
        self.body = MobileNetV2(config)
        self.fpn = FPN(config)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images * INPUT_SCALE + INPUT_SHIFT
        return self.fpn(self.body(x))
