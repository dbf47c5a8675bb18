"""Peak finding on heatmaps.

Method A step 4 (centre peaks) and the per-joint candidate peaks that step 8
assigns to people. All positions are in feature cells: the value stored at
integer cell ``(iy, ix)`` refers to position ``(ix, iy)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Neighbours before a cell in raster order must be strictly lower, the others
# lower or equal: a plateau of equal values yields exactly one peak (its first
# cell in raster order) instead of several.
_EARLIER = ((-1, -1), (-1, 0), (-1, 1), (0, -1))
_LATER = ((0, 1), (1, -1), (1, 0), (1, 1))


@dataclass(frozen=True)
class Peaks:
    """Peaks of one heatmap, strongest first.

    x, y:   (N,) int64 cell indices
    score:  (N,) float32 heatmap value at the peak
    """

    x: np.ndarray
    y: np.ndarray
    score: np.ndarray

    def __len__(self) -> int:
        return int(self.x.shape[0])


def local_maxima(maps: np.ndarray) -> np.ndarray:
    """3x3 max-pool non-maximum suppression (numpy equivalent, ties broken in raster order).

    maps: (..., h, w) -> bool (..., h, w), True at cells that equal the maximum of
    their 3x3 neighbourhood (cells outside the map count as -inf).
    """
    m = np.asarray(maps, dtype=np.float32)
    h, w = m.shape[-2:]
    pad = [(0, 0)] * (m.ndim - 2) + [(1, 1), (1, 1)]
    p = np.pad(m, pad, constant_values=-np.inf)
    mask = np.ones(m.shape, dtype=bool)
    for dy, dx in _EARLIER:
        mask &= m > p[..., 1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]
    for dy, dx in _LATER:
        mask &= m >= p[..., 1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]
    return mask


def maxima_above(maps: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cells of :func:`local_maxima` with value >= threshold, in raster order.

    Tested only where the map reaches the threshold when few cells do (sparse
    heatmaps), on whole maps otherwise. maps: (C, h, w) -> (c, y, x) int64 arrays (N,).
    """
    n_ch, h, w = maps.shape
    above = maps >= threshold
    flat = np.flatnonzero(above)
    if flat.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if flat.size * 8 > maps.size:
        c, y, x = np.nonzero(local_maxima(maps) & above)
        return c.astype(np.int64), y.astype(np.int64), x.astype(np.int64)
    p = np.full((n_ch, h + 2, w + 2), -np.inf, dtype=np.float32)
    p[:, 1:-1, 1:-1] = maps
    pf = p.ravel()
    c, rem = np.divmod(flat, h * w)
    y, x = np.divmod(rem, w)
    base = c * ((h + 2) * (w + 2)) + (y + 1) * (w + 2) + (x + 1)
    v = pf[base]
    ok = np.ones(flat.size, dtype=bool)
    for dy, dx in _EARLIER:
        ok &= v > pf[base + dy * (w + 2) + dx]
    for dy, dx in _LATER:
        ok &= v >= pf[base + dy * (w + 2) + dx]
    return c[ok], y[ok], x[ok]


def suppress_close(x: np.ndarray, y: np.ndarray, min_distance: float, limit: int) -> np.ndarray:
    """Greedy minimum-distance suppression of peaks already sorted strongest first.

    x, y: (N,) cell positions -> (M,) int64 indices of the kept peaks (M <= limit).
    """
    kept: list[int] = []
    md2 = float(min_distance) ** 2
    for i in range(x.shape[0]):
        if len(kept) >= limit:
            break
        if kept:
            kx, ky = x[kept], y[kept]
            if np.min((kx - x[i]) ** 2 + (ky - y[i]) ** 2) < md2:
                continue
        kept.append(i)
    return np.asarray(kept, dtype=np.int64)


