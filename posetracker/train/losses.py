"""Distillation losses on the network outputs, against ``encode_targets`` maps.

Shapes: every output / target / weight is (N, T, C, h, w) (C = K heatmaps,
2K offsets, 2E vectors, 1+E depth channels).

- **Heatmaps** (centre + keypoints): positive-weighted MSE on the sigmoid
  probabilities, ``sum w (p - y)^2`` with ``w = 1 + pos_weight * y``, per map.
  Chosen over CenterNet's penalty-reduced focal loss because the targets are
  sub-cell Gaussians whose peak is below 1 (the focal loss needs exact 1-peaks
  to define its positives), because it is exactly 0 for a perfect prediction,
  bounded for noisy teacher labels, and keeps the probabilities calibrated to
  the peak heights the decoder's thresholds assume; the positive weight makes
  up for the ~6 foreground cells against ~4,000 background cells per map.
- **Offsets, vectors, depth**: L1 at the labelled cells (the ``*_weight``
  masks of ``encode_targets``), averaged over those cells.
- **Coordinates** (optional, ``coords`` / ``accel``): the joints decoded softly
  (:func:`soft_positions`: softmax of the logits near the joint, times cell +
  offset) against the smoothed teacher tracks (L1, cells), and their
  acceleration beyond the teacher trajectory's: jitter is a property of the
  decoded positions, which the map losses only reach indirectly.
- **Temporal consistency**: frame-to-frame change of the predicted heatmaps
  (probabilities) and depth maps beyond the target's change,
  ``relu(|p[t+1] - p[t]| - |y[t+1] - y[t]|)``: free to follow real motion,
  penalised for flicker the smoothed teacher tracks do not have.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class LossWeights:
    """Weight of each term in the total; ``pos_weight`` of the heatmap MSE."""

    heatmaps: float = 1.0
    offsets: float = 1.0
    vectors: float = 0.1
    depth: float = 1.0
    temporal: float = 1.0
    pos_weight: float = 10.0
    coords: float = 0.0  # L1 of the soft-decoded joint positions (cells)
    accel: float = 0.0  # their acceleration beyond the target trajectory's


def soft_positions(logits: torch.Tensor, offsets: torch.Tensor, joints: torch.Tensor, radius: int = 2) -> torch.Tensor:
    """Differentiable stand-in for the decoder's peak + offset, near each target joint.

    logits (N, T, K, h, w), offsets (N, T, 2K, h, w), joints (N, T, M, K, 2) cells ->
    (N, T, M, K, 2): softmax(logits)-weighted mean of (cell + offset) over the
    (2 radius + 1)^2 cells around floor(joint) (clamped to the map).
    """
    n, t, k, h, w = logits.shape
    m = joints.shape[2]
    d = torch.arange(-radius, radius + 1)
    cx = (joints[..., 0].floor().long()[..., None, None] + d[None, :]).clamp(0, w - 1)  # (N,T,M,K,1,D)
    cy = (joints[..., 1].floor().long()[..., None, None] + d[:, None]).clamp(0, h - 1)  # (N,T,M,K,D,1)
    cx, cy = torch.broadcast_tensors(cx, cy)
    flat = (cy * w + cx).reshape(n, t, m, k, -1)  # (N, T, M, K, D*D)

    def pick(maps: torch.Tensor) -> torch.Tensor:  # (N, T, K, h, w) -> (N, T, M, K, D*D)
        src = maps.flatten(3)[:, :, None].expand(n, t, m, k, h * w)
        return torch.gather(src, 4, flat)

    wgt = torch.softmax(pick(logits), -1)
    ox, oy = pick(offsets[:, :, 0::2]), pick(offsets[:, :, 1::2])
    x = (wgt * (cx.reshape(flat.shape).float() + ox)).sum(-1)
    y = (wgt * (cy.reshape(flat.shape).float() + oy)).sum(-1)
    return torch.stack([x, y], -1)


def coordinate_losses(out: dict[str, torch.Tensor], tgt: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(L1 of soft positions vs joints, excess acceleration |a_pred| - |a_target|), both in cells."""
    pos = soft_positions(out["heatmap_logits"], out["offsets"], tgt["joints"])
    ok = tgt["joints_ok"]
    l1 = (ok[..., None] * (pos - tgt["joints"]).abs()).sum() / ok.sum().clamp_min(1.0)
    if pos.shape[1] < 3:
        return l1, pos.new_zeros(())
    acc_p = (pos[:, 2:] - 2 * pos[:, 1:-1] + pos[:, :-2]).norm(dim=-1)
    j = tgt["joints"]
    acc_t = (j[:, 2:] - 2 * j[:, 1:-1] + j[:, :-2]).norm(dim=-1)
    both = ok[:, 2:] * ok[:, 1:-1] * ok[:, :-2]
    acc = (both * F.relu(acc_p - acc_t)).sum() / both.sum().clamp_min(1.0)
    return l1, acc


