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
  exporter, :mod:`posetracker.export.angles_csv`, writes them as CSV);
- :mod:`.foot_contact`: per-frame foot contact of side-view walking (the foot moves at
  the ground's speed, estimated: still floor, treadmill belt or panning camera), heel
  strikes and toe offs, left-right label swaps of the feet found (undone in the motion itself by
  :mod:`posetracker.motion.sides`, which every output reads);
- :mod:`.gait`: :func:`analyse_gait` (strides: stride / step time, stance and swing,
  cadence, knee and hip range of motion) and :func:`summarise_gait` (the ``gait``
  exporter, :mod:`posetracker.export.gait_csv`);
- :mod:`.stance`: each ankle's stance phases in the track's own labels, on still ground
  and still in the image (for the 3-D consumers);
- :mod:`.ground`: the floor plane of a clip from everyone's stance ankles (robust, one
  normal, a floor per person), the Y-up floor frame and the camera's pitch and roll
  (fitted once, by the finishing step: ``posetracker.motion.feet``); its plane fit and camera angles in
  :mod:`.floor_plane`;
- :mod:`.held_ground`: that floor and the stance phases the finishing step held, read back from a sequence's
  ``metadata["feet"]`` (the BVH and TRC exports' ``origin="floor"``; fitted again only for a sequence without);
- :mod:`.camera_fov`: the camera's field of view from the people of an offline clip (upright
  bodies parallel), with the test of whether the clip fixes it (``posetracker process --fov auto``).

Per-person arrays of a sequence are in :mod:`posetracker.tracks`.
"""

from posetracker.analysis.foot_contact import ContactSettings, FootContacts, GaitError, GaitEvent, foot_contacts
from posetracker.analysis.gait import GaitSettings, PersonGait, Stride, analyse_gait, summarise_gait
from posetracker.analysis.history import AngleHistory
from posetracker.analysis.joint_angles import (
    ANGLES, AngleDef, AngleKey, AngleTable, angle_names, check_angle_names, compute_angles, frame_angles, track_angles,
)
from posetracker.analysis.summary import SummaryRow, summarise

__all__ = [
    "ANGLES",
    "AngleDef",
    "AngleHistory",
    "AngleKey",
    "AngleTable",
    "ContactSettings",
    "FootContacts",
    "GaitError",
    "GaitEvent",
    "GaitSettings",
    "PersonGait",
    "Stride",
    "analyse_gait",
    "SummaryRow",
    "angle_names",
    "check_angle_names",
    "compute_angles",
    "foot_contacts",
    "frame_angles",
    "summarise",
    "summarise_gait",
    "track_angles",
]
