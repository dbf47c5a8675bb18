"""Training loop for the distillation stages, with resumable checkpoints and a CSV loss log.

Stages (the backbone is frozen throughout; its features are cached):

- ``depth``: ``heads.depth`` trains, per frame, on the first features (the
  untrained temporal block adds exactly zero, so this is what it sees).
- ``temporal``: the forward/backward GRUs train on windows (the fusion of the two
  directions stays fixed, the heads frozen), each batch either bidirectional
  (file mode) or causal with a random look-ahead (live mode).

A run lives in ``<cache>/train/<run>/``: ``checkpoint.safetensors`` (network,
optimiser, step, epoch, stage, RNG; written every ``checkpoint_every`` steps,
at each epoch end and when the time limit hits) and ``losses.csv``. A
checkpoint is tensors in safetensors plus a JSON document in its metadata:
resuming never unpickles, so a checkpoint from elsewhere cannot run code.
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Subset

from posetracker.model.network import PoseNet
from posetracker.train.cache import cache_dir
from posetracker.train.config import DistillConfig, StageConfig
from posetracker.train.dataset import SINGLE, ClipEntry, WindowDataset, run_temporal, sample_temporal_mode
from posetracker.train.losses import LossWeights, distill_loss, masked_l1
from posetracker.weights_file import read_weights, write_weights

STAGES = ("depth", "temporal")
CSV_FIELDS = ("time", "stage", "epoch", "step", "split", "mode", "total", "heatmaps", "offsets", "vectors", "depth",
              "temporal", "coords", "accel", "depth_root_m", "depth_edges_m", "lr")


@dataclass
class RunState:
    """Where a run stands; saved in every checkpoint."""

    stage: str = STAGES[0]
    epoch: int = 0
    step: int = 0  # optimiser steps within the stage
    epoch_step: int = 0  # optimiser steps within the epoch
    done: list[str] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)  # per-epoch summaries


def run_dir(name: str) -> Path:
    d = cache_dir("train") / name
    d.mkdir(parents=True, exist_ok=True)
    return d


def stage_parameters(net: PoseNet, stage: str, sc: StageConfig) -> list[dict]:
    """Optimiser parameter groups of a stage; every other parameter is frozen (requires_grad False)."""
    for p in net.parameters():
        p.requires_grad_(False)
    if stage == "depth":
        groups = [(net.heads.depth, sc.lr)]
    else:
        groups = [(net.temporal.forward_dir, sc.lr), (net.temporal.backward_dir, sc.lr)]
    out = []
    for module, lr in groups:
        if lr > 0:
            params = list(module.parameters())
            for p in params:
                p.requires_grad_(True)
            out.append({"params": params, "lr": lr, "base_lr": lr})
    return out


def forward_stage(net: PoseNet, stage: str, feats: torch.Tensor, lookahead: int | None) -> dict[str, torch.Tensor]:
    """Outputs the stage's loss needs. feats (N, T, C, h, w) -> dict of (N, T, ...) tensors."""
    if stage == "depth":
        n, t = feats.shape[:2]
        x = feats.flatten(0, 1)
        heads = [net.heads.depth] + ([net.heads.vectors] if net.heads.vectors.out.weight.requires_grad else [])
        return {name: head(x).reshape(n, t, -1, *feats.shape[-2:])
                for name, head in zip(("depth", "vectors"), heads)}
    out = net.decode_heads(run_temporal(net.temporal, feats, lookahead))
    out.pop("heatmaps")
    return out


