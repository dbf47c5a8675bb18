"""BlazePose GHUM teacher: a PyTorch rebuild of MediaPipe Pose for making training labels.

Used only to make labels, never at run time. The networks are rebuilt from
the original .tflite files (``shared/pretrained/blazepose/``: detector
``pose_detection.tflite``, landmark ``pose_landmark_{full,heavy}.tflite``);
pre/post-processing follows MediaPipe's pose graphs (see blazepose_geometry).

    teacher = BlazePoseTeacher("full")
    people = teacher.predict(rgb)            # detector -> ROI -> landmarks (single person by default)
    people = teacher.predict_crops(rgb, boxes)  # ROIs from external person boxes (multi-person)
    people = teacher.track(rgb)              # video: next ROI from the auxiliary landmarks

Each ``BlazePosePerson`` holds the 33 landmarks (33, 5) = image px x, y, z
(same scale as x, relative to the hips' depth), visibility, presence
(sigmoids), world (33, 3) metres hip-centred with x, y rotated back to the
image axes, the pose presence flag and the ROI/crop used. MediaPipe's
temporal smoothing filters are not applied (labels are per frame).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from posetracker.train.teachers import blazepose_geometry as geo
from posetracker.train.teachers.blazepose_nets import PoseDetectorNet, PoseLandmarkNet

VARIANTS = ("full", "heavy")


def default_model_dir() -> Path:
    """``$POSETRACKER_SHARED/pretrained/blazepose`` or ``<repo>/../shared/pretrained/blazepose``."""
    shared = os.environ.get("POSETRACKER_SHARED")
    root = Path(shared) if shared else Path(__file__).resolve().parents[4] / "shared"
    return root / "pretrained" / "blazepose"


@dataclass
class BlazePosePerson:
    """One person. landmarks (33, 5): x px, y px, z (px scale), visibility, presence.

    world (33, 3) metres, hip-centred, image-aligned axes (x right, y down, z away from the
    camera); aux (2, 2) px: the auxiliary points that define the next ROI; presence: pose flag;
    score: detector score (nan for external boxes); roi: the crop (cx, cy, side, angle);
    crop_matrix (2, 3): image px -> 256x256 crop px.
    """

    landmarks: np.ndarray
    world: np.ndarray
    aux: np.ndarray
    presence: float
    score: float
    roi: geo.Roi
    crop_matrix: np.ndarray


class BlazePoseTeacher:
    """MediaPipe Pose (BlazePose GHUM) in PyTorch; ``variant`` "full" or "heavy"."""

    def __init__(self, variant: str = "full", model_dir: str | Path | None = None,
                 min_detection_score: float = geo.MIN_DETECTION_SCORE,
                 min_presence: float = geo.POSE_PRESENCE_THRESHOLD, refine: bool = True,
                 device: str | torch.device = "cpu"):
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
        self.variant = variant
        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        self.min_detection_score = min_detection_score
        self.min_presence = min_presence
        self.refine = refine
        self.device = torch.device(device)
        self.anchors = geo.ssd_anchors()
        self._rois: list[geo.Roi] = []
        self._build()

    def _build(self) -> None:
        self.detector = PoseDetectorNet(self.model_dir / "pose_detection.tflite").eval().to(self.device)
        path = self.model_dir / f"pose_landmark_{self.variant}.tflite"
        self.landmarker = PoseLandmarkNet(path).eval().to(self.device)

    # -- raw model calls (NHWC numpy in, numpy out, as the .tflite files) -----------------
    @torch.no_grad()
    def run_detector(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(B, 224, 224, 3) float32 in [-1, 1] -> boxes (B, 2254, 12), score logits (B, 2254, 1)."""
        t = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))).to(self.device)
        boxes, scores = self.detector(t)
        return boxes.cpu().numpy(), scores.cpu().numpy()

    @torch.no_grad()
    def run_landmarks(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """(B, 256, 256, 3) float32 in [0, 1] -> landmarks (B, 195), world (B, 117), flag (B, 1),
        heatmap (B, 64, 64, 39) (NHWC like the file's Identity_3)."""
        t = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))).to(self.device)
        out = self.landmarker(t, maps=False, heatmap=self.refine)
        res = {k: v.cpu().numpy() for k, v in out.items()}
        if "heatmap" in res:
            res["heatmap"] = res["heatmap"].transpose(0, 2, 3, 1)
        return res

    # -- pipeline ------------------------------------------------------------------------------
    def detect(self, rgb: np.ndarray) -> list[geo.Detection]:
        """(H, W, 3) uint8 RGB -> detections (image px), best first."""
        x, letterbox = geo.detector_input(rgb)
        boxes, scores = self.run_detector(x[None])
        s, b, k = geo.decode_detections(boxes[0], scores[0], self.anchors, self.min_detection_score)
        return geo.detections_to_image(geo.weighted_nms(s, b, k), letterbox)

    def predict(self, rgb: np.ndarray, max_people: int = 1) -> list[BlazePosePerson]:
        """(H, W, 3) uint8 RGB -> people (MediaPipe keeps the best detection: ``max_people=1``)."""
        dets = self.detect(rgb)[:max_people]
        rois = [geo.roi_from_points(d.keypoints[0], d.keypoints[1]) for d in dets]
        return self.predict_rois(rgb, rois, [d.score for d in dets])

    def predict_crops(self, rgb: np.ndarray, boxes: np.ndarray, scale: float = geo.ROI_SCALE,
                      keep_absent: bool = False) -> list[BlazePosePerson]:
        """Landmarks for external person boxes (N, 4) xyxy px (e.g. from our own detector).

        Each box becomes an upright square ROI (long side * ``scale``) around its centre.
        People whose pose flag is under ``min_presence`` are dropped unless ``keep_absent``.
        """
        rois = [geo.roi_from_box(b, scale) for b in np.asarray(boxes, np.float64).reshape(-1, 4)]
        return self.predict_rois(rgb, rois, keep_absent=keep_absent)

    def predict_rois(self, rgb: np.ndarray, rois: list[geo.Roi], scores: list[float] | None = None,
                     keep_absent: bool = False) -> list[BlazePosePerson]:
        """Run the landmark model on each ROI (one batch) and map the outputs to the image."""
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ValueError(f"expected an (H, W, 3) uint8 RGB image, got {rgb.shape} {rgb.dtype}")
        if not rois:
            return []
        crops, mats = zip(*(geo.landmark_input(rgb, r) for r in rois))
        x = np.stack(crops).astype(np.float32) * np.float32(1.0 / 255.0)
        raw = self.run_landmarks(x)
        people = []
        for i, roi in enumerate(rois):
            presence = float(raw["flag"][i, 0])
            if presence < self.min_presence and not keep_absent:
                continue
            heat = raw["heatmap"][i] if self.refine else None
            score = float("nan") if scores is None else float(scores[i])
            people.append(self._person(raw["landmarks"][i], raw["world"][i], heat, presence, score,
                                       roi, mats[i]))
        return people

    @staticmethod
    def _person(lm: np.ndarray, world: np.ndarray, heatmap: np.ndarray | None, presence: float,
                score: float, roi: geo.Roi, matrix: np.ndarray) -> BlazePosePerson:
        """Raw (195,), (117,) outputs of one crop -> a BlazePosePerson in image coordinates."""
        size = geo.LANDMARK_SIZE
        lm = lm.reshape(-1, 5).astype(np.float32)
        xy = lm[:, :2] / np.float32(size)
        if heatmap is not None:
            xy = geo.refine_from_heatmap(xy, heatmap)
        img_xy = geo.to_image(xy.astype(np.float64) * size, roi, size)
        z = lm[:, 2:3].astype(np.float64) / size * roi.size
        sig = 1.0 / (1.0 + np.exp(-lm[:, 3:5].astype(np.float64)))
        full = np.concatenate([img_xy, z, sig], 1)
        w = geo.rotate_world(world.reshape(-1, 3).astype(np.float64), roi.angle)
        n = geo.NUM_LANDMARKS
        return BlazePosePerson(full[:n], w[:n], full[n:n + 2, :2], presence, score, roi, matrix)

    def track(self, rgb: np.ndarray) -> list[BlazePosePerson]:
        """Video mode: reuse the ROI from the previous frame's auxiliary landmarks; detect when lost."""
        people = self.predict_rois(rgb, self._rois) if self._rois else []
        if not people:
            people = self.predict(rgb)
        self._rois = [geo.roi_from_points(p.aux[0], p.aux[1]) for p in people]
        return people

    def reset(self) -> None:
        """Forget the tracked ROI (start of a new video)."""
        self._rois = []
