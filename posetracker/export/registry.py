"""Exporters keyed by name and file suffix; CLI and GUI build their choices from here.

An exporter has ``name``, ``suffixes`` (lower-case, with the dot) and
``write(seq, path, **options)``. Unknown names or suffixes fail loudly and
list the choices. Writers go through :func:`posetracker.export.files.write_files`
so a failure never leaves a half-written file behind.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Protocol

from posetracker.types import PoseSequence


class ExportError(RuntimeError):
    """An export could not be written; nothing was left behind."""


class ExportWarning(UserWarning):
    """Part of a sequence could not be exported (e.g. one person of a crowd); the rest was written."""


def write_reporting(exporter: Exporter, seq: PoseSequence, path: Path, **options: Any) -> tuple[list[Path], list[str]]:
    """``exporter.write(seq, path, **options)`` -> (files written, the messages of its ExportWarnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ExportWarning)
        files = exporter.write(seq, path, **options)
    return files, [str(w.message) for w in caught if issubclass(w.category, ExportWarning)]


class Exporter(Protocol):
    name: str
    suffixes: tuple[str, ...]
    description: str

    def write(self, seq: PoseSequence, path: Path, **options) -> list[Path]:
        """Write ``seq``; returns the files written."""


_EXPORTERS: dict[str, Exporter] = {}


def register_exporter(exporter: Exporter) -> Exporter:
    if exporter.name in _EXPORTERS:
        raise ValueError(f"exporter {exporter.name!r} is already registered")
    _EXPORTERS[exporter.name] = exporter
    return exporter


def unregister_exporter(name: str) -> None:
    _EXPORTERS.pop(name, None)


def exporters() -> dict[str, Exporter]:
    return dict(_EXPORTERS)


def get_exporter(name: str) -> Exporter:
    try:
        return _EXPORTERS[name]
    except KeyError:
        raise KeyError(f"unknown export format {name!r}; formats: {', '.join(sorted(_EXPORTERS))}") from None


def exporter_for_path(path: str | Path) -> Exporter:
    suffix = Path(path).suffix.lower()
    for exp in _EXPORTERS.values():
        if suffix in exp.suffixes:
            return exp
    known = sorted({s for e in _EXPORTERS.values() for s in e.suffixes})
    what = f"{suffix} files" if suffix else "files without a suffix"
    raise KeyError(f"no export format writes {what}: end the name in {', '.join(known[:-1])} or {known[-1]}, or "
                   f"choose a format ({', '.join(sorted(_EXPORTERS))})")


# a default output name per format: INPUT-STEM + this (formats that share a file suffix get their own)
DEFAULT_NAME_SUFFIX = {"bvh": ".bvh", "csv": ".poses.csv", "wide-csv": ".wide.csv", "json": ".json", "trc": ".trc",
                       "dlc": ".dlc.csv", "angles": ".angles.csv", "gait": ".gait.csv"}


def default_name_suffix(name: str) -> str:
    """What a default output name of format ``name`` ends with (a plug-in's: its first suffix)."""
    return DEFAULT_NAME_SUFFIX.get(name) or get_exporter(name).suffixes[0]


def with_suffix(path: str | Path, exporter: Exporter) -> Path:
    """``path`` with the exporter's first suffix added when it has none of the exporter's
    (``walk`` -> ``walk.bvh``; ``walk.v2`` -> ``walk.v2.bvh``; ``walk.BVH`` stays)."""
    path = Path(path)
    if path.suffix.lower() in exporter.suffixes:
        return path
    return path.with_name(path.name + exporter.suffixes[0])


def check_target(path: Path, force: bool) -> None:
    """Refuse to overwrite without ``force``; check the folder is writable."""
    if path.exists() and not force:
        raise ExportError(f"{path} exists; use --force to overwrite")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise ExportError(f"folder does not exist: {parent}")
    if not os.access(parent, os.W_OK):
        raise ExportError(f"folder is not writable: {parent}")

