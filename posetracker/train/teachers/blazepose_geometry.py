"""BlazePose pre/post-processing as MediaPipe's pose graphs run it (numpy + OpenCV).

Constants come from mediapipe/modules/pose_detection/pose_detection_cpu.pbtxt,
pose_landmark/pose_detection_to_roi.pbtxt, pose_landmarks_to_roi.pbtxt and
tensors_to_pose_landmarks_and_segmentation.pbtxt (MediaPipe 0.8.4 and later,
the versions that ship these model files):

- detector input: the whole image letterboxed (centred, long side) to
  224x224, zero border, values x * 2/255 - 1 (so the border is -1);
- SSD anchors: 5 layers, strides 8/16/32/32/32, offset 0.5, aspect ratio 1
  plus the interpolated scale -> 2 anchors per layer and cell, fixed anchor
  size 1 -> 28*28*2 + 14*14*2 + 7*7*6 = 2254 anchors;
- decoding: raw box (x, y, w, h) and 4 keypoints (x, y) in 224-pixel units
  relative to the anchor centre; score = sigmoid(clip(logit, +-100));
- score threshold 0.5 (MediaPipe Pose's min_detection_confidence default,
  which overrides the graph's 0.2), weighted NMS with IoU threshold 0.3;
- ROI: centre = keypoint 0 (mid-hip), side = 2 * |kp1 - kp0| * 1.25, rotated
  so that kp0 -> kp1 points up (target angle 90 degrees);
- landmark input: the ROI warped to 256x256 (border replicated), x / 255;
- landmark output: 39 x (x, y, z, visibility, presence) in crop pixels,
  refined from the 64x64 heatmap (7x7 window, min confidence 0.5), mapped
  back by the ROI; world landmarks rotated by the ROI angle; the pose is
  present when the flag >= 0.5.
Coordinates here are image pixels unless said otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

DETECTOR_SIZE = 224
LANDMARK_SIZE = 256
ANCHOR_STRIDES = (8, 16, 32, 32, 32)
ANCHOR_OFFSET = 0.5
SCORE_CLIP = 100.0
MIN_DETECTION_SCORE = 0.5
NMS_IOU = 0.3
ROI_SCALE = 1.25
ROI_TARGET_ANGLE = math.pi / 2
POSE_PRESENCE_THRESHOLD = 0.5
HEATMAP_KERNEL = 7
HEATMAP_MIN_CONFIDENCE = 0.5
NUM_LANDMARKS = 33  # + 2 auxiliary (33: hip centre, 34: scale/rotation point) + 4 unused


@dataclass(frozen=True)
class Roi:
    """A rotated square region: centre (cx, cy) px, side px, angle rad (clockwise on screen)."""

    cx: float
    cy: float
    size: float
    angle: float

    def as_array(self) -> np.ndarray:
        return np.array([self.cx, self.cy, self.size, self.angle], np.float64)


@dataclass(frozen=True)
class Detection:
    """A detector output in image pixels: score, face box (xmin, ymin, xmax, ymax), 4 keypoints (4, 2)."""

    score: float
    box: np.ndarray
    keypoints: np.ndarray


def ssd_anchors(size: int = DETECTOR_SIZE) -> np.ndarray:
    """Anchor centres (2254, 2) as (x, y) in [0, 1], in the model's output order (layer, y, x, anchor)."""
    out = []
    layer = 0
    while layer < len(ANCHOR_STRIDES):
        last = layer
        while last < len(ANCHOR_STRIDES) and ANCHOR_STRIDES[last] == ANCHOR_STRIDES[layer]:
            last += 1
        per_cell = 2 * (last - layer)  # aspect ratio 1.0 + interpolated scale, per merged layer
        n = math.ceil(size / ANCHOR_STRIDES[layer])
        ys, xs = np.meshgrid((np.arange(n) + ANCHOR_OFFSET) / n, (np.arange(n) + ANCHOR_OFFSET) / n, indexing="ij")
        centres = np.stack([xs, ys], -1).reshape(-1, 1, 2)
        out.append(np.repeat(centres, per_cell, axis=1).reshape(-1, 2))
        layer = last
    return np.concatenate(out).astype(np.float32)


