"""Analysis of tracked poses.

- :mod:`.joint_angles`: the one joint-angle table (:data:`ANGLES`: knee, hip and
  elbow flexion, shoulder flexion and abduction, trunk lean, ankle when the
  skeleton has feet; left and right; 3-D with depth, else 2-D, labelled) and
  its two entry points: :func:`compute_angles` (a whole sequence ->
  :class:`AngleTable`, the ``angles`` exporter) and :func:`frame_angles` (one
  frame -> ``{(angle, side): (P,) degrees}``, live use);
- :mod:`.history`: :class:`AngleHistory`, a rolling window of
  :func:`frame_angles` per track (the GUI's live plots);
- :mod:`.summary`: range of motion, left-right differences, CSV export;
- :mod:`.tracks`: per-person arrays of a sequence.
"""

from posetracker.analysis.history import AngleHistory
from posetracker.analysis.joint_angles import (
    ANGLES, AngleDef, AngleKey, AngleTable, angle_names, check_angle_names, compute_angles, frame_angles,
)
from posetracker.analysis.summary import AnglesCsvExporter, SummaryRow, summarise
from posetracker.analysis.tracks import PersonTrack, TrackError, person_tracks

__all__ = [
    "ANGLES",
    "AngleDef",
    "AngleHistory",
    "AngleKey",
    "AngleTable",
    "AnglesCsvExporter",
    "PersonTrack",
    "SummaryRow",
    "TrackError",
    "angle_names",
    "check_angle_names",
    "compute_angles",
    "frame_angles",
    "person_tracks",
    "summarise",
]
