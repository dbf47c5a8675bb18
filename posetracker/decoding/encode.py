"""Target encoder: labelled people -> the maps the network is trained to output.

The exact inverse of :class:`posetracker.decoding.TreeDecoder` (the circular tests
encode known poses and decode them back), and the encoder the training code uses.
Output keys and shapes match the network outputs, plus a ``*_weight`` mask per map
(1 where the target is defined, 0 where the loss must ignore it):

- ``heatmaps`` (K, h, w): max over people of a Gaussian around each visible joint
  (truncated at 3 sigma). The root's channel is the body-centre heatmap. Weight: 1
  everywhere (background is a defined target).
- ``offsets`` (2K, h, w): (dx, dy) = joint - cell, in cells, at cells within
  ``offset_radius`` of a visible joint; the nearer joint wins between people. The
  root's channels stay 0 with weight 0 (the decoder refines the centre from its
  heatmap).
- ``vectors`` (2E, h, w): child - parent of edge e, in cells, in a disc of radius
  ``radius`` around the person's centre, where the decoder reads them; where discs
  overlap, the person whose centre is nearer wins (and if that person lacks the
  edge, weight 0).
- ``depth`` (1+E, h, w): root depth (m) in the disc around the centre; channel 1+e:
  depth(child) - depth(parent), written like the vectors. All zero, weight 0, when no
  depth is given.

A joint is *known* when its position is finite, *visible* when also flagged visible.
Heatmaps and offsets need a visible joint; vectors and depth need both ends known
(an occluded joint with a labelled position still gets its vector). The root and
other virtual joints are drawn whenever their position is known or computed.
"""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.types import ShapeError



