"""The pose prior given the camera's gravity: a prior trained on level cameras reads the 2-D turned level (study code).

studies/metres.md, "The pose prior given the camera's pitch" (issues #46, #48). The camera is turned level about
its centre (:func:`level_turn`: pitch and roll undone, no yaw), so its pixels move by the homography K R K^-1;
a prior trained on level virtual cameras (``configs/pose_prior_level.yaml``) reads them, and its depths, level-camera
depths along the turned rays, are put back on the real camera's rays (:func:`level_relative_depth`), so the image
points do not move. :class:`LevelDepthEstimator` is the session's depth stage with that prior where the gravity is
known; ``single_view_replay.py`` (variants ``level:``, ``floor_down:``) and ``single_view_compare.py
--level-prior`` use it. Not in the product: it made PA-MPJPE worse in 5 of the 8 view-person cells of the 4-view
trial (the page has the numbers).

Shapes: xy (P, K, 2) px, ok (P, K) bool, depths (P, K) m; down (3,) camera axes (x right, y down, z forward).
"""

from __future__ import annotations

import numpy as np

from posetracker.depth.estimator import DepthEstimator, moved_prior_weight
from posetracker.depth.lift import Camera, camera_depths, joint_depths, lift_keypoints
from posetracker.depth.pose_prior import PosePrior


def level_turn(down: np.ndarray) -> np.ndarray:
    """(3, 3) the smallest rotation taking the camera-space down direction ``down`` (3,) onto +y: the camera
    turned level about its centre (pitch and roll undone, no yaw)."""
    g = np.asarray(down, np.float64)
    g = g / np.linalg.norm(g)
    axis, cos = np.cross(g, [0.0, 1.0, 0.0]), g[1]
    if cos <= -1.0 + 1e-9:
        raise ValueError(f"the camera's down direction {down} points straight up")
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + k + k @ k / (1.0 + cos)


def level_relative_depth(prior: PosePrior, xy: np.ndarray, ok: np.ndarray, root_depth: np.ndarray, focal: float,
                         turn: np.ndarray, centre: tuple[float, float], hip_depths: np.ndarray) -> np.ndarray:
    """``prior.relative_depth`` of the camera (focal ``focal`` px, principal point ``centre`` px) turned level by
    ``turn`` (:func:`level_turn`): (P, K) m in the real camera relative to the mean of ``hip_depths`` (P, 2) m (the
    left and right hips' depths there, which place the hip midpoint the level depths start from); root_depth (P,)
    m; nan for people whose torso is not seen."""
    c = np.asarray(centre, np.float64)
    rays = np.concatenate([(np.asarray(xy, np.float64) - c) / focal, np.ones(xy.shape[:-1] + (1,))], -1)
    level = rays @ turn.T  # (P, K, 3) the rays in the level camera
    hip_depths = np.asarray(hip_depths, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        level_xy = level[..., :2] / level[..., 2:3] * focal + c
        ok = ok & (level[..., 2] > 1e-6)
        hip_mid = (rays[:, prior.hips] * hip_depths[..., None]).mean(1)  # (P, 3) the hips' midpoint
        root_level = (rays[:, prior.spec.root] * root_depth[:, None]) @ turn.T
        rel = prior.relative_depth(level_xy, ok, root_level[:, 2], focal)  # level depth - level hip depth
        z_level = (hip_mid @ turn.T)[:, 2:3] + rel
        points = (level * (z_level / level[..., 2])[..., None]) @ turn  # back in the real camera
    out = points[..., 2] - hip_depths.mean(1, keepdims=True)
    out[:, prior.spec.root] = 0.0
    return np.where(np.isfinite(rel[:, :1]), out, np.nan)


def level_fuse(prior: PosePrior, xy: np.ndarray, confidence: np.ndarray, depth: np.ndarray, camera: Camera,
               turn: np.ndarray, weight: np.ndarray | None = None, plain: PosePrior | None = None,
               legs: list[int] | None = None) -> np.ndarray:
    """``PosePrior.fuse`` with the level prior's depths (:func:`level_relative_depth`); ``depth`` (P, K) m are the
    real camera's (``camera``), ``weight`` (P, K) the prior's share (None: ``prior.weight``). ``plain``, ``legs``:
    only the joints ``legs`` take the level prior's depths, the others ``plain``'s on the 2-D as it is."""
    if len(depth) == 0:
        return depth
    w = prior.weight if weight is None else np.asarray(weight, np.float64)
    root = depth[:, prior.spec.root]
    hip = depth[:, prior.hips].mean(1, keepdims=True)
    ok = confidence >= prior.min_confidence
    rel = level_relative_depth(prior, xy, ok, root, camera.focal, turn, camera.principal_point, depth[:, prior.hips])
    if plain is not None:
        rest = plain.relative_depth(xy, ok, root.astype(np.float64), camera.focal)
        rel = np.where(np.isin(np.arange(rel.shape[1]), legs), rel, rest)
    mixed = hip + (1.0 - w) * (depth - hip) + w * rel
    mixed[:, prior.spec.root] = root
    return np.where(np.isfinite(rel), mixed, depth).astype(depth.dtype)


class LevelDepthEstimator(DepthEstimator):
    """The session's depth stage (:class:`DepthEstimator`, a trained depth head) with ``prior`` a level-camera prior
    reading the 2-D of the camera turned level by its gravity ``down`` (3,)."""

    def __init__(self, base: DepthEstimator, prior: PosePrior, down: np.ndarray, legs_only: bool = False):
        self.__dict__.update(base.__dict__)
        self.plain = base.prior if legs_only else None  # legs_only: the other joints keep the base's prior
        self.legs = [self.spec.index(n) for n in self.spec.joint_names if n.endswith(("hip", "knee", "ankle"))]
        self.prior, self.turn = prior, level_turn(down)

    def estimate(self, xy: np.ndarray, confidence: np.ndarray, depth_reads: np.ndarray,
                 image_size: tuple[int, int], read_xy: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        camera = Camera(*image_size, fov_deg=self.fov_deg)
        depth = camera_depths(joint_depths(depth_reads, self.path), self.spec.root, self.depth_scale)
        weight = None if read_xy is None else moved_prior_weight(xy, read_xy, self.prior.weight)
        depth = level_fuse(self.prior, xy, confidence, depth, camera, self.turn, weight, self.plain, self.legs)
        return depth, lift_keypoints(xy, depth, camera)
