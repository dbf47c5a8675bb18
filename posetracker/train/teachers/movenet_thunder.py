"""MoveNet SinglePose Thunder as a training-time teacher (one person per crop, COCO-17).

``ThunderTeacher`` ties the rebuilt network (:mod:`posetracker.model.thunder`)
to the crop around a person box. Its weights are converted from the TF.js
files at construction time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from posetracker.model.thunder import INPUT_SIZE, ThunderNet, centre_weight, crop_around_box, decode_thunder


class ThunderTeacher:
    """MoveNet SinglePose Thunder: one person's COCO-17 keypoints from a crop or a box.

    Built from the TF.js files (``movenet-thunder.json`` + ``.bin``) at
    construction. Runs on CPU in float32 unless moved with ``.to(device)``.
    """

    def __init__(self, json_path: str | Path, device: str | torch.device = "cpu"):
        self.json_path = Path(json_path)
        self.net = ThunderNet.from_tfjs(self.json_path).to(device)
        self.weight = centre_weight(self.json_path)
        self.device = torch.device(device)

    def to(self, device: str | torch.device) -> ThunderTeacher:
        self.device = torch.device(device)
        self.net.to(self.device)
        return self

    def heads(self, crop_rgb: np.ndarray) -> dict[str, np.ndarray]:
        """crop (256, 256, 3) uint8 RGB -> raw heads, HWC (64, 64, C) float32 as TF.js gives them."""
        if crop_rgb.shape != (INPUT_SIZE, INPUT_SIZE, 3) or crop_rgb.dtype != np.uint8:
            raise ValueError(f"expected ({INPUT_SIZE}, {INPUT_SIZE}, 3) uint8 RGB, got {crop_rgb.shape} {crop_rgb.dtype}")
        x = torch.from_numpy(np.ascontiguousarray(crop_rgb)).to(self.device, torch.float32).permute(2, 0, 1)[None]
        with torch.inference_mode():
            out = self.net(x)
        return {k: v[0].permute(1, 2, 0).float().cpu().numpy() for k, v in out.items()}

    def predict_crop(self, crop_rgb: np.ndarray) -> np.ndarray:
        """crop (256, 256, 3) uint8 RGB -> (17, 3) float32 (y, x, score), y and x normalised (0..1) to the crop."""
        h = self.heads(crop_rgb)
        return decode_thunder(h["centre"], h["heatmap"], h["regress"], h["offset"], self.weight)

    def predict_person(self, rgb: np.ndarray, box_xyxy) -> np.ndarray:
        """Image (H, W, 3) uint8 RGB + person box (x1, y1, x2, y2) px -> (17, 3) float32
        (x px, y px, score) in image coordinates, COCO-17 order.

        The crop is ``crop_around_box`` (box centre, 1.25 x longer side, zero
        padding); keypoints map back as x = x0 + x_norm * S, y = y0 + y_norm * S.
        """
        crop, (x0, y0, side) = crop_around_box(rgb, box_xyxy)
        kp = self.predict_crop(crop)
        out = np.empty_like(kp)
        out[:, 0] = x0 + kp[:, 1] * side
        out[:, 1] = y0 + kp[:, 0] * side
        out[:, 2] = kp[:, 2]
        return out
