"""The decoder's result for one frame, and the check of the network outputs it reads."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.types import ShapeError


@dataclass(frozen=True)
class DecodedPeople:
    """Everyone decoded from one frame, strongest person first.

    keypoints:  (P, K, 2) float32 x, y in input pixels
    confidence: (P, K) float32 in [0, 1]
    scores:     (P,) float32 person score in [0, 1]
    depth_reads: (P, 1+E) float64 metres (1+E = K), nan without a depth head: the depth head read
                at the person's centre peak cell (column 0: root depth), then depth(child) -
                depth(parent) of edge e where the edge's vector was read (column 1+e); the joint
                depths are summed from them by ``posetracker.depth``
    predicted:  (P, K, 2) float32 positions predicted from the tree vectors before
                the heatmap search, input pixels (the root: its centre peak)
    """

    keypoints: np.ndarray
    confidence: np.ndarray
    scores: np.ndarray
    depth_reads: np.ndarray
    predicted: np.ndarray

    def __post_init__(self) -> None:
        p, k = self.confidence.shape
        for name, arr, shape in (
            ("keypoints", self.keypoints, (p, k, 2)),
            ("scores", self.scores, (p,)),
            ("depth_reads", self.depth_reads, (p, k)),
            ("predicted", self.predicted, (p, k, 2)),
        ):
            if arr.shape != shape:
                raise ShapeError(f"DecodedPeople.{name}: expected shape {shape}, got {arr.shape}")

    @property
    def num_people(self) -> int:
        return int(self.scores.shape[0])

    def take(self, index: np.ndarray) -> DecodedPeople:
        """The people at ``index`` (int indices or a (P,) bool mask), in that order."""
        return DecodedPeople(self.keypoints[index], self.confidence[index], self.scores[index], self.depth_reads[index],
                             self.predicted[index])

    @classmethod
    def concat(cls, parts: list[DecodedPeople]) -> DecodedPeople:
        """The people of ``parts`` (at least one), in order, as one."""
        return cls(*(np.concatenate([getattr(p, f) for p in parts])
                     for f in ("keypoints", "confidence", "scores", "depth_reads", "predicted")))

    @classmethod
    def empty(cls, num_joints: int) -> DecodedPeople:
        """Nobody found."""
        z = np.zeros((0, num_joints), np.float32)
        return cls(np.zeros((0, num_joints, 2), np.float32), z, np.zeros((0,), np.float32), z.copy(),
                   np.zeros((0, num_joints, 2), np.float32))


def check_outputs(outputs: dict[str, np.ndarray], k: int, e: int) -> tuple[int, int]:
    """Validate the network outputs of one frame; returns (h, w)."""
    if "heatmaps" not in outputs or "vectors" not in outputs:
        raise ShapeError(f"decoder outputs need 'heatmaps' and 'vectors'; got keys {sorted(outputs)}")
    hm = outputs["heatmaps"]
    if hm.ndim != 3 or hm.shape[0] != k:
        raise ShapeError(f"outputs['heatmaps']: expected shape ({k}, h, w), got {hm.shape}")
    h, w = hm.shape[1:]
    for name, c in (("vectors", 2 * e), ("offsets", 2 * k), ("depth", 1 + e)):
        arr = outputs.get(name)
        if arr is not None and arr.shape != (c, h, w):
            raise ShapeError(f"outputs[{name!r}]: expected shape ({c}, {h}, {w}), got {arr.shape}")
    return h, w


__all__ = ["DecodedPeople", "check_outputs"]
