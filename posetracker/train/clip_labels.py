"""Per-clip training labels: teacher people per frame -> tracks -> offline-smoothed targets.

A teacher (:class:`LabelTeacher`, see :mod:`.labellers`) labels single frames: a list of
:class:`PersonLabel` (human18 2-D keypoints in source pixels, visibility,
camera-space depth per joint, hip-centred metric world coordinates).
:func:`label_clip` runs it over a clip, links people over time with
:class:`posetracker.tracking.PoseTracker`, and smooths every track offline
(Savitzky-Golay, ``smooth_offline``): these smoothed tracks are the temporal
targets. :func:`cached_clip_labels` stores the result as .npz keyed by clip
hash + teacher name + frame selection. :func:`augment_labels` moves labels
with a clip augmentation (flip with left/right swap, similarity path).

Dense layout of :class:`ClipLabels` (T frames, N tracks, K joints), nan/False
where a track is absent or a value unknown.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.tracking import PoseTracker, smooth_offline
from posetracker.train.augment import AugmentPlan, swap_joints
from posetracker.train.cache import combine_key, entry_path, file_hash, load_npz, save_npz
from posetracker.types import Frame, PoseFrame

MIN_VISIBLE = 0.3  # smoothed confidence at which a joint counts as visible


@dataclass
class PersonLabel:
    """One person in one frame (K = 18 for human18).

    xy: (K, 2) source px (nan = unknown); visible: (K,) bool; depth_m: (K,) camera-space
    depth (nan = unknown); world: (K, 3) hip-centred metres, image-aligned axes (nan = unknown);
    confidence: (K,) teacher score in [0, 1].
    """

    xy: np.ndarray
    visible: np.ndarray
    depth_m: np.ndarray
    world: np.ndarray
    confidence: np.ndarray


class LabelTeacher(Protocol):
    """Makes labels for single frames; ``name`` keys the label cache."""

    name: str

    def label_frame(self, rgb: np.ndarray) -> list[PersonLabel]:
        """(H, W, 3) uint8 RGB -> everyone found in it."""
        ...


@dataclass
class ClipLabels:
    """Tracked, smoothed labels of a clip.

    xy (T, N, K, 2) px; raw_xy (T, N, K, 2) px before smoothing; visible (T, N, K) bool;
    confidence (T, N, K); depth (T, N, K) m; world (T, N, K, 3) m; timestamps (T,) s;
    frame_ids (T,); size: source (W, H).
    """

    xy: np.ndarray
    raw_xy: np.ndarray
    visible: np.ndarray
    confidence: np.ndarray
    depth: np.ndarray
    world: np.ndarray
    timestamps: np.ndarray
    frame_ids: np.ndarray
    size: tuple[int, int]

    @property
    def num_frames(self) -> int:
        return int(self.xy.shape[0])

    @property
    def num_tracks(self) -> int:
        return int(self.xy.shape[1])

    def present(self) -> np.ndarray:
        """(T, N) bool: the track has a labelled joint in the frame."""
        return np.isfinite(self.xy).all(-1).any(-1)

    def frame_people(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Frame ``t``'s people: xy (P, K, 2), visible (P, K), depth (P, K) of the tracks present."""
        p = self.present()[t]
        return self.xy[t, p], self.visible[t, p], self.depth[t, p]

    def to_npz(self) -> dict[str, np.ndarray]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["size"] = np.asarray(self.size, np.int64)
        return d

    @staticmethod
    def from_npz(d: dict[str, np.ndarray]) -> ClipLabels:
        size = tuple(int(v) for v in d["size"])
        return ClipLabels(**{**{k: d[k] for k in d if k != "size"}, "size": (size[0], size[1])})


def _pose_frame(i: int, t: float, people: list[PersonLabel], k: int, size: tuple[int, int]) -> PoseFrame:
    if not people:
        return PoseFrame.empty(i, t, k, size)
    kp = np.stack([np.concatenate([p.xy, p.depth_m[:, None]], 1) for p in people]).astype(np.float32)
    conf = np.stack([np.where(p.visible, np.maximum(p.confidence, MIN_VISIBLE), 0.0) for p in people]).astype(np.float32)
    return PoseFrame(i, t, kp, conf, conf.mean(1), np.full(len(people), -1, np.int64), size)


def assign_tracks(per_frame: list[list[PersonLabel]], timestamps: np.ndarray, spec: SkeletonSpec,
                  size: tuple[int, int]) -> list[np.ndarray]:
    """Track index per person per frame: ids from PoseTracker (min_hits 1); untracked people get their own index."""
    tracker = PoseTracker(spec, min_hits=1)
    out, next_free, id_map = [], 0, {}
    for i, people in enumerate(per_frame):
        ids = tracker.update(_pose_frame(i, float(timestamps[i]), people, spec.num_joints, size)).track_ids
        for rid in tracker.last_retired:  # a retired id may be reused for somebody else
            id_map.pop((rid,), None)
        idx = np.empty(len(people), np.int64)
        for p, tid in enumerate(ids.tolist()):
            key = (tid,) if tid >= 0 else ("single", i, p)
            if key not in id_map or tid < 0:
                id_map[key] = next_free
                next_free += 1
            idx[p] = id_map[key]
        out.append(idx)
    return out


