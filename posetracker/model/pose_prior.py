"""The pose prior's network (torch, for training); the product runs the same layers in numpy.

Inputs and units are those of :mod:`posetracker.depth.pose_prior`; training is
:mod:`posetracker.train.pose_prior`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class PosePriorNet(nn.Module):
    """(P, (K-1)*3) normalised 2-D pose -> (P, K-1) relative depth in torso units (a residual MLP).

    Trained in torch; :class:`posetracker.depth.PosePrior` runs the same layers in numpy
    (:func:`posetracker.depth.pose_prior.numpy_forward`), 2-3x faster than torch eager for a few
    people a frame (less per-call overhead)."""

    def __init__(self, num_joints: int, hidden: int = 384, blocks: int = 3, dropout: float = 0.1):
        super().__init__()
        self.num_joints, self.hidden, self.num_blocks = num_joints, hidden, blocks
        self.inp = nn.Linear((num_joints - 1) * 3, hidden)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU(approximate="tanh"), nn.Dropout(dropout),
                          nn.Linear(hidden, hidden)) for _ in range(blocks))
        self.out = nn.Linear(hidden, num_joints - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)

    def numpy_state(self) -> dict[str, np.ndarray]:
        """The weights as numpy arrays (names and layout of the state dict), as the product runs them."""
        return {k: v.detach().numpy() for k, v in self.state_dict().items()}
