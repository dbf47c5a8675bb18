"""Tidy long CSV: one row per (frame, person, joint).

Columns: ``frame,time_s,person_id,joint,x_px,y_px,x_m,y_m,z_m,confidence,stature_m,stature_source,bone_m``.
x_px, y_px: source-image pixels; x_m, y_m, z_m: camera-space metres (x right,
y down, z forward; empty when unknown); person_id: track id (-1 = not yet
confirmed); stature_m, stature_source: the person's (given / multi-view / floor /
estimated), bone_m: the length of the bone from the joint's parent to it
(:mod:`.people_header`). Numbers are written with '.' decimals whatever the locale.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from posetracker.export.files import write_files
from posetracker.export.people_header import bone_cells, joint_bones, person_entry, stature_cells
from posetracker.types import PoseSequence

COLUMNS = ("frame", "time_s", "person_id", "joint", "x_px", "y_px", "x_m", "y_m", "z_m", "confidence", "stature_m",
           "stature_source", "bone_m")


def _num(v: float, digits: int) -> str:
    return "" if not np.isfinite(v) else f"{v:.{digits}f}"


class TidyCsvExporter:
    name = "csv"
    suffixes = (".csv",)
    description = "CSV, one row per frame, person and joint"

    def write(self, seq: PoseSequence, path: Path, force: bool = False, **_: object) -> list[Path]:
        names = seq.skeleton.joint_names
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(COLUMNS)
        bones = joint_bones(seq.skeleton)
        people: dict[int, tuple] = {}
        for f in seq.frames:
            world = f.world if f.world is not None else np.full(f.keypoints.shape, np.nan)
            for p in range(f.num_people):
                pid = int(f.track_ids[p])
                if pid not in people:
                    entry = person_entry(seq, pid)
                    people[pid] = (stature_cells(entry), bone_cells(entry, bones))
                (stature, source), lengths = people[pid]
                for k, name in enumerate(names):
                    x, y = f.keypoints[p, k, :2]
                    w.writerow((f.index, f"{f.timestamp:.6f}", pid, name, _num(x, 2), _num(y, 2),
                                _num(world[p, k, 0], 4), _num(world[p, k, 1], 4), _num(world[p, k, 2], 4),
                                _num(f.confidence[p, k], 4), stature, source, lengths[k]))
        return write_files({Path(path): buf.getvalue()}, force)
