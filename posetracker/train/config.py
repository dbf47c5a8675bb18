"""The distillation config (``configs/distill*.yaml``) as typed dataclasses.

Relative paths (``data_root``, ``weights``) are resolved against the
repository root, so the same config works from any working directory.
Unknown keys raise (a typo must not silently fall back to a default).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from posetracker.train.dataset import EncodeOptions
from posetracker.train.losses import LossWeights

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class StageConfig:
    """One training stage (``depth`` or ``temporal``)."""

    epochs: int = 1
    window: int = 8
    hop: int = 4
    batch: int = 4
    lr: float = 1e-3
    warmup_steps: int = 20
    max_steps_per_epoch: int | None = None
    crop: int | None = None  # train on crop x crop cells of the 64 x 64 maps around a person
    val_windows: int = 64
    p_bidirectional: float = 0.5
    lookaheads: tuple[int, ...] = (0, 1, 2)
    grad_clip: float = 1.0
    init_gain: float = 0.0  # temporal stage: memory gains to start from (0 = the untrained pass-through)
    keep: float = 0.0  # keypoint-heads stage: weight of the starting heads' heatmaps (squared probability difference)


@dataclass(frozen=True)
class StillsConfig:
    patterns: tuple[str, ...] = ()
    frames: int = 32  # frames per virtual-camera clip
    per_image: int = 2  # virtual clips per image


@dataclass(frozen=True)
class DistillConfig:
    run: str = "distill"
    skeleton: str = "human18"
    weights: str | None = None
    data_root: str = "../shared/data/video"
    teacher: str = "ensemble"  # ensemble | pipeline
    teacher_weights: str | None = None  # the pipeline part of the teacher (None: the shipped model)
    blazepose: str = "full"
    fov_deg: float = 60.0
    target_fps: float = 30.0
    max_frames: int | None = 300
    min_frames: int = 16
    val: tuple[str, ...] = ()
    train: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    stills: StillsConfig = field(default_factory=StillsConfig)
    variants: tuple[str, ...] = ("orig", "flip")
    val_variants: tuple[str, ...] = ("orig",)
    encode: EncodeOptions = field(default_factory=EncodeOptions)
    loss: LossWeights = field(default_factory=LossWeights)
    threads: int = 1
    seed: int = 0
    checkpoint_every: int = 50
    stages: dict[str, StageConfig] = field(default_factory=lambda: {"depth": StageConfig(window=1, batch=32),
                                                                   "temporal": StageConfig()})

    @property
    def data_path(self) -> Path:
        return resolve(self.data_root)

    @property
    def weights_path(self) -> Path | None:
        return None if self.weights is None else resolve(self.weights)


def resolve(path: str | Path) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else (REPO / p).resolve()


def _build(cls: type, data: dict[str, Any] | None, where: str) -> Any:
    data = dict(data or {})
    names = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; allowed: {sorted(names)}")
    for k, v in data.items():
        if isinstance(v, list):
            data[k] = tuple(v)
    return cls(**data)


def config_from_dict(data: dict[str, Any]) -> DistillConfig:
    data = dict(data)
    clips = data.pop("clips", {}) or {}
    for key in ("val", "train", "exclude"):
        if clips.get(key) is not None:
            data[key] = clips[key]
    extra = sorted(set(clips) - {"val", "train", "exclude"})
    if extra:
        raise ValueError(f"clips: unknown keys {extra}")
    sub = {"stills": StillsConfig, "encode": EncodeOptions, "loss": LossWeights}
    for key, cls in sub.items():
        if key in data:
            data[key] = _build(cls, data[key], key)
    if "stages" in data:
        data["stages"] = {name: _build(StageConfig, cfg, f"stages.{name}") for name, cfg in data["stages"].items()}
    return _build(DistillConfig, data, "config")


def load_config(path: str | Path) -> DistillConfig:
    with open(path, encoding="utf-8") as f:
        return config_from_dict(yaml.safe_load(f) or {})
