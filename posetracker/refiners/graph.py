"""Method C: skeleton-graph refinement (a graph neural network per target type).

Steps (``methods.md`` C), each a named piece here:

1. the skeleton (``SkeletonSpec``) gives the keypoints and the structure:
   :func:`skeleton_adjacency` from the tree edges plus the drawn extra edges;
2. the detector (PoseNet) outputs one heatmap channel per keypoint;
3. :func:`keypoint_features`: per keypoint, the (2r+1)^2 heatmap logits around its
   first predicted point (the decoder's position), plus its position relative to
   the body centre in units of the person's size;
4. :class:`SkeletonGNN` corrects each keypoint's feature from its neighbours'
   (message passing over the adjacency; the output starts at zero, so the
   untrained GNN changes nothing);
5. :func:`patch_positions`: the final (second) position is the first one moved by
   the shift the correction makes to the patch's soft-argmax (cells + the
   detector's sub-cell offsets), so an unchanged patch leaves the point where
   the decoder put it;
6. training (``posetracker.train.detector``): loss on the first (detector) and the
   second (GNN) predictions against the labels, one optimiser over the detector's
   heads and the GNN together.

Shapes (cells of the stride-``s`` feature map): logits (N, K, h, w), offsets
(N, 2K, h, w), points (N, P, K, 2), patches (N, P, K, D*D) with D = 2r + 1.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from posetracker.decoding.people import DecodedPeople
from posetracker.refiners.base import Maps, Refiner, register_refiner
from posetracker.skeletons import SkeletonSpec

PARAM_BUDGET = 100_000


def skeleton_adjacency(spec: SkeletonSpec) -> torch.Tensor:
    """Step 1: (K, K) row-normalised adjacency of the tree edges and extra edges (no self loops)."""
    k = spec.num_joints
    a = torch.zeros(k, k)
    pairs = [tuple(e) for e in np.asarray(spec.edges).tolist()]
    pairs += [tuple(e) for e in np.asarray(spec.extra_edges).reshape(-1, 2).tolist()]
    for i, j in pairs:
        a[i, j] = a[j, i] = 1.0
    return a / a.sum(1, keepdim=True).clamp_min(1.0)


def gather_patches(maps: torch.Tensor, centres: torch.Tensor, radius: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Values of each joint's own channel around integer centres.

    maps (N, K, h, w), centres (N, P, K, 2) long cells -> values (N, P, K, D*D) and the
    cells' (x, y) (N, P, K, D*D, 2), D = 2 radius + 1, clamped to the map.
    """
    n, k, h, w = maps.shape
    p = centres.shape[1]
    d = torch.arange(-radius, radius + 1, device=maps.device)
    cx = (centres[..., 0, None, None] + d[None, :]).clamp(0, w - 1)
    cy = (centres[..., 1, None, None] + d[:, None]).clamp(0, h - 1)
    cx, cy = torch.broadcast_tensors(cx, cy)
    cx, cy = cx.reshape(n, p, k, -1), cy.reshape(n, p, k, -1)
    src = maps.flatten(2)[:, None].expand(n, p, k, h * w)
    values = torch.gather(src, 3, cy * w + cx)
    return values, torch.stack([cx, cy], -1)


def keypoint_features(logits: torch.Tensor, points: torch.Tensor, root: int, radius: int) -> tuple[torch.Tensor, ...]:
    """Step 3: logits (N, K, h, w), first points (N, P, K, 2) cells ->
    patch logits (N, P, K, D*D), relative position (N, P, K, 2), patch cells (N, P, K, D*D, 2)."""
    centres = points.detach().round().long()
    patch, cells = gather_patches(logits, centres, radius)
    rel = points - points[:, :, root : root + 1]
    lo, hi = points.amin(2, keepdim=True), points.amax(2, keepdim=True)
    size = ((hi - lo).prod(-1, keepdim=True).clamp_min(0.0).sqrt() + 1.0)
    return patch, rel / size, cells


