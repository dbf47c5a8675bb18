"""Train the pose prior (``posetracker.depth.pose_prior``) on 3-D poses seen by random virtual cameras.

Poses: motion capture (BVH, ``posetracker.train.mocap``) and the 3-D teacher's
world poses on the training clips of a distillation config (held-out clips
never), all as (T, K, 3) metres with Y up. Each sample is one frame seen by a
pinhole camera at a random yaw (all round), pitch (-10..35 deg), roll and
distance (1.5-12 m), the body mirrored (left/right swapped) half the time and
scaled by 0.85-1.15; some joints are hidden and the 2-D keypoints jittered by
``noise`` torso units, like a detector's. The target is each joint's depth
relative to the hip midpoint in the units :mod:`posetracker.depth.pose_prior`
states (dz / (Z s / f)); the loss is L1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import yaml

from posetracker.depth.pose_prior import FORMAT, TORSO, prior_inputs
from posetracker.export.bvh_rig import BVH_FROM_CAMERA  # camera axes <-> Y up (a diagonal flip)
from posetracker.model.pose_prior import PosePriorNet
from posetracker.skeletons import SkeletonSpec
from posetracker.weights_file import write_weights


@dataclass(frozen=True)
class PriorConfig:
    """``configs/pose_prior.yaml``: where the poses come from and how long to train."""

    distill_config: str | None = "configs/distill_quick.yaml"  # its training clips' teacher world poses
    blazepose: str = "heavy"
    bvh_root: str = "../shared/data/bvh"
    bvh: tuple[tuple[str, float], ...] = ()  # (path under bvh_root, metres per file unit)
    fps: float = 30.0  # mocap is resampled to about this rate
    steps: int = 8000
    batch: int = 256
    lr: float = 1e-3
    hidden: int = 384
    blocks: int = 3
    noise: float = 0.05
    seed: int = 0
    pitch_deg: tuple[float, float] = (-10.0, 35.0)  # the virtual cameras' pitch, uniform in this range (degrees)
    roll_sd_deg: float = 4.0  # and their roll, normal with this spread (degrees)
    root: Path = field(default=Path("."), compare=False)  # the repo root paths resolve against

    @property
    def bvh_path(self) -> Path:
        return (self.root / self.bvh_root).resolve()


def load_prior_config(path: str | Path) -> PriorConfig:
    path = Path(path)
    raw = yaml.safe_load(path.read_text()) or {}
    bvh = tuple((str(e["path"]), float(e["metres_per_unit"])) for e in raw.pop("bvh", []) or [])
    unknown = set(raw) - set(PriorConfig.__dataclass_fields__)
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}")
    if "pitch_deg" in raw:
        raw["pitch_deg"] = tuple(float(v) for v in raw["pitch_deg"])
    return PriorConfig(bvh=bvh, root=path.resolve().parents[1], **raw)


def mocap_poses(cfg: PriorConfig, spec: SkeletonSpec, log: Callable[[str], None]) -> list[np.ndarray]:
    """The config's BVH files -> [(T, K, 3) m, Y up] at about ``cfg.fps``."""
    from posetracker.train.mocap import mocap_points

    out = []
    for rel, unit in cfg.bvh:
        points, dt = mocap_points(cfg.bvh_path / rel, unit, spec=spec)
        step = max(1, round(1.0 / (dt * cfg.fps)))
        out.append(points[::step].astype(np.float32))
        log(f"mocap {rel}: {len(out[-1])} frames")
    return out


def teacher_poses(cfg: PriorConfig, spec: SkeletonSpec, log: Callable[[str], None]) -> list[np.ndarray]:
    """World poses of the distillation config's *training* clips from the cached teacher labels ->
    [(T, K, 3) m, Y up], frames where the teacher gives every joint; the root is the hip midpoint."""
    from dataclasses import replace

    from posetracker.train.config import load_config
    from posetracker.train.features import iter_frames
    from posetracker.train.clip_labels import cached_clip_labels
    from posetracker.train.prepare import make_teacher, selection_for

    dcfg = load_config(cfg.root / cfg.distill_config)
    teacher = make_teacher(replace(dcfg, blazepose=cfg.blazepose))
    lh, rh = spec.index("left_hip"), spec.index("right_hip")
    out = []
    for rel in dcfg.train or ():
        path = dcfg.data_path / rel
        sel = selection_for(path, dcfg)
        labels = cached_clip_labels(teacher, path, spec, sel.key(), lambda: iter_frames(path, sel))
        for n in range(labels.num_tracks):
            w = labels.world[:, n].astype(np.float64)
            w = w[np.isfinite(w).all((-1, -2))] @ BVH_FROM_CAMERA
            if len(w) >= 5:
                w[:, spec.root] = 0.5 * (w[:, lh] + w[:, rh])
                out.append(w.astype(np.float32))
        log(f"teacher {rel}: {sum(len(w) for w in out)} poses so far")
    return out


