"""Which ONNX files have passed their check against torch, so a session started again skips the check's forward passes.

A file set is named by its identity, each file as (path, mtime_ns, size): the weights are in each file's name
(``weights.weights_key``) and a rewrite moves the rest. A passed check is kept in this process (the app reopening a
source, a batch worker's next video) and recorded as an empty file under ``<onnx cache>/checked/``, named by the
identity and the onnxruntime and torch versions that read it, so other processes on the same files skip it too (a
batch's Ray workers, the CLI run by a script). A new runtime, or a file rewritten since, is checked again.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import torch

Identity = tuple[tuple[str, int, int], ...]

_CHECKED: set[Identity] = set()


def identity(paths: list[Path]) -> Identity:
    """The files as (path, mtime_ns, size)."""
    return tuple((str(p), (st := p.stat()).st_mtime_ns, st.st_size) for p in paths)


def _record(files: Identity, root: Path) -> Path:
    import onnxruntime

    key = repr((files, onnxruntime.__version__, torch.__version__)).encode()
    return root / "checked" / hashlib.sha1(key).hexdigest()


def was_checked(files: Identity, root: Path) -> bool:
    """True when ``files`` passed their check in this process or, recorded under ``root``, in another one."""
    if files in _CHECKED:
        return True
    if _record(files, root).exists():
        _CHECKED.add(files)
        return True
    return False


def mark_checked(files: Identity, root: Path) -> None:
    """Keep and record that ``files`` passed their check against torch."""
    _CHECKED.add(files)
    record = _record(files, root)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.touch()
