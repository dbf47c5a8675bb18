"""The precision stage (``crop``): a top-down single-person network on a crop around each person.

The bottom-up network finds everyone at once at 256 px for the whole frame, so a
person 100 px tall in a 1080p frame spans ~6 feature cells. This stage cuts a
square crop around each person it found, from the full-resolution frame, and
runs MoveNet SinglePose Thunder (:mod:`posetracker.model.thunder`) on it:

1. box = the person's joints with confidence >= ``box_confidence`` (all joints
   if fewer than ``min_joints``), as decoded in source pixels;
2. crop = that box's centre, side ``expand`` x its longer side, zero-padded
   outside the frame, resized to 256 x 256 (``crop_around_box``);
3. Thunder's own decode gives (x, y, score) per COCO-17 joint, mapped back to
   source pixels;
4. fusion: those joints are replaced by Thunder's, with Thunder's score as their
   confidence (replacing measured better than keeping the more confident of the
   two or averaging them by confidence: ``docs/experiments/crop-stage.md``);
   joints Thunder does not predict (the body centre) keep theirs.

All the people of a frame go through the network as one batch. A per-frame time
budget (``budget_ms``, given by the session in live mode) limits how many people
are refined: the least certain first (lowest mean joint confidence), as many as
the running cost per crop allows, at least one.

Weights: ``models/refiner-crop-human18.safetensors``, Thunder converted from the
TF.js files (``posetracker.model.convert.thunder``), fp16 as published.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from posetracker.model.runtime import accelerate_thunder
from posetracker.model.thunder import COCO17, GRID, ThunderNet, centre_weight, crop_around_box, decode_thunder
from posetracker.refiners.base import Refiner, RefinerError, register_refiner
from posetracker.skeletons import SkeletonSpec


@register_refiner("crop")
class CropRefiner(Refiner):
    """Thunder on person crops; see the module docstring. Works on any skeleton with the COCO-17 joints."""

    kind = "crop"
    label = "Precision stage (Thunder on crops)"

    def __init__(self, spec: SkeletonSpec, expand: float = 1.25, box_confidence: float = 0.1, min_joints: int = 2):
        super().__init__(spec)
        missing = [n for n in COCO17 if n not in spec.joint_names]
        if missing:
            raise RefinerError(f"the crop refiner needs the COCO-17 joints; {spec.name} lacks {', '.join(missing)}")
        self.joints = np.asarray([spec.index(n) for n in COCO17], dtype=np.int64)  # (17,) skeleton index per Thunder joint
        self.expand, self.box_confidence, self.min_joints = expand, box_confidence, min_joints
        self.net = ThunderNet()
        self.register_buffer("centre_weight", torch.zeros(GRID, GRID))  # Thunder's centre prior (see model.thunder)
        self.ms_per_crop = 30.0  # running estimate, updated after every batch
        self.last_refined = 0  # people refined in the last frame

    @classmethod
    def from_tfjs(cls, json_path: str | Path, spec: SkeletonSpec) -> CropRefiner:
        """The refiner with Thunder's weights converted from its TF.js files (``movenet-thunder.json`` + ``.bin``)."""
        refiner = cls(spec)
        refiner.net.load_state_dict(ThunderNet.from_tfjs(json_path).state_dict())
        refiner.centre_weight.copy_(torch.from_numpy(centre_weight(json_path)))
        return refiner.eval()

    def accelerate(self, threads: int = 1) -> None:
        """Run Thunder in ONNX Runtime from now on (``model.runtime.accelerate_thunder``; ~28 against
        ~48-70 ms a crop in torch eager on one thread here)."""
        object.__setattr__(self, "_runner", accelerate_thunder(self.net, threads))  # not a submodule: no state

    def boxes(self, xy: np.ndarray, confidence: np.ndarray) -> np.ndarray:
        """xy (P, K, 2) px, confidence (P, K) -> (P, 4) boxes (x1, y1, x2, y2) px; nan where none fits."""
        out = np.full((len(xy), 4), np.nan)
        for p in range(len(xy)):
            ok = confidence[p, self.joints] >= self.box_confidence
            pts = xy[p, self.joints][ok] if ok.sum() >= self.min_joints else xy[p, self.joints]
            pts = pts[np.isfinite(pts).all(axis=1)]
            if len(pts):
                (x1, y1), (x2, y2) = pts.min(axis=0), pts.max(axis=0)
                if x2 - x1 >= 2 or y2 - y1 >= 2:
                    out[p] = (x1, y1, max(x2, x1 + 2), max(y2, y1 + 2))
        return out

    def choose(self, confidence: np.ndarray, ok: np.ndarray, budget_ms: float | None = None) -> np.ndarray:
        """Indices of the people to refine this frame: all (no budget), or within ``budget_ms`` the least
        certain first, at least one."""
        people = np.flatnonzero(ok)
        if budget_ms is None or len(people) == 0:
            return people
        n = max(1, int(budget_ms // max(self.ms_per_crop, 1e-3)))
        order = np.argsort(confidence[people][:, self.joints].mean(axis=1), kind="stable")
        return np.sort(people[order[:n]])

    @torch.no_grad()
    def refine_frame(self, xy: np.ndarray, confidence: np.ndarray, rgb: np.ndarray,
                     budget_ms: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """xy (P, K, 2) source px, confidence (P, K), rgb (H, W, 3) uint8 the source frame
        -> (xy, confidence) with the chosen people's COCO-17 joints replaced by Thunder's."""
        boxes = self.boxes(xy, confidence)
        chosen = self.choose(confidence, np.isfinite(boxes).all(axis=1), budget_ms)
        self.last_refined = len(chosen)
        if len(chosen) == 0:
            return xy, confidence
        t0 = time.perf_counter()
        crops, windows = zip(*(crop_around_box(rgb, boxes[p], expand=self.expand) for p in chosen))
        batch = torch.from_numpy(np.stack(crops)).permute(0, 3, 1, 2).float()  # (N, 3, 256, 256) RGB 0..255
        runner = self.__dict__.get("_runner", self.net)
        heads = {k: v.permute(0, 2, 3, 1).numpy() for k, v in runner(batch).items()}  # (N, 64, 64, C) each
        xy, confidence = xy.copy(), confidence.copy()
        weight = self.centre_weight.numpy()
        for i, (p, (x0, y0, side)) in enumerate(zip(chosen, windows)):
            kp = decode_thunder(heads["centre"][i], heads["heatmap"][i], heads["regress"][i], heads["offset"][i], weight)
            xy[p, self.joints, 0] = x0 + kp[:, 1] * side
            xy[p, self.joints, 1] = y0 + kp[:, 0] * side
            confidence[p, self.joints] = kp[:, 2]
        ms = (time.perf_counter() - t0) * 1000 / len(chosen)
        self.ms_per_crop = 0.8 * self.ms_per_crop + 0.2 * ms
        return xy, confidence
