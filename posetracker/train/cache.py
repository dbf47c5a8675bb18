"""Cache folders for training artefacts (backbone features, teacher labels, runs).

Everything lives under ``$POSETRACKER_CACHE`` or ``~/.cache/posetracker``
(never inside the repository). Entries are keyed by the SHA-256 of the
source file's bytes, so a renamed or moved clip hits the same entry and an
edited clip misses it. Writes are atomic (temporary file + rename), so an
interrupted job never leaves a half-written entry behind.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

_HASHES: dict[tuple[str, int, int], str] = {}


def cache_root() -> Path:
    """The cache root: ``$POSETRACKER_CACHE`` or ``~/.cache/posetracker``."""
    root = os.environ.get("POSETRACKER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "posetracker")
    return Path(root)


def cache_dir(kind: str) -> Path:
    """``<root>/<kind>`` (e.g. ``features``, ``labels``, ``train``), created on demand."""
    d = cache_root() / kind
    d.mkdir(parents=True, exist_ok=True)
    return d


def file_hash(path: str | os.PathLike[str], length: int = 16) -> str:
    """First ``length`` hex digits of the SHA-256 of the file's bytes (memoised per path, size, mtime)."""
    p = Path(path)
    st = p.stat()
    memo = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _HASHES:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _HASHES[memo] = h.hexdigest()
    return _HASHES[memo][:length]


def combine_key(*parts: Any, length: int = 16) -> str:
    """A stable key from strings / numbers / json-able parts (order matters)."""
    text = json.dumps([str(p) if not isinstance(p, (int, float, str, list, dict)) else p for p in parts],
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def entry_path(kind: str, key: str, suffix: str) -> Path:
    """Path of one cache entry: ``<root>/<kind>/<key><suffix>``."""
    return cache_dir(kind) / f"{key}{suffix}"


def save_npz(path: Path, **arrays: np.ndarray) -> Path:
    """Write an .npz atomically (a private temporary name, so two jobs filling one entry do not collide)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)
    return path


def save_npy(path: Path, array: np.ndarray) -> Path:
    """Write an .npy atomically (a private temporary name, see :func:`save_npz`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npy")
    np.save(tmp, array)
    tmp.replace(path)
    return path


def load_npz(path: Path) -> dict[str, np.ndarray] | None:
    """Every array of an .npz, or None when the entry is missing or unreadable."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as d:
            return {k: d[k] for k in d.files}
    except (OSError, ValueError):
        return None
