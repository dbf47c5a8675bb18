"""Typed packets that flow through the pipeline.

Shape letters used throughout the package:

- ``T``: frames in a window or sequence
- ``P``: people (or animals) in one frame
- ``K``: joints of a skeleton, the root (body centre) included
- ``E``: edges of the skeleton tree (``E == K - 1``)
- ``H, W``: image height and width in pixels; ``h, w``: feature-map size

Coordinates: image ``x`` to the right and ``y`` down, in pixels of the
source frame; depth ``z`` is camera-space distance along the optical axis in
metres (``nan`` where unknown). Every array is validated once, in
``__post_init__``, and a bad one raises :class:`ShapeError` naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from posetracker.skeletons import SkeletonSpec


class ShapeError(ValueError):
    """An array handed to a pose packet has the wrong shape or dtype."""


def _check(name: str, arr: np.ndarray, shape: tuple, dtype_kind: str | None = None) -> None:
    """Raise ShapeError unless ``arr`` matches ``shape`` (None = any size)."""
    if not isinstance(arr, np.ndarray):
        raise ShapeError(f"{name}: expected a numpy array, got {type(arr).__name__}")
    got = arr.shape
    if got != shape and (len(got) != len(shape) or any(s is not None and s != a for s, a in zip(shape, got))):
        want = "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"
        raise ShapeError(f"{name}: expected shape {want}, got {tuple(arr.shape)}")
    if dtype_kind is not None and arr.dtype.kind not in dtype_kind:
        raise ShapeError(f"{name}: expected dtype kind {dtype_kind!r}, got {arr.dtype}")


@dataclass(frozen=True)
class Frame:
    """One decoded video frame.

    image: (H, W, 3) uint8 RGB.
    """

    index: int
    timestamp: float
    image: np.ndarray

    def __post_init__(self) -> None:
        _check("Frame.image", self.image, (None, None, 3))
        if self.image.dtype != np.uint8:
            raise ShapeError(f"Frame.image: expected dtype uint8, got {self.image.dtype}")
        if self.image.shape[0] == 0 or self.image.shape[1] == 0:
            raise ShapeError(f"Frame.image: empty image {self.image.shape}")

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        return int(self.image.shape[1]), int(self.image.shape[0])


@dataclass(frozen=True)
class PoseFrame:
    """Everyone found in one frame.

    keypoints:   (P, K, 3) float32 image x, y (px) and camera-space depth z (m, nan if unknown)
    confidence:  (P, K) float32 in [0, 1]
    scores:      (P,) float32 person score in [0, 1]
    track_ids:   (P,) int64, -1 for a person not (yet) assigned to a track
    world:       (P, K, 3) float32 metric camera-space x, y, z in metres, or None
    """

    index: int
    timestamp: float
    keypoints: np.ndarray
    confidence: np.ndarray
    scores: np.ndarray
    track_ids: np.ndarray
    image_size: tuple[int, int] = (0, 0)
    world: np.ndarray | None = None

    def __post_init__(self) -> None:
        _check("PoseFrame.keypoints", self.keypoints, (None, None, 3), "f")
        p, k = self.keypoints.shape[:2]
        _check("PoseFrame.confidence", self.confidence, (p, k), "f")
        _check("PoseFrame.scores", self.scores, (p,), "f")
        _check("PoseFrame.track_ids", self.track_ids, (p,), "iu")
        if self.world is not None:
            _check("PoseFrame.world", self.world, (p, k, 3), "f")

    @property
    def num_people(self) -> int:
        return int(self.keypoints.shape[0])

    @property
    def num_joints(self) -> int:
        return int(self.keypoints.shape[1])

    def select(self, keep: np.ndarray) -> PoseFrame:
        """The people where ``keep`` (P,) bool is True, in order."""
        keep = np.asarray(keep, bool)
        return PoseFrame(self.index, self.timestamp, self.keypoints[keep], self.confidence[keep], self.scores[keep],
                         self.track_ids[keep], self.image_size, None if self.world is None else self.world[keep])

    @classmethod
    def empty(cls, index: int, timestamp: float, num_joints: int, image_size: tuple[int, int] = (0, 0)) -> PoseFrame:
        """A frame with nobody in it."""
        return cls(
            index=index,
            timestamp=timestamp,
            keypoints=np.zeros((0, num_joints, 3), np.float32),
            confidence=np.zeros((0, num_joints), np.float32),
            scores=np.zeros((0,), np.float32),
            track_ids=np.zeros((0,), np.int64),
            image_size=image_size,
        )


@dataclass
class PoseSequence:
    """T consecutive PoseFrames of one skeleton, with the source's frame rate.

    frames:   list of T PoseFrame, each with K == skeleton.num_joints
    fps:      nominal frames per second of the source (timestamps are authoritative)
    metadata: free-form source description (path, size, camera, model)
    """

    frames: list[PoseFrame]
    fps: float
    skeleton: SkeletonSpec
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.fps > 0:
            raise ShapeError(f"PoseSequence.fps: must be positive, got {self.fps}")
        k = self.skeleton.num_joints
        for i, f in enumerate(self.frames):
            if f.num_joints != k:
                raise ShapeError(
                    f"PoseSequence.frames[{i}].keypoints: expected K={k} joints for skeleton "
                    f"{self.skeleton.name!r}, got {f.num_joints}"
                )

    def __len__(self) -> int:
        return len(self.frames)

    def index_rate(self) -> float:
        """Source frame numbers per second over the frames (``index`` against ``timestamp``): ``fps`` for a whole
        video; for a live result whose frames are instants (frames between them dropped, ``fps`` the instants per
        second) the rate its source's frames play at. ``fps`` where too few frames or no time span say."""
        frames = self.frames
        if len(frames) >= 2:
            span = frames[-1].timestamp - frames[0].timestamp
            if span > 0 and frames[-1].index > frames[0].index:
                return (frames[-1].index - frames[0].index) / span
        return float(self.fps)

    def track_ids(self) -> list[int]:
        """Sorted ids of every track that appears in the sequence."""
        ids: set[int] = set()
        for f in self.frames:
            ids.update(int(i) for i in f.track_ids if i >= 0)
        return sorted(ids)
