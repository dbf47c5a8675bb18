"""A first start, said as it happens: the one-off preparation of the fast (8-bit) live model, and no library
log lines on the console meanwhile.

The first live session on a machine exports its networks to ONNX and quantises the 8-bit graph
(``posetracker.model.int8.int8_session``), ~10-15 s, cached under ``posetracker.model.runtime.cache_dir()``
(``$POSETRACKER_CACHE``) for every later start. While a file of that export is being written there, the
window says so instead of "loading".
"""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

PREPARING_TEXT = "Model: preparing the fast model (once, ~15 s)…"
RECENT_S = 120.0  # an unfinished export file older than this is a crashed run's leftover, not a preparation
QUIET_PACKAGES = ("onnxruntime",)  # their INFO / WARNING lines stay off the console (errors still show)


def preparing_model(folder: str | Path | None = None, now: float | None = None) -> bool:
    """True while an export is being written in the model cache ``folder`` (default: the library's cache):
    a recent ``*.tmp`` (an export or quantisation in progress) or ``*.float.onnx`` (the float graph the
    8-bit one is quantised from, removed once it is)."""
    if folder is None:
        from posetracker.model.runtime import cache_dir

        folder = cache_dir()
    folder = Path(folder)
    if not folder.is_dir():
        return False
    now = time.time() if now is None else now
    for pattern in ("*.tmp", "*.float.onnx"):
        for path in folder.glob(pattern):
            try:
                if now - path.stat().st_mtime < RECENT_S:
                    return True
            except OSError:  # finished (renamed or removed) meanwhile
                continue
    return False


def _quiet_package(record: logging.LogRecord) -> bool:
    path = record.pathname.replace("\\", "/")
    return any(record.name == p or record.name.startswith(p + ".") or f"/{p}/" in path for p in QUIET_PACKAGES)


class QuietLibraries(logging.Filter):
    """Drops records under ERROR from ``QUIET_PACKAGES``: onnxruntime's quantiser logs through the root logger
    itself (``logging.warning(...)``), so its records are told by the file they come from."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or not _quiet_package(record)


def quiet_library_logs() -> QuietLibraries:
    """Keep the quantiser's INFO / WARNING lines (and its Python warnings) off the console; returns the filter
    put on the root logger (``logging.getLogger().removeFilter(it)`` undoes it)."""
    root = logging.getLogger()
    for f in root.filters:
        if isinstance(f, QuietLibraries):
            return f
    quiet = QuietLibraries()
    root.addFilter(quiet)
    for name in QUIET_PACKAGES:
        logging.getLogger(name).setLevel(logging.ERROR)  # their named loggers (records that propagate to root)
        warnings.filterwarnings("ignore", module=rf"{name}(\..*)?$")
    return quiet
