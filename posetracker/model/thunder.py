"""MoveNet SinglePose Thunder (and Lightning): one person's COCO-17 keypoints from a square crop.

Used by the precision stage (``refiners.crop``: Thunder, and ``crop-fast``:
Lightning, weights shipped in ``models/``) and as a training-time teacher
(``train.teachers.movenet_thunder``).

``ThunderNet`` is a faithful PyTorch rebuild of the TF.js graphs
(``shared/pretrained/movenet/movenet-thunder.{json,bin}``: 256 x 256 input,
``MoveNetBackbone(THUNDER)``, MobileNetV2 width 1.75 + FPN; and
``movenet-lightning.{json,bin}``: 192 x 192 input, ``LIGHTNING``, width 1.0)
with four raw heads on a G x G grid, G = input / 4 (64 or 48).
``decode_thunder`` is a numpy copy of the graphs' own post-processing (the
same for both); ``crop_around_box`` cuts the crop around a person box.

The graph's decode (constants are the fp16 Consts widened to float32; grid
cells of the G x G head map, cell (i, j) = row i, column j; Thunder's numbers):

1. ``c = sigmoid(centre) * W`` with ``W`` the Const
   ``ConstantFolding/StatefulPartitionedCall/truediv_2_recip`` (G, G), which is
   fp16 of ``1 / (sqrt((i - G/2)^2 + (j - G/2)^2) + 1.8)``: centres near the middle
   of the crop win. One person: ``(cy, cx) = divmod(argmax(c), G)`` (first max).
2. Regression from that cell: ``ry_k = cy + regress[cy, cx, 2k]``,
   ``rx_k = cx + regress[cy, cx, 2k+1]`` ((dy, dx) per keypoint).
3. ``S[i, j, k] = sigmoid(heatmap)[i, j, k] / (sqrt((i - ry_k)^2 + (j - rx_k)^2) + 1.7998046875)``
   (fp16 of 1.8); ``(row_k, col_k) = divmod(argmax_ij S[..., k], 64)``.
4. ``y_k = (row_k + offset[row_k, col_k, 2k]) / G``,
   ``x_k = (col_k + offset[row_k, col_k, 2k+1]) / G`` (normalised to the
   input; Thunder's graph multiplies by the Const 0.015625); ``score_k = sigmoid(heatmap)[row_k, col_k, k]`` (the
   plain heatmap probability, not the weighted S).
5. Output (1, 1, 17, 3) = (y, x, score) per COCO-17 keypoint.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import torch
from torch import nn

from posetracker.model.backbone import LIGHTNING, THUNDER, MobileNetV2FPNConfig, MoveNetBackbone
from posetracker.model.convert.movenet import singlepose_config, thunder_state_dict
from posetracker.model.convert.tfjs import TfjsGraph
from posetracker.model.heads import SeparableHead

COCO17 = ("nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
          "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip", "left_knee",
          "right_knee", "left_ankle", "right_ankle")  # Thunder's joint order
INPUT_SIZE = 256  # Thunder's input side
GRID = 64  # Thunder's head map side (stride 4)
INPUT_SIZES = {THUNDER.name: 256, LIGHTNING.name: 192}  # input side per SinglePose variant
VARIANTS = {THUNDER.name: THUNDER, LIGHTNING.name: LIGHTNING}
NUM_KEYPOINTS = 17
CROP_EXPAND = 1.25  # square crop side = longer box side * 1.25
CENTRE_WEIGHT_NODE = "ConstantFolding/StatefulPartitionedCall/truediv_2_recip"
KPT_DIST_BIAS = np.float32(1.7998046875)  # StatefulPartitionedCall/add_5/y (fp16 1.8)
HEAD_CHANNELS = {"centre": 1, "heatmap": NUM_KEYPOINTS, "regress": 2 * NUM_KEYPOINTS, "offset": 2 * NUM_KEYPOINTS}


class ThunderNet(nn.Module):
    """(N, 3, S, S) float RGB 0..255 -> raw heads {centre (N,1,G,G), heatmap (N,17,G,G),
    regress (N,34,G,G), offset (N,34,G,G)}: logits / (dy, dx) cells, MoveNet's channel order.
    S = ``input_size`` (Thunder 256, Lightning 192), G = S / 4."""

    def __init__(self, variant: str = THUNDER.name) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown MoveNet SinglePose variant {variant!r}; known: {sorted(VARIANTS)}")
        config: MobileNetV2FPNConfig = VARIANTS[variant]
        self.variant, self.input_size = variant, INPUT_SIZES[variant]
        self.backbone = MoveNetBackbone(config)
        self.heads = nn.ModuleDict({k: SeparableHead(config.out_channels, c) for k, c in HEAD_CHANNELS.items()})

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        feats = self.backbone(images)
        return {k: head(feats) for k, head in self.heads.items()}

    @classmethod
    def from_tfjs(cls, json_path: str | Path) -> ThunderNet:
        """Thunder or Lightning (told apart by the graph) with the TF.js files' weights."""
        net = cls(singlepose_config(TfjsGraph(json_path)).name)
        sd = {k: torch.from_numpy(v) for k, v in thunder_state_dict(json_path).items()}
        net.load_state_dict(sd, strict=True)
        return net.eval()


