"""Method B: heatmap refinement from the image and one merged heatmap.

Steps (``methods.md`` B), each a named piece here:

1. the detector (PoseNet, frozen) gives one heatmap per keypoint;
2. :func:`merge_heatmaps` combines them into one multi-point heatmap;
3. :class:`HeatmapRefinerNet` takes the image concatenated with that merged
   heatmap and outputs a correction per keypoint heatmap (logits, added to the
   detector's; the last layer starts at zero, so the untrained refiner is the
   identity);
4. the tree decoder reads coordinates from the corrected heatmaps;
5. both models are small: the refiner's parameters stay under ``PARAM_BUDGET`` (checked when built), and
   the detector's and the refiner's together under ``MODEL_BUDGET`` (checked when a session loads them, and
   before ``train refiner`` trains one);
6. training (``posetracker.train.refine``): frozen detector -> merge -> refine
   -> soft-decoded coordinates -> L1 against the labels.

Shapes: image (N, 3, H, W) float RGB 0..255 with H, W = 4 h, 4 w; heatmap
logits (N, K, h, w); merged (N, 1, h, w) in [0, 1].
"""

from __future__ import annotations

import torch
from torch import nn

from posetracker.refiners.base import Maps, Refiner, register_refiner
from posetracker.skeletons import SkeletonSpec

PARAM_BUDGET = 100_000
# detector + refiner: a MoveNet-Lightning-class detector (PoseNet with its temporal block and depth head,
# 4.82 M parameters for human18, 4.82 M for mouse4) and a refiner of at most PARAM_BUDGET
MODEL_BUDGET = 5_000_000


def merge_heatmaps(heatmaps: torch.Tensor, root: int) -> torch.Tensor:
    """Method B step 2: (N, K, h, w) probabilities -> (N, 1, h, w) multi-point heatmap.

    The per-pixel maximum over the keypoint channels (the body centre excluded: it
    marks people, not keypoints), so every keypoint's peak survives at its height.
    """
    keep = [k for k in range(heatmaps.shape[1]) if k != root]
    return heatmaps[:, keep].amax(1, keepdim=True)


class HeatmapRefinerNet(nn.Module):
    """Method B step 3: image (N, 3, 4h, 4w) + merged (N, 1, h, w) -> logit corrections (N, K, h, w).

    A stride-4 image stem (two 3x3 stride-2 convolutions) meets the merged heatmap
    at the heatmap resolution; three 3x3 convolutions (dilation 1, 2, 4: a 29-cell
    field of view) and a zero-initialised 1x1 output follow.
    """

    def __init__(self, num_joints: int, width: int = 32):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(16, width, 3, stride=2, padding=1), nn.ReLU(inplace=True),
        )
        self.body = nn.Sequential(
            nn.Conv2d(width + 1, width, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, padding=2, dilation=2), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, padding=4, dilation=4), nn.ReLU(inplace=True),
        )
        self.out = nn.Conv2d(width, num_joints, 1)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, image: torch.Tensor, merged: torch.Tensor) -> torch.Tensor:
        x = self.stem(image / 127.5 - 1.0)
        return self.out(self.body(torch.cat([x, merged], 1)))


@register_refiner("heatmap")
class HeatmapRefiner(Refiner):
    """Method B as a plug-in: corrects every keypoint heatmap (the centre's is left as it is)."""

    kind = "heatmap"
    label = "Heatmap refiner (method B)"
    param_budget = PARAM_BUDGET
    model_budget = MODEL_BUDGET

    def __init__(self, spec: SkeletonSpec, width: int = 32):
        super().__init__(spec)
        self.net = HeatmapRefinerNet(spec.num_joints, width)
        mask = torch.ones(spec.num_joints)
        mask[spec.root] = 0.0
        self.register_buffer("keypoint_mask", mask[None, :, None, None], persistent=False)

    def corrected_logits(self, logits: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
        """(N, K, h, w) detector logits + image -> corrected logits (steps 2-3)."""
        merged = merge_heatmaps(torch.sigmoid(logits), self.spec.root)
        return logits + self.keypoint_mask * self.net(image, merged)

    @torch.no_grad()
    def refine_maps(self, maps: Maps, image: torch.Tensor) -> Maps:
        if image is None:
            raise ValueError("the heatmap refiner needs the network's input image")
        logits = self.corrected_logits(maps["heatmap_logits"], image)
        return {**maps, "heatmap_logits": logits, "heatmaps": torch.sigmoid(logits)}
