"""Frames to network input: letterbox to a square, and back.

``letterbox`` scales the longer side to ``size`` (cv2 INTER_AREA when
shrinking, INTER_LINEAR when enlarging), keeps the aspect ratio and pastes
the result at the top-left of a black square. An input pixel (x, y) is the
source pixel (x / scale, y / scale).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import torch

INPUT_SIZE = 256


@dataclass(frozen=True)
class Letterbox:
    """How a source frame of (width, height) maps into the square network input."""

    scale: float
    source_size: tuple[int, int]
    input_size: int = INPUT_SIZE

    def to_source(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) input pixels -> source pixels."""
        return xy / self.scale

    def to_input(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) source pixels -> input pixels."""
        return xy * self.scale


def letterbox(rgb: np.ndarray, size: int = INPUT_SIZE) -> tuple[np.ndarray, Letterbox]:
    """(H, W, 3) uint8 RGB -> ((size, size, 3) uint8 RGB, Letterbox)."""
    h, w = rgb.shape[:2]
    scale = size / max(h, w)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    resized = rgb if (nw, nh) == (w, h) else cv2.resize(rgb, (nw, nh), interpolation=interp)
    out = np.zeros((size, size, 3), np.uint8)
    out[:nh, :nw] = resized
    return out, Letterbox(scale=scale, source_size=(w, h), input_size=size)


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """(..., H, W, 3) uint8 RGB -> (..., 3, H, W) float32 in 0..255."""
    t = torch.from_numpy(np.ascontiguousarray(images)).float()
    return t.movedim(-1, -3)
