"""Shipped weights files: the ``models/`` folder, and safetensors read / written with string metadata.

Used by PoseNet (``model.weights``), the refiners and the pose prior; loading never unpickles.
``MODELS_DIR`` is the checkout's or the installed ``models/`` (:func:`posetracker.resources.data_dir`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file as load_numpy_file
from safetensors.torch import load_file, save_file

from posetracker.resources import data_dir

MODELS_DIR = data_dir("models")


def write_weights(path: str | Path, state: dict[str, torch.Tensor], meta: dict[str, str]) -> None:
    """Write ``state`` with ``meta`` to ``path`` atomically (a temporary file beside it, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    save_file({k: v.detach().contiguous() for k, v in state.items()}, str(tmp), metadata=meta)
    tmp.replace(path)


def read_metadata(path: str | Path, error: type[Exception], what: str = "weights") -> dict[str, str]:
    """The metadata of a weights file; unreadable -> ``error`` naming the file."""
    try:
        with safe_open(str(path), "pt") as f:
            return dict(f.metadata() or {})
    except (SafetensorError, OSError) as exc:
        raise error(f"cannot read {what} {path}: {exc}") from None


def read_weights(path: str | Path, error: type[Exception], what: str = "weights",
                 numpy: bool = False) -> tuple[dict[str, str], dict[str, torch.Tensor] | dict[str, np.ndarray]]:
    """(metadata, state dict: torch tensors, or numpy arrays if ``numpy``) of a weights file;
    missing -> ``error`` "... not found", unreadable or holding NaN / infinite values (a damaged
    or diverged file) -> ``error`` naming the first bad tensor."""
    if not Path(path).is_file():
        raise error(f"{what} not found: {path}")
    meta = read_metadata(path, error, what)
    try:
        state = (load_numpy_file if numpy else load_file)(str(path))
    except (SafetensorError, OSError) as exc:
        raise error(f"cannot read {what} {path}: {exc}") from None
    for name, value in state.items():
        finite = np.isfinite(value).all() if numpy else (not value.is_floating_point() or torch.isfinite(value).all())
        if not bool(finite):
            raise error(f"{what} {path} is damaged: tensor {name!r} holds NaN or infinite values")
    return meta, state
