"""The training loop shared by the stages that train one or two heads on cached frozen features
(:mod:`.walk_head`, :mod:`.keypoint_heads`): every other parameter frozen, AdamW with a linear warm-up and a
cosine decay to 0.1 of ``lr``, gradient clipping, a validation value before training and after each epoch."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset

from posetracker.train.config import StageConfig

Log = Callable[[str], None]


def fit_heads(params: list[torch.nn.Parameter], modules: list[torch.nn.Module], loss: Callable[[dict], torch.Tensor],
              ds: Dataset, validate: Callable[[], float], sc: StageConfig, seed: int, log: Log, name: str) -> list[dict]:
    """Train ``params`` (those of ``modules``) by ``loss`` on batches of ``ds``; ``sc``: epochs, batch, lr,
    warmup_steps, max_steps_per_epoch, grad_clip. Returns per-epoch summaries: train loss, ``val`` (from
    ``validate``, epoch -1 before training), seconds."""
    steps = sc.epochs * min(len(ds) // sc.batch, sc.max_steps_per_epoch or len(ds))
    opt = torch.optim.AdamW(params, lr=sc.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(sc.warmup_steps, 1))
                                              * (0.1 + 0.45 * (1 + np.cos(np.pi * min(s / max(steps, 1), 1.0)))))
    history = [{"epoch": -1, "val": validate()}]
    log(f"{name} before training: val {history[0]['val']:.4f}")
    for epoch in range(sc.epochs):
        for m in modules:
            m.train()
        order = np.random.default_rng([seed, epoch]).permutation(len(ds)).tolist()
        loader = DataLoader(Subset(ds, order), batch_size=sc.batch, drop_last=True)
        te, losses = time.time(), []
        for i, batch in enumerate(loader):
            if sc.max_steps_per_epoch and i >= sc.max_steps_per_epoch:
                break
            value = loss(batch)
            opt.zero_grad(set_to_none=True)
            value.backward()
            torch.nn.utils.clip_grad_norm_(params, sc.grad_clip)
            opt.step()
            sched.step()
            losses.append(float(value.detach()))
        for m in modules:
            m.eval()
        row = {"epoch": epoch, "train": float(np.mean(losses)), "val": validate(), "seconds": time.time() - te}
        history.append(row)
        log(f"{name} epoch {epoch + 1}/{sc.epochs}: train {row['train']:.4f}, val {row['val']:.4f} ({row['seconds']:.0f} s)")
    return history


__all__ = ["fit_heads"]
