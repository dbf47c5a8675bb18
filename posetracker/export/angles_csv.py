"""The ``angles`` exporter: joint angles per frame and a session summary, as CSV.

Angles from :func:`posetracker.analysis.compute_angles`, the summary from
:func:`posetracker.analysis.summarise`. CSV files (``.`` decimals whatever the
locale, empty cell = not measured):

- ``NAME.csv``: ``frame,time_s,person_id,angle,side,degrees,method``, one
  row per frame, person, angle and side (tidy: pandas ``pivot`` makes it wide);
- ``NAME.summary.csv``: ``person_id,angle,side,method,frames,min_deg,max_deg,mean_deg,rom_deg``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from posetracker.analysis.joint_angles import AngleTable, compute_angles
from posetracker.analysis.summary import SummaryRow, summarise
from posetracker.export.files import write_files
from posetracker.export.registry import ExportError
from posetracker.tracks import TrackError
from posetracker.types import PoseSequence

ANGLE_COLUMNS = ("frame", "time_s", "person_id", "angle", "side", "degrees", "method")
SUMMARY_COLUMNS = ("person_id", "angle", "side", "method", "frames", "min_deg", "max_deg", "mean_deg", "rom_deg")


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
        try:
            table = compute_angles(seq, person, min_confidence=min_confidence, mode=angle_mode)
        except (TrackError, ValueError) as exc:
            raise ExportError(f"joint angles: {exc}") from None
        path = Path(path)
        return write_files({path: angles_csv_text(table), summary_path(path): summary_csv_text(summarise(table))}, force)