def _dense(per_frame: list[list[PersonLabel]], tracks: list[np.ndarray], k: int) -> dict[str, np.ndarray]:
    t_len, n = len(per_frame), max((int(i.max()) + 1 for i in tracks if i.size), default=0)
    d = {"xy": np.full((t_len, n, k, 2), np.nan), "visible": np.zeros((t_len, n, k), bool),
         "confidence": np.zeros((t_len, n, k)), "depth": np.full((t_len, n, k), np.nan),
         "world": np.full((t_len, n, k, 3), np.nan)}
    for t, (people, idx) in enumerate(zip(per_frame, tracks)):
        for p, j in zip(people, idx):
            d["xy"][t, j], d["visible"][t, j], d["confidence"][t, j] = p.xy, p.visible, p.confidence
            d["depth"][t, j], d["world"][t, j] = p.depth_m, p.world
    return d


def smooth_tracks_dense(d: dict[str, np.ndarray], timestamps: np.ndarray, window_s: float = 0.35) -> dict[str, np.ndarray]:
    """Savitzky-Golay per track over time: xy / depth / world where visible, confidence where present."""
    out = {k: v.copy() for k, v in d.items()}
    present = np.isfinite(d["xy"]).all(-1).any(-1)  # (T, N)
    conf = smooth_offline(np.where(present[..., None], d["confidence"], np.nan), timestamps, window_s=window_s)
    out["confidence"] = np.where(present[..., None], np.clip(np.nan_to_num(conf), 0, 1), 0.0)
    vis = d["visible"]
    for key, extra in (("xy", 2), ("depth", 0), ("world", 3)):
        v = d[key]
        m = vis if extra == 0 else vis[..., None]
        sm = smooth_offline(np.where(m, v, np.nan), timestamps, window_s=window_s)
        out[key] = np.where(m & np.isfinite(sm), sm, v)
    out["visible"] = present[..., None] & (out["confidence"] >= MIN_VISIBLE) & np.isfinite(out["xy"]).all(-1)
    return out


def label_clip(teacher: LabelTeacher, frames: Iterable[Frame], spec: SkeletonSpec,
               progress: Callable[[int], None] | None = None) -> ClipLabels:
    """Run ``teacher`` on every frame, track, smooth -> ClipLabels (source pixels)."""
    per_frame, stamps, ids, size = [], [], [], (0, 0)
    for n, f in enumerate(frames, 1):
        per_frame.append(teacher.label_frame(f.image))
        stamps.append(f.timestamp)
        ids.append(f.index)
        size = f.size
        if progress:
            progress(n)
    ts = np.asarray(stamps, np.float64)
    tracks = assign_tracks(per_frame, ts, spec, size)
    raw = _dense(per_frame, tracks, spec.num_joints)
    sm = smooth_tracks_dense(raw, ts)
    return ClipLabels(sm["xy"].astype(np.float32), raw["xy"].astype(np.float32), sm["visible"],
                      sm["confidence"].astype(np.float32), sm["depth"].astype(np.float32),
                      sm["world"].astype(np.float32), ts, np.asarray(ids, np.int64), size)


def labels_key(clip: str | Path, teacher_name: str, selection_key: list) -> str:
    return combine_key("labels-v1", file_hash(clip), teacher_name, selection_key)


def cached_clip_labels(teacher: LabelTeacher, clip: str | Path, spec: SkeletonSpec, selection_key: list,
                       frames: Callable[[], Iterable[Frame]]) -> ClipLabels:
    """Labels of a clip from the cache, else ``label_clip(teacher, frames(), spec)`` stored there."""
    path = entry_path("labels", labels_key(clip, teacher.name, selection_key), ".npz")
    hit = load_npz(path)
    if hit is not None:
        return ClipLabels.from_npz(hit)
    labels = label_clip(teacher, frames(), spec)
    save_npz(path, **labels.to_npz())
    return labels


def augment_labels(labels: ClipLabels, plan: AugmentPlan, spec: SkeletonSpec) -> ClipLabels:
    """Labels of an augmented clip: points through the per-frame affine, left/right swapped when flipped,
    world mirrored / rotated in the image plane, and the person moved along the optical axis: an image
    scaled by s shows them at body-centre depth z_root / s with the same body (joint depth differences
    unchanged; weak perspective, as the 2-D similarity assumes)."""
    n = labels.num_frames
    xy = np.stack([plan.points(i, labels.xy[i]) for i in range(n)]) if n else labels.xy
    raw = np.stack([plan.points(i, labels.raw_xy[i]) for i in range(n)]) if n else labels.raw_xy
    world = np.stack([plan.world(i, labels.world[i]) for i in range(n)]) if n else labels.world
    root = labels.depth[..., spec.root]  # (T, P)
    if labels.depth.size and not np.isfinite(root).all():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-nan people stay nan
            root = np.where(np.isfinite(root), root, np.nanmedian(labels.depth, axis=-1))
    depth = labels.depth + (root / plan.scales[:, None] - root)[..., None]
    w, h = plan.size
    inside = (xy[..., 0] >= 0) & (xy[..., 0] <= w - 1) & (xy[..., 1] >= 0) & (xy[..., 1] <= h - 1)
    out = replace(labels, xy=xy.astype(np.float32), raw_xy=raw.astype(np.float32), world=world.astype(np.float32),
                  depth=depth.astype(np.float32), visible=labels.visible & inside)
    if plan.flip:
        m = spec.mirror_index
        out = replace(out, xy=swap_joints(out.xy, m, 2), raw_xy=swap_joints(out.raw_xy, m, 2),
                      visible=swap_joints(out.visible, m, 2), confidence=swap_joints(out.confidence, m, 2),
                      depth=swap_joints(out.depth, m, 2), world=swap_joints(out.world, m, 2))
    return out
