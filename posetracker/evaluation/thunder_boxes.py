"""MoveNet Thunder given the true person boxes: the teacher the 2-D model must beat, scored like the product.

``posetracker eval --baseline thunder-boxes`` reads each labelled person with the shipped Thunder
(``models/refiner-crop-human18.safetensors``, the precision stage's network) from a crop around that person's
labelled box, as the precision stage cuts its crops (``model.thunder.crop_around_box``), and decodes it with the
graph's own post-processing (``model.thunder.decode_thunder``). It has help the product does not have (the true
boxes, one reading per real person, no search), so it is a ceiling for the crop stage, not a peer. Person
score: the mean of Thunder's 17 keypoint scores (its own); human18's centre: the box centre of the keypoints.
"""

from __future__ import annotations

import numpy as np
import torch

from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame


class ThunderOnBoxes:
    """``predict(rgb (H, W, 3) uint8, boxes (G, 4) x y w h px) -> PoseFrame`` (human18, source pixels), one
    reading per box; ``wants_boxes`` tells ``evaluation.runner`` to pass the labelled boxes."""

    wants_boxes = True

    def __init__(self, weights: str | None = None) -> None:
        """``weights``: the crop refiner's file (None: the shipped one)."""
        from posetracker.refiners import load_refiner, refiner_path

        self.spec = load_skeleton("human18")
        self.refiner = load_refiner(weights or refiner_path("crop", "human18"), self.spec)

    @torch.inference_mode()
    def __call__(self, rgb: np.ndarray, boxes: np.ndarray) -> PoseFrame:
        from posetracker.model.thunder import crop_around_box, decode_thunder

        k = self.spec.num_joints
        boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
        boxes = boxes[(boxes[:, 2] > 0) & (boxes[:, 3] > 0)]
        kp = np.zeros((len(boxes), k, 3), np.float32)
        conf = np.zeros((len(boxes), k), np.float32)
        if len(boxes):
            size = self.refiner.net.input_size
            cut = [crop_around_box(rgb, (x, y, x + w, y + h), size=size, expand=self.refiner.expand)
                   for x, y, w, h in boxes]
            batch = torch.from_numpy(np.stack([c for c, _ in cut])).permute(0, 3, 1, 2).float()
            heads = {n: v.permute(0, 2, 3, 1).numpy() for n, v in self.refiner.net(batch).items()}
            weight = self.refiner.centre_weight.numpy()
            for i, (_, (x0, y0, side)) in enumerate(cut):
                got = decode_thunder(heads["centre"][i], heads["heatmap"][i], heads["regress"][i],
                                     heads["offset"][i], weight)  # (17, 3) y, x normalised, score
                kp[i, :17, 0] = x0 + got[:, 1] * side
                kp[i, :17, 1] = y0 + got[:, 0] * side
                conf[i, :17] = got[:, 2]
            root = self.spec.root
            kp[:, root, :2] = 0.5 * (kp[:, :17, :2].min(1) + kp[:, :17, :2].max(1))
            conf[:, root] = conf[:, :17].mean(1)
        h, w = rgb.shape[:2]
        return PoseFrame(0, 0.0, kp, conf, conf[:, :17].mean(1).astype(np.float32),
                         np.full(len(boxes), -1, np.int64), (w, h))
