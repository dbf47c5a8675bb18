"""Fine-tune the keypoint heatmap and offset heads on the teachers' pseudo-labels (method A step 4's heads, the
issue's "more and better training signal"), on cached frozen features.

The backbone, FPN, temporal block and the centre, vector and depth heads stay frozen and bit-identical, so
the 8-bit live graph's companion (body and FPN) still fits. Samples are single frames of two kinds of
features per clip variant (:mod:`.head_fit`): the cached first features (what a
still image's heads see) and the frozen temporal block's offline target features (what a video's heads
see). The labels are the recipe's (MoveNet Thunder on each tracked person's crop with BlazePose, the
``ensemble`` teacher, Savitzky-Golay smoothed), encoded as for the heads' own convention (``cell_origin``
"corner").

Loss per frame (N single frames, K joints, h x w cells):

- heatmaps: :func:`posetracker.train.losses.heatmap_loss` of the (N, K, h, w) logits against the targets,
  left out around joints the teacher knows but does not see;
- offsets: L1 (cells) of the (N, 2K, h, w) offsets where the targets are written;
- keep: ``sc.keep`` x the squared difference of the heatmap probabilities from the starting heads', summed
  over cells and averaged over maps, everywhere in the crop: it holds the heads where the labels say
  nothing (people the teacher missed, the scores the decoder's thresholds were set for). Without it the
  heads drifted towards the training clips' people (``studies/small-people.md``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import torch
from torch.utils.data import DataLoader, Subset

from posetracker.model.heads import PoseHeads
from posetracker.model.network import PoseNet
from posetracker.train.config import StageConfig
from posetracker.train.dataset import ClipEntry, EncodeOptions, WindowDataset
from posetracker.train.head_fit import fit_heads, prepare_heads
from posetracker.train.losses import heatmap_loss, masked_l1

Log = Callable[[str], None]


def keypoint_losses(heads: PoseHeads, start: PoseHeads, batch: dict[str, torch.Tensor]
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(heatmap loss, offset L1 in cells, keep term) of ``heads`` on a batch of WindowDataset samples
    (window 1); ``start``: the frozen starting heads."""
    x = batch["feats"].flatten(0, 1)  # (N, C, h, w)
    out = heads(x)
    with torch.no_grad():
        before = torch.sigmoid(start.heatmap_logits(x))
    heat = out["heatmap_logits"]  # (N, K, h, w)
    target, weight = batch["heatmaps"].flatten(0, 1), batch["heatmaps_weight"].flatten(0, 1)
    lh = heatmap_loss(heat[:, None], target[:, None], weight[:, None])
    lo = masked_l1(out["offsets"], batch["offsets"].flatten(0, 1), batch["offsets_weight"].flatten(0, 1))
    keep = ((torch.sigmoid(heat) - before) ** 2).sum() / max(heat[:, :, 0, 0].numel(), 1)
    return lh, lo, keep


def _dataset(entries: list[ClipEntry], net: PoseNet, sc: StageConfig, opts: EncodeOptions, train: bool) -> WindowDataset:
    return WindowDataset(entries, net.spec, window=1, hop=1, opts=opts,
                         crop=sc.crop, jitter=train)


@torch.no_grad()
def validate(net: PoseNet, start: PoseHeads, entries: list[ClipEntry], sc: StageConfig, opts: EncodeOptions
             ) -> tuple[float, float, float]:
    """Mean (heatmap loss, offset L1, keep term) over up to ``sc.val_windows`` evenly spread frames."""
    ds = _dataset(entries, net, sc, opts, train=False)
    idx = np.linspace(0, len(ds) - 1, min(sc.val_windows, len(ds))).astype(int).tolist()
    rows = [[float(v) for v in keypoint_losses(net.heads, start, b)]
            for b in DataLoader(Subset(ds, idx), batch_size=sc.batch)]
    return tuple(np.mean(rows, 0).tolist())


def train_keypoint_heads(net: PoseNet, train: list[ClipEntry], val: list[ClipEntry], sc: StageConfig,
                         opts: EncodeOptions, seed: int = 0, log: Log = print) -> list[dict]:
    """Train ``net.heads.keypoints`` and ``net.heads.offsets``; every other parameter frozen. ``train`` /
    ``val``: entries of first features; their target-feature twins are added here. Returns per-epoch
    summaries (``val``: heatmap loss + offset L1 on the val clips' labels)."""
    start = copy.deepcopy(net.heads).eval()
    modules = [net.heads.keypoints, net.heads.offsets]
    params, train, val = prepare_heads(net, modules, train, val, log)

    def loss(batch: dict[str, torch.Tensor]) -> torch.Tensor:
        lh, lo, keep = keypoint_losses(net.heads, start, batch)
        return lh + lo + sc.keep * keep

    def val_value() -> float:
        lh, lo, keep = validate(net, start, val, sc, opts)
        log(f"  val heatmaps {lh:.4f}, offsets {lo:.4f} cells, keep {keep:.4f}")
        return lh + lo

    history = fit_heads(params, modules, loss, _dataset(train, net, sc, opts, train=True), val_value, sc, seed, log,
                        "keypoint heads (heatmaps + offsets)")
    net.eval()
    return history


__all__ = ["keypoint_losses", "train_keypoint_heads", "validate"]