def find_peaks(heatmap: np.ndarray, threshold: float, max_peaks: int, min_distance: float = 0.0) -> Peaks:
    """Local maxima of one heatmap with value >= threshold, top ``max_peaks`` by value.

    heatmap: (h, w). min_distance (cells): a peak closer than this to a stronger
    kept peak is dropped (0 = 3x3 NMS only).
    """
    _, ys, xs = maxima_above(heatmap[None], threshold)
    scores = heatmap[ys, xs].astype(np.float32)
    order = np.argsort(-scores, kind="stable")
    xs, ys, scores = xs[order], ys[order], scores[order]
    if min_distance > 0 and xs.shape[0] > 1:
        keep = suppress_close(xs, ys, min_distance, max_peaks)
    else:
        keep = np.arange(min(max_peaks, xs.shape[0]))
    return Peaks(xs[keep].astype(np.int64), ys[keep].astype(np.int64), scores[keep])


def refine_quadratic(heatmap: np.ndarray, x: np.ndarray, y: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Sub-cell refinement of peaks by a parabola through the log heatmap, per axis.

    heatmap: (h, w); x, y: (N,) int cells -> (N, 2) float64 shift (dx, dy) in cells,
    clipped to [-0.5, 0.5]. The log of a Gaussian is a parabola, so the shift is exact
    for a Gaussian peak; an axis whose neighbour lies outside the map or is ~0 is not
    refined.
    """
    h, w = heatmap.shape
    shift = np.zeros((x.shape[0], 2), dtype=np.float64)
    for axis, (size, pos) in enumerate(((w, x), (h, y))):
        ok = (pos > 0) & (pos < size - 1)
        lo, hi = np.clip(pos - 1, 0, size - 1), np.clip(pos + 1, 0, size - 1)
        if axis == 0:
            a, b, c = heatmap[y, lo], heatmap[y, x], heatmap[y, hi]
        else:
            a, b, c = heatmap[lo, x], heatmap[y, x], heatmap[hi, x]
        ok &= (a > eps) & (b > eps) & (c > eps)
        la, lb, lc = (np.log(np.maximum(v.astype(np.float64), eps)) for v in (a, b, c))
        denom = la - 2.0 * lb + lc
        ok &= denom < -1e-12
        d = np.where(ok, 0.5 * (la - lc) / np.where(ok, denom, -1.0), 0.0)
        shift[:, axis] = np.clip(d, -0.5, 0.5)
    return shift


#: cells: a neighbour's vote counts when it lands this close to the peak's own reading
VOTE_AGREE = 1.5


def vote_offsets(heatmaps: np.ndarray, offsets: np.ndarray, joint: np.ndarray, ys: np.ndarray, xs: np.ndarray,
                 radius: int, agree: float = VOTE_AGREE, max_offset: float = 1.0) -> np.ndarray:
    """Sub-cell position of each peak as the vote of the cells around it.

    Every cell of a joint's heatmap near the joint regresses the joint's position (cell +
    its offset), not only the peak cell. Reading the peak cell alone, the position jumps
    when the peak moves to the next cell and carries that one cell's offset error; the
    heat-weighted mean of the votes of the ``(2 radius + 1)^2`` cells around the peak
    that land within ``agree`` cells of the peak's own reading (so a neighbouring
    person's joint does not vote) is steadier from frame to frame
    (``studies/offset-vote.md``).

    heatmaps: (K, h, w); offsets: (2K, h, w) (dx, dy) per joint, cells; joint, ys, xs: (N,)
    int peaks -> (N, 2) float64 voted (dx, dy) relative to the peak cell. The peak's own
    reading is its cell's offset clipped to ``max_offset`` cells; a peak without an
    agreeing vote keeps it.
    """
    h, w = heatmaps.shape[-2:]
    if len(joint) == 0:
        return np.zeros((0, 2))
    d = np.arange(-radius, radius + 1)
    dy, dx = (a.ravel() for a in np.meshgrid(d, d, indexing="ij"))  # (M,) neighbour steps
    yy, xx = ys[:, None] + dy[None], xs[:, None] + dx[None]  # (N, M)
    inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
    yy, xx = np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)
    jj = joint[:, None]
    heat = heatmaps[jj, yy, xx].astype(np.float64) * inside  # (N, M)
    # each cell read once for all joints (live, model.heads_at_cells computes the offsets only where read)
    cells, where = np.unique(yy * w + xx, return_inverse=True)
    at = np.asarray(offsets[:, cells // w, cells % w], np.float64)  # (2K, U)
    where = where.reshape(yy.shape)
    votes = np.stack([at[2 * jj, where] + dx[None], at[2 * jj + 1, where] + dy[None]], axis=-1)  # (N, M, 2)
    shift = np.clip(votes[:, len(dx) // 2], -max_offset, max_offset)  # the peak cell's own reading
    weight = heat * (np.linalg.norm(votes - shift[:, None], axis=-1) < agree)
    total = weight.sum(1)
    voted = (weight[..., None] * votes).sum(1) / np.maximum(total, 1e-12)[:, None]
    return np.where(total[:, None] > 0, voted, shift)


@dataclass(frozen=True)
class Candidates:
    """Candidate peaks of J joint heatmaps (method A step 8), padded to C per joint, strongest first.

    joints: (J,) int64 joint index of each row
    xy:     (J, C, 2) float64 refined positions in cells (cell + sub-cell offset)
    heat:   (J, C) float64 heatmap value at the peak cell, 0 in padding
    valid:  (J, C) bool, False in padding
    """

    joints: np.ndarray
    xy: np.ndarray
    heat: np.ndarray
    valid: np.ndarray

    def rows(self, rows: np.ndarray) -> Candidates:
        """The candidates of a subset of rows (indices into ``joints``)."""
        return Candidates(self.joints[rows], self.xy[rows], self.heat[rows], self.valid[rows])


def keypoint_candidates(
    heatmaps: np.ndarray,
    joints: tuple[int, ...],
    threshold: float,
    max_per_joint: int,
    offsets: np.ndarray | None = None,
    max_offset: float = 1.0,
    vote_radius: int = 0,
) -> Candidates:
    """Candidate peaks of every listed joint, found once per frame.

    heatmaps: (K, h, w); offsets: (2K, h, w) sub-cell (dx, dy) per joint, or None to
    refine with :func:`refine_quadratic` instead. Offsets are clipped to
    ``[-max_offset, max_offset]`` cells. With ``vote_radius`` > 0 each peak's position is
    the offsets' vote of its neighbourhood (:func:`vote_offsets`). At most ``max_per_joint``
    peaks per joint.
    """
    sel = np.asarray(joints, dtype=np.int64)
    n_sel = sel.shape[0]
    maps = heatmaps[sel]
    ks, ys, xs = maxima_above(maps, threshold)
    joint = sel[ks]
    heat = maps[ks, ys, xs].astype(np.float64)
    span = float(heat.max()) + 1.0 if heat.size else 1.0
    order = np.argsort(ks * span + (span - 1.0 - heat), kind="stable")  # by row, strongest first in a row
    ks, ys, xs, heat, joint = ks[order], ys[order], xs[order], heat[order], joint[order]
    start = np.searchsorted(ks, np.arange(n_sel))
    rank = np.arange(ks.shape[0]) - start[ks]
    keep = rank < max_per_joint
    ks, ys, xs, heat, joint, rank = ks[keep], ys[keep], xs[keep], heat[keep], joint[keep], rank[keep]
    if offsets is not None:
        if vote_radius > 0:
            shift = vote_offsets(heatmaps, offsets, joint, ys, xs, vote_radius, max_offset=max_offset)
        else:
            shift = offsets[np.stack([2 * joint, 2 * joint + 1]), ys[None], xs[None]].T.astype(np.float64)  # one read
            shift = np.minimum(np.maximum(shift, -max_offset), max_offset)
    else:
        shift = np.zeros((xs.shape[0], 2))
        for k in np.unique(joint):
            m = joint == k
            shift[m] = refine_quadratic(heatmaps[k], xs[m], ys[m])
    n_c = int(rank.max()) + 1 if rank.size else 0
    xy = np.zeros((n_sel, n_c, 2))
    pad_heat = np.zeros((n_sel, n_c))
    valid = np.zeros((n_sel, n_c), dtype=bool)
    xy[ks, rank, 0] = xs + shift[:, 0]
    xy[ks, rank, 1] = ys + shift[:, 1]
    pad_heat[ks, rank] = heat
    valid[ks, rank] = True
    return Candidates(sel, xy, pad_heat, valid)


__all__ = [
    "Peaks", "Candidates", "local_maxima", "maxima_above", "suppress_close", "find_peaks", "refine_quadratic",
    "vote_offsets", "keypoint_candidates", "VOTE_AGREE",
]
