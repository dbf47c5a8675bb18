"""The detector's still-sample augmentation settings and its photometric / background steps.

A training sample (:mod:`.detector_samples`) is warped from its source image straight into the
256 x 256 input; then, on the input (``img`` (256, 256, 3) uint8, ``pts`` (P, K, 2) input px, nan =
unlabelled), in this order:

1. ``background`` (a chance): everything outside soft ellipses around the labelled animals becomes a
   texture cut from an image of ``backgrounds`` (folders of stills of other projects: other floors,
   other clutter), at its own brightness; the animal keeps its own pixels (:func:`paste_background`);
2. ``colour``: the brightness / contrast jitter every recipe had (unchanged random draws, so an old
   config gives the same samples);
3. the further photometric changes, only when one of them is asked for: per-channel gain,
   saturation, ``gamma`` (log-uniform in exp(+-gamma)), ``grey`` (a chance: one level for the three
   channels, as an infrared camera), ``invert`` (a chance: 255 - x, a dark mouse on a light floor
   becomes a light mouse on a dark floor) and ``blur`` (a chance: Gaussian, sigma 0.5-2 input px), by
   :class:`posetracker.train.augment.Photometric` (the clips' colour augmentation).

Points never move in these steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np

from posetracker.train.augment import Photometric

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
TEXTURE_SIDE = 512  # background images are kept at most this long on their longer side


@dataclass(frozen=True)
class AugmentConfig:
    variants: int = 8  # augmented copies per training item
    rotate_deg: float = 180.0  # rotation drawn uniformly in +-rotate_deg (top-down animals: any angle)
    scale: tuple[float, float] = (0.75, 1.25)
    flip: bool = True
    colour: float = 0.2  # brightness / contrast jitter (fraction)
    defocus: float = 0.0  # chance that one labelled instance of a sample is drawn out of focus (:func:`defocus`)
    grey: float = 0.0  # chance of a grey (infrared-like) sample
    invert: float = 0.0  # chance of inverted brightness
    gamma: float = 0.0  # gamma drawn log-uniformly in exp(+-gamma); 0 = none
    blur: float = 0.0  # chance of a Gaussian blur
    background: float = 0.0  # chance that the floor around the animals becomes a texture from ``backgrounds``
    backgrounds: tuple[str, ...] = ()  # image folders (a config gives them relative to its data_root)
    crop_shift: float = 0.05  # top-down crops: the centre moved by up to this fraction of the crop, each axis

    def key(self) -> list:
        extra = [self.grey, self.invert, self.gamma, self.blur, self.background,
                 ["/".join(Path(b).parts[-2:]) for b in self.backgrounds]]
        return [self.variants, self.rotate_deg, list(self.scale), self.flip, self.colour,
                *([self.defocus] if self.defocus else []), *(extra if self.photometric or self.background else []),
                *([["crop_shift", self.crop_shift]] if self.crop_shift != 0.05 else [])]

    @property
    def photometric(self) -> bool:
        """Whether any of the further photometric changes (step 3 of the module docstring) is asked for."""
        return bool(self.grey or self.invert or self.gamma or self.blur)


@lru_cache(maxsize=4)
def load_textures(folders: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """Every image directly in ``folders``, sorted by name, as (H, W, 3) uint8 RGB of at most TEXTURE_SIDE px."""
    out = []
    for folder in folders:
        files = sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        for f in files:
            bgr = cv2.imread(str(f), cv2.IMREAD_COLOR)
            if bgr is None:
                continue
            s = min(1.0, TEXTURE_SIDE / max(bgr.shape[:2]))
            out.append(cv2.cvtColor(cv2.resize(bgr, None, fx=s, fy=s, interpolation=cv2.INTER_AREA), cv2.COLOR_BGR2RGB))
    if not out:
        raise ValueError(f"augment backgrounds: no images in {list(folders)}")
    return tuple(out)


def animal_mask(pts: np.ndarray, size: int) -> np.ndarray:
    """(P, K, 2) input px (nan = unlabelled) -> (size, size) float32 in [0, 1]: 1 on a soft ellipse around
    each instance with two or more labelled points (along its points' main axis, 0.65 of their length each
    side of their middle, across max(half their spread, 0.25 of their length) + 0.1 of their length; an
    8 px feather), 0 elsewhere."""
    mask = np.zeros((size, size), np.uint8)
    for p in pts:
        p = p[np.isfinite(p).all(-1)]
        if len(p) < 2:
            continue
        centre = p.mean(0)
        _, _, vt = np.linalg.svd(p - centre, full_matrices=False)
        along, across = (p - centre) @ vt[0], (p - centre) @ (vt[1] if len(vt) > 1 else vt[0][::-1] * [1, -1])
        length = float(np.ptp(along)) or 1.0
        mid = centre + vt[0] * (along.max() + along.min()) / 2
        half = (0.65 * length, max(float(np.ptp(across)) / 2, 0.25 * length) + 0.1 * length)
        angle = float(np.degrees(np.arctan2(vt[0][1], vt[0][0])))
        cv2.ellipse(mask, (int(round(mid[0])), int(round(mid[1]))), (int(np.ceil(half[0])), int(np.ceil(half[1]))),
                    angle, 0, 360, 255, -1)
    return cv2.GaussianBlur(mask.astype(np.float32) / 255.0, (0, 0), 4.0)


def texture(rng: np.random.Generator, textures: tuple[np.ndarray, ...], size: int) -> np.ndarray:
    """A (size, size, 3) uint8 patch: a random square crop (0.3-1 of the image's shorter side) of a random
    texture, turned by a multiple of 90 degrees, maybe mirrored, at a gain of 0.3-1.3."""
    src = textures[int(rng.integers(len(textures)))]
    h, w = src.shape[:2]
    side = max(8, int(min(h, w) * rng.uniform(0.3, 1.0)))
    y, x = int(rng.integers(0, h - side + 1)), int(rng.integers(0, w - side + 1))
    patch = np.rot90(src[y : y + side, x : x + side], int(rng.integers(4)))
    if rng.random() < 0.5:
        patch = patch[:, ::-1]
    patch = cv2.resize(np.ascontiguousarray(patch), (size, size), interpolation=cv2.INTER_LINEAR)
    return np.clip(patch.astype(np.float32) * rng.uniform(0.3, 1.3), 0, 255).astype(np.uint8)


def paste_background(img: np.ndarray, pts: np.ndarray, rng: np.random.Generator,
                     textures: tuple[np.ndarray, ...]) -> np.ndarray:
    """(S, S, 3) uint8 input with everything outside :func:`animal_mask` of ``pts`` (P, K, 2) input px
    replaced by a :func:`texture`; unchanged when no instance has two labelled points."""
    mask = animal_mask(pts, img.shape[0])[..., None]
    if not mask.any():
        return img
    tex = texture(rng, textures, img.shape[0]).astype(np.float32)
    return np.clip(np.rint(img * mask + tex * (1.0 - mask)), 0, 255).astype(np.uint8)


def augment_input(img: np.ndarray, pts: np.ndarray, rng: np.random.Generator, colour: float,
                  aug: AugmentConfig | None = None) -> np.ndarray:
    """Steps 1-3 of the module docstring on one warped input (256, 256, 3) uint8 with its points (P, K, 2)
    input px; ``colour``: step 2's jitter; ``aug``: steps 1 and 3 (None: step 2 only)."""
    if aug is not None and aug.background > 0 and aug.backgrounds and rng.random() < aug.background:
        img = paste_background(img, pts, rng, load_textures(tuple(aug.backgrounds)))
    if colour > 0:
        a, b = 1 + rng.uniform(-colour, colour), 255 * rng.uniform(-colour, colour) / 2
        img = np.clip(img.astype(np.float32) * a + b, 0, 255).astype(np.uint8)
    if aug is not None and aug.photometric:
        blur = float(rng.uniform(0.5, 2.0)) if rng.random() < aug.blur else 0.0
        photo = Photometric(gain=rng.uniform(0.8, 1.2, 3), bias=0.0, contrast=1.0,
                            saturation=float(rng.uniform(0.5, 1.5)), blur_sigma=blur, patches=np.zeros((0, 7)),
                            grey=bool(rng.random() < aug.grey), invert=bool(rng.random() < aug.invert),
                            gamma=float(np.exp(rng.uniform(-aug.gamma, aug.gamma))) if aug.gamma else 1.0)
        img = photo.apply(img, 0.0)
    return img
