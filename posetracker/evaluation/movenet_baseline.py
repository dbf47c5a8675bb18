"""The original MoveNet MultiPose as a predictor, to score next to our decoder.

Our backbone (proven equal to the original graph, tests/model/test_parity.py), the
original six heads loaded unchanged from the TF.js source files, and the
original decode (:mod:`.movenet_decode`). Needs the source files
(../shared/pretrained/movenet/movenet-multipose.json); used by
``posetracker eval --baseline movenet`` only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from posetracker.model.backbone import MoveNetBackbone
from posetracker.model.convert.movenet import movenet_raw_heads
from posetracker.model.heads import SeparableHead
from posetracker.model.preprocess import letterbox, to_tensor
from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame

from posetracker.evaluation.movenet_decode import decode

HEAD_ORDER = ("centre", "heatmap", "regress", "offset", "box_scale", "box_offset")


def _head(w: dict) -> SeparableHead:
    head = SeparableHead(24, w["out"].shape[0])
    sd = {"depthwise.conv.weight": w["depthwise"], "pointwise.conv.weight": w["pointwise"],
          "pointwise.conv.bias": w["pointwise_bias"], "out.weight": w["out"][:, :, None, None],
          "out.bias": w["out_bias"]}
    head.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()})
    return head.eval()


class MoveNetBaseline:
    """``predict(rgb (H, W, 3) uint8) -> PoseFrame`` (human18, source pixels) with MoveNet's own decode.

    People with a person score below ``min_score`` are dropped. The human18
    centre joint is placed at the centre of MoveNet's person box.
    """

    def __init__(self, movenet_json: str | Path, backbone: MoveNetBackbone, spec: SkeletonSpec, min_score: float = 0.1):
        self.backbone = backbone.eval()
        self.heads = {k: _head(w) for k, w in movenet_raw_heads(movenet_json).items()}
        self.spec = spec
        self.min_score = min_score

    @torch.inference_mode()
    def predict(self, rgb: np.ndarray) -> PoseFrame:
        img, box = letterbox(rgb)
        feats = self.backbone(to_tensor(img)[None])
        raw = [self.heads[k](feats).permute(0, 2, 3, 1).numpy() for k in HEAD_ORDER]
        out = decode(*raw)[0]  # (6, 56): 17 x (y, x, score), ymin, xmin, ymax, xmax, score
        keep = out[:, 55] >= self.min_score
        out = out[keep]
        size = img.shape[0]
        kp = out[:, :51].reshape(-1, 17, 3)
        xy = np.stack([kp[..., 1], kp[..., 0]], -1) * size
        centre = np.stack([(out[:, 52] + out[:, 54]) / 2, (out[:, 51] + out[:, 53]) / 2], -1) * size
        p = len(out)
        k = self.spec.num_joints
        keypoints = np.full((p, k, 3), np.nan, np.float32)
        conf = np.zeros((p, k), np.float32)
        non_root = [j for j in range(k) if j != self.spec.root]
        keypoints[:, non_root, :2] = box.to_source(xy)
        keypoints[:, self.spec.root, :2] = box.to_source(centre)
        conf[:, non_root] = kp[..., 2]
        conf[:, self.spec.root] = out[:, 55]
        return PoseFrame(0, 0.0, keypoints, conf, out[:, 55].astype(np.float32), np.full(p, -1, np.int64),
                         image_size=box.source_size)
