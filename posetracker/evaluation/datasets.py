"""Labelled pose sets in the common ``normalized*.json`` schema (see ../shared/data/SCHEMA.md).

A set is a list of :class:`LabelledItem`: one still image, or one frame of a
video (``video`` + ``frame_idx``), each with the hand-labelled people in it.
Paths in the json are relative to the json's folder and are made absolute here.

Shapes: ``N`` = number of joints of the set's own layout (``len(keypoint_names)``).
Keypoints are ``(N, 3)`` float64 rows ``x px, y px, v`` with ``v > 0`` = labelled
(COCO convention: 1 labelled-occluded, 2 visible; 0 = not labelled).

Images are read with :func:`read_image` -> ``(H, W, 3)`` uint8 RGB. Video frames
are decoded with PyAV through one :class:`FrameCache`, which keeps one open
decoder per video and only decodes forward between successive requests, so a
pass over the frames of a clip in order costs one decode of the clip.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from posetracker.skeletons import SkeletonSpec

__all__ = [
    "FrameCache",
    "Instance",
    "LabelledItem",
    "LabelledSet",
    "LabelledSetError",
    "item_points",
    "joint_columns",
    "keypoint_bbox",
    "load_labelled_set",
    "read_image",
]


class LabelledSetError(ValueError):
    """A ``normalized*.json`` file does not follow the schema; the message names the entry."""


def keypoint_bbox(keypoints: np.ndarray) -> np.ndarray | None:
    """Bounding box ``(4,)`` x, y, w, h of the labelled (v > 0) rows of ``keypoints (N, 3)``; None if none."""
    kp = np.asarray(keypoints, dtype=np.float64)
    lab = kp[:, 2] > 0
    if not lab.any():
        return None
    xy = kp[lab, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    return np.array([lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1]], dtype=np.float64)


@dataclass(frozen=True)
class Instance:
    """One labelled person.

    keypoints: (N, 3) float64 x px, y px, v (v > 0 = labelled)
    bbox:      (4,) float64 x, y, w, h in px from the annotation, or None when the source has none
    track:     optional track id / name from the source
    """

    keypoints: np.ndarray
    bbox: np.ndarray | None = None
    track: Any = None

    @property
    def num_labelled(self) -> int:
        return int((self.keypoints[:, 2] > 0).sum())

    def box(self) -> np.ndarray | None:
        """The annotation bbox, else the bbox of the labelled keypoints (None if nothing is labelled)."""
        return self.bbox if self.bbox is not None else keypoint_bbox(self.keypoints)


@dataclass(frozen=True)
class LabelledItem:
    """One labelled image or video frame.

    image:     absolute path of a still image, or None for a video frame
    video:     absolute path of the video, or None for a still image
    frame_idx: 0-based frame index in ``video`` (None for a still image)
    width, height: source image size in px (from the json)
    instances: the labelled people
    file:      the ``file`` entry as written in the json (used as the item's key)
    every_person_labelled: False where the source labels one person at a time (MPII's single-person
               annotation, recognised by its ``center`` and ``scale``): other people in the image are real
               but unlabelled, so a prediction on them is no false positive (see ``ImageEval``)
    """

    image: Path | None
    video: Path | None
    frame_idx: int | None
    width: int
    height: int
    instances: tuple[Instance, ...]
    file: str = ""
    every_person_labelled: bool = True

    @property
    def key(self) -> str:
        """A printable id: the json ``file``, with ``#frame_idx`` for video frames."""
        return self.file if self.video is None else f"{self.file}#{self.frame_idx}"

    @property
    def path(self) -> Path:
        """The file to read: the image, or the video."""
        p = self.image if self.image is not None else self.video
        assert p is not None
        return p


@dataclass(frozen=True)
class LabelledSet:
    """A labelled set loaded from one ``normalized*.json``.

    name:           the json ``dataset`` field (e.g. ``"mmpose_mpii"``)
    kind:           the json ``kind`` field (``"human"``, ``"human_wholebody"``, ...)
    keypoint_names: (N,) joint names of the set's own layout
    items:          the images / frames
    source:         absolute path of the json file
    """

    name: str
    kind: str
    keypoint_names: tuple[str, ...]
    items: tuple[LabelledItem, ...]
    source: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def num_people(self) -> int:
        return sum(len(it.instances) for it in self.items)

    def __len__(self) -> int:
        return len(self.items)


def _bbox(raw: Any, where: str) -> np.ndarray | None:
    if raw is None:
        return None
    b = np.asarray(raw, dtype=np.float64)
    if b.shape != (4,) or not np.isfinite(b).all():
        raise LabelledSetError(f"{where}: bbox must be [x, y, w, h] or null, got {raw!r}")
    return b


def load_labelled_set(path: str | os.PathLike[str]) -> LabelledSet:
    """Load a ``normalized*.json`` file.

    Raises FileNotFoundError when the file is missing and LabelledSetError when an
    entry breaks the schema (wrong keypoint count, bad bbox, missing size).
    Image files are not opened here (see :func:`read_image`).
    """
    src = Path(path).resolve()
    with open(src, encoding="utf-8") as fh:
        data = json.load(fh)
    root = src.parent
    names = tuple(str(n) for n in data.get("keypoint_names") or ())
    if not names:
        raise LabelledSetError(f"{src}: 'keypoint_names' is missing or empty")
    n = len(names)
    items: list[LabelledItem] = []
    for i, im in enumerate(data.get("images") or ()):
        where = f"{src.name}: images[{i}]"
        try:
            file = str(im["file"])
            width, height = int(im["width"]), int(im["height"])
        except (KeyError, TypeError, ValueError) as e:
            raise LabelledSetError(f"{where}: needs 'file', 'width' and 'height' ({e})") from None
        insts: list[Instance] = []
        one_at_a_time = any("center" in inst and "scale" in inst for inst in im.get("instances") or ())
        for j, inst in enumerate(im.get("instances") or ()):
            kp = np.asarray(inst.get("keypoints"), dtype=np.float64)
            if kp.shape != (n, 3):
                raise LabelledSetError(
                    f"{where}.instances[{j}]: keypoints must be ({n}, 3) for {n} keypoint_names, got {kp.shape}"
                )
            insts.append(Instance(keypoints=kp, bbox=_bbox(inst.get("bbox"), f"{where}.instances[{j}]"),
                                  track=inst.get("track")))
        if im.get("video") is not None:
            if im.get("frame_idx") is None:
                raise LabelledSetError(f"{where}: a video frame needs 'frame_idx'")
            items.append(LabelledItem(image=None, video=(root / str(im["video"])).resolve(),
                                      frame_idx=int(im["frame_idx"]), width=width, height=height,
                                      instances=tuple(insts), file=file, every_person_labelled=not one_at_a_time))
        else:
            items.append(LabelledItem(image=(root / file).resolve(), video=None, frame_idx=None,
                                      width=width, height=height, instances=tuple(insts), file=file,
                                      every_person_labelled=not one_at_a_time))
    extra = {k: data[k] for k in ("visibility_note", "source_annotation", "skeleton") if k in data}
    return LabelledSet(name=str(data.get("dataset") or src.parent.name), kind=str(data.get("kind") or ""),
                       keypoint_names=names, items=tuple(items), source=src, extra=extra)


def joint_columns(names: tuple[str, ...] | list[str], spec: SkeletonSpec) -> np.ndarray:
    """(K,) column of each skeleton joint in the set's keypoint list, -1 where the set lacks it
    (only virtual joints may be missing)."""
    cols = np.array([list(names).index(j) if j in names else -1 for j in spec.joint_names])
    missing = [spec.joint_names[k] for k in np.flatnonzero(cols < 0) if k not in spec.virtual]
    if missing:
        raise ValueError(f"the labelled set has no {missing} (skeleton {spec.name} joints: {list(spec.joint_names)})")
    return cols


def item_points(item: LabelledItem, cols: np.ndarray) -> np.ndarray:
    """(P, K, 2) source pixels of every instance, nan where not labelled."""
    out = np.full((len(item.instances), len(cols), 2), np.nan)
    for p, inst in enumerate(item.instances):
        kp = np.asarray(inst.keypoints, np.float64)
        for k, c in enumerate(cols):
            if c >= 0 and kp[c, 2] > 0:
                out[p, k] = kp[c, :2]
    return out


class FrameCache:
    """Open video decoders and recently decoded frames, shared by successive :func:`read_image` calls.

    Per video it keeps one open :class:`~posetracker.capture.video_file.VideoFileSource`
    and the ``keep`` most recently decoded frames. A request for a frame after the
    decoder's position decodes forward (at most ``max_skip`` frames, else it seeks to the
    nearest keyframe first); a request for an earlier, no longer kept frame seeks.
    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, keep: int = 8, max_skip: int = 120) -> None:
        self.keep = int(keep)
        self.max_skip = int(max_skip)
        self._sources: dict[Path, Any] = {}
        self._next: dict[Path, int] = {}
        self._frames: OrderedDict[tuple[Path, int], np.ndarray] = OrderedDict()
        self.decoded = 0  # frames decoded so far (for tests / diagnostics)

    def _source(self, video: Path) -> Any:
        src = self._sources.get(video)
        if src is None:
            from posetracker.capture.video_file import VideoFileSource

            src = self._sources[video] = VideoFileSource(video)
            self._next[video] = 0
        return src

    def fps(self, video: Path) -> float:
        """``video``'s nominal frame rate (a played run's timestamps and the session's ``fps``)."""
        return float(self._source(video).fps)

    def frame(self, video: Path, index: int) -> np.ndarray:
        """Frame ``index`` (0-based) of ``video`` as ``(H, W, 3)`` uint8 RGB; IndexError past the end."""
        key = (video, int(index))
        if key in self._frames:
            self._frames.move_to_end(key)
            return self._frames[key]
        src = self._source(video)
        pos = self._next[video]
        if index < pos or index - pos > self.max_skip:
            src.seek(index)
            pos = index
        while True:
            fr = src.read()
            if fr is None:
                self._next[video] = pos
                raise IndexError(f"{video}: frame {index} is past the end of the video ({pos} frames)")
            self.decoded += 1
            pos += 1
            self._remember((video, pos - 1), fr.image)
            if pos - 1 == index:
                self._next[video] = pos
                return fr.image

    def _remember(self, key: tuple[Path, int], img: np.ndarray) -> None:
        self._frames[key] = img
        self._frames.move_to_end(key)
        while len(self._frames) > self.keep:
            self._frames.popitem(last=False)

    def close(self) -> None:
        for src in self._sources.values():
            src.close()
        self._sources.clear()
        self._next.clear()
        self._frames.clear()

    def __enter__(self) -> FrameCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_image(item: LabelledItem, cache: FrameCache | None = None) -> np.ndarray:
    """The pixels of ``item`` as ``(H, W, 3)`` uint8 RGB.

    Still images are decoded with OpenCV. Video frames are decoded with PyAV; pass
    the same ``cache`` to successive calls so that a clip is decoded once, not once
    per labelled frame (without one, a temporary decoder is opened and closed).
    Raises FileNotFoundError for a missing file, ValueError for an undecodable image.
    """
    if item.video is None:
        from posetracker.capture.image_folder import load_image_rgb

        if not item.path.is_file():
            raise FileNotFoundError(f"image of {item.key!r} not found: {item.path}")
        img = load_image_rgb(item.path)
        if img is None:
            raise ValueError(f"cannot decode image {item.path}")
        return img
    if not item.video.is_file():
        raise FileNotFoundError(f"video of {item.key!r} not found: {item.video}")
    assert item.frame_idx is not None
    if cache is not None:
        return cache.frame(item.video, item.frame_idx)
    with FrameCache(keep=1) as tmp:
        return tmp.frame(item.video, item.frame_idx)
