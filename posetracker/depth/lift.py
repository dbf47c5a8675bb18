"""Method A step 9 (3-D), the core: joint depths along the skeleton tree, then the pinhole lift to metric xyz.

The decoder reads each person's root (body-centre) depth and, per edge, the depth
difference child - parent (``DecodedPeople.depth_reads``: (P, 1+E) m); a joint's
depth is the root depth plus the differences on the path from the root
(:func:`joint_depths`). :class:`Camera` turns (x px, y px, depth m) into xyz.

Camera space: x right, y down, z forward along the optical axis (metres), the
same axes as the skeleton files. The principal point is the image centre
``(width / 2, height / 2)``; pixels are square (fy = fx). A field of view is
the angle across the frame's **long side** (horizontal in a landscape frame,
vertical in a portrait one: a phone held upright keeps its lens).

The network's camera: the depth head was trained on labels lifted with a 60
degree field of view across the long side (``NETWORK_FOV_DEG``), so its depths
are those of that camera. A person's apparent size fixes their metric size,
not their distance: with another camera (``fov_deg``) the same pixels at the
same metric size lie ``depth_scale(fov_deg)`` times as far
(:class:`posetracker.depth.DepthEstimator` applies it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


NETWORK_FOV_DEG = 60.0  # across the long side: the camera of the depth head's training labels


def depth_scale(fov_deg: float) -> float:
    """How much farther than the network's camera a camera with ``fov_deg`` (long side) puts the same
    pixels at the same metric size: f(fov) / f(NETWORK_FOV_DEG)."""
    if not 0.0 < fov_deg < 180.0:
        raise ValueError(f"fov_deg must be in (0, 180), got {fov_deg}")
    return math.tan(math.radians(NETWORK_FOV_DEG) / 2.0) / math.tan(math.radians(fov_deg) / 2.0)


def camera_depths(depth: np.ndarray, root: int, scale: float) -> np.ndarray:
    """Joint depths of the network's camera -> those of a camera ``scale`` (:func:`depth_scale`) times its focal
    length: the root's depth scales, the joints keep their metric depth relative to it.

    depth: (P, K) m (or (T, K)); root: the root joint's index -> (P, K) of depth's dtype.
    """
    depth = np.asarray(depth)
    return (depth + (np.asarray(scale, depth.dtype) - 1) * depth[..., root : root + 1]).astype(depth.dtype)


@dataclass(frozen=True)
class Camera:
    """Pinhole camera of an image of ``width`` x ``height`` pixels.

    fov_deg: field of view across the long side (see the module docstring), used when
    ``fx`` (focal length in pixels) is not given.
    """

    width: int
    height: int
    fov_deg: float = 60.0
    fx: float | None = None

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"Camera: image size must be positive, got {self.width}x{self.height}")
        if self.fx is None and not 0.0 < self.fov_deg < 180.0:
            raise ValueError(f"Camera: fov_deg must be in (0, 180), got {self.fov_deg}")
        if self.fx is not None and not self.fx > 0:
            raise ValueError(f"Camera: fx must be positive, got {self.fx}")

    @property
    def focal(self) -> float:
        """Focal length in pixels (fx = fy)."""
        if self.fx is not None:
            return float(self.fx)
        return 0.5 * max(self.width, self.height) / math.tan(math.radians(self.fov_deg) / 2.0)

    @property
    def principal_point(self) -> tuple[float, float]:
        """(cx, cy) in pixels: the image centre."""
        return 0.5 * self.width, 0.5 * self.height

    @property
    def matrix(self) -> np.ndarray:
        """(3, 3) intrinsic matrix K."""
        f = self.focal
        cx, cy = self.principal_point
        return np.array([[f, 0.0, cx], [0.0, f, cy], [0.0, 0.0, 1.0]])

    def to_camera(self, xy: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Back-project pixels at known depth.

        xy: (..., 2) pixels; z: (...) metres -> (..., 3) camera-space xyz in metres
        (nan where z is nan).
        """
        xy = np.asarray(xy, dtype=np.float64)
        z = np.asarray(z, dtype=np.float64)
        f = self.focal
        cx, cy = self.principal_point
        return np.stack([(xy[..., 0] - cx) * z / f, (xy[..., 1] - cy) * z / f, z], axis=-1)

    def project(self, xyz: np.ndarray) -> np.ndarray:
        """Project camera-space points. xyz: (..., 3) metres -> (..., 2) pixels."""
        xyz = np.asarray(xyz, dtype=np.float64)
        f = self.focal
        cx, cy = self.principal_point
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.stack([f * xyz[..., 0] / xyz[..., 2] + cx, f * xyz[..., 1] / xyz[..., 2] + cy], axis=-1)


def joint_depths(depth_reads: np.ndarray, path: np.ndarray) -> np.ndarray:
    """Joint depths from the depth head's reads: the root depth plus the differences summed along the path.

    depth_reads: (P, 1+E) m, root depth then the edges' differences; path: (E, K) from
    :func:`posetracker.decoding.tree.path_matrix` -> (P, K) float32 m.
    """
    return (depth_reads[:, :1] + depth_reads[:, 1:] @ path).astype(np.float32)


def lift_keypoints(keypoints: np.ndarray, depth: np.ndarray, camera: Camera) -> np.ndarray:
    """Metric xyz of decoded people.

    keypoints: (P, K, 2) pixels in ``camera``'s image; depth: (P, K) metres -> (P, K, 3) float32.
    """
    return camera.to_camera(keypoints, depth).astype(np.float32)


__all__ = ["Camera", "camera_depths", "depth_scale", "joint_depths", "lift_keypoints"]