class Trainer:
    """Runs the stages of a DistillConfig on prepared entries; see the module docstring."""

    def __init__(self, net: PoseNet, cfg: DistillConfig, train: list[ClipEntry], val: list[ClipEntry],
                 name: str | None = None, deadline: float | None = None, progress: bool = True):
        self.net, self.cfg, self.train_entries, self.val_entries = net, cfg, train, val
        self.dir = run_dir(name or cfg.run)
        self.deadline = deadline
        self.progress = progress
        self.state = RunState()
        self.rng = np.random.default_rng(cfg.seed)
        self.optimizer: torch.optim.Optimizer | None = None
        self.weights: LossWeights = cfg.loss
        self._pending_optimizer: dict | None = None
        self._total_steps = 1

    # -- checkpoints -----------------------------------------------------------------------
    @property
    def checkpoint_path(self) -> Path:
        return self.dir / "checkpoint.safetensors"

    def save_checkpoint(self) -> None:
        tensors = {f"net/{k}": v for k, v in self.net.state_dict().items()}
        tensors["torch_rng"] = torch.get_rng_state()
        optimizer = None
        if self.optimizer is not None:
            optimizer, opt_tensors = _split_optimizer(self.optimizer.state_dict())
            tensors.update(opt_tensors)
        doc = {"state": self.state.__dict__, "rng": self.rng.bit_generator.state, "optimizer": optimizer}
        write_weights(self.checkpoint_path, tensors, {"checkpoint": json.dumps(doc)})

    def load_checkpoint(self) -> bool:
        """Restore network, state, RNG (and the optimiser when its stage starts); False when none."""
        if not self.checkpoint_path.exists():
            return False
        meta, tensors = read_weights(self.checkpoint_path, RuntimeError, "training checkpoint")
        doc = json.loads(meta["checkpoint"])
        self.net.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("net/")})
        self.state = RunState(**doc["state"])
        self.rng.bit_generator.state = doc["rng"]
        torch.set_rng_state(tensors["torch_rng"])
        self._pending_optimizer = None if doc["optimizer"] is None else _join_optimizer(doc["optimizer"], tensors)
        return True

    # -- logging ---------------------------------------------------------------------------
    def log(self, split: str, parts: dict[str, float], total: float, mode: str = "", lr: float = 0.0,
            epoch: int | None = None) -> None:
        """Append one row to losses.csv (epoch -1 = before training)."""
        path = self.dir / "losses.csv"
        new = not path.exists()
        with open(path, "a", newline="") as f:
            w = csv.DictWriter(f, CSV_FIELDS)
            if new:
                w.writeheader()
            w.writerow({"time": f"{time.time():.1f}", "stage": self.state.stage,
                        "epoch": self.state.epoch if epoch is None else epoch,
                        "step": self.state.step, "split": split, "mode": mode, "total": f"{total:.5f}", "lr": f"{lr:.2e}",
                        **{k: f"{v:.5f}" for k, v in parts.items()}})

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.time() >= self.deadline

    # -- stages ----------------------------------------------------------------------------
    def run(self, stages: tuple[str, ...] = STAGES) -> RunState:
        for stage in stages:
            if stage in self.state.done or self.out_of_time():
                continue
            if self.state.stage != stage:
                self.state = RunState(stage=stage, done=self.state.done, history=self.state.history)
                self._pending_optimizer = None
            self.run_stage(stage)
        return self.state

    def _loader(self, entries: list[ClipEntry], sc: StageConfig, train: bool, skip_batches: int = 0) -> DataLoader:
        """Val: up to ``val_windows`` evenly spread windows. Train: this epoch's shuffled order (seeded by
        seed, stage and epoch, so a resumed epoch sees the same order), minus its first ``skip_batches``."""
        ds = WindowDataset(entries, self.net.spec, window=sc.window, hop=sc.hop if train else sc.window,
                           opts=self.cfg.encode, crop=sc.crop, jitter=train)
        if not train:
            if len(ds) > sc.val_windows:
                ds = Subset(ds, np.linspace(0, len(ds) - 1, sc.val_windows).astype(int).tolist())
            return DataLoader(ds, batch_size=sc.batch, shuffle=False, num_workers=0)
        seed = [self.cfg.seed, STAGES.index(self.state.stage), self.state.epoch]
        order = np.random.default_rng(seed).permutation(len(ds))[skip_batches * sc.batch:]
        return DataLoader(Subset(ds, order.tolist()), batch_size=sc.batch, shuffle=False, num_workers=0, drop_last=True)

    def run_stage(self, stage: str) -> None:
        sc = self.cfg.stages[stage]
        groups = stage_parameters(self.net, stage, sc)
        self.optimizer = torch.optim.AdamW(groups, weight_decay=1e-4)
        pending = getattr(self, "_pending_optimizer", None)
        if pending is not None:
            self.optimizer.load_state_dict(pending)
            self._pending_optimizer = None
        if self.state.step == 0:
            if stage == "temporal" and sc.init_gain > 0:  # warm start: a mild smoother the gates then shape
                with torch.no_grad():
                    for direction in (self.net.temporal.forward_dir, self.net.temporal.backward_dir):
                        direction.gain.fill_(sc.init_gain)
            self.validate(stage, sc, before=True)  # the starting point, logged as epoch -1
        per_epoch = len(self._loader(self.train_entries, sc, train=True))
        self._total_steps = max(1, sc.epochs * min(per_epoch, sc.max_steps_per_epoch or per_epoch))
        while self.state.epoch < sc.epochs and not self.out_of_time():
            self.train_epoch(stage, sc)
            if self.out_of_time():
                break
            self.validate(stage, sc)
            self.state.epoch += 1
            self.state.epoch_step = 0
            self.save_checkpoint()
        if self.state.epoch >= sc.epochs:
            self.state.done.append(stage)
            self.save_checkpoint()

    def _lr_scale(self, sc: StageConfig) -> float:
        """Linear warm-up, then cosine decay to 10% over the stage."""
        warm = min(1.0, (self.state.step + 1) / max(sc.warmup_steps, 1))
        frac = min(self.state.step / self._total_steps, 1.0)
        return warm * (0.1 + 0.45 * (1 + np.cos(np.pi * frac)))

    def train_epoch(self, stage: str, sc: StageConfig) -> None:
        from tqdm import tqdm

        full = len(self._loader(self.train_entries, sc, train=True))
        limit = min(full, sc.max_steps_per_epoch or full)
        steps_done = self.state.epoch_step
        loader = self._loader(self.train_entries, sc, train=True, skip_batches=steps_done)
        self.net.train()
        bar = tqdm(total=limit, initial=steps_done, desc=f"{stage} epoch {self.state.epoch + 1}/{sc.epochs}",
                   disable=not self.progress, dynamic_ncols=True)
        t0 = time.time()
        for i, batch in enumerate(loader, start=steps_done):
            if i >= limit or self.out_of_time():
                break
            total, parts, mode = self.train_step(stage, sc, batch)
            bar.update(1)
            bar.set_postfix(loss=f"{total:.4f}")
            if self.state.step % self.cfg.checkpoint_every == 0:
                self.save_checkpoint()
        bar.close()
        self.state.history.append({"stage": stage, "epoch": self.state.epoch, "seconds": time.time() - t0,
                                   "steps": self.state.step})
        self.save_checkpoint()

    def train_step(self, stage: str, sc: StageConfig, batch: dict[str, torch.Tensor]) -> tuple[float, dict, str]:
        lookahead = (None if stage == "depth"
                     else sample_temporal_mode(self.rng, sc.p_bidirectional, sc.lookaheads))
        for g in self.optimizer.param_groups:
            g["lr"] = g["base_lr"] * self._lr_scale(sc)
        out = forward_stage(self.net, stage, batch["feats"], lookahead)
        loss, parts = distill_loss(out, batch, self.weights, temporal=stage != "depth")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        torch.nn.utils.clip_grad_norm_(params, sc.grad_clip)
        self.optimizer.step()
        self.state.step += 1
        self.state.epoch_step += 1
        mode = ("frame" if stage == "depth" or lookahead == SINGLE else "bidir" if lookahead is None
                else f"causal{lookahead}")
        self.log("train", parts, float(loss.detach()), mode, self.optimizer.param_groups[0]["lr"])
        return float(loss.detach()), parts, mode

    @torch.no_grad()
    def validate(self, stage: str, sc: StageConfig, before: bool = False) -> dict[str, float]:
        """Mean val loss per mode (bidirectional and causal look-ahead 0) on held-out clip windows."""
        self.net.eval()
        modes = [("frame", None)] if stage == "depth" else [("bidir", None), ("causal0", 0), ("single", SINGLE)]
        result = {}
        for name, la in modes:
            sums: dict[str, float] = {}
            n = 0
            for batch in self._loader(self.val_entries, sc, train=False):
                out = forward_stage(self.net, stage, batch["feats"], la)
                loss, parts = distill_loss(out, batch, self.weights, temporal=stage != "depth")
                for k, v in {"total": float(loss), **parts, **_depth_errors(out, batch)}.items():
                    sums[k] = sums.get(k, 0.0) + v
                n += 1
            means = {k: v / max(n, 1) for k, v in sums.items()}
            total = means.pop("total", float("nan"))
            self.log("val", means, total, name, epoch=-1 if before else None)
            result[name] = total
            result[f"{name}_depth_root_m"] = means.get("depth_root_m", float("nan"))
        self.state.history.append({"stage": stage, "epoch": -1 if before else self.state.epoch, "val": result})
        return result


