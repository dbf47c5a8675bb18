"""Import a user's labelled animal project into PoseTracker's training format.

    from posetracker.importers import import_project
    summary = import_project("flies.slp", "runs/flies")          # or a DeepLabCut project folder

writes ``runs/flies/normalized.json`` (the common schema of ../shared/data/SCHEMA.md),
``runs/flies/<name>.yaml`` (a skeleton tree rooted at a virtual body centre, see
:mod:`.skeleton`) and ``runs/flies/train.yaml`` (``posetracker train detector --config ...``).

Readers: :mod:`.sleap` (``.slp`` / ``.pkg.slp``, through sleap-io: ``pip install 'posetracker[animals]'``)
and :mod:`.dlc` (a DeepLabCut project folder with ``config.yaml``; stdlib csv only).
"""

from __future__ import annotations

from pathlib import Path

from posetracker.importers.common import ImportedLabels, LabelImportError, slug

__all__ = ["ImportedLabels", "LabelImportError", "import_project", "read_project"]

RESERVED_NAMES = {"train"}  # <out>/train.yaml is the training config


def read_project(project: str | Path, include_predicted: bool = False, frames_dir: Path | None = None) -> ImportedLabels:
    """A .slp file, or a DeepLabCut project folder (or its config.yaml), read into :class:`ImportedLabels`."""
    p = Path(project).expanduser()
    if not p.exists():
        raise LabelImportError(f"project not found: {p}")
    if p.is_file() and p.name == "config.yaml":
        p = p.parent
    if p.is_dir():
        from posetracker.importers.dlc import read_dlc

        return read_dlc(p)
    if p.suffix.lower() == ".slp":
        from posetracker.importers.sleap import read_sleap

        return read_sleap(p, include_predicted=include_predicted, frames_dir=frames_dir)
    raise LabelImportError(f"{p}: not a SLEAP .slp file nor a DeepLabCut project folder (with config.yaml)")


def import_project(project: str | Path, out: str | Path, name: str | None = None, include_predicted: bool = False,
                   force: bool = False) -> dict:
    """Read ``project`` and write ``<out>/normalized.json``, ``<out>/<name>.yaml``, ``<out>/train.yaml``.

    Returns a summary: ``frames``, ``instances``, ``keypoints``, ``labelled_points``, ``tracks``,
    ``mirrors``, ``skeleton`` / ``data`` / ``config`` (paths written), ``warnings``.
    Raises LabelImportError (unreadable project, nothing labelled) and FileExistsError (outputs
    exist and not ``force``).
    """
    from posetracker.importers.write import output_paths, write_import

    out = Path(out).expanduser().resolve()
    if name is not None:
        name = slug(name)
        if name in RESERVED_NAMES:
            raise LabelImportError(f"--name {name!r} is taken by {out / 'train.yaml'}; choose another name")
    if not force:  # before reading: a .pkg.slp's frames are written out while it is read
        _check_free(output_paths(out, name or "")[::2])
    labels = read_project(project, include_predicted=include_predicted, frames_dir=out / "frames")
    if name is None:
        name = labels.name if labels.name not in RESERVED_NAMES else f"{labels.name}_mode"
    if not force:
        _check_free(output_paths(out, name))
    return write_import(labels, out, name)


def _check_free(paths: list[Path]) -> None:
    taken = [str(p) for p in paths if p.exists()]
    if taken:
        raise FileExistsError(f"{', '.join(taken)} already exist(s); pass --force to overwrite")
