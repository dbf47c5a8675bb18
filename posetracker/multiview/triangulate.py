"""Robust triangulation of 2-D keypoints seen by several calibrated cameras.

Shapes: V views, T frames, K joints (the letters of ``posetracker.types``); N = T * K points solved at once.

Each point is undistorted with OpenCV (``CameraCalibration.undistort``), solved by the confidence-weighted
direct linear transform (DLT, homogeneous least squares over the views' normalised coordinates), and
reprojected through each camera's lens model. Views that disagree are dropped: with up to
``exhaustive_views`` views every subset of at least ``min_views`` views is solved and the largest one whose
views all reproject within ``max_error_px`` wins (ties: the smallest mean error); with more views, views are
dropped one at a time (the one whose removal leaves the rest agreeing best) until the rest agree. A point
with no agreeing subset is nan.

From the agreeing subset's point, every view that reads the joint is then weighed in again (``soft_px``):
iteratively reweighted DLT, each view's weight its confidence times the Cauchy weight 1 / (1 + (e / soft_px)^2)
of its reprojection error e, divided by the point's depth in that camera (so the DLT's algebraic residual
weighs pixels alike in near and far cameras); a view more than ``SOFT_CUT`` x ``max_error_px`` off (another
person's joint, a misread limb) weighs 0. A view a few pixels over ``max_error_px`` then no longer switches in
and out of the solution from one frame to the next, which made the bones of the Pose2Sim trial's people vary
(studies/metres.md).

Written here rather than taken from aniposelib, whose wheel requires opencv-contrib-python (a second
``cv2`` that clashes with the product's opencv-python-headless).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

import numpy as np

from posetracker.multiview.calibration import CameraCalibration

SOFT_CUT = 4.0  # views further off than this many max_error_px are not weighed in again


@dataclass(frozen=True)
class Triangulation:
    """3-D points from V views.

    xyz:   (T, K, 3) world metres; nan where fewer than ``min_views`` views agree
    used:  (T, K, V) bool, the views the point was solved from (with ``soft_px``: the views within ``max_error_px``
           of it; the others weigh little or nothing)
    error: (T, K, V) px, each view's 2-D point against the point's reprojection (dropped views too; nan where
           the view has no point or the point is nan)
    """

    xyz: np.ndarray
    used: np.ndarray
    error: np.ndarray

    @property
    def found(self) -> np.ndarray:
        """(T, K) bool: the point was triangulated."""
        return np.isfinite(self.xyz).all(axis=-1)


def dlt(extrinsics: np.ndarray, uv: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Weighted DLT. extrinsics (V, 3, 4) [R | t]; uv (N, V, 2) normalised undistorted coordinates; weight (N, V)
    (0 = view not used) -> (N, 3) world points (nan where fewer than 2 views have weight or the solution is at
    infinity)."""
    uv = np.nan_to_num(uv)
    w = np.where(np.isfinite(weight), weight, 0.0)
    rows_x = uv[..., 0:1] * extrinsics[None, :, 2] - extrinsics[None, :, 0]  # (N, V, 4)
    rows_y = uv[..., 1:2] * extrinsics[None, :, 2] - extrinsics[None, :, 1]
    a = np.concatenate([rows_x * w[..., None], rows_y * w[..., None]], axis=1)  # (N, 2V, 4)
    _, _, vt = np.linalg.svd(a)
    h = vt[:, -1, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        xyz = h[:, :3] / h[:, 3:4]
    bad = ((w > 0).sum(axis=1) < 2) | (np.abs(h[:, 3]) < 1e-12)
    xyz[bad] = np.nan
    return xyz


def reprojection_error(cameras: Sequence[CameraCalibration], xyz: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """xyz (N, 3) world m, xy (N, V, 2) px -> (N, V) px distance of each view's point to the projection of xyz
    (nan where either is missing or the point is behind that camera)."""
    proj = np.stack([cam.project(xyz) for cam in cameras], axis=1)  # (N, V, 2)
    return np.linalg.norm(proj - xy, axis=-1)


def _solve(cams, ext, uv, xy, w, mask) -> tuple[np.ndarray, np.ndarray]:
    """DLT over the views in ``mask`` (N, V) -> xyz (N, 3), error (N, V)."""
    xyz = dlt(ext, uv, np.where(mask, w, 0.0))
    return xyz, reprojection_error(cams, xyz, xy)


def _subset_search(cams, ext, uv, xy, w, avail, max_error, min_views) -> tuple[np.ndarray, np.ndarray]:
    """Every subset of >= min_views views: the largest consistent one per point -> xyz (N, 3), used (N, V)."""
    n, v = avail.shape
    best_key = np.full(n, -np.inf)
    best_xyz = np.full((n, 3), np.nan)
    best_used = np.zeros((n, v), bool)
    for size in range(min_views, v + 1):
        for subset in combinations(range(v), size):
            mask = np.zeros(v, bool)
            mask[list(subset)] = True
            ok = avail[:, mask].all(axis=1)
            if not ok.any():
                continue
            idx = np.flatnonzero(ok)
            m = np.broadcast_to(mask, (idx.size, v))
            xyz, err = _solve(cams, ext, uv[idx], xy[idx], w[idx], m)
            e = err[:, mask]
            fine = np.isfinite(xyz).all(1) & np.isfinite(e).all(1) & (e.max(axis=1, initial=0.0) <= max_error)
            key = np.where(fine, size * 1e6 - e.mean(axis=1), -np.inf)
            better = key > best_key[idx]
            take = idx[better]
            best_key[take], best_xyz[take], best_used[take] = key[better], xyz[better], mask
    return best_xyz, best_used


def _greedy_drop(cams, ext, uv, xy, w, avail, max_error, min_views) -> tuple[np.ndarray, np.ndarray]:
    """All views, then while the views disagree the one whose removal leaves the best agreement (the smallest
    largest error of the rest) is dropped -> xyz, used."""
    used = avail.copy()
    xyz, err = _solve(cams, ext, uv, xy, w, used)
    worst = lambda e, m: np.where(m, e, -np.inf).max(axis=1)  # noqa: E731
    for _ in range(avail.shape[1] - min_views):
        idx = np.flatnonzero((worst(err, used) > max_error) & (used.sum(axis=1) > min_views))
        if not idx.size:
            break
        best = np.full(idx.size, np.inf)
        pick = np.zeros((idx.size, 3)), np.zeros((idx.size, err.shape[1])), used[idx].copy()
        for v in range(avail.shape[1]):
            mask = used[idx].copy()
            mask[:, v] = False
            x, e = _solve(cams, ext, uv[idx], xy[idx], w[idx], mask)
            score = np.where(used[idx, v] & np.isfinite(x).all(1), worst(np.nan_to_num(e, nan=np.inf), mask), np.inf)
            better = score < best
            best[better] = score[better]
            pick[0][better], pick[1][better], pick[2][better] = x[better], e[better], mask[better]
        xyz[idx], err[idx], used[idx] = pick
    bad = (used.sum(axis=1) < min_views) | (worst(err, used) > max_error) | ~np.isfinite(xyz).all(1)
    xyz[bad] = np.nan
    used[bad] = False
    return xyz, used


def _reweigh(cams, ext, uv, xy, w, avail, xyz, soft_px, cut_px, iterations) -> np.ndarray:
    """xyz (N, 3) solved again from every available view, weighed by confidence, the Cauchy weight of its
    reprojection error and 1 / depth (0 beyond ``cut_px``), ``iterations`` times (module docstring); nan stays nan."""
    xyz = xyz.copy()
    found = np.isfinite(xyz).all(axis=1)
    if not found.any():
        return xyz
    uv, xy, w, avail = uv[found], xy[found], w[found], avail[found]
    point = xyz[found]
    for _ in range(iterations):
        err = np.nan_to_num(reprojection_error(cams, point, xy), nan=np.inf)  # (M, V)
        depth = np.stack([cam.to_camera(point)[:, 2] for cam in cams], axis=1)
        depth = np.where(np.isfinite(depth) & (depth > 1e-3), depth, np.inf)
        new = dlt(ext, uv, np.where(avail & (err <= cut_px), w / (1.0 + (err / soft_px) ** 2) / depth, 0.0))
        ok = np.isfinite(new).all(axis=1)
        point[ok] = new[ok]
    xyz[found] = point
    return xyz


def triangulate(cameras: Sequence[CameraCalibration], xy: np.ndarray, confidence: np.ndarray | None = None,
                max_error_px: float = 15.0, min_views: int = 2, min_confidence: float = 0.2,
                exhaustive_views: int = 6, soft_px: float | None = 40.0, iterations: int = 10) -> Triangulation:
    """Triangulate V views' 2-D points.

    xy:         (V, T, K, 2) distorted pixel coordinates, nan where the view has no point
    confidence: (V, T, K) in [0, 1], the DLT weights; points under ``min_confidence`` are not used (None: all 1)
    soft_px:    the scale of the Cauchy weights every view is weighed in with after the agreeing subset is found
                (module docstring; None: the subset's own solution)
    Returns a :class:`Triangulation` of (T, K) points; ``used``: the views within ``max_error_px`` of the point.
    """
    xy = np.asarray(xy, np.float64)
    v, t, k = xy.shape[:3]
    if xy.shape != (v, t, k, 2) or len(cameras) != v:
        raise ValueError(f"expected xy (V={len(cameras)}, T, K, 2), got {xy.shape}")
    if min_views < 2:
        raise ValueError("min_views must be at least 2")
    conf = np.ones((v, t, k)) if confidence is None else np.asarray(confidence, np.float64)
    uv = np.stack([cam.undistort(xy[i]) for i, cam in enumerate(cameras)])  # (V, T, K, 2)
    flat = lambda a: np.moveaxis(a, 0, 2).reshape(t * k, v, *a.shape[3:])  # noqa: E731  (V, T, K, ...) -> (N, V, ...)
    uv_n, xy_n, w = flat(uv), flat(xy), flat(np.where(np.isfinite(conf), conf, 0.0))
    avail = np.isfinite(uv_n).all(-1) & (w >= min_confidence) & (w > 0)
    ext = np.stack([cam.extrinsic for cam in cameras])
    search = _subset_search if v <= exhaustive_views else _greedy_drop
    xyz, used = search(cameras, ext, uv_n, xy_n, w, avail, max_error_px, min_views)
    if soft_px is not None:
        xyz = _reweigh(cameras, ext, uv_n, xy_n, w, avail, xyz, soft_px, SOFT_CUT * max_error_px, iterations)
    err = reprojection_error(cameras, xyz, xy_n)
    if soft_px is not None:
        used = avail & (err <= max_error_px)
    return Triangulation(xyz.reshape(t, k, 3), used.reshape(t, k, v), err.reshape(t, k, v))
