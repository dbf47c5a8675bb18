"""DeepLabCut-style CSV of image keypoints (pixels), for DLC tools and pandas.

Single animal (one track, or ``person`` given)::

    scorer,S,S,S,...
    bodyparts,snout,snout,snout,leftear,...
    coords,x,y,likelihood,x,y,likelihood,...
    0,412.3,201.7,0.98,...

Multi-animal (several tracks; ``multi=True`` forces it) adds an
``individuals`` row after ``scorer``, one column block per track named
``track{ID}``. The first column is the source frame index; missing values
are empty cells. Bodyparts are the skeleton's labelled joints (virtual ones
left out). Read back with ``pandas.read_csv(path, header=[0, 1, 2], index_col=0)``
(``header=[0, 1, 2, 3]`` for the multi-animal file).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from posetracker.export.files import write_files
from posetracker.export.registry import ExportError
from posetracker.tracks import TrackError, person_tracks
from posetracker.types import PoseSequence

SCORER = "PoseTracker"


def _num(v: float, digits: int) -> str:
    return "" if not np.isfinite(v) else f"{v:.{digits}f}"


class DlcCsvExporter:
    name = "dlc"
    suffixes = (".csv",)
    description = "DeepLabCut-style CSV (scorer/bodyparts/coords; individuals for several animals)"

    def write(self, seq: PoseSequence, path: Path, force: bool = False, person: int | None = None,
              multi: bool | None = None, scorer: str = SCORER, **_: object) -> list[Path]:
        try:
            tracks = person_tracks(seq, person)
        except TrackError as exc:
            raise ExportError(f"DeepLabCut CSV: {exc}") from None
        multi = len(tracks) > 1 if multi is None else bool(multi)
        spec = seq.skeleton
        joints = list(spec.labelled_joints)
        parts = [spec.joint_names[j] for j in joints]
        ids = list(tracks)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        ncol = 3 * len(parts) * len(ids)
        w.writerow(["scorer"] + [scorer] * ncol)
        if multi:
            w.writerow(["individuals"] + [f"track{i}" for i in ids for _ in range(3 * len(parts))])
        w.writerow(["bodyparts"] + [p for _ in ids for p in parts for _ in range(3)])
        w.writerow(["coords"] + ["x", "y", "likelihood"] * (len(parts) * len(ids)))
        frames = next(iter(tracks.values())).frames
        for i in range(len(frames)):
            row = [str(int(frames[i]))]
            for tid in ids:
                tr = tracks[tid]
                for j in joints:
                    x, y = tr.keypoints[i, j, :2]
                    seen = tr.present[i] and np.isfinite(x) and np.isfinite(y)
                    row += [_num(x, 3), _num(y, 3), _num(tr.confidence[i, j], 4)] if seen else ["", "", ""]
            w.writerow(row)
        return write_files({Path(path): buf.getvalue()}, force)
