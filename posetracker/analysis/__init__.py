"""Analysis of tracked poses.

- :mod:`.joint_angles`: the one joint-angle table (:data:`ANGLES`: knee, hip and
  elbow flexion, shoulder flexion and abduction, trunk lean, ankle when the
  skeleton has feet; left and right; 3-D with depth, else 2-D, labelled) and
  its two entry points: :func:`compute_angles` (a whole sequence ->
  :class:`AngleTable`, the ``angles`` exporter) and :func:`frame_angles` (one
  frame -> ``{(angle, side): (P,) degrees}``, live use);
- :mod:`.history`: :class:`AngleHistory`, a rolling window of
  :func:`frame_angles` per track (the GUI's live plots);
- :mod:`.summary`: range of motion, left-right differences (the ``angles``
  exporter, :mod:`posetracker.export.angles_csv`, writes them as CSV).

Per-person arrays of a sequence are in :mod:`posetracker.tracks`.
"""

from posetracker.analysis.history import AngleHistory
from posetracker.analysis.joint_angles import (
    ANGLES, AngleDef, AngleKey, AngleTable, angle_names, check_angle_names, compute_angles, frame_angles,
)
from posetracker.analysis.summary import SummaryRow, summarise

__all__ = [
    "ANGLES",
    "AngleDef",
    "AngleHistory",
    "AngleKey",
    "AngleTable",
    "SummaryRow",
    "angle_names",
    "check_angle_names",
    "compute_angles",
    "frame_angles",
    "summarise",
]
