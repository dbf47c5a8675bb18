"""Write output files as one unit: all of them, or none.

:func:`write_atomic` is the one atomic writer of the package: each file is
written to a new temporary file beside its target and renamed onto it only
after every file was written; a failure removes the temporaries and any file
already renamed, so nothing half-written is left behind. The exporters use
it through :func:`write_files` (target checks, :class:`ExportError`); the
recorder writes its ``meta.json`` with it directly.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path

from posetracker.export.registry import ExportError, check_target


def write_atomic(texts: Mapping[Path, str], perm: int = 0o666, sync: bool = False,
                 error: Callable[[Path, OSError], Exception] | None = None) -> list[Path]:
    """Write ``{path: text}`` (UTF-8, '\\n' newlines) all or none; returns the paths in order.

    perm: permission bits of the new files, less the user's umask (0o666: what any program's new file gets).
    sync: fsync every file before it is renamed (a crash leaves the old file or the new one).
    error: on an OSError, raise ``error(path that failed, exc)`` instead of the OSError itself.
    """
    paths = [Path(p) for p in texts]
    temps: list[Path] = []
    done: list[Path] = []
    try:
        for p, text in zip(paths, texts.values()):
            fd, tmp = _new_temp(p, perm)
            temps.append(tmp)
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                if sync:
                    fh.flush()
                    os.fsync(fh.fileno())
        for p, tmp in zip(paths, temps):
            os.replace(tmp, p)
            done.append(p)
    except BaseException as exc:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
        for p in done:
            p.unlink(missing_ok=True)
        if error is not None and isinstance(exc, OSError):
            raise error(paths[len(done)] if len(done) < len(paths) else paths[-1], exc) from None
        raise
    return paths


def _new_temp(path: Path, perm: int) -> tuple[int, Path]:
    """(fd open for writing, path) of a new file ``.NAME.<8 random hex digits>.tmp`` beside ``path``."""
    folder = path.parent if str(path.parent) else Path(".")
    while True:
        tmp = folder / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, perm), tmp
        except FileExistsError:
            continue


def write_files(texts: dict[Path, str], force: bool = False) -> list[Path]:
    """Exporters' :func:`write_atomic`: every target is checked first (two outputs on one
    name, exists without ``force``, folder missing or not writable -> ExportError, nothing
    written); a write that fails raises ExportError naming the file."""
    paths = [Path(p) for p in texts]
    if len(set(paths)) != len(paths):
        raise ExportError(f"two outputs would share one file name: {[str(p) for p in paths]}")
    for p in paths:
        check_target(p, force)
    return write_atomic(texts, error=lambda p, exc: ExportError(f"cannot write {p}: {exc}"))


def person_path(path: Path, track_id: int, several: bool) -> Path:
    """``path`` itself for a single person, else ``STEM_person{ID}SUFFIX`` beside it."""
    path = Path(path)
    if not several:
        return path
    return path.with_name(f"{path.stem}_person{track_id}{path.suffix}")
