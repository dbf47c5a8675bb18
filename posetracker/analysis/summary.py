"""Session summary of joint angles, and the angle CSV exporter.

Summary: one row per (person, angle, side) with the number of measured
frames, the method (``3d``, ``2d`` or ``mixed``), min / max / mean and the
range of motion (ROM = max - min), in degrees; for every angle measured on
both sides one more row with side ``left-right``: min / max / mean of the
per-frame difference left - right (frames where both are measured) and ROM
= ROM(left) - ROM(right).

CSV files (``.`` decimals whatever the locale, empty cell = not measured):

- ``NAME.csv``: ``frame,time_s,person_id,angle,side,degrees,method``, one
  row per frame, person, angle and side (tidy: pandas ``pivot`` makes it wide);
- ``NAME.summary.csv``: ``person_id,angle,side,method,frames,min_deg,max_deg,mean_deg,rom_deg``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from posetracker.analysis.joint_angles import AngleTable, compute_angles
from posetracker.analysis.tracks import TrackError
from posetracker.types import PoseSequence

ANGLE_COLUMNS = ("frame", "time_s", "person_id", "angle", "side", "degrees", "method")
SUMMARY_COLUMNS = ("person_id", "angle", "side", "method", "frames", "min_deg", "max_deg", "mean_deg", "rom_deg")


@dataclass(frozen=True)
class SummaryRow:
    person_id: int
    angle: str
    side: str
    method: str
    frames: int
    min_deg: float
    max_deg: float
    mean_deg: float
    rom_deg: float


def _stats(v: np.ndarray) -> tuple[int, float, float, float, float]:
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0, np.nan, np.nan, np.nan, np.nan
    return int(v.size), float(v.min()), float(v.max()), float(v.mean()), float(v.max() - v.min())


def _method(methods: list[str]) -> str:
    used = {m for m in methods if m}
    return "" if not used else used.pop() if len(used) == 1 else "mixed"


def summarise(table: AngleTable) -> list[SummaryRow]:
    """Range of motion and min / max / mean per person, angle and side, plus left-right differences."""
    rows: list[SummaryRow] = []
    keys: list[tuple[int, str]] = []
    sides: dict[tuple[int, str], list[str]] = {}
    for p, a, s in zip(table.person_id.tolist(), table.angle, table.side):
        if (p, a) not in sides:
            keys.append((p, a))
            sides[(p, a)] = []
        if s not in sides[(p, a)]:
            sides[(p, a)].append(s)
    for p, a in keys:
        series = {s: table.series(p, a, s) for s in sides[(p, a)]}
        for s, (deg, methods) in series.items():
            rows.append(SummaryRow(p, a, s, _method(methods), *_stats(deg)))
        if "left" in series and "right" in series:
            (dl, ml), (dr, mr) = series["left"], series["right"]
            n, lo, hi, mean, _ = _stats(dl - dr)
            rom = _stats(dl)[4] - _stats(dr)[4]
            rows.append(SummaryRow(p, a, "left-right", _method(ml + mr), n, lo, hi, mean, rom))
    return rows


def _num(v: float, digits: int = 3) -> str:
    return "" if not np.isfinite(v) else f"{v:.{digits}f}"


def angles_csv_text(table: AngleTable) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(ANGLE_COLUMNS)
    for i in range(len(table)):
        w.writerow((int(table.frame[i]), f"{table.time_s[i]:.6f}", int(table.person_id[i]), table.angle[i],
                    table.side[i], _num(table.degrees[i]), table.method[i]))
    return buf.getvalue()


def summary_csv_text(rows: list[SummaryRow]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SUMMARY_COLUMNS)
    for r in rows:
        w.writerow((r.person_id, r.angle, r.side, r.method, r.frames, _num(r.min_deg), _num(r.max_deg),
                    _num(r.mean_deg), _num(r.rom_deg)))
    return buf.getvalue()


def summary_path(path: Path) -> Path:
    """``NAME.summary.csv`` beside ``NAME.csv``."""
    path = Path(path)
    return path.with_name(f"{path.stem}.summary{path.suffix or '.csv'}")


class AnglesCsvExporter:
    name = "angles"
    suffixes = (".csv",)
    description = "joint angles CSV (per frame) and a session summary CSV (range of motion, left-right)"

    def write(self, seq: PoseSequence, path: Path, force: bool = False, person: int | None = None,
              min_confidence: float = 0.2, angle_mode: str = "auto", **_: object) -> list[Path]:
        from posetracker.export.bvh_files import write_files
        from posetracker.export.registry import ExportError

        try:
            table = compute_angles(seq, person, min_confidence=min_confidence, mode=angle_mode)
        except (TrackError, ValueError) as exc:
            raise ExportError(f"joint angles: {exc}") from None
        path = Path(path)
        return write_files({path: angles_csv_text(table), summary_path(path): summary_csv_text(summarise(table))}, force)
