"""Write several output files as one unit: all of them, or none.

Used by the per-person exporters (BVH, TRC, DeepLabCut, joint angles): each
file is written to a temporary file beside its target and renamed only
after every file was written; a failure removes the temporaries and any
file already renamed, so nothing half-written is left behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from posetracker.export.registry import ExportError, check_target


def write_files(texts: dict[Path, str], force: bool = False) -> list[Path]:
    """Write ``{path: text}`` (UTF-8, '\\n' newlines); returns the paths in order.

    Every target is checked first (exists without ``force``, folder missing or
    not writable -> ExportError, nothing written).
    """
    paths = [Path(p) for p in texts]
    if len(set(paths)) != len(paths):
        raise ExportError(f"two outputs would share one file name: {[str(p) for p in paths]}")
    for p in paths:
        check_target(p, force)
    temps: list[Path] = []
    done: list[Path] = []
    try:
        for p, text in zip(paths, texts.values()):
            fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
            temps.append(Path(tmp))
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        for p, tmp in zip(paths, temps):
            os.replace(tmp, p)
            done.append(p)
    except BaseException as exc:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
        for p in done:
            p.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ExportError(f"cannot write {paths[len(done)] if len(done) < len(paths) else paths[-1]}: {exc}") from None
        raise
    return paths


def person_path(path: Path, track_id: int, several: bool) -> Path:
    """``path`` itself for a single person, else ``STEM_person{ID}SUFFIX`` beside it."""
    path = Path(path)
    if not several:
        return path
    return path.with_name(f"{path.stem}_person{track_id}{path.suffix}")
