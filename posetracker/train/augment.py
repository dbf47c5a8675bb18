"""Clip augmentations that keep labels exact: flip, similarity-transform paths, colour, blur, occluders.

:class:`Photometric` (colour, grey, inversion, gamma, blur) also serves the detector's still samples
(:mod:`.still_augment`).

Every augmentation acts on the *source* frame (before the letterbox), so the
same per-frame 2x3 affine maps the teacher's source-pixel labels. A clip is
augmented as a whole, with parameters that vary smoothly over time (a moving
camera, not per-frame noise: the temporal model must not learn to expect
flicker). A variant is named by a string:

- ``"orig"``: the frames as they are;
- ``"flip"``: horizontal mirror, x' = W - 1 - x, with the skeleton's
  left/right joints swapped (``spec.mirror_index``);
- ``"aug<seed>"``: a smooth random similarity path (scale, translation,
  small rotation) plus colour jitter, blur and occluding patches, all drawn
  from ``seed`` and the clip's key;
- ``"far<seed>"``: like ``aug<seed>`` but zoomed out (:data:`FAR_LIMITS`): the
  frame shrinks to 0.3-0.6 of its size inside a black border, so its people
  look 1.7-3.3x farther away (the depth head sees distant, small people);
- ``"flip+aug<seed>"``, ``"flip+far<seed>"``: both (flip first).

Labels move with the image: xy by the affine, depth divided by the path's
scale (zooming in = moving closer), world coordinates rotated in the image
plane and mirrored with the flip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import cv2
import numpy as np
from scipy.interpolate import CubicSpline

_VARIANT = re.compile(r"^(flip\+)?(aug|far)(\d+)$")  # orig and flip are matched by name


@dataclass(frozen=True)
class PathLimits:
    """Largest deviations of a random similarity path (fractions of the image size, degrees)."""

    scale: tuple[float, float] = (0.75, 1.3)
    shift: float = 0.12
    rotation_deg: float = 10.0
    knot_every: int = 16  # frames between random keyframes of the path


FAR_LIMITS = PathLimits(scale=(0.3, 0.6), shift=0.25, rotation_deg=5.0, knot_every=32)


def similarity(scale: float, angle_deg: float, shift: tuple[float, float], centre: tuple[float, float]) -> np.ndarray:
    """(2, 3) affine: rotate by ``angle_deg`` and scale about ``centre``, then shift (px)."""
    m = cv2.getRotationMatrix2D((float(centre[0]), float(centre[1])), float(angle_deg), float(scale))
    m[:, 2] += np.asarray(shift, np.float64)
    return m


def smooth_path(n: int, rng: np.random.Generator, limits: PathLimits, size: tuple[int, int]) -> np.ndarray:
    """A smooth random similarity path: (n, 4) rows (scale, angle deg, shift x px, shift y px)."""
    w, h = size
    knots = max(2, int(np.ceil(n / limits.knot_every)) + 1)
    t_knot = np.linspace(0, max(n - 1, 1), knots)
    lo, hi = np.log(limits.scale[0]), np.log(limits.scale[1])
    vals = np.stack([
        rng.uniform(lo, hi, knots),
        rng.uniform(-limits.rotation_deg, limits.rotation_deg, knots),
        rng.uniform(-limits.shift, limits.shift, knots) * w,
        rng.uniform(-limits.shift, limits.shift, knots) * h,
    ], 1)
    spline = CubicSpline(t_knot, vals, axis=0, bc_type="clamped")
    out = spline(np.arange(n, dtype=np.float64))
    out[:, 0] = np.exp(np.clip(out[:, 0], lo, hi))
    out[:, 1] = np.clip(out[:, 1], -limits.rotation_deg, limits.rotation_deg)
    return out


def path_matrices(path: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(n, 4) path rows -> (n, 2, 3) affines about the image centre."""
    centre = ((size[0] - 1) / 2.0, (size[1] - 1) / 2.0)
    return np.stack([similarity(s, a, (dx, dy), centre) for s, a, dx, dy in path]) if len(path) else np.zeros((0, 2, 3))