def _depth_errors(out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> dict[str, float]:
    """Mean absolute error (m) of the root depth and of the edge depth differences at labelled cells."""
    d, t, w = out["depth"], batch["depth"], batch["depth_weight"]
    return {"depth_root_m": float(masked_l1(d[:, :, :1], t[:, :, :1], w[:, :, :1])),
            "depth_edges_m": float(masked_l1(d[:, :, 1:], t[:, :, 1:], w[:, :, 1:]))}


def _split_optimizer(sd: dict) -> tuple[dict, dict[str, torch.Tensor]]:
    """An optimiser state dict -> (its JSON-able part, its tensors keyed ``opt/<param>/<name>``)."""
    tensors, plain = {}, {}
    for pid, entry in sd["state"].items():
        plain[str(pid)] = {}
        for name, value in entry.items():
            if torch.is_tensor(value):
                tensors[f"opt/{pid}/{name}"] = value
            else:
                plain[str(pid)][name] = value
    return {"state": plain, "param_groups": sd["param_groups"]}, tensors


def _join_optimizer(doc: dict, tensors: dict[str, torch.Tensor]) -> dict:
    """Inverse of :func:`_split_optimizer`."""
    state = {int(pid): dict(values) for pid, values in doc["state"].items()}
    for key, value in tensors.items():
        if key.startswith("opt/"):
            _, pid, name = key.split("/", 2)
            state[int(pid)][name] = value
    return {"state": state, "param_groups": doc["param_groups"]}