def _virtual_value(rule: str, pts: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Combine points per ``rule``. pts: (P, S, D); mask: (P, S) -> (P, D) (nan where none)."""
    m = mask[..., None]
    if rule == "bbox_centre":
        lo = np.where(m, pts, np.inf).min(axis=1)
        hi = np.where(m, pts, -np.inf).max(axis=1)
        with np.errstate(invalid="ignore"):
            val = 0.5 * (lo + hi)
    else:  # "mean"
        count = mask.sum(axis=1)[:, None]
        val = np.where(m, pts, 0.0).sum(axis=1) / np.maximum(count, 1)
    val[~mask.any(axis=1)] = np.nan
    return val


def fill_virtual_joints(
    people_xy: np.ndarray,
    spec: SkeletonSpec,
    visible: np.ndarray | None = None,
    depth: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Compute virtual joints (``spec.virtual``) whose position is not given (nan).

    people_xy: (P, K, 2) px; visible: (P, K) bool or None (= known); depth: (P, K) m or
    None -> (xy (P, K, 2) float64, depth (P, K) float64 or None), copies. "bbox_centre"
    = centre of the bounding box of the visible labelled joints, "mean" = their mean;
    the same rule on their depths gives a missing virtual depth.
    """
    xy = np.array(people_xy, dtype=np.float64)
    known = np.isfinite(xy).all(axis=-1)
    vis = known if visible is None else (np.asarray(visible, dtype=bool) & known)
    z = None if depth is None else np.array(depth, dtype=np.float64)
    src = list(spec.labelled_joints)
    for j, rule in spec.virtual.items():
        mask = vis[:, src]
        val = _virtual_value(rule, xy[:, src], mask)
        rows = ~known[:, j]
        xy[rows, j] = val[rows]
        if z is not None:
            zmask = mask & np.isfinite(z[:, src])
            zval = _virtual_value(rule, z[:, src, None], zmask)[:, 0]
            zrows = ~np.isfinite(z[:, j])
            z[zrows, j] = zval[zrows]
    return xy, z


def _dist2(points: np.ndarray, h: int, w: int) -> np.ndarray:
    """Squared distance from every cell to every point. points: (P, C, 2) cells -> (P, C, h, w)."""
    dx = (np.arange(w)[None, None, :] - points[..., 0, None]).astype(np.float32)
    dy = (np.arange(h)[None, None, :] - points[..., 1, None]).astype(np.float32)
    return dy[..., :, None] ** 2 + dx[..., None, :] ** 2


def _nearest(d2: np.ndarray, has: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """Nearest anchor per cell. d2: (P, C, h, w); has: (P, C) -> winner (C, h, w), inside (C, h, w)."""
    d2m = np.where(has[..., None, None], d2, np.inf)
    winner = np.argmin(d2m, axis=0)
    dmin = np.take_along_axis(d2m, winner[None], axis=0)[0]
    return winner, dmin <= radius * radius


def _gather(values: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """values: (P, C, ...) per person and channel; winner: (C, h, w) -> (C, h, w, ...)."""
    c = np.arange(values.shape[1])[:, None, None]
    return values[winner, c]


def _interleave(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(C, h, w) x and y -> (2C, h, w) with x at even and y at odd channels."""
    out = np.empty((2 * x.shape[0],) + x.shape[1:], dtype=np.float32)
    out[0::2], out[1::2] = x, y
    return out


def _heatmaps(u: np.ndarray, vis: np.ndarray, sigma: np.ndarray, h: int, w: int) -> np.ndarray:
    """Max over people of Gaussians truncated at 3 sigma, built from separable 1-D factors.

    u: (P, K, 2) cells; vis: (P, K); sigma: (P,) -> (K, h, w) float32.
    """
    inv = (0.5 / sigma**2)[:, None, None]
    gx = np.exp(-inv * (np.arange(w)[None, None, :] - u[..., 0, None]) ** 2) * vis[..., None]
    gy = np.exp(-inv * (np.arange(h)[None, None, :] - u[..., 1, None]) ** 2)
    g = gy.astype(np.float32)[..., :, None] * gx.astype(np.float32)[..., None, :]
    g[g < np.float32(np.exp(-4.5))] = 0.0  # d > 3 sigma
    return g.max(axis=0)


def encode_targets(
    people_xy: np.ndarray,
    spec: SkeletonSpec,
    visible: np.ndarray | None = None,
    depth: np.ndarray | None = None,
    out_size: tuple[int, int] = (64, 64),
    stride: int = 4,
    sigma: float = 1.0,
    sigma_scale: float = 0.0,
    radius: float = 2.0,
    offset_radius: float = 1.5,
) -> dict[str, np.ndarray]:
    """Training targets of one image.

    people_xy: (P, K, 2) input pixels, nan = not labelled (a nan virtual root is
    computed per ``spec.virtual``); visible: (P, K) bool (None = every labelled joint);
    depth: (P, K) metres or None; out_size: (h, w) feature map; sigma: Gaussian sigma in
    cells, per person ``max(sigma, sigma_scale * size)`` with size = sqrt of the area of
    the bounding box of its known joints (cells); radius / offset_radius in cells.
    Returns float32 maps, see the module docstring.
    """
    n_joints, n_edges = spec.num_joints, spec.num_edges
    people_xy = np.asarray(people_xy, dtype=np.float64)
    if people_xy.ndim != 3 or people_xy.shape[1:] != (n_joints, 2):
        raise ShapeError(f"people_xy: expected shape (P, {n_joints}, 2), got {people_xy.shape}")
    n = people_xy.shape[0]
    for name, arr in (("visible", visible), ("depth", depth)):
        if arr is not None and np.shape(arr) != (n, n_joints):
            raise ShapeError(f"{name}: expected shape ({n}, {n_joints}), got {np.shape(arr)}")
    vis_in = np.ones((n, n_joints), bool) if visible is None else np.asarray(visible, dtype=bool)
    xy, z = fill_virtual_joints(people_xy, spec, vis_in, depth)
    u = xy / float(stride)
    known = np.isfinite(u).all(axis=-1)
    vis = known & vis_in
    for j in set(spec.virtual) | {spec.root}:
        vis[:, j] = known[:, j]
    u = np.where(known[..., None], u, 0.0)
    h, w = out_size
    out = _empty_targets(n_joints, n_edges, h, w)
    if n == 0:
        return out

    # Heatmaps and offsets: around each visible joint.
    out["heatmaps"] = _heatmaps(u, vis, _person_sigma(u, known, sigma, sigma_scale), h, w)
    d2 = _dist2(u, h, w)
    winner, inside = _nearest(d2, vis, offset_radius)
    inside[spec.root] = False
    near = _gather(u, winner)  # (K, h, w, 2)
    off_x = np.where(inside, near[..., 0] - np.arange(w)[None, None, :], 0.0)
    off_y = np.where(inside, near[..., 1] - np.arange(h)[None, :, None], 0.0)
    out["offsets"] = _interleave(off_x, off_y)
    out["offsets_weight"] = _interleave(inside, inside)

    # Vectors and depth differences: in a disc around the centre.
    parent, child = spec.edges[:, 0], spec.edges[:, 1]
    c_win, c_in = _nearest(_dist2(u[:, [spec.root]], h, w), known[:, [spec.root]], radius)  # (1, h, w)
    e_win = np.broadcast_to(c_win, (n_edges, h, w))
    e_in = np.broadcast_to(c_in, (n_edges, h, w))
    vec = u[:, child] - u[:, parent]  # (P, E, 2)
    has_vec = _gather(known[:, child] & known[:, parent], e_win) & e_in
    vals = _gather(vec, e_win)
    out["vectors"] = _interleave(np.where(has_vec, vals[..., 0], 0.0), np.where(has_vec, vals[..., 1], 0.0))
    out["vectors_weight"] = _interleave(has_vec, has_vec)
    if z is not None:
        zr = z[:, [spec.root]]
        has_root = _gather(np.isfinite(zr), c_win) & c_in
        dz = z[:, child] - z[:, parent]
        has_dz = _gather(np.isfinite(dz) & known[:, child] & known[:, parent], e_win) & e_in
        out["depth"][0] = np.where(has_root, _gather(zr, c_win), 0.0)[0]
        out["depth"][1:] = np.where(has_dz, _gather(dz, e_win), 0.0)
        out["depth_weight"][0] = has_root[0]
        out["depth_weight"][1:] = has_dz
    return out


def _person_sigma(u: np.ndarray, known: np.ndarray, sigma: float, scale: float) -> np.ndarray:
    """Heatmap sigma per person (cells). u: (P, K, 2); known: (P, K) -> (P,)."""
    n = u.shape[0]
    if scale <= 0:
        return np.full(n, float(sigma))
    lo = np.where(known[..., None], u, np.inf).min(axis=1)
    hi = np.where(known[..., None], u, -np.inf).max(axis=1)
    ext = np.where(np.isfinite(hi - lo), hi - lo, 0.0)
    return np.maximum(float(sigma), scale * np.sqrt(ext[:, 0] * ext[:, 1]))


def _empty_targets(k: int, e: int, h: int, w: int) -> dict[str, np.ndarray]:
    """All-zero targets (nobody in the image), weight 1 only on the heatmaps."""
    f = np.float32
    return {
        "heatmaps": np.zeros((k, h, w), f),
        "offsets": np.zeros((2 * k, h, w), f),
        "vectors": np.zeros((2 * e, h, w), f),
        "depth": np.zeros((1 + e, h, w), f),
        "heatmaps_weight": np.ones((k, h, w), f),
        "offsets_weight": np.zeros((2 * k, h, w), f),
        "vectors_weight": np.zeros((2 * e, h, w), f),
        "depth_weight": np.zeros((1 + e, h, w), f),
    }


__all__ = ["encode_targets", "fill_virtual_joints"]
