"""Wide CSV: one row per (frame, person), one column block per joint.

Columns: ``frame,time_s,person_id`` then for every joint ``J``:
``J_x_px,J_y_px,J_x_m,J_y_m,J_z_m,J_conf``, then the person's ``stature_m``,
``stature_source`` and for every joint ``J_bone_m``, the length of the bone
from its parent to it (:mod:`.people_header`). Units as in the tidy CSV (image
pixels; camera-space metres, x right, y down, z forward; empty when
unknown). Opens in a spreadsheet as is; ``pandas.read_csv`` gives one column
per value.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from posetracker.export.files import write_files
from posetracker.export.people_header import bone_cells, joint_bones, person_entry, stature_cells
from posetracker.export.registry import ExportError
from posetracker.types import PoseSequence

FIELDS = ("x_px", "y_px", "x_m", "y_m", "z_m", "conf")


def _num(v: float, digits: int) -> str:
    return "" if not np.isfinite(v) else f"{v:.{digits}f}"


def wide_columns(joint_names: tuple[str, ...] | list[str]) -> list[str]:
    return (["frame", "time_s", "person_id"] + [f"{j}_{f}" for j in joint_names for f in FIELDS]
            + ["stature_m", "stature_source"] + [f"{j}_bone_m" for j in joint_names])


def wide_csv_text(seq: PoseSequence, person: int | None = None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(wide_columns(seq.skeleton.joint_names))
    k = seq.skeleton.num_joints
    bones = joint_bones(seq.skeleton)
    people: dict[int, list[str]] = {}
    for f in seq.frames:
        world = f.world if f.world is not None else np.full((f.num_people, k, 3), np.nan)
        for p in range(f.num_people):
            pid = int(f.track_ids[p])
            if person is not None and pid != person:
                continue
            row: list[Any] = [f.index, f"{f.timestamp:.6f}", pid]
            for j in range(k):
                x, y = f.keypoints[p, j, :2]
                row += [_num(x, 2), _num(y, 2), _num(world[p, j, 0], 4), _num(world[p, j, 1], 4),
                        _num(world[p, j, 2], 4), _num(f.confidence[p, j], 4)]
            if pid not in people:
                entry = person_entry(seq, pid)
                people[pid] = [*stature_cells(entry), *bone_cells(entry, bones)]
            w.writerow(row + people[pid])
    return buf.getvalue()


class WideCsvExporter:
    name = "wide-csv"
    suffixes = (".csv",)
    description = "CSV, one row per frame and person, columns joint_x_px ... joint_conf"

    def write(self, seq: PoseSequence, path: Path, force: bool = False, person: int | None = None, **_: object) -> list[Path]:
        if len(seq) == 0:
            raise ExportError("wide CSV: the sequence has no frames")
        if person is not None and int(person) not in seq.track_ids():
            raise ExportError(f"wide CSV: no person with track id {person}; ids: {seq.track_ids() or 'none'}")
        return write_files({Path(path): wide_csv_text(seq, person)}, force)
