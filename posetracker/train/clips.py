"""Training clips: listing, the whole-clip train/val split, and virtual-camera clips from stills.

Clips are the videos under the data root (``../shared/data/video``: the
openpose street dance, sleap dance, mmaction2 demos, treadmill walks, the
mmpose demo and ``more/*``), named by their path relative to the root. The
split is by *whole clip* (no frame of a validation clip is ever trained
on): the config lists the validation clips, every other clip trains (or the
config lists both). Stills become clips with :func:`virtual_camera_clip`: a
camera moving along a smooth random similarity path (scale, translation,
small rotation) over the image, labels moved with it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.train.augment import AugmentPlan, PathLimits, path_matrices, smooth_path
from posetracker.train.clip_labels import ClipLabels, PersonLabel, augment_labels
from posetracker.types import Frame

VIDEO_EXTS = (".mp4", ".avi", ".mkv", ".mov", ".webm", ".gif")
IMAGE_EXTS = (".jpg", ".jpeg", ".png")


def list_clips(root: str | Path, min_frames: int = 0) -> list[str]:
    """Every video under ``root`` (relative posix paths, sorted); ``min_frames`` drops short ones (PyAV header count)."""
    root = Path(root)
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.suffix.lower() in VIDEO_EXTS)
    if min_frames <= 0:
        return found
    return [c for c in found if _frame_count(root / c) >= min_frames]


def _frame_count(path: Path) -> int:
    import av

    try:
        with av.open(str(path)) as c:
            s = c.streams.video[0]
            n = s.frames or int((float(s.duration * s.time_base) if s.duration else 0) * float(s.average_rate or 0))
            return n if n > 0 else 10**6  # unknown count (mkv): keep
    except (av.error.FFmpegError, IndexError):
        return 0


def split_clips(all_clips: list[str], val: list[str], train: list[str] | None = None,
                exclude: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(train, val) lists of whole clips. ``train`` None = every clip not in ``val`` or ``exclude``.

    Raises ValueError when a listed clip is missing or a clip is in both lists.
    """
    have = set(all_clips)
    missing = [c for c in [*val, *(train or [])] if c not in have]
    if missing:
        raise ValueError(f"clips listed in the config but not found under the data root: {missing}")
    skip = set(val) | set(exclude or [])
    tr = list(train) if train is not None else [c for c in all_clips if c not in skip]
    both = set(tr) & set(val)
    if both:
        raise ValueError(f"clips in both train and val: {sorted(both)}")
    return tr, list(val)


def list_stills(root: str | Path, patterns: list[str]) -> list[str]:
    """Still images matching glob ``patterns`` under ``root`` (relative posix paths, sorted)."""
    root = Path(root)
    out = {p.relative_to(root).as_posix() for pat in patterns for p in root.glob(pat) if p.suffix.lower() in IMAGE_EXTS}
    return sorted(out)


def read_still(path: str | Path) -> np.ndarray:
    """(H, W, 3) uint8 RGB."""
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise FileNotFoundError(f"cannot read image {path}")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def still_labels(people: list[PersonLabel], k: int, size: tuple[int, int], fps: float = 30.0) -> ClipLabels:
    """One frame of teacher people as a 1-frame ClipLabels (one track per person)."""
    n = len(people)
    def stack(attr: str, shape: tuple[int, ...], fill: float) -> np.ndarray:
        return np.stack([getattr(p, attr) for p in people]).astype(np.float32)[None] if n else np.full((1, 0, *shape), fill, np.float32)
    vis = np.stack([p.visible for p in people])[None] if n else np.zeros((1, 0, k), bool)
    return ClipLabels(stack("xy", (k, 2), np.nan), stack("xy", (k, 2), np.nan), vis, stack("confidence", (k,), 0.0),
                      stack("depth_m", (k,), np.nan), stack("world", (k, 3), np.nan), np.zeros(1), np.zeros(1, np.int64), size)


def virtual_camera_clip(image: np.ndarray, labels: ClipLabels, num_frames: int, rng: np.random.Generator,
                        spec: SkeletonSpec, limits: PathLimits = PathLimits(), fps: float = 30.0
                        ) -> tuple[list[Frame], ClipLabels]:
    """A ``num_frames``-frame clip of a still (H, W, 3) uint8 seen by a smoothly moving camera.

    labels: the still's labels as a 1-frame ClipLabels (see :func:`still_labels`). Each frame is the
    image warped by a similarity transform on a smooth random path; the labels follow (xy by the
    affine, depth / scale, world rotated). Returns (frames, labels with T = num_frames).
    """
    h, w = image.shape[:2]
    path = smooth_path(num_frames, rng, limits, (w, h))
    plan = AugmentPlan(path_matrices(path, (w, h)), path[:, 0], path[:, 1], None, False, (w, h))
    frames = [Frame(i, i / fps, plan.frame(i, image)) for i in range(num_frames)]
    rep = {k: np.repeat(getattr(labels, k)[:1], num_frames, 0)
           for k in ("xy", "raw_xy", "visible", "confidence", "depth", "world")}
    still = replace(labels, **rep, timestamps=np.arange(num_frames) / fps, frame_ids=np.arange(num_frames))
    return frames, augment_labels(still, plan, spec)
