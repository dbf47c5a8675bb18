"""What a stage that trains heads on cached frozen features needs (:mod:`.keypoint_heads`): every other parameter frozen, each clip entry joined by its twin of offline target
features (what a video's heads see, cached), and one training loop: AdamW with a linear warm-up and a cosine
decay to 0.1 of ``lr``, gradient clipping, a validation value before training and after each epoch."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset

from posetracker.model.network import PoseNet
from posetracker.model.weights import weights_key
from posetracker.train.cache import combine_key
from posetracker.train.config import StageConfig
from posetracker.train.dataset import ClipEntry
from posetracker.train.features import FeatureExtractor, load_features

Log = Callable[[str], None]


@torch.no_grad()
def offline_target_features(net: PoseNet, feats: np.ndarray, chunk: int = 16, overlap: int = 8) -> np.ndarray:
    """First features (T, C, h, w) -> target features (T, C, h, w) float16, as the offline session makes them:
    the forward state carried across chunks of ``chunk`` frames, each seeing ``overlap`` frames further on."""
    out, h_fwd, start, n = [], None, 0, len(feats)
    while start < n:
        emit = min(chunk, n - start)
        window = torch.from_numpy(np.asarray(feats[start:start + chunk + overlap], np.float32))[None]
        target, h_fwd = net.temporal(window, h_fwd, emit=emit)
        out.append(target[0].numpy().astype(np.float16))
        start += emit
    return np.concatenate(out)


def target_entry(net: PoseNet, entry: ClipEntry) -> ClipEntry:
    """The entry with its first features replaced by cached offline target features (same frames, labels)."""
    key = combine_key("target-v1", entry.feats.key, weights_key(net.temporal))
    hit = load_features(key)
    if hit is None:
        f = entry.feats
        out = {"feats": offline_target_features(net, f.feats), "scales": f.scales, "frame_ids": f.frame_ids,
               "timestamps": f.timestamps, "size": np.array(f.size, np.int64)}
        hit = FeatureExtractor.store(key, out)
    return ClipEntry(f"{entry.name}#target", hit, entry.labels)


def prepare_heads(net: PoseNet, modules: list[torch.nn.Module], train: list[ClipEntry], val: list[ClipEntry],
                  log: Log) -> tuple[list[torch.nn.Parameter], list[ClipEntry], list[ClipEntry]]:
    """Freeze every parameter of ``net`` but those of ``modules``; add each entry's target-feature twin
    (:func:`target_entry`) -> (the trainable parameters, train entries, val entries)."""
    for p in net.parameters():
        p.requires_grad_(False)
    params = [p for m in modules for p in m.parameters()]
    for p in params:
        p.requires_grad_(True)
    net.temporal.eval()
    t0 = time.time()
    train = train + [target_entry(net, e) for e in train]
    val = val + [target_entry(net, e) for e in val]
    log(f"target features ready in {time.time() - t0:.0f} s; {len(train)} train / {len(val)} val entries")
    return params, train, val


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


__all__ = ["fit_heads", "offline_target_features", "prepare_heads", "target_entry"]
