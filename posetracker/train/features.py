"""Cached frozen-backbone features of clips (method A step 1, computed once per clip variant).

The backbone is frozen in every training stage, so each clip's letterboxed
256x256 frames go through it once; the first features (T, 24, 64, 64) are
stored as float16 ``.npy`` (memory-mapped when training) with the per-frame
letterbox scale, source frame indices and timestamps in a small ``.npz``.
An augmented variant (see :mod:`.augment`) is its own cache entry: the
augmentation is applied to the source frames, then the features computed.
Key = clip file hash + variant + frame selection + backbone weights.

The backbone runs through ONNX Runtime when it is installed
(``posetracker.model.runtime.accelerate``) on a private copy of the network,
so the network being trained keeps its torch modules.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from posetracker.model.network import PoseNet
from posetracker.model.preprocess import INPUT_SIZE, letterbox, to_tensor
from posetracker.model.runtime import accelerate
from posetracker.model.weights import weights_key
from posetracker.train.augment import ClipAugment
from posetracker.train.cache import combine_key, entry_path, file_hash, load_npz, save_npy, save_npz
from posetracker.types import Frame


@dataclass(frozen=True)
class FrameSelection:
    """Which source frames of a clip are used: every ``step``-th, at most ``max_frames``."""

    step: int = 1
    max_frames: int | None = None

    def key(self) -> list:
        return [self.step, self.max_frames]


def frame_step_for(fps: float, target_fps: float = 30.0) -> int:
    """Keep roughly ``target_fps``: a 60 fps clip uses every 2nd frame, a 30 fps clip every frame."""
    return max(1, int(round(fps / target_fps))) if fps > 0 else 1


def iter_frames(path: str | Path, sel: FrameSelection = FrameSelection()) -> Iterator[Frame]:
    """Selected frames of a video file (or animated GIF), decoded with PyAV; indices are source indices."""
    from posetracker.capture import VideoFileSource

    kept = 0
    with VideoFileSource(path) as src:
        for frame in src:
            if frame.index % sel.step:
                continue
            if sel.max_frames is not None and kept >= sel.max_frames:
                return
            kept += 1
            yield frame


@dataclass
class ClipFeatures:
    """Backbone features of one clip variant.

    feats: (T, C, h, w) float16 (memory-mapped from the cache); scales: (T,) letterbox
    scale (input px = source px * scale); frame_ids: (T,) source frame index;
    timestamps: (T,) s; size: source (W, H); key: the cache key.
    """

    feats: np.ndarray
    scales: np.ndarray
    frame_ids: np.ndarray
    timestamps: np.ndarray
    size: tuple[int, int]
    key: str

    def __len__(self) -> int:
        return int(self.feats.shape[0])


class FeatureExtractor:
    """Frozen backbone (a private copy, ONNX Runtime when available) -> cached clip features."""

    def __init__(self, net: PoseNet, threads: int = 1, batch: int = 8, runtime: str = "auto"):
        self.weights_key = weights_key(net.backbone)
        self.net = copy.deepcopy(net).eval()
        self.runtime = accelerate(self.net, threads) if runtime == "auto" else "torch"
        self.threads = threads
        self.batch = batch
        self.frames_per_s: float = float("nan")

    def key(self, clip: str | Path, variant: str, sel: FrameSelection) -> str:
        return combine_key("features-v1", file_hash(clip), variant, sel.key(), self.weights_key, INPUT_SIZE)

    @torch.no_grad()
    def _run(self, images: list[np.ndarray]) -> np.ndarray:
        """(B, 256, 256, 3) uint8 letterboxed frames -> (B, C, h, w) float16."""
        x = to_tensor(np.stack(images))
        prev = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return self.net.backbone(x).numpy().astype(np.float16)
        finally:
            torch.set_num_threads(prev)

    def compute(self, frames: Iterable[Frame], n: int, augment: ClipAugment, clip_key: str) -> dict[str, np.ndarray]:
        """Features of ``n`` frames under ``augment`` (streamed, never all decoded at once):
        {"feats" (T, C, h, w) f16, "scales" (T,), "frame_ids" (T,), "timestamps" (T,), "size" (2,)}."""
        plan, size = None, (0, 0)
        feats, scales, ids, stamps, batch = [], [], [], [], []
        t0 = time.perf_counter()
        for i, f in enumerate(frames):
            if plan is None:
                size = f.size
                plan = augment.plan(n, size, clip_key)
            img, box = letterbox(plan.frame(i, f.image), INPUT_SIZE)
            batch.append(img)
            scales.append(box.scale)
            ids.append(f.index)
            stamps.append(f.timestamp)
            if len(batch) == self.batch:
                feats.append(self._run(batch))
                batch = []
        if batch:
            feats.append(self._run(batch))
        if not feats:
            raise ValueError("no frames to extract features from")
        self.frames_per_s = len(ids) / max(time.perf_counter() - t0, 1e-9)
        return {"feats": np.concatenate(feats), "scales": np.asarray(scales, np.float64),
                "frame_ids": np.asarray(ids, np.int64), "timestamps": np.asarray(stamps, np.float64),
                "size": np.array(size, np.int64)}

    def clip_features(self, clip: str | Path, variant: str = "orig", sel: FrameSelection = FrameSelection(),
                      n: int | None = None) -> ClipFeatures:
        """Cached features of a clip variant (decoded and computed on a miss; ``n`` = selected frame count if known)."""
        key = self.key(clip, variant, sel)
        hit = load_features(key)
        if hit is not None:
            return hit
        n = n if n is not None else sum(1 for _ in iter_frames(clip, sel))
        return self.store(key, self.compute(iter_frames(clip, sel), n, ClipAugment.parse(variant), file_hash(clip)))

    def frames_features(self, key: str, frames: list[Frame]) -> ClipFeatures:
        """Cached features of in-memory frames (e.g. a virtual-camera clip) under a caller-made key."""
        hit = load_features(key)
        return hit if hit is not None else self.store(key, self.compute(frames, len(frames), ClipAugment(), key))

    @staticmethod
    def store(key: str, out: dict[str, np.ndarray]) -> ClipFeatures:
        save_npy(entry_path("features", key, ".npy"), out.pop("feats"))
        save_npz(entry_path("features", key, ".meta.npz"), **out)
        result = load_features(key)
        assert result is not None
        return result


def load_features(key: str) -> ClipFeatures | None:
    """A cached entry (features memory-mapped), or None."""
    meta = load_npz(entry_path("features", key, ".meta.npz"))
    path = entry_path("features", key, ".npy")
    if meta is None or not path.exists():
        return None
    feats = np.load(path, mmap_mode="r")
    size = tuple(int(v) for v in meta["size"])
    return ClipFeatures(feats, meta["scales"], meta["frame_ids"], meta["timestamps"], (size[0], size[1]), key)