def patch_positions(patch: torch.Tensor, cells: torch.Tensor, offsets: torch.Tensor | None) -> torch.Tensor:
    """Step 5: soft-argmax of patch logits (..., D*D) over their cells (..., D*D, 2) (+ offsets) -> (..., 2)."""
    wgt = torch.softmax(patch, -1)[..., None]
    xy = cells.float() if offsets is None else cells.float() + offsets
    return (wgt * xy).sum(-2)


class SkeletonGNN(nn.Module):
    """Step 4: per-keypoint features corrected by their neighbours' (residual message passing).

    patch (B, K, D*D) logits, rel (B, K, 2) -> corrected patch logits (B, K, D*D).
    Each layer: x <- x + relu(W_self x + W_nb (A x)), A = :func:`skeleton_adjacency`.
    """

    def __init__(self, spec: SkeletonSpec, patch: int, hidden: int = 64, layers: int = 3):
        super().__init__()
        self.register_buffer("adjacency", skeleton_adjacency(spec))
        self.embed = nn.Parameter(0.02 * torch.randn(spec.num_joints, hidden))
        self.inp = nn.Linear(patch + 2, hidden)
        self.self_lin = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.nb_lin = nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in range(layers))
        self.out = nn.Linear(hidden, patch)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, patch: torch.Tensor, rel: torch.Tensor) -> torch.Tensor:
        x = self.inp(torch.cat([torch.sigmoid(patch), rel.clamp(-4, 4)], -1)) + self.embed
        for s, m in zip(self.self_lin, self.nb_lin):
            x = x + torch.relu(s(x) + m(self.adjacency @ x))
        return patch + self.out(x)


@register_refiner("graph")
class GraphRefiner(Refiner):
    """Method C as a plug-in: moves each decoded keypoint (the centre stays) with the skeleton's GNN."""

    kind = "graph"
    label = "Graph refiner (method C)"
    param_budget = PARAM_BUDGET

    def __init__(self, spec: SkeletonSpec, radius: int = 3, hidden: int = 64, layers: int = 3):
        super().__init__(spec)
        self.radius = radius
        self.gnn = SkeletonGNN(spec, (2 * radius + 1) ** 2, hidden, layers)
        mask = torch.ones(spec.num_joints, 1)
        mask[spec.root] = 0.0
        self.register_buffer("keypoint_mask", mask, persistent=False)

    def second_points(self, logits: torch.Tensor, offsets: torch.Tensor | None,
                      first: torch.Tensor) -> torch.Tensor:
        """Steps 3-5: logits (N, K, h, w), offsets (N, 2K, h, w), first points (N, P, K, 2) cells
        -> second points (N, P, K, 2) cells (the root keeps its first point)."""
        patch, rel, cells = keypoint_features(logits, first, self.spec.root, self.radius)
        n, p, k, dd = patch.shape
        corrected = self.gnn(patch.reshape(n * p, k, dd), rel.reshape(n * p, k, 2)).reshape(n, p, k, dd)
        centres = first.detach().round().long()
        off = None if offsets is None else torch.stack(
            [gather_patches(offsets[:, c::2], centres, self.radius)[0] for c in (0, 1)], -1)
        shift = patch_positions(corrected, cells, off) - patch_positions(patch, cells, off)
        return first + self.keypoint_mask * shift

    @torch.no_grad()
    def refine_people(self, people: DecodedPeople, maps: Maps, stride: int) -> DecodedPeople:
        if people.num_people == 0:
            return people
        first = torch.from_numpy(people.keypoints / float(stride))[None]
        second = self.second_points(maps["heatmap_logits"], maps.get("offsets"), first)[0].numpy()
        return DecodedPeople(
            keypoints=(second * stride).astype(np.float32), confidence=people.confidence,
            scores=people.scores, depth_reads=people.depth_reads, predicted=people.predicted,
        )
