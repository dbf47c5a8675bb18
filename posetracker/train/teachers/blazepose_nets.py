"""BlazePose detector and landmark networks as nn.Modules, weights read from the .tflite files.

The module structure is built from the graph (see blazepose_graph): the
encoder is a MobileNetV2 stack with lateral taps, the rest are chains of
BlazeBlocks. Inputs are NCHW float32; outputs match the .tflite outputs.

``PoseLandmarkNet`` (full: 15 encoder blocks; heavy: 29):
    (B, 3, 256, 256) RGB in [0, 1] -> dict
    landmarks (B, 195) = 39 x (x, y, z, visibility logit, presence logit), crop pixels
    world (B, 117) = 39 x (x, y, z) metres, hip-centred, crop-aligned axes
    flag (B, 1) pose presence (sigmoid already applied, as in the file)
    heatmap (B, 39, 64, 64) logits, segmentation (B, 1, 256, 256) logits (on request)

``PoseDetectorNet``:
    (B, 3, 224, 224) RGB in [-1, 1] -> boxes (B, 2254, 12), scores (B, 2254, 1) logits
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from posetracker.train.teachers.blazepose_graph import Block, EncoderSpec, detector_spec, landmark_spec
from posetracker.train.teachers.layers import (
    Chain, ConvSpec, InvertedResidual, Neck, ResBlock, SepConv, Skip, Taps, TfConv, Upsample2x, depth_to_space,
)
from posetracker.train.teachers.tflite import TfliteGraph


def build_chain(blocks: list[Block]) -> Chain:
    mods: list[nn.Module] = []
    for b in blocks:
        if b.kind == "up":
            mods.append(Upsample2x())
        elif b.kind == "skip":
            mods.append(Skip(b.key, b.act))
        elif b.kind == "conv":
            mods.append(TfConv(b.convs[0]))
        elif b.kind == "sep":
            mods.append(SepConv(*b.convs))
        elif b.kind in ("res", "down"):
            mods.append(ResBlock(*b.convs, act=b.act, down=b.kind == "down", pad_channels=b.pad_channels))
        else:
            raise ValueError(f"unknown block kind {b.kind!r}")
    return Chain(mods)


class Encoder(nn.Module):
    """Stem + inverted residual blocks + neck; collects lateral taps. (B,3,H,W) -> neck (B,C,H/32,W/32)."""

    def __init__(self, spec: EncoderSpec):
        super().__init__()
        self.stem = TfConv(spec.stem)
        self.blocks = nn.ModuleList(InvertedResidual(*b) for b in spec.blocks)
        self.neck = Neck(*spec.neck)
        self.taps = nn.ModuleDict({k: SepConv(dw, pw) for k, (_, dw, pw) in spec.taps.items()})
        self.tap_source = {k: src for k, (src, _, _) in spec.taps.items()}
        self._by_block: dict[int, list[str]] = {}
        for k, src in self.tap_source.items():
            self._by_block.setdefault(src, []).append(k)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, Taps]:
        taps: Taps = {}
        x = self.stem(x)
        for i, block in enumerate(self.blocks):
            x = block(x)
            for k in self._by_block.get(i, ()):
                taps[k] = self.taps[k](x)
        x = self.neck(x)
        for k in self._by_block.get(-1, ()):
            taps[k] = self.taps[k](x)
        return x, taps


class PoseLandmarkNet(nn.Module):
    """BlazePose GHUM landmark model (full or heavy). See the module docstring for shapes."""

    def __init__(self, tflite_path: str | Path):
        super().__init__()
        spec = landmark_spec(TfliteGraph(tflite_path))
        self.encoder = Encoder(spec.encoder)
        self.decoder_source = spec.decoder_source
        self.decoder = build_chain(spec.decoder)
        self.heatmap_head = TfConv(spec.heatmap)
        self.segmentation_head = build_chain(spec.segmentation)
        self.regression_source = spec.regression_source
        self.regression = build_chain(spec.regression)
        self.landmark_head = TfConv(spec.heads["landmarks"])
        self.world_head = TfConv(spec.heads["world"])
        self.flag_head = TfConv(spec.heads["flag"])

    def forward(self, x: torch.Tensor, maps: bool = False, heatmap: bool = False) -> dict[str, torch.Tensor]:
        """(B, 3, 256, 256) in [0, 1] -> landmarks (B,195), world (B,117), flag (B,1).

        ``heatmap`` adds heatmap (B,39,64,64); ``maps`` adds heatmap and segmentation (B,1,256,256).
        """
        _, taps = self.encoder(x)
        feat = self.decoder(taps[self.decoder_source], taps)  # (B, 48, 64, 64)
        r = feat if self.regression_source == "decoder" else taps[self.regression_source]
        r = self.regression(r, taps)  # (B, 288, 2, 2)
        out = {
            "landmarks": self.landmark_head(r).flatten(1),
            "world": self.world_head(r).flatten(1),
            "flag": torch.sigmoid(self.flag_head(r).flatten(1)),
        }
        if maps or heatmap:
            out["heatmap"] = self.heatmap_head(feat)
        if maps:
            out["segmentation"] = self.segmentation_head(feat, taps)
        return out


class DetectorHead(nn.Module):
    """One detector scale: DEPTH_TO_SPACE(2), then stride-2 depthwise + 1x1 for scores and for boxes.

    (B, C, h, w) -> scores (B, h*w*A, 1), boxes (B, h*w*A, 12), anchors ordered (y, x, anchor).
    """

    def __init__(self, cls_dw: ConvSpec, cls_pw: ConvSpec, reg_dw: ConvSpec, reg_pw: ConvSpec):
        super().__init__()
        self.classifier = SepConv(cls_dw, cls_pw)
        self.regressor = SepConv(reg_dw, reg_pw)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = depth_to_space(x, 2)
        b = x.shape[0]
        scores = self.classifier(x).permute(0, 2, 3, 1).reshape(b, -1, 1)
        boxes = self.regressor(x).permute(0, 2, 3, 1).reshape(b, -1, 12)
        return scores, boxes


class PoseDetectorNet(nn.Module):
    """BlazePose person detector (MobileNetV2 + 2-level FPN, heads at strides 8, 16, 32)."""

    def __init__(self, tflite_path: str | Path):
        super().__init__()
        spec = detector_spec(TfliteGraph(tflite_path))
        self.encoder = Encoder(spec.encoder)
        self.fpn = nn.ModuleList(build_chain(c) for c in spec.fpn)
        self.head_sources = [h[0] for h in spec.heads]
        self.heads = nn.ModuleList(DetectorHead(*h[1:]) for h in spec.heads)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, 3, 224, 224) in [-1, 1] -> boxes (B, 2254, 12), score logits (B, 2254, 1)."""
        neck, taps = self.encoder(x)
        feats = {"neck": neck}
        f = neck
        for i, chain in enumerate(self.fpn):
            f = chain(f, taps)
            feats[f"fpn{i}"] = f
        scores, boxes = zip(*(head(feats[src]) for src, head in zip(self.head_sources, self.heads)))
        return torch.cat(boxes, 1), torch.cat(scores, 1)
