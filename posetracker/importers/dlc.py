"""A DeepLabCut project folder -> :class:`ImportedLabels`.

Reads ``config.yaml`` (``bodyparts``, ``skeleton``; for multi-animal projects ``multianimalbodyparts``,
``individuals``, ``uniquebodyparts``) and every ``labeled-data/<video>/CollectedData_<scorer>.csv``
with the stdlib csv module (no pandas). The CSV has 3 header rows (scorer, bodyparts, coords) or 4
(scorer, individuals, bodyparts, coords) for multi-animal projects; the row index is one column
(``labeled-data/v/img0.png``) or, since DeepLabCut 2.2, three (``labeled-data``, ``v``, ``img0.png``).
An empty or NaN cell is an unlabelled point (v=0), everything else v=2 (DeepLabCut has no
visibility flag). Individuals with no labelled point are left out, and frames with none at all.
``uniquebodyparts`` (the ``single`` individual: landmarks, not animals) are not imported.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import yaml

from posetracker.importers.common import ImportedLabels, LabelImportError, image_size, keypoint_rows, slug

HEADER_KEYS = ("scorer", "individuals", "bodyparts", "coords")


def _float(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return math.nan


def read_config(folder: Path) -> dict:
    cfg_path = folder / "config.yaml"
    if not cfg_path.is_file():
        raise LabelImportError(f"{folder} is not a DeepLabCut project: it has no config.yaml")
    try:
        cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LabelImportError(f"cannot read {cfg_path}: {exc}") from None
    if not isinstance(cfg, dict):
        raise LabelImportError(f"cannot read {cfg_path}: not a DeepLabCut config (top level is not a mapping)")
    return cfg


def read_csv(path: Path) -> tuple[list[tuple[str | None, str]], list[tuple[str, list[float]]]]:
    """(columns as (individual or None, bodypart) pairs of x, y, rows as (image path relative to the
    project, [x0, y0, x1, y1, ...])) of one CollectedData CSV."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            table = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelImportError(f"cannot read {path}: {exc}") from None
    header = {}
    while table and table[0] and table[0][0].strip().lower() in HEADER_KEYS and len(header) < 4:
        row = table.pop(0)
        header[row[0].strip().lower()] = row
    if not {"scorer", "bodyparts", "coords"} <= set(header):
        raise LabelImportError(f"{path}: not a DeepLabCut CSV (needs the header rows scorer, bodyparts, coords; "
                               f"got {sorted(header)})")
    scorer = header["scorer"]
    n_index = next((i for i in range(1, len(scorer)) if scorer[i].strip()), len(scorer))
    coords, parts = header["coords"], header["bodyparts"]
    inds = header.get("individuals")
    columns: list[tuple[str | None, str]] = []
    picks: list[tuple[int, int]] = []  # (x column, y column) per pair
    for c in range(n_index, len(coords)):
        if coords[c].strip() != "x":
            continue
        who = inds[c].strip() if inds else None
        y = next((d for d in range(c + 1, len(coords)) if coords[d].strip() == "y"
                  and parts[d] == parts[c] and (not inds or inds[d] == inds[c])), None)
        if y is None:
            raise LabelImportError(f"{path}: bodypart {parts[c]!r} has an x column but no y column")
        columns.append((who, parts[c].strip()))
        picks.append((c, y))
    if not columns:
        raise LabelImportError(f"{path}: no x/y columns")
    rows = []
    for r in table:
        if not r or not any(cell.strip() for cell in r):
            continue
        name = "/".join(cell.strip() for cell in r[:n_index] if cell.strip()).replace("\\", "/")
        vals = []
        for x, y in picks:
            vals += [_float(r[x]) if x < len(r) else math.nan, _float(r[y]) if y < len(r) else math.nan]
        rows.append((name, vals))
    return columns, rows


def _csv_files(folder: Path, scorer: str | None) -> list[Path]:
    out = []
    for sub in sorted(p for p in (folder / "labeled-data").iterdir() if p.is_dir()):
        own = sub / f"CollectedData_{scorer}.csv"
        found = [own] if scorer and own.is_file() else sorted(sub.glob("CollectedData_*.csv"))
        out += found[:1]
    return out


def read_dlc(folder: Path) -> ImportedLabels:
    folder = folder.resolve()
    cfg = read_config(folder)
    multi = bool(cfg.get("multianimalproject"))
    wanted = list(cfg.get("multianimalbodyparts" if multi else "bodyparts") or [])
    if not isinstance(wanted, list) or wanted == ["MULTI!"]:
        wanted = []
    if not (folder / "labeled-data").is_dir():
        raise LabelImportError(f"{folder}: DeepLabCut project without a labeled-data folder (nothing labelled yet)")
    files = _csv_files(folder, cfg.get("scorer"))
    if not files:
        h5 = sorted((folder / "labeled-data").glob("*/CollectedData_*.h5"))
        hint = (" (only .h5 files: save the labels again in DeepLabCut's labelling GUI, which writes the CSV too, "
                "or convert them with pandas.read_hdf(path).to_csv(...))") if h5 else ""
        raise LabelImportError(f"{folder}: no labeled-data/*/CollectedData_*.csv{hint}")
    warnings: list[str] = []
    parsed = [(f, *read_csv(f)) for f in files]
    names = [str(n) for n in wanted]
    skipped_unique: set[str] = set()
    for f, columns, _ in parsed:
        for who, part in columns:
            if who == "single" and multi:
                skipped_unique.add(part)
            elif part not in names:
                names.append(part)
    if skipped_unique:
        warnings.append(f"unique bodyparts {sorted(skipped_unique)} (individual 'single') were not imported")
    index = {n: i for i, n in enumerate(names)}
    images, empty, missing = [], 0, 0
    for f, columns, rows in parsed:
        for rel, vals in rows:
            img = folder / rel
            if not img.is_file():
                alt = f.parent / Path(rel).name  # a project whose labeled-data folder was renamed
                if not alt.is_file():
                    missing += 1
                    continue
                img = alt
            per: dict[str | None, list[list[float]]] = {}
            for c, (who, part) in enumerate(columns):
                if who == "single" and multi:
                    continue
                xy = per.setdefault(who, [[math.nan, math.nan] for _ in names])
                xy[index[part]] = vals[2 * c: 2 * c + 2]
            instances = []
            for who, xy in per.items():
                kp = keypoint_rows(xy)
                if not any(v for _, _, v in kp):
                    continue
                inst = {"keypoints": kp, "bbox": None, "category": "animal"}
                if who is not None:
                    inst["track"] = who
                instances.append(inst)
            if not instances:
                empty += 1
                continue
            w, h = image_size(img)
            images.append({"file": str(img), "width": w, "height": h, "instances": instances})
    if empty:
        warnings.append(f"{empty} frames without any labelled point were left out")
    if missing:
        warnings.append(f"{missing} labelled frames whose image is missing were left out")
    if not images:
        raise LabelImportError(f"{folder}: no labelled frames in {[str(f.relative_to(folder)) for f in files]}")
    edges = []
    for pair in cfg.get("skeleton") or []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and all(p in index for p in pair):
            edges.append((index[pair[0]], index[pair[1]]))
        else:
            warnings.append(f"skeleton edge {pair!r} names no imported bodyparts; ignored")
    return ImportedLabels(
        keypoint_names=names, edges=edges, images=images, source=folder / "config.yaml",
        name=slug(cfg.get("Task") or folder.name),
        visibility_note="DeepLabCut has no visibility flag: labelled -> v=2, empty cell (not labelled) -> v=0",
        warnings=warnings,
    )