def flip_matrix(width: int) -> np.ndarray:
    """(2, 3) affine of the horizontal mirror x' = W - 1 - x."""
    return np.array([[-1.0, 0.0, width - 1.0], [0.0, 1.0, 0.0]])


def compose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(2, 3) affine of ``a`` after ``b``."""
    a3 = np.vstack([a, [0, 0, 1]])
    b3 = np.vstack([b, [0, 0, 1]])
    return (a3 @ b3)[:2]


def apply_affine(m: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """(2, 3) affine on points (..., 2) -> (..., 2); nan stays nan."""
    return xy @ m[:, :2].T + m[:, 2]


@dataclass(frozen=True)
class Photometric:
    """Per-clip colour / blur / occluder parameters (constant or slowly moving over the clip)."""

    gain: np.ndarray  # (3,) per-channel gain
    bias: float  # brightness offset
    contrast: float
    saturation: float
    blur_sigma: float  # px of the source frame, 0 = none
    patches: np.ndarray  # (M, 7): cx0, cy0, cx1, cy1 (fractions), w, h (fractions), grey level
    grey: bool = False  # one grey level for all three channels (an infrared / monochrome camera)
    invert: bool = False  # 255 - x: dark on light becomes light on dark (a white mouse on dark bedding)
    gamma: float = 1.0  # x' = 255 (x / 255) ** gamma

    @staticmethod
    def random(rng: np.random.Generator, max_patches: int = 2) -> Photometric:
        n = int(rng.integers(0, max_patches + 1))
        patches = np.column_stack([rng.uniform(0.1, 0.9, (n, 4)), rng.uniform(0.08, 0.25, (n, 2)),
                                   rng.uniform(0, 255, (n, 1))]) if n else np.zeros((0, 7))
        return Photometric(
            gain=rng.uniform(0.85, 1.15, 3), bias=float(rng.uniform(-25, 25)), contrast=float(rng.uniform(0.7, 1.3)),
            saturation=float(rng.uniform(0.6, 1.4)), blur_sigma=float(rng.choice([0.0, 0.0, rng.uniform(0.5, 2.0)])),
            patches=patches,
        )

    def apply(self, rgb: np.ndarray, frac: float) -> np.ndarray:
        """(H, W, 3) uint8 -> augmented uint8; ``frac`` in [0, 1] = position in the clip (moves patches)."""
        x = rgb.astype(np.float32)
        grey = x.mean(axis=2, keepdims=True)
        x = grey + (x - grey) * self.saturation
        x = (x - 128.0) * self.contrast + 128.0 + self.bias
        x = x * self.gain[None, None, :].astype(np.float32)
        if self.grey:
            x = np.repeat(x.mean(axis=2, keepdims=True), 3, axis=2)
        if self.gamma != 1.0:
            x = 255.0 * (np.clip(x, 0, 255) / 255.0) ** self.gamma
        if self.invert:
            x = 255.0 - np.clip(x, 0, 255)
        out = np.clip(x, 0, 255).astype(np.uint8)
        if self.blur_sigma > 0:
            out = cv2.GaussianBlur(out, (0, 0), self.blur_sigma)
        h, w = out.shape[:2]
        for cx0, cy0, cx1, cy1, pw, ph, level in self.patches:
            cx, cy = (cx0 + (cx1 - cx0) * frac) * w, (cy0 + (cy1 - cy0) * frac) * h
            x0, y0 = int(cx - pw * w / 2), int(cy - ph * h / 2)
            out[max(y0, 0):max(y0 + int(ph * h), 0), max(x0, 0):max(x0 + int(pw * w), 0)] = int(level)
        return out


@dataclass(frozen=True)
class ClipAugment:
    """One variant of a clip: optional flip, optional smooth random path + photometric changes."""

    name: str = "orig"
    flip: bool = False
    seed: int | None = None
    far: bool = False  # the path zooms out (FAR_LIMITS) instead of around the original size

    @staticmethod
    def parse(name: str) -> ClipAugment:
        if name in ("orig", "flip"):
            return ClipAugment(name=name, flip=name == "flip")
        m = _VARIANT.match(name)
        if not m:
            raise ValueError(f"unknown clip variant {name!r}; use orig, flip, aug<seed>, far<seed>, "
                             "flip+aug<seed> or flip+far<seed>")
        return ClipAugment(name=name, flip=m.group(1) is not None, seed=int(m.group(3)), far=m.group(2) == "far")

    @property
    def is_identity(self) -> bool:
        return not self.flip and self.seed is None

    def plan(self, n: int, size: tuple[int, int], clip_key: str, limits: PathLimits | None = None) -> AugmentPlan:
        """Per-frame matrices (n, 2, 3), scales (n,), angles (n,) and photometric parameters for an n-frame clip.

        limits: the path's range; default PathLimits() (aug) or FAR_LIMITS (far)."""
        mats = np.repeat(np.array([[[1.0, 0, 0], [0, 1.0, 0]]]), n, 0)
        scales, angles, photo = np.ones(n), np.zeros(n), None
        if self.seed is not None:
            rng = np.random.default_rng([self.seed, int(clip_key[:8], 16)])
            path = smooth_path(n, rng, limits or (FAR_LIMITS if self.far else PathLimits()), size)
            mats, scales, angles = path_matrices(path, size), path[:, 0], path[:, 1]
            photo = Photometric.random(rng)
        if self.flip:
            mats = np.stack([compose(m, flip_matrix(size[0])) for m in mats]) if n else mats
        return AugmentPlan(mats, scales, angles, photo, self.flip, size)


