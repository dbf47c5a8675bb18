"""Tracking and temporal post-processing of PoseFrames.

- :class:`PoseTracker`: persistent track ids (OKS + Hungarian, constant velocity).
- :class:`PoseSmoother`: per-track One Euro smoothing of keypoints and world.
- :class:`BoneLengthSolver`: per-track bone lengths, optionally enforced.
- :class:`OneEuroFilter`, :func:`smooth_offline`: the filters themselves.

Typical live chain: ``smoother(tracker(frame))`` (then ``bones(...)``).
"""

from posetracker.oks import joint_sigmas, keypoint_bbox_area
from posetracker.tracking.bones import BoneLengthEstimator, BoneLengthSolver, bone_lengths, rigidify
from posetracker.tracking.one_euro import PRESETS, OneEuroFilter, OneEuroParams, one_euro_step, preset, smooth_offline
from posetracker.tracking.similarity import oks_matrix
from posetracker.tracking.smoothing import PoseSmoother
from posetracker.tracking.tracker import PoseTracker

__all__ = [
    "PRESETS",
    "BoneLengthEstimator",
    "BoneLengthSolver",
    "OneEuroFilter",
    "OneEuroParams",
    "PoseSmoother",
    "PoseTracker",
    "bone_lengths",
    "joint_sigmas",
    "keypoint_bbox_area",
    "oks_matrix",
    "one_euro_step",
    "preset",
    "rigidify",
    "smooth_offline",
]
