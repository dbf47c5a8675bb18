"""Method A step 3: the keypoint-detection heads on the target features.

Every head is MoveNet's head shape: depthwise 3x3 -> pointwise 1x1 + ReLU
(96 hidden channels) -> 1x1 output conv. From features (N, C, h, w):

- ``heatmap_logits`` (N, K, h, w): one heatmap per joint; the root's channel
  is the body-centre heatmap (MoveNet's ``center_0``), the others come from
  ``kpt_heatmap_0``. Sigmoid gives probabilities.
- ``offsets`` (N, 2K, h, w): sub-cell offset (dx, dy) of joint k at channels
  (2k, 2k+1), in feature cells; zero for the root.
- ``vectors`` (N, 2E, h, w): tree vector (dx, dy) of edge e (parent ->
  child, ``spec.edges[e]``) at channels (2e, 2e+1), in feature cells.
  Initialised exactly from MoveNet's centre -> keypoint regression r by
  v(p -> c) = r(c) - r(p), with r(root) = 0 (see ``init_vectors_from_regression``).
- ``depth`` (N, 1+E, h, w): channel 0 = root depth (m), channel 1+e =
  depth(child) - depth(parent) of edge e (m). New; until trained it is the
  constant ``DEFAULT_ROOT_DEPTH_M`` with zero differences.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from posetracker.model.backbone import Conv
from posetracker.skeletons import SkeletonSpec

HEAD_HIDDEN = 96
DEFAULT_ROOT_DEPTH_M = 3.0


class SeparableHead(nn.Module):
    """depthwise 3x3 (no bias) -> pointwise + ReLU -> 1x1 conv: (N, C, h, w) -> (N, out, h, w)."""

    def __init__(self, cin: int, out: int, hidden: int = HEAD_HIDDEN):
        super().__init__()
        self.depthwise = Conv(cin, cin, 3, groups=cin, bias=False)
        self.pointwise = Conv(cin, hidden, act="relu")
        self.out = nn.Conv2d(hidden, out, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.pointwise(self.depthwise(x)))


def _pair_channels(joints: list[int]) -> list[int]:
    """Channel indices (2j, 2j+1) for each joint j, in order."""
    return [c for j in joints for c in (2 * j, 2 * j + 1)]


class PoseHeads(nn.Module):
    """All method-A heads for one skeleton; see the module docstring for outputs."""

    def __init__(self, spec: SkeletonSpec, in_channels: int = 24):
        super().__init__()
        self.spec = spec
        k, e = spec.num_joints, spec.num_edges
        self.non_root = [j for j in range(k) if j != spec.root]
        self.centre = SeparableHead(in_channels, 1)
        self.keypoints = SeparableHead(in_channels, k - 1)
        self.offsets = SeparableHead(in_channels, 2 * (k - 1))
        self.vectors = SeparableHead(in_channels, 2 * e)
        self.depth = SeparableHead(in_channels, 1 + e)
        # Gather indices that put the root channel(s) at the root's place.
        heat_order = np.empty(k, np.int64)
        heat_order[self.non_root] = np.arange(k - 1)
        heat_order[spec.root] = k - 1
        self.register_buffer("heat_order", torch.from_numpy(heat_order), persistent=False)
        off_order = np.empty(2 * k, np.int64)
        off_order[_pair_channels(self.non_root)] = np.arange(2 * (k - 1))
        off_order[[2 * spec.root, 2 * spec.root + 1]] = [2 * (k - 1), 2 * (k - 1)]
        self.register_buffer("off_order", torch.from_numpy(off_order), persistent=False)
        self.reset_depth()

    def reset_depth(self) -> None:
        """Untrained depth: constant root depth, zero depth differences."""
        nn.init.zeros_(self.depth.out.weight)
        nn.init.zeros_(self.depth.out.bias)
        with torch.no_grad():
            self.depth.out.bias[0] = DEFAULT_ROOT_DEPTH_M

    def heatmap_logits(self, x: torch.Tensor) -> torch.Tensor:
        """(N, C, h, w) features -> (N, K, h, w) heatmap logits (the root's channel is the centre head's)."""
        return torch.cat([self.keypoints(x), self.centre(x)], 1).index_select(1, self.heat_order)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        heat = self.heatmap_logits(x)
        off = self.offsets(x)
        off = torch.cat([off, off.new_zeros(off.shape[0], 1, *off.shape[2:])], 1).index_select(1, self.off_order)
        return {
            "heatmap_logits": heat,
            "offsets": off,
            "vectors": self.vectors(x),
            "depth": self.depth(x),
        }


def regression_to_vectors_matrix(spec: SkeletonSpec, regress_yx: bool = True) -> np.ndarray:
    """The exact linear map from a centre -> keypoint regression field to tree vectors.

    Returns A (2E, 2(K-1)) with vectors = A @ regression, where the regression
    holds, for each non-root joint in joint order, its displacement from the
    centre (as (dy, dx) pairs when ``regress_yx``, MoveNet's order) and the
    vectors are (dx, dy) per edge: v(p -> c) = r(c) - r(p), r(root) = 0.
    """
    non_root = [j for j in range(spec.num_joints) if j != spec.root]
    slot = {j: i for i, j in enumerate(non_root)}
    a = np.zeros((2 * spec.num_edges, 2 * len(non_root)))
    sx, sy = (1, 0) if regress_yx else (0, 1)
    for e, (p, c) in enumerate(spec.edges):
        a[2 * e, 2 * slot[c] + sx] += 1
        a[2 * e + 1, 2 * slot[c] + sy] += 1
        if p != spec.root:
            a[2 * e, 2 * slot[p] + sx] -= 1
            a[2 * e + 1, 2 * slot[p] + sy] -= 1
    return a
