"""Save and load PoseNet weights as safetensors (loading never unpickles).

A weights file holds PoseNet's full state dict plus string metadata:
``skeleton`` (name), ``format`` (``posenet-v1``), ``source`` (provenance),
``trained`` (comma-separated parts trained beyond the pretrained import,
e.g. ``temporal,depth``; empty when none).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
from torch import nn

from posetracker.model.network import PoseNet
from posetracker.model.temporal import fixed_fusion_weight
from posetracker.resources import default_weights_path
from posetracker.skeletons import SkeletonSpec, load_skeleton
from posetracker.weights_file import MODELS_DIR, read_weights, write_weights  # noqa: F401 - MODELS_DIR: second_look
from posetracker.weights_file import read_metadata as _read_metadata

FORMAT = "posenet-v1"


class WeightsError(RuntimeError):
    """A weights file is missing, corrupt or does not fit the network."""


def weights_key(module: nn.Module) -> str:
    """16 hex digits naming ``module``'s weights (and the torch version): a key for caches built from them."""
    h = hashlib.sha256(torch.__version__.encode())
    for name, t in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def save_posenet(net: PoseNet, path: str | Path, source: str, trained: str = "") -> None:
    meta = {"skeleton": net.spec.name, "format": FORMAT, "source": source, "trained": trained}
    write_weights(path, net.state_dict(), meta)


def read_metadata(path: str | Path) -> dict[str, str]:
    return _read_metadata(path, WeightsError)


def load_posenet(path: str | Path | None = None, spec: SkeletonSpec | None = None) -> PoseNet:
    """Build a PoseNet and load its weights (default: the shipped human18 file), in eval mode."""
    path = Path(path) if path is not None else default_weights_path(spec.name if spec else "human18")
    if not path.exists():
        raise WeightsError(f"model weights not found: {path}")
    meta, state = read_weights(path, WeightsError)
    if meta.get("format") != FORMAT:
        raise WeightsError(f"{path} is not a PoseTracker weights file (format {meta.get('format')!r})")
    spec = spec or load_skeleton(meta["skeleton"])
    if spec.name != meta["skeleton"]:
        raise WeightsError(f"{path} holds weights for skeleton {meta['skeleton']!r}, not {spec.name!r}")
    net = PoseNet(spec)
    if "temporal.fusion.weight" not in state:  # weights from before the learnt fusion: its fixed form
        state = {**state, "temporal.fusion.weight": fixed_fusion_weight(net.temporal.channels)}
    missing, unexpected = net.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise WeightsError(f"{path} does not fit PoseNet({spec.name}): missing {missing[:5]}, unexpected {unexpected[:5]}")
    net.meta = meta  # type: ignore[attr-defined]
    return net.eval()


def build_from_movenet(json_path: str | Path, spec: SkeletonSpec, seed: int = 0) -> PoseNet:
    """A PoseNet with MoveNet's backbone and heads; temporal block freshly initialised (fusion zero)."""
    from posetracker.model.convert.movenet import movenet_state_dict

    torch.manual_seed(seed)
    net = PoseNet(spec)
    sd = {k: torch.from_numpy(v) for k, v in movenet_state_dict(json_path, spec).items()}
    missing, unexpected = net.load_state_dict(sd, strict=False)
    if unexpected:
        raise WeightsError(f"converter produced unknown parameters: {unexpected[:5]}")
    left = [k for k in missing if not k.startswith(("temporal.", "heads.depth."))]
    if left:
        raise WeightsError(f"converter left parameters unset: {left[:5]}")
    return net.eval()
