"""Session summary of joint angles.

Summary: one row per (person, angle, side) with the number of measured
frames, the method (``3d``, ``2d`` or ``mixed``), min / max / mean and the
range of motion (ROM = max - min), in degrees; for every angle measured on
both sides one more row with side ``left-right``: min / max / mean of the
per-frame difference left - right (frames where both are measured) and ROM
= ROM(left) - ROM(right). The ``angles`` exporter
(:mod:`posetracker.export.angles_csv`) writes it beside the per-frame angles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.analysis.joint_angles import AngleTable


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
