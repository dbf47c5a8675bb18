"""Building blocks of the BlazePose networks, with TFLite's exact padding and fused activations.

All modules work on NCHW float32 tensors. A ``ConvSpec`` carries one
convolution as the .tflite file stores it (weights already moved to
PyTorch's layout, the padding resolved to explicit left/right/top/bottom
amounts): an explicit PAD op in front of a VALID conv and TFLite's SAME
padding (which, for stride 2, puts the extra row/column at the bottom/right)
both become ``pad``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

Taps = dict[str, torch.Tensor]


@dataclass
class ConvSpec:
    """One conv: weight (out, in/groups, kh, kw), bias (out,), stride, pad (l, r, t, b), act, groups."""

    weight: np.ndarray
    bias: np.ndarray
    stride: int
    pad: tuple[int, int, int, int]
    act: str  # "none" | "relu" | "relu6"
    groups: int = 1

    @property
    def out_channels(self) -> int:
        return int(self.weight.shape[0])


def activate(x: torch.Tensor, act: str) -> torch.Tensor:
    if act == "relu6":
        return F.relu6(x)
    if act == "relu":
        return F.relu(x)
    if act != "none":
        raise ValueError(f"unsupported fused activation {act!r}")
    return x


class TfConv(nn.Module):
    """Conv2d (depthwise when groups > 1) + TFLite padding + fused activation. (B,Ci,H,W) -> (B,Co,H',W')."""

    def __init__(self, spec: ConvSpec):
        super().__init__()
        out_c, in_per_group, kh, kw = spec.weight.shape
        l, r, t, b = spec.pad
        symmetric = l == r == t == b
        self.conv = nn.Conv2d(in_per_group * spec.groups, out_c, (kh, kw), spec.stride,
                              padding=l if symmetric else 0, groups=spec.groups)
        self.pad = None if symmetric else (l, r, t, b)
        self.act = spec.act
        with torch.no_grad():
            self.conv.weight.copy_(torch.from_numpy(np.ascontiguousarray(spec.weight, np.float32)))
            self.conv.bias.copy_(torch.from_numpy(np.ascontiguousarray(spec.bias, np.float32)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pad is not None:
            x = F.pad(x, self.pad)
        return activate(self.conv(x), self.act)

    def extra_repr(self) -> str:
        return f"pad={self.pad}, act={self.act}" if self.pad else f"act={self.act}"


class SepConv(nn.Module):
    """Depthwise conv then pointwise conv (the lateral taps, the entries of the heads)."""

    def __init__(self, depthwise: ConvSpec, pointwise: ConvSpec):
        super().__init__()
        self.depthwise = TfConv(depthwise)
        self.pointwise = TfConv(pointwise)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


class InvertedResidual(nn.Module):
    """MobileNetV2 block: [1x1 expand] -> depthwise (kxk, stride s) -> 1x1 linear project [+ x]."""

    def __init__(self, expand: ConvSpec | None, depthwise: ConvSpec, project: ConvSpec, residual: bool):
        super().__init__()
        self.expand = TfConv(expand) if expand is not None else None
        self.depthwise = TfConv(depthwise)
        self.project = TfConv(project)
        self.residual = residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.expand(x) if self.expand is not None else x
        y = self.project(self.depthwise(y))
        return x + y if self.residual else y


class Neck(nn.Module):
    """The encoder's last expand + depthwise pair (no projection): its output feeds the heads."""

    def __init__(self, expand: ConvSpec, depthwise: ConvSpec):
        super().__init__()
        self.expand = TfConv(expand)
        self.depthwise = TfConv(depthwise)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.depthwise(self.expand(x))


class ResBlock(nn.Module):
    """BlazeBlock: act(shortcut(x) + pointwise(depthwise(x))).

    Stride 1: the shortcut is x. Stride 2 (``down``): the shortcut is a 2x2
    max-pool of x, zero-padded with ``pad_channels`` extra channels when the
    block widens. (B,C,H,W) -> (B,C',H/s,W/s).
    """

    def __init__(self, depthwise: ConvSpec, pointwise: ConvSpec, act: str, down: bool = False,
                 pad_channels: int = 0):
        super().__init__()
        self.depthwise = TfConv(depthwise)
        self.pointwise = TfConv(pointwise)
        self.act = act
        self.down = down
        self.pad_channels = pad_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pointwise(self.depthwise(x))
        if self.down:
            x = F.max_pool2d(x, 2, 2)
            if self.pad_channels:
                x = F.pad(x, (0, 0, 0, 0, 0, self.pad_channels))
        return activate(x + y, self.act)

    def extra_repr(self) -> str:
        return f"act={self.act}, down={self.down}, pad_channels={self.pad_channels}"


class Upsample2x(nn.Module):
    """RESIZE_BILINEAR x2 with half_pixel_centers=True, align_corners=False (the files' flags)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, size=(x.shape[2] * 2, x.shape[3] * 2), mode="bilinear", align_corners=False)


class Skip(nn.Module):
    """Adds a lateral tap: act(x + taps[key])."""

    def __init__(self, key: str, act: str = "none"):
        super().__init__()
        self.key = key
        self.act = act

    def forward(self, x: torch.Tensor, taps: Taps) -> torch.Tensor:
        return activate(x + taps[self.key], self.act)

    def extra_repr(self) -> str:
        return f"key={self.key!r}, act={self.act}"


class Chain(nn.Module):
    """A sequence of blocks, some of which (Skip) add lateral taps. (B,C,H,W) -> (B,C',H',W')."""

    def __init__(self, blocks: list[nn.Module]):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x: torch.Tensor, taps: Taps) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, taps) if isinstance(block, Skip) else block(x)
        return x


def depth_to_space(x: torch.Tensor, block: int) -> torch.Tensor:
    """TFLite DEPTH_TO_SPACE on NCHW: channel (dy*block + dx)*C + c -> pixel (dy, dx) of channel c.

    (B, C*block^2, H, W) -> (B, C, H*block, W*block). (torch's pixel_shuffle orders channels
    c*block^2 + dy*block + dx instead, so it cannot be used directly.)
    """
    b, c, h, w = x.shape
    c_out = c // (block * block)
    x = x.view(b, block, block, c_out, h, w).permute(0, 3, 4, 1, 5, 2)
    return x.reshape(b, c_out, h * block, w * block)