def decode_detections(boxes: np.ndarray, scores: np.ndarray, anchors: np.ndarray,
                      min_score: float = MIN_DETECTION_SCORE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raw (2254, 12) boxes and (2254, 1) logits -> kept (N,) scores, (N, 4) xyxy, (N, 4, 2) keypoints.

    Coordinates are normalised to the 224x224 letterboxed input.
    """
    logits = np.clip(scores.reshape(-1).astype(np.float64), -SCORE_CLIP, SCORE_CLIP)
    prob = 1.0 / (1.0 + np.exp(-logits))
    keep = prob >= min_score
    raw, anc = boxes[keep].astype(np.float32), anchors[keep]
    c = raw[:, 0:2] / DETECTOR_SIZE + anc
    wh = raw[:, 2:4] / DETECTOR_SIZE
    xyxy = np.concatenate([c - wh / 2, c + wh / 2], 1)
    kps = raw[:, 4:12].reshape(-1, 4, 2) / DETECTOR_SIZE + anc[:, None, :]
    return prob[keep], xyxy, kps


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of one box (4,) against boxes (N, 4), xyxy."""
    w = np.clip(np.minimum(a[2], b[:, 2]) - np.maximum(a[0], b[:, 0]), 0, None)
    h = np.clip(np.minimum(a[3], b[:, 3]) - np.maximum(a[1], b[:, 1]), 0, None)
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def weighted_nms(scores: np.ndarray, boxes: np.ndarray, keypoints: np.ndarray,
                 iou_threshold: float = NMS_IOU) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """MediaPipe's WEIGHTED non-max suppression: each cluster (IoU > threshold with its best box)
    is replaced by the score-weighted mean of its boxes and keypoints, keeping the best score."""
    order = list(np.argsort(-scores, kind="stable"))
    out = []
    while order:
        best = order[0]
        sim = _iou(boxes[best], boxes[order])
        cand = [i for i, s in zip(order, sim) if s > iou_threshold]
        rest = [i for i, s in zip(order, sim) if not s > iou_threshold]
        w = scores[cand][:, None]
        total = w.sum()
        box = (boxes[cand] * w).sum(0) / total
        kps = (keypoints[cand] * w[:, :, None]).sum(0) / total
        out.append((float(scores[best]), box, kps))
        if len(rest) == len(order):
            break
        order = rest
    return out


def letterbox_roi(height: int, width: int) -> Roi:
    """The whole image as a centred square ROI of the long side (MediaPipe's keep_aspect_ratio)."""
    return Roi(width / 2.0, height / 2.0, float(max(height, width)), 0.0)


def crop_matrix(roi: Roi, size: int) -> np.ndarray:
    """(2, 3) affine image px -> crop px mapping the ROI's corners onto the crop's corners [0, size]."""
    k = size / roi.size
    c, s = math.cos(roi.angle), math.sin(roi.angle)
    a = np.array([[k * c, k * s], [-k * s, k * c]])
    t = np.array([size / 2.0, size / 2.0]) - a @ np.array([roi.cx, roi.cy])
    return np.concatenate([a, t[:, None]], 1)


def warp(rgb: np.ndarray, matrix: np.ndarray, size: int, border: int) -> np.ndarray:
    """(H, W, 3) uint8 -> (size, size, 3) uint8 by cv2.warpAffine (bilinear)."""
    return cv2.warpAffine(rgb, matrix, (size, size), flags=cv2.INTER_LINEAR, borderMode=border, borderValue=0)


def detector_input(rgb: np.ndarray) -> tuple[np.ndarray, Roi]:
    """(H, W, 3) uint8 -> (224, 224, 3) float32 in [-1, 1] (border -1) and the letterbox ROI."""
    roi = letterbox_roi(*rgb.shape[:2])
    crop = warp(rgb, crop_matrix(roi, DETECTOR_SIZE), DETECTOR_SIZE, cv2.BORDER_CONSTANT)
    return crop.astype(np.float32) * np.float32(2.0 / 255.0) - np.float32(1.0), roi


def landmark_input(rgb: np.ndarray, roi: Roi) -> tuple[np.ndarray, np.ndarray]:
    """(H, W, 3) uint8 -> the ROI as (256, 256, 3) uint8 (border replicated) and its (2, 3) matrix."""
    m = crop_matrix(roi, LANDMARK_SIZE)
    return warp(rgb, m, LANDMARK_SIZE, cv2.BORDER_REPLICATE), m


def to_image(points: np.ndarray, roi: Roi, size: int) -> np.ndarray:
    """Crop px (N, 2) -> image px (N, 2): rotate the offset from the crop centre by the ROI angle."""
    u = points / size - 0.5
    c, s = math.cos(roi.angle), math.sin(roi.angle)
    x = (c * u[:, 0] - s * u[:, 1]) * roi.size + roi.cx
    y = (s * u[:, 0] + c * u[:, 1]) * roi.size + roi.cy
    return np.stack([x, y], 1)


def detections_to_image(dets: list[tuple[float, np.ndarray, np.ndarray]], letterbox: Roi) -> list[Detection]:
    """Letterbox-normalised detections -> image px (letterbox removal)."""
    out = []
    for score, box, kps in dets:
        corners = to_image(box.reshape(2, 2) * DETECTOR_SIZE, letterbox, DETECTOR_SIZE).reshape(4)
        out.append(Detection(score, corners, to_image(kps * DETECTOR_SIZE, letterbox, DETECTOR_SIZE)))
    return out


def roi_from_points(centre: np.ndarray, scale_point: np.ndarray, scale: float = ROI_SCALE) -> Roi:
    """Alignment-points ROI: centred on ``centre``, side 2|p1 - p0| * scale, p0 -> p1 pointing up."""
    dx, dy = float(scale_point[0] - centre[0]), float(scale_point[1] - centre[1])
    angle = ROI_TARGET_ANGLE - math.atan2(-dy, dx)
    angle = angle - 2 * math.pi * math.floor((angle + math.pi) / (2 * math.pi))  # to [-pi, pi)
    return Roi(float(centre[0]), float(centre[1]), 2.0 * math.hypot(dx, dy) * scale, angle)


def roi_from_box(box: np.ndarray, scale: float = ROI_SCALE) -> Roi:
    """An upright ROI for an external person box (xmin, ymin, xmax, ymax): centre of the box,
    side = long side * scale (the detector's ROI also leaves a 1.25 margin around the body)."""
    x0, y0, x1, y1 = (float(v) for v in box)
    return Roi((x0 + x1) / 2, (y0 + y1) / 2, max(x1 - x0, y1 - y0) * scale, 0.0)


def refine_from_heatmap(xy: np.ndarray, heatmap: np.ndarray, kernel: int = HEATMAP_KERNEL,
                        min_confidence: float = HEATMAP_MIN_CONFIDENCE) -> np.ndarray:
    """RefineLandmarksFromHeatmapCalculator: xy (K, 2) normalised to the crop, heatmap (h, w, K) logits.

    Each point inside the heatmap is replaced by the sigmoid-weighted mean cell index (divided by
    the heatmap size) of the kernel window around it, when the window's max confidence reaches
    ``min_confidence``. Returns refined (K, 2) normalised coordinates.
    """
    h, w, k = heatmap.shape
    out = xy.astype(np.float32).copy()
    off = (kernel - 1) // 2
    for i in range(k):
        col, row = int(np.float32(xy[i, 0]) * w), int(np.float32(xy[i, 1]) * h)  # truncation, as in C++
        if col < 0 or col >= w or row < 0 or col >= h:  # sic: MediaPipe checks col against the height
            continue
        r0, r1 = max(0, row - off), min(h, row + off + 1)
        c0, c1 = max(0, col - off), min(w, col + off + 1)
        conf = 1.0 / (1.0 + np.exp(-heatmap[r0:r1, c0:c1, i].astype(np.float32)))
        total = float(conf.sum())
        if conf.size and float(conf.max()) >= min_confidence and total > 0:
            rows, cols = np.mgrid[r0:r1, c0:c1]
            out[i, 0] = float((cols * conf).sum()) / w / total
            out[i, 1] = float((rows * conf).sum()) / h / total
    return out


def rotate_world(world: np.ndarray, angle: float) -> np.ndarray:
    """(K, 3) crop-aligned world landmarks -> image-aligned: x, y rotated by the ROI angle."""
    c, s = math.cos(angle), math.sin(angle)
    x, y = world[:, 0], world[:, 1]
    return np.stack([c * x - s * y, s * x + c * y, world[:, 2]], 1)
