"""The whole body moved along its camera ray so that its stance feet stand still (step 1 of :mod:`motion.feet`).

One camera sees a person's place in the image well and their distance poorly: a wandering depth moves the
whole body along the ray from the camera through it, and with it the standing foot. So the body may move only
that way: per frame a distance d_t along u_t, the unit ray from the camera to the body's centre, and per stance
phase p a point a_p where its ankle stands (Y: standing height; X, Z free) minimise

    sum_t sum_f w_tf |A_tf + d_t u_t - a_p(t, f)|^2  +  lam * sum_t (d_{t-1} - 2 d_t + d_{t+1})^2  +  eps * sum_t d_t^2

(A_tf the solved ankle of foot f, w_tf its stance weight, :func:`motion.feet.stance_weights`). Moving along
the ray keeps the body's centre where the camera saw it; a free translation (X and Z fitted apart) let the
whole body slide sideways off its image (the side-view walk: world joints 19 % of her height off the 2-D,
up to 59 %, the body trailing her by a body width).

Shapes: T frames, F = 2 feet, P stance phases; floor-frame metres (Y up).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse import csr_matrix, diags
from scipy.sparse.linalg import spsolve


def _second_difference(n: int) -> csr_matrix:
    """(n-2, n) second-difference operator (empty for n < 3)."""
    if n < 3:
        return csr_matrix((0, n))
    return diags([np.ones(n - 2), -2 * np.ones(n - 2), np.ones(n - 2)], [0, 1, 2], shape=(n - 2, n)).tocsr()


def body_rays(points: np.ndarray, camera: np.ndarray) -> np.ndarray:
    """points (T, K, 3) one person's joints (nan unknown), camera (3,) the camera centre, same frame -> (T, 3)
    unit rays from the camera to the body's centre (the mean of the known joints); a frame with none takes the
    next known frame's ray (the last known one at the end; +Z where no joint is known at all)."""
    with np.errstate(invalid="ignore"):
        known = np.isfinite(points).all(-1)
        count = known.sum(1)
        centre = np.where(known[..., None], points, 0.0).sum(1) / np.maximum(count, 1)[:, None]
    ray = centre - camera
    norm = np.linalg.norm(ray, axis=1)
    ok = (count > 0) & (norm > 1e-9)
    if not ok.any():
        out = np.zeros_like(ray)
        out[:, 2] = 1.0
        return out
    ray[ok] /= norm[ok, None]
    idx = np.flatnonzero(ok)
    nearest = idx[np.clip(np.searchsorted(idx, np.arange(len(ray))), 0, len(idx) - 1)]
    return ray[nearest]


def ray_path(feet: np.ndarray, rays: np.ndarray, weight: np.ndarray, owner: np.ndarray, num_phases: int,
             stand: float, lam: float, eps: float, across: float) -> tuple[np.ndarray, np.ndarray]:
    """The module docstring's fit -> (r (T, 3) the body's shift, a (P, 3) each phase's point).

    feet: (T, F, 3) ankles (nan: unknown, no weight); rays: (T, 3) unit rays; weight, owner: (T, F) stance
    weights and the phase each belongs to (-1 none); stand: the ankle's standing height (a_p's Y); across: the
    weight mu of the shift across the ray."""
    t = len(feet)
    known = np.isfinite(feet).all(-1)
    w = np.where(known & (owner >= 0), weight, 0.0)
    v = np.nan_to_num(feet)
    n = 3 * t + 2 * num_phases  # unknowns: r_t (x, y, z) for every frame, then a_p (x, z) for every phase
    rows, cols, data, rhs = [], [], [], []
    row = 0

    def add(r: np.ndarray, c: np.ndarray, d: np.ndarray) -> None:
        rows.append(r)
        cols.append(c)
        data.append(d)

    for f in range(feet.shape[1]):  # sqrt(w) (r_t - a_p) = -sqrt(w) A_tf, per axis (a_p's Y given)
        idx = np.flatnonzero(w[:, f] > 0)
        sw = np.sqrt(w[idx, f])
        p = owner[idx, f]
        for axis in range(3):
            r = row + np.arange(len(idx))
            add(r, 3 * idx + axis, sw)
            if axis == 1:
                rhs.append(-sw * (v[idx, f, 1] - stand))
            else:
                add(r, 3 * t + 2 * p + axis // 2, -sw)
                rhs.append(-sw * v[idx, f, axis])
            row += len(idx)
    across_rows = np.eye(3)[None] - rays[:, :, None] * rays[:, None, :]  # (T, 3, 3) I - u u^T
    for i in range(3):  # sqrt(mu) (I - u u^T) r_t = 0
        r = row + np.arange(t)
        for j in range(3):
            add(r, 3 * np.arange(t) + j, math.sqrt(across) * across_rows[:, i, j])
        rhs.append(np.zeros(t))
        row += t
    d2 = _second_difference(t).tocoo()
    for axis in range(3):  # sqrt(lam) D2 r[:, axis] = 0
        add(row + d2.row, 3 * d2.col + axis, math.sqrt(lam) * d2.data)
        rhs.append(np.zeros(d2.shape[0]))
        row += d2.shape[0]
    add(row + np.arange(n), np.arange(n), np.concatenate([np.full(3 * t, math.sqrt(eps)),
                                                          np.full(2 * num_phases, math.sqrt(eps) * 1e-3)]))
    rhs.append(np.zeros(n))
    row += n
    a_mat = csr_matrix((np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))), shape=(row, n)).tocsc()
    x = np.asarray(spsolve((a_mat.T @ a_mat).tocsc(), a_mat.T @ np.concatenate(rhs)))
    points = np.full((num_phases, 3), float(stand))
    points[:, 0], points[:, 2] = x[3 * t::2], x[3 * t + 1::2]
    return x[:3 * t].reshape(t, 3), points


__all__ = ["body_rays", "ray_path"]
