"""A first start, said as it happens: the one-off preparation of the fast (8-bit) live model.

The first live session on a machine exports its networks to ONNX and quantises the 8-bit graph
(``posetracker.model.int8.int8_session``), ~10-15 s, cached under ``posetracker.model.runtime.cache_dir()``
(``$POSETRACKER_CACHE``) for every later start. While a file of that export is being written there, the
window says so instead of "loading". The quantiser's log lines stay off the console meanwhile: the library
quietens them itself (``posetracker.model.int8.quiet_quantiser``), for the command line too.
"""

from __future__ import annotations

import time
from pathlib import Path

PREPARING_TEXT = "Model: preparing the fast model (once, ~15 s)…"
RECENT_S = 120.0  # an unfinished export file older than this is a crashed run's leftover, not a preparation


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

