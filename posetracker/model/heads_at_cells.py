"""Method A step 3, live: the offset, vector and depth heads evaluated only at the cells the decoder reads.

The decoder needs the heatmaps everywhere (it searches them for peaks) but reads ``offsets`` only at the
keypoint candidates, and ``vectors`` and ``depth`` at the centre peaks: a few dozen cells of the h x w map. Live mode's graph (``fused.LiveStep(sparse=True)``)
therefore stops after the two heatmap heads and hands out the heads' input, ``head_features``
(N, C, h, w); :class:`CellHeads` turns one frame's features into :class:`CellMap` objects that stand in
for the dense (channels, h, w) maps and compute a head only where they are indexed (about 0.2 ms a frame
instead of ~2 ms dense on one core for three heads at 64 x 64).

A ``CellMap`` supports what the decoder does with a map: ``.shape``, ``map[c, ys, xs]`` with ``c`` an int,
a slice or an int array that broadcasts with the cells (``ys``, ``xs``: int arrays of one shape; the head
runs once per cell, e.g. ``map[[[0], [1]], ys[None], xs[None]]`` reads two channels), and
``map.reshape(c, h * w)[c, flat_index]``; anything else (``np.asarray(map)``) computes the whole map. Values
equal the dense head's to float32 rounding (tests/model/test_heads_at_cells.py).
"""

from __future__ import annotations

import numpy as np
import torch

from posetracker.model.heads import PoseHeads, SeparableHead

SPARSE_KEYS = ("offsets", "vectors", "depth")  # the heads CellHeads evaluates at cells


class _Head:
    """One ``SeparableHead`` as numpy: depthwise 3x3 (C, 9), pointwise (H, C) + (H,) then ReLU, out (O, H) + (O,)."""

    def __init__(self, head: SeparableHead, rows: np.ndarray | None = None):
        def arr(t: torch.Tensor) -> np.ndarray:
            return t.detach().cpu().float().numpy()

        self.dw = arr(head.depthwise.conv.weight).reshape(-1, 9)  # (C, 9) in (ky, kx) order
        self.pw = arr(head.pointwise.conv.weight)[:, :, 0, 0]  # (H, C)
        self.pw_b = arr(head.pointwise.conv.bias)[:, None]
        out_w, out_b = arr(head.out.weight)[:, :, 0, 0], arr(head.out.bias)
        if rows is not None:  # output rows reordered, -1: a zero row (the root's offsets)
            zero = rows < 0
            out_w = np.where(zero[:, None], 0.0, out_w[np.maximum(rows, 0)]).astype(np.float32)
            out_b = np.where(zero, 0.0, out_b[np.maximum(rows, 0)]).astype(np.float32)
        self.out_w, self.out_b = out_w, out_b[:, None]

    @property
    def channels(self) -> int:
        return self.out_w.shape[0]

    def at(self, patches: np.ndarray) -> np.ndarray:
        """patches: (C, 9, M) the 3x3 neighbourhood of M cells -> (O, M) float32."""
        dw = np.einsum("ckm,ck->cm", patches, self.dw)
        hidden = np.maximum(self.pw @ dw + self.pw_b, 0.0)
        return self.out_w @ hidden + self.out_b


class CellHeads:
    """The offset, vector and depth heads of ``heads`` (a :class:`PoseHeads`) as numpy, for one frame's
    features at a time (:meth:`maps`)."""

    def __init__(self, heads: PoseHeads):
        off_rows = heads.off_order.cpu().numpy().copy()
        off_rows[off_rows == off_rows.max()] = -1  # the root's (dx, dy): zero, as PoseHeads pads it
        self.heads = {"offsets": _Head(heads.offsets, off_rows), "vectors": _Head(heads.vectors),
                      "depth": _Head(heads.depth)}

    def maps(self, features: np.ndarray) -> dict[str, CellMap]:
        """features: (C, h, w) float32, the heads' input of one frame -> {"offsets": (2K, h, w),
        "vectors": (2E, h, w), "depth": (1+E, h, w)} as :class:`CellMap`."""
        c, h, w = features.shape
        padded = np.zeros((c, h + 2, w + 2), np.float32)  # the heads' 3x3 SAME pad
        padded[:, 1:-1, 1:-1] = features
        return {name: CellMap(head, padded) for name, head in self.heads.items()}