def _rotations(yaw: np.ndarray, pitch: np.ndarray, roll: np.ndarray) -> np.ndarray:
    """(B,) angles (rad) -> (B, 3, 3) Rz(roll) Rx(pitch) Ry(yaw)."""
    o, z = np.ones_like(yaw), np.zeros_like(yaw)
    c, s = np.cos, np.sin
    ry = np.stack([np.stack([c(yaw), z, s(yaw)], -1), np.stack([z, o, z], -1), np.stack([-s(yaw), z, c(yaw)], -1)], -2)
    rx = np.stack([np.stack([o, z, z], -1), np.stack([z, c(pitch), -s(pitch)], -1), np.stack([z, s(pitch), c(pitch)], -1)], -2)
    rz = np.stack([np.stack([c(roll), -s(roll), z], -1), np.stack([s(roll), c(roll), z], -1), np.stack([z, z, o], -1)], -2)
    return rz @ rx @ ry


class VirtualViews:
    """Random camera views of a pool of 3-D poses -> (inputs, targets) batches for :class:`PosePriorNet`."""

    def __init__(self, poses: list[np.ndarray], spec: SkeletonSpec, noise: float = 0.05, seed: int = 0,
                 pitch_deg: tuple[float, float] = (-10.0, 35.0), roll_sd_deg: float = 4.0):
        if not poses:
            raise ValueError("no 3-D poses to train the pose prior on")
        self.poses = np.concatenate(poses).astype(np.float64)  # (N, K, 3) Y up
        self.spec, self.noise = spec, noise
        self.pitch_deg, self.roll_sd_deg = pitch_deg, roll_sd_deg
        self.rng = np.random.default_rng(seed)
        self.torso = [spec.index(n) for n in TORSO]

    def sample(self, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """-> 2-D keypoints (B, K, 2) at focal length 1 (no jitter), seen (B, K), camera depths (B, K) m."""
        rng, spec = self.rng, self.spec
        p = self.poses[rng.integers(len(self.poses), size=size)]
        flip = rng.random(size) < 0.5
        p[flip] = p[flip][:, spec.mirror_index] * np.array([-1.0, 1.0, 1.0])
        p = (p - p[:, spec.root, None]) * rng.uniform(0.85, 1.15, (size, 1, 1))
        rot = _rotations(rng.uniform(0, 2 * np.pi, size), np.radians(rng.uniform(*self.pitch_deg, size)),
                         np.radians(rng.normal(0, self.roll_sd_deg, size)))
        q = np.einsum("bij,bkj->bki", rot, p) @ BVH_FROM_CAMERA  # camera space: x right, y down, z forward
        dist = rng.uniform(1.5, 12.0, size)
        q += np.stack([rng.normal(0, 0.1 * dist), rng.normal(0, 0.2, size), dist], -1)[:, None]
        ok = rng.random(q.shape[:2]) > rng.choice([0.0, 0.05, 0.15], size)[:, None]
        ok[:, self.torso] = True
        return q[..., :2] / q[..., 2:3], ok, q[..., 2]

    def encode(self, xy: np.ndarray, ok: np.ndarray, z: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """A :meth:`sample` -> inputs (B, (K-1)*3) with the keypoints jittered, targets (B, K-1)."""
        spec = self.spec
        x, s, _ = prior_inputs(xy, ok, spec)
        x = x.reshape(len(x), -1, 3)
        x[..., :2] += self.rng.normal(0, self.noise, x[..., :2].shape) * x[..., 2:]
        joints = [j for j in range(spec.num_joints) if j != spec.root]
        zc = z[:, spec.root]
        y = (z[:, joints] - zc[:, None]) / (zc * s)[:, None]
        return torch.from_numpy(x.reshape(len(x), -1)), torch.from_numpy(y.astype(np.float32))

    def batch(self, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """-> inputs (B, (K-1)*3), targets (B, K-1)."""
        return self.encode(*self.sample(size))


def train_prior(views: VirtualViews, cfg: PriorConfig, progress: Callable[[int, float], None] | None = None) -> PosePriorNet:
    """``cfg.steps`` AdamW steps (one-cycle learning rate) of L1 on virtual views -> the trained net (eval mode)."""
    torch.manual_seed(cfg.seed)
    net = PosePriorNet(views.spec.num_joints, cfg.hidden, cfg.blocks)
    opt = torch.optim.AdamW(net.parameters(), cfg.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg.lr, total_steps=cfg.steps)
    t0 = time.time()
    for step in range(cfg.steps):
        x, y = views.batch(cfg.batch)
        loss = (net(x) - y).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if progress is not None:
            progress(step, loss.item())
    net.train(False)
    net.train_seconds = time.time() - t0
    return net


def save_pose_prior(net: PosePriorNet, spec: SkeletonSpec, path: str | Path, source: str) -> None:
    """Write a trained prior as the weights file :func:`posetracker.depth.load_pose_prior` reads."""
    meta = {"format": FORMAT, "skeleton": spec.name, "source": source,
            "params": json.dumps({"hidden": net.hidden, "blocks": net.num_blocks})}
    write_weights(path, net.state_dict(), meta)
