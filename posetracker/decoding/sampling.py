"""Reading feature maps at cell positions (nearest cell or bilinear).

The value stored at integer cell ``(iy, ix)`` refers to position ``(ix, iy)`` in
cells, so a continuous position ``(x, y)`` is read between the four cells around
it. Positions outside the map read the border (replicate padding).
"""

from __future__ import annotations

import numpy as np


def read_cells(maps: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Values at integer cells.

    maps: (C, h, w); x, y: (N,) int cell indices (clamped to the map) -> (N, C) float64.
    """
    h, w = maps.shape[-2:]
    xi = np.minimum(np.maximum(np.asarray(x, dtype=np.int64), 0), w - 1)
    yi = np.minimum(np.maximum(np.asarray(y, dtype=np.int64), 0), h - 1)
    return maps[:, yi, xi].T.astype(np.float64)


def bilinear_weights(xy: np.ndarray, h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices and weights of the four cells around each position.

    xy: (N, 2) cell positions (x, y) -> index (N, 4) int64 into a flattened (h * w)
    map, weight (N, 4) float64 summing to 1. Reuse them to read several maps at once.
    """
    x = np.minimum(np.maximum(xy[:, 0], 0.0), w - 1.0)
    y = np.minimum(np.maximum(xy[:, 1], 0.0), h - 1.0)
    x0 = np.minimum(x.astype(np.int64), max(w - 2, 0))
    y0 = np.minimum(y.astype(np.int64), max(h - 2, 0))
    fx, fy = x - x0, y - y0
    index = np.empty((xy.shape[0], 4), dtype=np.int64)
    index[:, 0] = y0 * w + x0
    index[:, 1] = index[:, 0] + (1 if w > 1 else 0)
    index[:, 2] = index[:, 0] + (w if h > 1 else 0)
    index[:, 3] = index[:, 2] + (1 if w > 1 else 0)
    weight = np.empty((xy.shape[0], 4))
    weight[:, 0] = (1 - fx) * (1 - fy)
    weight[:, 1] = fx * (1 - fy)
    weight[:, 2] = (1 - fx) * fy
    weight[:, 3] = fx * fy
    return index, weight


def gather_bilinear(flat_maps: np.ndarray, index: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """flat_maps: (C, h * w); index, weight: (N, 4) from :func:`bilinear_weights` -> (N, C)."""
    return (flat_maps[:, index] * weight).sum(axis=-1).T


def gather_channels(flat_maps: np.ndarray, channels: np.ndarray, index: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """One channel per row: flat_maps (C, h * w); channels (J,); index, weight (J, N, 4) -> (J, N)."""
    return (flat_maps[channels[:, None, None], index] * weight).sum(axis=-1)


def sample_bilinear(maps: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Bilinear samples at continuous cell positions.

    maps: (C, h, w); xy: (N, 2) cell positions (x, y) -> (N, C) float64.
    """
    c, h, w = maps.shape
    index, weight = bilinear_weights(np.asarray(xy, dtype=np.float64), h, w)
    return gather_bilinear(maps.reshape(c, h * w), index, weight)


def sample_channels(maps: np.ndarray, channels: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Bilinear samples of one channel per row.

    maps: (C, h, w); channels: (J,) int; xy: (J, N, 2) cell positions -> (J, N) float64.
    """
    c, h, w = maps.shape
    n_j, n = xy.shape[:2]
    index, weight = bilinear_weights(np.asarray(xy, dtype=np.float64).reshape(-1, 2), h, w)
    return gather_channels(maps.reshape(c, h * w), channels, index.reshape(n_j, n, 4), weight.reshape(n_j, n, 4))


__all__ = ["read_cells", "bilinear_weights", "gather_bilinear", "gather_channels", "sample_bilinear", "sample_channels"]
