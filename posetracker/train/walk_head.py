"""Train the tree walk's own vector head (``PoseNet.walk``) on cached frozen features.

Method A step 7 reads each edge's parent -> child vector at the *located* parent.
The shipped ``heads.vectors`` is MoveNet's centre regression, valid only around
the body centre; teaching it the parent reads too moved its centre reads
(``docs/experiments/tree-walk.md``). So the walk gets a head of its own and
everything else stays frozen and bit-identical: backbone, temporal block, heatmap,
offset, centre-read vector and depth heads.

Training samples are single frames of two kinds of features per clip variant:

- first features (T, C, h, w) from the cached backbone (what a still image's
  heads see: the temporal block leaves a single frame unchanged), and
- target features (T, C, h, w): the same run through the frozen temporal block
  offline, in chunks as ``TrackingSession`` does (:func:`.head_fit.offline_target_features`,
  cached beside the first features), so the head also sees what a video's heads see.

The head learns a *correction*: the walk's parent -> child vector is the centre read's
edge vector (MoveNet's r(child) - r(parent), read at the person's centre cell, the
decoder's "anchored" walk) plus the walk head read at the located parent. MoveNet's
differences between joints are already better than its absolute positions (errors
shared along a limb), so the correction starts at 0 (the anchored walk) and keeps the
distal edges' limb context that a 3x3 head at the parent cannot see.

Targets: ``encode_targets(..., vector_write="parent")``: each edge's vector (cells) in a
disc of ``radius`` cells around the edge's parent joint, and ``vectors_centre``, the
person's centre cell there. Loss: L1 of (centre read + head) against the vector at those
cells whose centre lies inside the training crop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import torch
from torch.utils.data import DataLoader, Subset

from posetracker.model.network import PoseNet
from posetracker.train.config import StageConfig
from posetracker.train.dataset import ClipEntry, EncodeOptions, WindowDataset
from posetracker.train.head_fit import fit_heads, prepare_heads
from posetracker.train.losses import masked_l1

Log = Callable[[str], None]


def centre_read(vectors: torch.Tensor, centre: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each cell's edge vector as read at its person's centre cell.

    vectors: (N, 2E, h, w) the centre-read head's output; centre: (N, 2E, h, w) (x, y) centre cell per cell and
    edge (``vectors_centre``) -> (read (N, 2E, h, w), inside (N, 2E, h, w) bool: the centre lies in the map).
    """
    n, c, h, w = vectors.shape
    cx, cy = centre[:, 0::2].round().long(), centre[:, 1::2].round().long()  # (N, E, h, w)
    inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h)
    flat = (cy.clamp(0, h - 1) * w + cx.clamp(0, w - 1)).flatten(2)  # (N, E, h*w)
    v = vectors.flatten(2)  # (N, 2E, h*w)
    read = torch.empty_like(v)
    read[:, 0::2] = torch.gather(v[:, 0::2], 2, flat)
    read[:, 1::2] = torch.gather(v[:, 1::2], 2, flat)
    inside2 = inside.repeat_interleave(2, dim=1)
    return read.reshape(n, c, h, w), inside2


def walk_loss(net: PoseNet, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """L1 (cells) of the walk's vectors (centre read + the head's correction) at the parent-disc cells whose
    person's centre lies in the crop. batch: WindowDataset samples, window 1."""
    x = batch["feats"].flatten(0, 1)  # (N, C, h, w)
    tgt, w = batch["vectors"].flatten(0, 1), batch["vectors_weight"].flatten(0, 1)  # (N, 2E, h, w)
    with torch.no_grad():
        anchor, inside = centre_read(net.heads.vectors(x), batch["vectors_centre"].flatten(0, 1))
    return masked_l1(anchor + net.walk(x), tgt, w * inside)


def _dataset(entries: list[ClipEntry], net: PoseNet, sc: StageConfig, opts: EncodeOptions, train: bool) -> WindowDataset:
    return WindowDataset(entries, net.spec, window=1, hop=1, opts=replace(opts, vector_write="parent"),
                         crop=sc.crop, jitter=train)


@torch.no_grad()
def validate(net: PoseNet, entries: list[ClipEntry], sc: StageConfig,
             opts: EncodeOptions) -> float:
    """Mean L1 (cells) of the walk's vectors at the parent discs over up to ``sc.val_windows`` evenly spread frames."""
    ds = _dataset(entries, net, sc, opts, train=False)
    idx = np.linspace(0, len(ds) - 1, min(sc.val_windows, len(ds))).astype(int).tolist()
    net.walk.eval()
    losses = [float(walk_loss(net, b)) for b in DataLoader(Subset(ds, idx), batch_size=sc.batch)]
    return float(np.mean(losses))


def train_walk_head(net: PoseNet, train: list[ClipEntry], val: list[ClipEntry], sc: StageConfig,
                    opts: EncodeOptions, seed: int = 0, log: Log = print) -> list[dict]:
    """Train ``net.walk`` (added, giving a zero correction, when missing); every other parameter
    frozen. ``train`` / ``val``: entries of first features; their target-feature twins are added here.
    Returns per-epoch summaries (train loss and val L1 in cells, seconds)."""
    head = net.walk if net.walk is not None else net.add_walk_head()
    params, train, val = prepare_heads(net, [head], train, val, log)
    history = fit_heads(params, [head], lambda b: walk_loss(net, b),
                        _dataset(train, net, sc, opts, train=True), lambda: validate(net, val, sc, opts),
                        sc, seed, log, "walk head (L1, cells)")
    head.eval()
    return history


__all__ = ["centre_read", "train_walk_head", "validate", "walk_loss"]
