"""Frames to network input: letterbox, and back.

``letterbox`` scales the longer side to ``size`` (cv2 INTER_AREA when
shrinking, INTER_LINEAR when enlarging), keeps the aspect ratio and pastes
the result at the top-left of a black canvas: a ``size`` x ``size`` square, or
with ``fit`` a canvas fitted to the frame's aspect, each side rounded up to a
multiple of ``FIT_MULTIPLE`` (a 16:9 frame: 256 x 160 instead of 256 x 256,
0.63x the backbone's work). An input pixel (x, y) is the source pixel
(x / scale, y / scale) either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import torch

INPUT_SIZE = 256
FIT_MULTIPLE = 32  # the backbone's total stride: network input sides are multiples of it


@dataclass(frozen=True)
class Letterbox:
    """How a source frame of (width, height) maps into the network input: ``input_size`` is its longer
    side, ``input_shape`` its (height, width) (square unless aspect-fitted)."""

    scale: float
    source_size: tuple[int, int]
    input_size: int = INPUT_SIZE
    input_shape: tuple[int, int] = (INPUT_SIZE, INPUT_SIZE)

    def to_source(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) input pixels -> source pixels."""
        return xy / self.scale

    def to_input(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) source pixels -> input pixels."""
        return xy * self.scale


def fitted_shape(width: int, height: int, size: int = INPUT_SIZE) -> tuple[int, int]:
    """(height, width) of the aspect-fitted input of a width x height frame: the longer side ``size``,
    the other scaled alike and rounded up to a multiple of ``FIT_MULTIPLE``."""
    scale = size / max(height, width)

    def up(n: float) -> int:
        return min(size, max(FIT_MULTIPLE, -(-round(n) // FIT_MULTIPLE) * FIT_MULTIPLE))

    return up(height * scale), up(width * scale)


def letterbox(rgb: np.ndarray, size: int = INPUT_SIZE, fit: bool = False) -> tuple[np.ndarray, Letterbox]:
    """(H, W, 3) uint8 RGB -> ((size, size, 3) uint8 RGB, or with ``fit`` (h, w, 3) of
    :func:`fitted_shape`; Letterbox)."""
    h, w = rgb.shape[:2]
    scale = size / max(h, w)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    if (nw, nh) == (w, h):
        resized = rgb
    elif scale >= 1:
        resized = cv2.resize(rgb, (nw, nh), interpolation=cv2.INTER_LINEAR)
    elif w % nw or h % nh:  # OpenCV's area resize of uint8 at a non-integer ratio takes a slow generic path;
        # its float path is ~25% faster and gives the same pixels once rounded (tests/model/test_preprocess.py)
        resized = np.rint(cv2.resize(rgb.astype(np.float32), (nw, nh), interpolation=cv2.INTER_AREA)).astype(np.uint8)
    else:  # integer ratios: the uint8 fast path
        resized = cv2.resize(rgb, (nw, nh), interpolation=cv2.INTER_AREA)
    shape = fitted_shape(w, h, size) if fit else (size, size)
    out = np.zeros((*shape, 3), np.uint8)
    out[:nh, :nw] = resized
    return out, Letterbox(scale=scale, source_size=(w, h), input_size=size, input_shape=shape)


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """(..., H, W, 3) uint8 RGB -> (..., 3, H, W) float32 in 0..255."""
    t = torch.from_numpy(np.ascontiguousarray(images)).float()
    return t.movedim(-1, -3)
