"""Analysis of tracked poses.

- :mod:`.angles` / :mod:`.history`: three-joint angles per frame and a rolling
  history of them (the GUI's live plots);
- :mod:`.joint_angles`: the clinical angle table (flexion, abduction, trunk
  lean; 3-D with depth, else 2-D) over a whole sequence, and
  :mod:`.summary`: range of motion, left-right differences, CSV export;
- :mod:`.tracks`: per-person arrays of a sequence.
"""

from posetracker.analysis.angles import AngleDef, HUMAN_ANGLES, angle_series, angles_for_spec, frame_angles, joint_angles
from posetracker.analysis.history import AngleHistory
from posetracker.analysis.joint_angles import ANGLES, AngleTable, angle_names, compute_angles
from posetracker.analysis.joint_angles import AngleDef as JointAngleDef
from posetracker.analysis.summary import AnglesCsvExporter, SummaryRow, summarise
from posetracker.analysis.tracks import PersonTrack, TrackError, person_tracks

__all__ = [
    "ANGLES",
    "AngleDef",
    "AngleHistory",
    "AngleTable",
    "AnglesCsvExporter",
    "HUMAN_ANGLES",
    "JointAngleDef",
    "PersonTrack",
    "SummaryRow",
    "TrackError",
    "angle_names",
    "angle_series",
    "angles_for_spec",
    "compute_angles",
    "frame_angles",
    "joint_angles",
    "person_tracks",
    "summarise",
]