@dataclass(frozen=True)
class AugmentPlan:
    """A resolved augmentation of one clip; see :class:`ClipAugment`."""

    matrices: np.ndarray  # (n, 2, 3) source px -> augmented px
    scales: np.ndarray  # (n,)
    angles_deg: np.ndarray  # (n,) counter-clockwise in the image, cv2 convention
    photometric: Photometric | None
    flip: bool
    size: tuple[int, int]  # (W, H)

    def frame(self, i: int, rgb: np.ndarray) -> np.ndarray:
        """Augment frame ``i``: (H, W, 3) uint8 -> (H, W, 3) uint8."""
        m = self.matrices[i]
        if not np.allclose(m, [[1, 0, 0], [0, 1, 0]]):
            w, h = rgb.shape[1], rgb.shape[0]
            rgb = cv2.warpAffine(rgb, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        if self.photometric is not None:
            rgb = self.photometric.apply(rgb, i / max(len(self.matrices) - 1, 1))
        return rgb

    def points(self, i: int, xy: np.ndarray) -> np.ndarray:
        """Source px (..., 2) of frame ``i`` -> augmented px (no joint swap; see ``swap_joints``)."""
        return apply_affine(self.matrices[i], xy)

    def world(self, i: int, xyz: np.ndarray) -> np.ndarray:
        """Metric (..., 3) image-aligned coordinates: mirrored with the flip, rotated with the image."""
        out = np.array(xyz, np.float64)
        if self.flip:
            out[..., 0] = -out[..., 0]
        a = np.radians(self.angles_deg[i])  # cv2: positive = counter-clockwise on screen (y down)
        c, s = np.cos(a), np.sin(a)
        x, y = out[..., 0].copy(), out[..., 1].copy()
        out[..., 0], out[..., 1] = c * x + s * y, -s * x + c * y
        return out


def swap_joints(arr: np.ndarray, mirror_index: tuple[int, ...] | np.ndarray, axis: int) -> np.ndarray:
    """Reorder the joint axis of ``arr`` by the skeleton's mirror index (left <-> right)."""
    return np.take(arr, np.asarray(mirror_index), axis=axis)
