"""Train the precision stage's Thunder heads on the teachers' labels (``posetracker train crop-head``, issue #47).

The backbone and FPN stay frozen (their features are cached per crop by :mod:`.crop_labels`), and so does the
centre head: the crop's person is chosen as before, so the refiner's agreement test and the carried live
corrections keep their meaning. Thunder's decode (``model.thunder.decode_thunder``) reads the regression
head at the chosen centre cell, then the heatmap's peak near each regressed joint, then the offset there; each
of these three heads is trained where its decode reads it. Per crop (G x G cells, 17 joints, label (y, x)
normalised -> cell coordinates L = label x G; joint weight w from the labels):

- heatmap: binary cross-entropy of the (17, G, G) logits against a target that is the starting heads'
  probability everywhere (it holds the scores the refiner's thresholds and the person score were set for)
  except within ``radius`` cells of each weighted joint, where it is a Gaussian (``sigma`` cells) around L
  whose height is the starting heads' best probability there (at least ``min_peak``); cells weighted 1,
  those near a weighted joint ``near`` x w;
- offset: L1 (cells) of (dy, dx) at the 3 x 3 cells around L rounded against L - cell, weight w;
- regress: L1 (cells) at the chosen centre cell against L - centre, weight w.

Validation (:func:`label_error`): the decoded joints' mean distance to the labels in crop px (weighted), and
the share within 0.05 of the crop, on sources not trained on, before and after.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from posetracker.train.crop_labels import CropEntry

Log = Callable[[str], None]
TRAINED = ("heatmap", "offset", "regress")


@dataclass(frozen=True)
class HeadSettings:
    epochs: int = 6
    lr: float = 3e-4
    batch: int = 16
    seed: int = 0
    radius: float = 2.5  # cells
    sigma: float = 1.0  # cells
    min_peak: float = 0.5
    near: float = 20.0
    offset_weight: float = 1.0
    regress_weight: float = 0.2
    select: str = "val"  # the heads kept: "val" the epoch (0: the starting heads) with the lowest val error; "last"


def _rows(entries: list[CropEntry]) -> list[tuple[int, int]]:
    """(entry, row) of every crop with some weighted joint."""
    return [(e, r) for e, entry in enumerate(entries) for r in range(len(entry)) if entry.weights[r].max() > 0]


def _batch(entries: list[CropEntry], rows: list[tuple[int, int]]) -> dict[str, torch.Tensor]:
    """feats (B, C, G, G) float32, labels (B, 17, 2) cells (y, x), weights (B, 17), centre (B, 2) long."""
    e = [entries[i] for i, _ in rows]
    g = e[0].feats.shape[-1]
    return {"feats": torch.from_numpy(np.stack([x.feats[r] for x, (_, r) in zip(e, rows)]).astype(np.float32)),
            "labels": torch.from_numpy(np.stack([x.labels[r] for x, (_, r) in zip(e, rows)]) * g).float(),
            "weights": torch.from_numpy(np.stack([x.weights[r] for x, (_, r) in zip(e, rows)])).float(),
            "centre": torch.from_numpy(np.stack([x.centre[r] for x, (_, r) in zip(e, rows)])).long()}


def head_losses(heads, start, batch: dict[str, torch.Tensor], hs: HeadSettings) -> dict[str, torch.Tensor]:
    """{"heatmap", "offset", "regress"} losses of ``heads`` (a ThunderNet's ModuleDict) against ``batch``;
    ``start``: the frozen starting heads."""
    x, lab, w, cen = batch["feats"], batch["labels"], batch["weights"], batch["centre"]
    n, k = w.shape
    logits = heads["heatmap"](x)  # (B, 17, G, G)
    g = logits.shape[-1]
    with torch.no_grad():
        p0 = torch.sigmoid(start["heatmap"](x))
        grid = torch.arange(g, dtype=torch.float32)
        d2 = (grid[None, None, :, None] - lab[..., 0, None, None]) ** 2 \
            + (grid[None, None, None, :] - lab[..., 1, None, None]) ** 2  # (B, 17, G, G)
        near = (d2 <= hs.radius ** 2) & (w[..., None, None] > 0)
        peak = torch.where(near, p0, torch.zeros_like(p0)).amax(dim=(2, 3)).clamp(min=hs.min_peak)
        target = torch.where(near, peak[..., None, None] * torch.exp(-d2 / (2 * hs.sigma ** 2)), p0)
        cell_w = torch.where(near, hs.near * w[..., None, None], torch.ones_like(p0))
    heat = (F.binary_cross_entropy_with_logits(logits, target, reduction="none") * cell_w).sum() / cell_w.sum()
    b = torch.arange(n)[:, None].expand(n, k)
    j = torch.arange(k)[None, :].expand(n, k)
    off = heads["offset"](x).view(n, k, 2, g, g)
    cell = lab.round().long().clamp(0, g - 1)
    off_loss, count = x.new_zeros(()), x.new_zeros(())
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            r, c = (cell[..., 0] + dy).clamp(0, g - 1), (cell[..., 1] + dx).clamp(0, g - 1)
            got = off[b, j, :, r, c]  # (B, 17, 2)
            want = lab - torch.stack([r, c], -1).float()
            off_loss = off_loss + ((got - want).abs().sum(-1) * w).sum()
            count = count + w.sum()
    reg = heads["regress"](x)[torch.arange(n), :, cen[:, 0], cen[:, 1]].view(n, k, 2)
    reg_loss = ((reg - (lab - cen[:, None, :].float())).abs().sum(-1) * w).sum() / w.sum().clamp(min=1e-6)
    return {"heatmap": heat, "offset": off_loss / count.clamp(min=1e-6), "regress": reg_loss}


@torch.no_grad()
def label_error(net, weight: np.ndarray, entries: list[CropEntry], limit: int = 400) -> dict[str, float]:
    """Decoded joints against the labels over up to ``limit`` crop rows (even spread): weighted mean distance in
    crop px and the weighted share within 0.05 of the crop side."""
    from posetracker.model.thunder import decode_thunder

    rows = _rows(entries)
    if not rows:
        return {"px": float("nan"), "within_0.05": float("nan"), "crops": 0}
    rows = [rows[i] for i in np.linspace(0, len(rows) - 1, min(limit, len(rows))).astype(int)]
    size = net.input_size
    dist, wsum, hit = 0.0, 0.0, 0.0
    for start in range(0, len(rows), 32):
        batch = _batch(entries, rows[start:start + 32])
        heads = {k: h(batch["feats"]).permute(0, 2, 3, 1).numpy() for k, h in net.heads.items()}
        g = heads["centre"].shape[1]
        for i in range(len(batch["weights"])):
            kp = decode_thunder(heads["centre"][i], heads["heatmap"][i], heads["regress"][i], heads["offset"][i], weight)
            d = np.linalg.norm(kp[:, :2] - batch["labels"][i].numpy() / g, axis=1)
            w = batch["weights"][i].numpy()
            dist, wsum, hit = dist + float((d * size * w).sum()), wsum + float(w.sum()), hit + float(((d <= 0.05) * w).sum())
    return {"px": dist / max(wsum, 1e-9), "within_0.05": hit / max(wsum, 1e-9), "crops": len(rows)}


def train_crop_heads(net, weight: np.ndarray, train: list[CropEntry], val: list[CropEntry], hs: HeadSettings,
                     log: Log = print) -> list[dict]:
    """Train ``net.heads`` heatmap, offset and regress (in place; everything else frozen) on ``train``; keep the
    epoch with the lowest validation error (``label_error`` px on ``val``), or the last (``hs.select``). Returns
    per-epoch summaries."""
    torch.manual_seed(hs.seed)
    rng = np.random.default_rng(hs.seed)
    start = copy.deepcopy(net.heads).eval()
    for p in net.parameters():
        p.requires_grad_(False)
    params = [p for name in TRAINED for p in net.heads[name].parameters()]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=hs.lr)
    rows = _rows(train)
    if not rows:
        raise ValueError("no labelled crops to train on")
    before = label_error(net, weight, val)
    log(f"crop heads: {len(rows)} train crops; val before: {before}")
    history = [{"epoch": 0, **{f"val_{k}": v for k, v in before.items()}}]
    best, best_state = before["px"], copy.deepcopy(net.heads.state_dict())
    for epoch in range(1, hs.epochs + 1):
        net.heads.train()
        order = rng.permutation(len(rows))
        sums = {"heatmap": 0.0, "offset": 0.0, "regress": 0.0}
        steps = 0
        for s in range(0, len(order), hs.batch):
            batch = _batch(train, [rows[i] for i in order[s:s + hs.batch]])
            parts = head_losses(net.heads, start, batch, hs)
            loss = parts["heatmap"] + hs.offset_weight * parts["offset"] + hs.regress_weight * parts["regress"]
            opt.zero_grad()
            loss.backward()
            opt.step()
            for k in sums:
                sums[k] += float(parts[k].detach())
            steps += 1
        net.heads.eval()
        err = label_error(net, weight, val)
        row = {"epoch": epoch, **{k: v / steps for k, v in sums.items()}, **{f"val_{k}": v for k, v in err.items()}}
        log(f"  epoch {epoch}: {row}")
        history.append(row)
        if err["px"] < best or hs.select == "last":
            best, best_state = err["px"], copy.deepcopy(net.heads.state_dict())
    net.heads.load_state_dict(best_state)
    for p in net.parameters():
        p.requires_grad_(False)
    return history