def centre_weight(json_path: str | Path) -> np.ndarray:
    """The graph's centre prior W (G, G) float32 (see the module docstring, step 1)."""
    w = TfjsGraph(json_path).weight(CENTRE_WEIGHT_NODE)
    if w.ndim != 3 or w.shape[0] != w.shape[1] or w.shape[2] != 1:
        raise ValueError(f"{CENTRE_WEIGHT_NODE}: shape {w.shape}, expected (G, G, 1)")
    return np.ascontiguousarray(w[..., 0], dtype=np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32, copy=False)
    with np.errstate(over="ignore"):  # exp(-x) = inf for very negative logits gives exactly 0, as TF.js does
        return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def _hwc(a: np.ndarray, channels: int, grid: int) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    if a.ndim == 4:
        if a.shape[0] != 1:
            raise ValueError(f"batch of {a.shape[0]}: decode one crop at a time")
        a = a[0]
    if a.shape != (grid, grid, channels):
        raise ValueError(f"expected ({grid}, {grid}, {channels}) (HWC), got {a.shape}")
    return a


def decode_thunder(centre: np.ndarray, heatmap: np.ndarray, regress: np.ndarray, offset: np.ndarray,
                   weight: np.ndarray) -> np.ndarray:
    """Thunder's built-in decode, in float32 as the graph runs it.

    Inputs are the raw heads, HWC (G, G, C) or NHWC with N = 1, as TF.js
    returns them: centre C=1, heatmap C=17 (logits), regress C=34 and offset
    C=34 ((dy, dx) per keypoint, cells); ``weight`` is ``centre_weight()`` (G, G),
    which fixes G (64 for Thunder, 48 for Lightning).
    Returns (17, 3) float32 (y, x, score), y and x normalised to the input.
    """
    g = int(weight.shape[0])
    c = _sigmoid(_hwc(centre, 1, g)[..., 0]) * weight.astype(np.float32)
    cy, cx = divmod(int(np.argmax(c)), g)
    r = _hwc(regress, 2 * NUM_KEYPOINTS, g)[cy, cx].reshape(NUM_KEYPOINTS, 2)
    ry = np.float32(cy) + r[:, 0]
    rx = np.float32(cx) + r[:, 1]
    grid = np.arange(g, dtype=np.float32)
    dist = np.sqrt((grid[:, None, None] - ry) ** 2 + (grid[None, :, None] - rx) ** 2) + KPT_DIST_BIAS  # (G, G, 17)
    heat = _sigmoid(_hwc(heatmap, NUM_KEYPOINTS, g))
    flat = np.argmax((heat / dist).reshape(g * g, NUM_KEYPOINTS), axis=0)
    rows, cols = np.divmod(flat, g)
    k = np.arange(NUM_KEYPOINTS)
    off = _hwc(offset, 2 * NUM_KEYPOINTS, g)[rows, cols].reshape(NUM_KEYPOINTS, NUM_KEYPOINTS, 2)[k, k]
    scale = np.float32(1.0 / g)  # Thunder's graph: the Const 0.015625 (StatefulPartitionedCall/Reshape_13)
    y = (rows.astype(np.float32) + off[:, 0]) * scale
    x = (cols.astype(np.float32) + off[:, 1]) * scale
    return np.stack([y, x, heat[rows, cols, k]], axis=1).astype(np.float32)


FLIP = np.array([0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15])  # COCO-17 joint -> its mirror image's


def to_source(kp: np.ndarray, window: tuple[int, int, int], size: int, mirrored: bool = False) -> np.ndarray:
    """A crop's decoded (17, 3) (y, x normalised, score) -> (17, 3) (x px, y px, score) in the source, given the
    crop's window (x0, y0, S) (``crop_around_box``); ``mirrored``: the crop was read flipped left-right, so x is
    mirrored back (pixel centres: u -> size - 1 - u) and each left/right joint takes its mirror's reading."""
    y, x, score = kp[:, 0], kp[:, 1], kp[:, 2]
    if mirrored:
        y, x, score = y[FLIP], (size - 1) / size - x[FLIP], score[FLIP]
    x0, y0, side = window
    return np.stack([x0 + x * side, y0 + y * side, score], axis=1)


def crop_around_box(rgb: np.ndarray, box_xyxy, size: int = INPUT_SIZE,
                    expand: float = CROP_EXPAND) -> tuple[np.ndarray, tuple[int, int, int]]:
    """Square crop around a person box, zero-padded outside the image, resized to size x size.

    rgb (H, W, 3) uint8; box (x1, y1, x2, y2) px. The window is S = max(1,
    round(max(w, h) * expand)) px wide, its top-left (x0, y0) = round(box centre
    - S/2). It is cut out (zeros where it leaves the image) and resized with
    cv2.INTER_AREA if S > size, cv2.INTER_LINEAR if S < size.
    Returns (crop (size, size, 3) uint8, (x0, y0, S)): crop pixel u maps to
    image x = x0 + u * S / size.
    """
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"expected (H, W, 3) uint8 RGB, got {rgb.shape} {rgb.dtype}")
    x1, y1, x2, y2 = (float(v) for v in box_xyxy)
    if not (x2 > x1 and y2 > y1):
        raise ValueError(f"empty box {box_xyxy}")
    side = max(1, int(round(max(x2 - x1, y2 - y1) * expand)))
    x0 = int(round((x1 + x2) / 2 - side / 2))
    y0 = int(round((y1 + y2) / 2 - side / 2))
    h, w = rgb.shape[:2]
    window = np.zeros((side, side, 3), np.uint8)
    ix0, iy0, ix1, iy1 = max(x0, 0), max(y0, 0), min(x0 + side, w), min(y0 + side, h)
    if ix1 > ix0 and iy1 > iy0:
        window[iy0 - y0 : iy1 - y0, ix0 - x0 : ix1 - x0] = rgb[iy0:iy1, ix0:ix1]
    if side != size:
        interp = cv2.INTER_AREA if side > size else cv2.INTER_LINEAR
        window = cv2.resize(window, (size, size), interpolation=interp)
    return np.ascontiguousarray(window), (x0, y0, side)