class CellMap:
    """A head's (O, h, w) map, computed at the cells it is indexed at (see the module docstring)."""

    def __init__(self, head: _Head, padded: np.ndarray):
        self._head = head
        c, hp, wp = padded.shape
        self._flat = padded.reshape(c, hp * wp)
        self._taps = np.array([dy * wp + dx for dy in range(3) for dx in range(3)])  # (9,) 3x3 offsets, flat
        self._row = wp
        self.shape = (head.channels, hp - 2, wp - 2)
        self.ndim, self.dtype = 3, np.dtype(np.float32)

    def at(self, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
        """(M,) int cell rows and columns (inside the map) -> (O, M) float32: the head's output there."""
        corner = ys * self._row + xs  # the top-left of each cell's 3x3 window in the padded map
        patches = self._flat[:, self._taps[:, None] + corner]  # (C, 9, M)
        return self._head.at(patches)

    def _read(self, c, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
        ys, xs = np.broadcast_arrays(np.asarray(ys, np.int64), np.asarray(xs, np.int64))
        h, w = self.shape[1:]
        if ys.size and (ys.min() < 0 or xs.min() < 0 or ys.max() >= h or xs.max() >= w):
            raise IndexError(f"cell outside the ({h}, {w}) map")
        values = self.at(ys.ravel(), xs.ravel()).reshape(self.shape[0], *ys.shape)
        if isinstance(c, (slice, int, np.integer)):
            return values[c]
        return values[(np.asarray(c, np.int64), *np.indices(ys.shape, sparse=True))]  # c broadcasts with the cells

    def __getitem__(self, key):
        if not (isinstance(key, tuple) and len(key) == 3) or isinstance(key[1], slice) or isinstance(key[2], slice):
            return np.asarray(self)[key]
        return self._read(*key)

    def reshape(self, *shape) -> _FlatCellMap | np.ndarray:
        shape = tuple(shape[0]) if len(shape) == 1 else shape
        if shape == (self.shape[0], self.shape[1] * self.shape[2]):
            return _FlatCellMap(self)
        return np.asarray(self).reshape(shape)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        h, w = self.shape[1:]
        ys, xs = np.divmod(np.arange(h * w), w)
        dense = self.at(ys, xs).reshape(self.shape)
        return dense if dtype is None else dense.astype(dtype)


class _FlatCellMap:
    """``CellMap.reshape(O, h * w)``: indexed as ``flat[c, index]`` with int flat cell indices."""

    def __init__(self, cells: CellMap):
        self._cells = cells
        self.shape = (cells.shape[0], cells.shape[1] * cells.shape[2])

    def __getitem__(self, key):
        if not (isinstance(key, tuple) and len(key) == 2) or isinstance(key[1], slice):
            return np.asarray(self._cells).reshape(self.shape)[key]
        c, index = key
        ys, xs = np.divmod(np.asarray(index, np.int64), self._cells.shape[2])
        return self._cells._read(c, ys, xs)


def dense_maps(heads: PoseHeads, features: torch.Tensor) -> dict[str, torch.Tensor]:
    """The dense maps of :data:`SPARSE_KEYS` from features (..., C, h, w) -> (..., O, h, w) each (torch), for
    the consumers that need whole maps (the maps-stage refiners)."""
    lead = features.shape[:-3]
    with torch.inference_mode():
        out = heads(features.reshape(-1, *features.shape[-3:]))
    return {k: out[k].reshape(*lead, *out[k].shape[1:]) for k in SPARSE_KEYS}


__all__ = ["SPARSE_KEYS", "CellHeads", "CellMap", "dense_maps"]
