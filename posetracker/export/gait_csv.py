"""The ``gait`` exporter: strides, a per-person summary and per-frame foot contact, as CSV.

From :func:`posetracker.analysis.gait.analyse_gait` (side-view walking). Three files
(``.`` decimals whatever the locale, empty cell = not measured):

- ``NAME.csv``: one row per stride, ``person_id,foot,start_frame,end_frame,start_s,end_s,
  stride_s,step_s,stance_s,swing_s,stance_pct,swing_pct,cadence_spm,knee_rom_deg,hip_rom_deg,angle_method``;
- ``NAME.summary.csv``: per person and foot (``left``, ``right``, ``both``): ``person_id,foot,
  strides,stride_s,stride_sd_s,step_s,cadence_spm,stance_pct,swing_pct,knee_rom_deg,hip_rom_deg``
  (means over the strides; cadence = 120 / mean stride time, steps per minute);
- ``NAME.contacts.csv``: one row per frame and person seen, ``frame,time_s,person_id,
  left_contact,right_contact,left_event,right_event``: contact 1 (on the ground), 0 (swing)
  or empty (foot not seen); event ``heel_strike``, ``toe_off`` or empty.
"""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from pathlib import Path

import numpy as np

from posetracker.analysis.foot_contact import CONTACT, FEET, SWING, GaitError
from posetracker.analysis.gait import GaitSettings, PersonGait, analyse_gait, summarise_gait
from posetracker.export.files import write_files
from posetracker.export.registry import ExportError
from posetracker.tracks import TrackError
from posetracker.types import PoseSequence

STRIDE_COLUMNS = ("person_id", "foot", "start_frame", "end_frame", "start_s", "end_s", "stride_s", "step_s",
                  "stance_s", "swing_s", "stance_pct", "swing_pct", "cadence_spm", "knee_rom_deg", "hip_rom_deg",
                  "angle_method")
SUMMARY_COLUMNS = ("person_id", "foot", "strides", "stride_s", "stride_sd_s", "step_s", "cadence_spm", "stance_pct",
                   "swing_pct", "knee_rom_deg", "hip_rom_deg")
CONTACT_COLUMNS = ("frame", "time_s", "person_id", "left_contact", "right_contact", "left_event", "right_event")


def _num(v: float, digits: int = 3) -> str:
    return "" if not np.isfinite(v) else f"{v:.{digits}f}"


def _writer() -> tuple[io.StringIO, csv.writer]:
    buf = io.StringIO()
    return buf, csv.writer(buf, lineterminator="\n")


def strides_csv_text(gaits: dict[int, PersonGait]) -> str:
    buf, w = _writer()
    w.writerow(STRIDE_COLUMNS)
    for gait in gaits.values():
        for s in gait.strides:
            w.writerow((s.person_id, s.foot, s.start_frame, s.end_frame, f"{s.start_s:.6f}", f"{s.end_s:.6f}",
                        _num(s.stride_s, 4), _num(s.step_s, 4), _num(s.stance_s, 4), _num(s.swing_s, 4),
                        _num(s.stance_pct, 1), _num(s.swing_pct, 1), _num(s.cadence_spm, 1),
                        _num(s.knee_rom_deg, 1), _num(s.hip_rom_deg, 1), s.angle_method))
    return buf.getvalue()


def summary_csv_text(gaits: dict[int, PersonGait]) -> str:
    buf, w = _writer()
    w.writerow(SUMMARY_COLUMNS)
    for r in summarise_gait(gaits):
        w.writerow((r.person_id, r.foot, r.strides, _num(r.stride_s, 4), _num(r.stride_sd_s, 4), _num(r.step_s, 4),
                    _num(r.cadence_spm, 1), _num(r.stance_pct, 1), _num(r.swing_pct, 1), _num(r.knee_rom_deg, 1),
                    _num(r.hip_rom_deg, 1)))
    return buf.getvalue()


def contacts_csv_text(gaits: dict[int, PersonGait]) -> str:
    """Rows in frame order, then person; only frames where the person is in the sequence."""
    rows = []
    for pid, gait in gaits.items():
        c = gait.contacts
        events = {(e.index, e.foot): e.kind for e in gait.events}
        for i in np.flatnonzero(gait.track.present):
            cells = ["1" if c.contact[i, f] == CONTACT else "0" if c.contact[i, f] == SWING else "" for f in range(2)]
            rows.append((int(c.frames[i]), pid, i, cells, [events.get((int(i), foot), "") for foot in FEET]))
    rows.sort(key=lambda r: (r[0], r[1]))
    buf, w = _writer()
    w.writerow(CONTACT_COLUMNS)
    for frame, pid, i, cells, kinds in rows:
        w.writerow((frame, f"{gaits[pid].contacts.times[i]:.6f}", pid, *cells, *kinds))
    return buf.getvalue()


def side_paths(path: Path) -> tuple[Path, Path]:
    """``NAME.summary.csv`` and ``NAME.contacts.csv`` beside ``NAME.csv``."""
    path = Path(path)
    suffix = path.suffix or ".csv"
    return path.with_name(f"{path.stem}.summary{suffix}"), path.with_name(f"{path.stem}.contacts{suffix}")


class GaitCsvExporter:
    name = "gait"
    suffixes = (".csv",)
    description = ("gait CSV for side-view walking: strides (stride / step time, stance %, knee and hip ROM), "
                   "a summary with cadence, and foot contact per frame")

    def write(self, seq: PoseSequence, path: Path, force: bool = False, person: int | None = None,
              min_confidence: float | None = None, **_: object) -> list[Path]:
        settings = GaitSettings()
        if min_confidence is not None:
            settings = replace(settings, contact=replace(settings.contact, min_confidence=float(min_confidence)),
                               angle_confidence=float(min_confidence))
        try:
            gaits = analyse_gait(seq, person, settings)
        except (TrackError, GaitError) as exc:
            raise ExportError(f"gait: {exc}") from None
        path = Path(path)
        summary, contacts = side_paths(path)
        return write_files({path: strides_csv_text(gaits), summary: summary_csv_text(gaits),
                            contacts: contacts_csv_text(gaits)}, force)
