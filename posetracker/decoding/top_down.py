"""Top-down mode for small animals in large frames (a skeleton's ``top_down: {crop_px: ...}``).

A fly 135 px long in a 1024 px frame covers ~6 x 5 feature cells of the whole frame read at 256 px: enough
to find its centre, too few for 13 keypoints. So, as SLEAP and DeepLabCut do for such footage, each animal
the whole-frame pass finds is read again from a ``crop_px`` square of the full-resolution frame around its
centre, scaled to the network's input (192 px -> 256: 1.33x the source resolution instead of 0.25x). The
crops of a frame run as one batch; in each crop the animal whose centre is nearest the crop's centre
replaces the whole-frame reading (its keypoints and confidences; its score and depth reads stay).

Training samples cut the same crops around each labelled animal
(:func:`posetracker.train.detector_samples.crop_matrix`), so the network learns both scales.
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from posetracker.decoding.people import DecodedPeople
from posetracker.decoding.tiles import shift_people
from posetracker.model.preprocess import INPUT_SIZE


def crop_window(centre: np.ndarray, crop_px: float) -> tuple[float, float, float]:
    """(x0, y0, side) of the ``crop_px`` square centred on ``centre`` (2,) source px (it may leave the frame)."""
    return float(centre[0]) - crop_px / 2, float(centre[1]) - crop_px / 2, float(crop_px)


def cut_crop(rgb: np.ndarray, window: tuple[float, float, float], size: int) -> np.ndarray:
    """The ``window`` (x0, y0, side) of an (H, W, 3) uint8 frame, scaled to (size, size, 3); black outside it."""
    x0, y0, side = window
    s = size / side
    m = np.array([[s, 0.0, -x0 * s], [0.0, s, -y0 * s]], np.float64)
    return cv2.warpAffine(rgb, m, (size, size), flags=cv2.INTER_LINEAR, borderValue=(0, 0, 0))


def centred_person(people: DecodedPeople, root: int, size: int, radius: float = 0.25) -> int:
    """Index of the person whose ``root`` joint lies nearest the centre of a size x size crop, within
    ``radius`` x size of it; -1 when none does (the animal was a false detection, or left the crop)."""
    if people.num_people == 0:
        return -1
    d = np.linalg.norm(people.keypoints[:, root] - size / 2.0, axis=-1)
    d = np.where(np.isfinite(d), d, np.inf)
    best = int(np.argmin(d))
    return best if d[best] <= radius * size else -1


def read_crops(people: DecodedPeople, rgb: np.ndarray, root: int, crop_px: float,
               read: Callable[[np.ndarray], list[DecodedPeople]], size: int = INPUT_SIZE) -> DecodedPeople:
    """Each person of an (H, W, 3) frame (its pixels) read again from a ``crop_px`` crop around its ``root``.
    read: crops (N, size, size, 3) uint8 -> each crop's people in crop-input pixels (one batch). The person
    nearest a crop's centre replaces that person's keypoints and confidences; scores and depth reads stay."""
    chosen = [p for p in range(people.num_people) if np.isfinite(people.keypoints[p, root]).all()]
    if not chosen:
        return people
    windows = [crop_window(people.keypoints[p, root], crop_px) for p in chosen]
    found = read(np.stack([cut_crop(rgb, w, size) for w in windows]))
    kp, conf, pred = people.keypoints.copy(), people.confidence.copy(), people.predicted.copy()
    for p, (x0, y0, side), crop in zip(chosen, windows, found):
        j = centred_person(crop, root, size)
        if j >= 0:
            one = shift_people(crop.take(np.array([j])), size / side, (x0, y0))
            kp[p], conf[p], pred[p] = one.keypoints[0], one.confidence[0], one.predicted[0]
    return DecodedPeople(kp, conf, people.scores, people.depth_reads, pred)


__all__ = ["centred_person", "crop_window", "cut_crop", "read_crops"]
