"""The camera's gravity as extra inputs of the pose prior (a study: studies/metres.md, issues #46, #48).

A prior trained with ``gravity_dropout`` (``posetracker.train.pose_prior``) reads, after the pose's inputs
(``depth.pose_prior.prior_inputs``), the world's down direction in the frame of the camera turned to look along the
ray to the person's root and a flag that it is known (:func:`gravity_inputs`, all four zero where it is not), and
with ``level_view`` also the pose as the camera turned level about its centre sees it (:func:`level_view_inputs`).
The product's session does not read such a prior; ``studies/tools/gravity_prior.py`` runs it.

Shapes: xy (P, K, 2), ok (P, K) bool, down (P, 3) camera axes (x right, y down, z forward); outputs (P, 4) or
(P, 4 + (K - 1) * 2) float32.
"""

from __future__ import annotations

import numpy as np

from posetracker.depth.pose_prior import prior_inputs
from posetracker.skeletons import SkeletonSpec

GRAVITY_INPUTS = 4  # the down direction seen along the ray to the person (3), known (1)


def gravity_inputs(down: np.ndarray | None, ray: np.ndarray) -> np.ndarray:
    """The camera's gravity as the prior's extra inputs: down (P, 3) the world's down direction in camera axes
    (x right, y down, z forward; any length; a row of nan, or None, where it is not known), ray (P, 3) the
    direction from the camera to the person's hip midpoint -> (P, 4) float32: ``down`` turned by the smallest
    rotation taking ``ray`` onto +z (the camera looking straight at the person: its pitch and roll there), then
    1; zeros where unknown."""
    ray = np.asarray(ray, np.float64)
    out = np.zeros((len(ray), GRAVITY_INPUTS), np.float32)
    if down is None:
        return out
    down = np.broadcast_to(np.asarray(down, np.float64), ray.shape)
    a = ray / np.linalg.norm(ray, axis=-1, keepdims=True)
    g = down / np.linalg.norm(down, axis=-1, keepdims=True)
    v = np.stack([a[:, 1], -a[:, 0], np.zeros(len(a))], -1)  # a x (0, 0, 1)
    c = a[:, 2:3]
    # Rodrigues: R g = g c' + (v x g) + v (v . g) / (1 + c), the rotation about v taking a onto +z
    turned = g * c + np.cross(v, g) + v * (v * g).sum(-1, keepdims=True) / (1.0 + c)
    known = np.isfinite(turned).all(-1) & (c[:, 0] > -1.0 + 1e-9)
    out[known, :3] = turned[known]
    out[known, 3] = 1.0
    return out


def level_view_inputs(xy: np.ndarray, ok: np.ndarray, down: np.ndarray | None, spec: SkeletonSpec) -> np.ndarray:
    """xy (P, K, 2) image points in focal-length units about the principal point, ok (P, K), down (P, 3) as in
    :func:`gravity_inputs` -> (P, (K-1)*2) float32: the pose as the camera turned level about its centre (pitch and
    roll undone, no yaw) sees it, centred and scaled as :func:`prior_inputs` does (its x, y); zeros where the
    gravity is unknown or the torso not seen there."""
    xy = np.asarray(xy, np.float64)
    out = np.zeros((len(xy), (spec.num_joints - 1) * 2), np.float32)
    if down is None or not len(xy):
        return out
    g = np.broadcast_to(np.asarray(down, np.float64), (len(xy), 3))
    g = g / np.linalg.norm(g, axis=-1, keepdims=True)
    v = np.stack([-g[:, 2], np.zeros(len(g)), g[:, 0]], -1)[:, None]  # g x (0, 1, 0)
    c = g[:, 1, None, None]
    rays = np.concatenate([xy, np.ones(xy.shape[:-1] + (1,))], -1)
    with np.errstate(invalid="ignore", divide="ignore"):  # Rodrigues, the turn taking g onto +y
        turned = rays * c + np.cross(v, rays) + v * (v * rays).sum(-1, keepdims=True) / (1.0 + c)
        level = turned[..., :2] / turned[..., 2:3]
    seen = ok & np.isfinite(level).all(-1) & (turned[..., 2] > 1e-6)
    x, _, torso = prior_inputs(np.where(seen[..., None], level, 0.0), seen, spec)
    x = x.reshape(len(x), -1, 3)[..., :2].reshape(len(x), -1)
    known = torso & np.isfinite(g).all(-1)
    out[known] = x[known]
    return out


def camera_gravity_inputs(xy: np.ndarray, ok: np.ndarray, down: np.ndarray | None, focal: float,
                          centre: tuple[float, float], spec: SkeletonSpec, level_view: bool) -> np.ndarray:
    """The extra inputs of a prior trained with the camera's gravity for people at xy (P, K, 2) px seen ok (P, K)
    by a camera of ``focal`` px and principal point ``centre`` px: :func:`gravity_inputs` (P, 4) along the ray to
    the root joint, then with ``level_view`` :func:`level_view_inputs` (P, (K-1)*2); down (P, 3) or (3,) or None."""
    xn = (np.asarray(xy, np.float64) - np.asarray(centre, np.float64)) / focal
    d = None if down is None else np.broadcast_to(np.asarray(down, np.float64), (len(xn), 3))
    ray = np.concatenate([xn[:, spec.root], np.ones((len(xn), 1))], -1)
    g = gravity_inputs(d, ray)
    return np.concatenate([g, level_view_inputs(xn, ok, d, spec)], -1) if level_view else g