def heatmap_loss(logits: torch.Tensor, target: torch.Tensor, weight: torch.Tensor, pos_weight: float = 10.0) -> torch.Tensor:
    """Positive-weighted MSE on probabilities, summed over cells, averaged over maps. Shapes (N, T, K, h, w)."""
    p = torch.sigmoid(logits)
    w = weight * (1.0 + pos_weight * target)
    maps = max(target[..., 0, 0].numel(), 1)
    return (w * (p - target) ** 2).sum() / maps


def masked_l1(pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """L1 averaged over the cells with weight > 0 (0 when there are none). Shapes (N, T, C, h, w)."""
    return (weight * (pred - target).abs()).sum() / weight.sum().clamp_min(1.0)


def temporal_consistency(pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
    """Change of ``pred`` between consecutive frames beyond the target's change. Shapes (N, T, C, h, w), T >= 2.

    weight: None = every cell (averaged per map); else only cells labelled in both frames (averaged over them).
    """
    if pred.shape[1] < 2:
        return pred.new_zeros(())
    excess = F.relu((pred[:, 1:] - pred[:, :-1]).abs() - (target[:, 1:] - target[:, :-1]).abs())
    if weight is None:
        return excess.sum() / max(excess[..., 0, 0].numel(), 1)
    both = weight[:, 1:] * weight[:, :-1]
    return (both * excess).sum() / both.sum().clamp_min(1.0)


def distill_loss(out: dict[str, torch.Tensor], tgt: dict[str, torch.Tensor], w: LossWeights = LossWeights(),
                 temporal: bool = True) -> tuple[torch.Tensor, dict[str, float]]:
    """Total loss and its parts over the outputs present in ``out`` (network output dict keys)."""
    parts: dict[str, torch.Tensor] = {}
    if "heatmap_logits" in out:
        parts["heatmaps"] = w.heatmaps * heatmap_loss(out["heatmap_logits"], tgt["heatmaps"], tgt["heatmaps_weight"], w.pos_weight)
    for key in ("offsets", "vectors", "depth"):
        if key in out:
            parts[key] = getattr(w, key) * masked_l1(out[key], tgt[key], tgt[f"{key}_weight"])
    if "joints" in tgt and "heatmap_logits" in out and (w.coords > 0 or w.accel > 0):
        l1, acc = coordinate_losses(out, tgt)
        parts["coords"] = w.coords * l1
        if temporal:
            parts["accel"] = w.accel * acc
    if temporal and w.temporal > 0:
        tc = out["depth"].new_zeros(()) if "depth" in out else None
        if "heatmap_logits" in out:
            tc = temporal_consistency(torch.sigmoid(out["heatmap_logits"]), tgt["heatmaps"])
        if "depth" in out:
            d = temporal_consistency(out["depth"], tgt["depth"], tgt["depth_weight"])
            tc = d if tc is None else tc + d
        if tc is not None:
            parts["temporal"] = w.temporal * tc
    total = sum(parts.values()) if parts else torch.zeros(())
    return total, {k: float(v.detach()) for k, v in parts.items()}
