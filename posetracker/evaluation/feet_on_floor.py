"""How well a BVH export stands on its floor: the ankles' height during stance and their slide per stance phase.

For one person's :class:`~posetracker.export.bvh.BvhMotion` (forward kinematics of the rig, metres,
BVH space: Y = 0 is the person's floor) and their stance phases (the session's, as the export reads them:
:func:`~posetracker.analysis.held_ground.held_ground`; track frames, mapped to the motion's frames by time):

- ``height``: the ankle's Y over every stance frame (median, 95th percentile), metres; the ankle
  joint stands an ankle height above the sole, so a foot on the floor has ``height`` = ankle height
  (pass 0 for an export whose floor is at the ankles, the percentile floor);
- ``clearance``: ``|height - ankle height|`` over the stance frames (median, 95th percentile) and the
  share within ``within_m`` (3 cm): how far the feet are from standing on the floor;
- ``slide``: per stance phase, the largest distance between two of its ankle positions (3-D;
  :func:`posetracker.analysis.stance.slide`): median and largest over the phases, and the share
  under ``slide_m`` (2 cm);
- ``under_frames``, ``under_max``: frames where an ankle is more than ``within_m`` below standing on the floor
  (a swinging foot through it; any frame, stance or not) and the deepest, metres below standing;
- ``held_frames``: frames where the whole pose holds (the report's ``held_pose``);
- ``bone_cv``: the largest coefficient of variation of a bone's length over the motion;
- ``step_max``, ``accel_p99``: the largest distance a joint moves between two frames and the 99th
  percentile of the joints' acceleration (second difference, metres per frame squared): pops show
  here.

Every stance phase counts. ``studies/tools/floor_and_feet.py`` prints these for the three
clips of ``studies/floor-and-feet.md``; ``tests/motion/test_floor_clips.py`` checks the targets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.analysis.stance import ContactPhase, slide
from posetracker.export.bvh import BvhMotion
from posetracker.export.bvh_solve import world_rotations
from posetracker.tracks import PersonTrack


@dataclass(frozen=True)
class FeetOnFloor:
    """The measures of the module docstring for one person and one export (lengths in metres)."""

    person: int
    stance_frames: int
    phases: int
    height_median: float
    height_p95: float
    clearance_median: float
    clearance_p95: float
    within: float
    slide_median: float
    slide_max: float
    slide_under: float
    held_frames: int
    bone_cv: float
    step_max: float
    accel_p99: float
    under_frames: int = 0
    under_max: float = 0.0


def joint_positions(motion: BvhMotion) -> np.ndarray:
    """(T, J, 3) forward kinematics of ``motion`` (its root and Euler angles, the rig's offsets), metres."""
    world = world_rotations(motion.euler, motion.rig.parents, motion.order)
    pos = np.zeros((len(motion.root), motion.rig.num_joints, 3))
    for j, p in enumerate(motion.rig.parents):  # parents come first
        pos[:, j] = motion.root if p < 0 else pos[:, p] + world[:, p] @ motion.rig.offsets[j]
    return pos


def motion_frames(track: PersonTrack, motion: BvhMotion) -> np.ndarray:
    """(T,) the motion frame of each track frame (by time; -1 where outside the motion)."""
    start = float(motion.report.get("start_time_s", track.times[0]))
    idx = np.round((track.times - start) / motion.frame_time).astype(np.int64)
    return np.where((idx >= 0) & (idx < len(motion.root)), idx, -1)


def feet_on_floor(motion: BvhMotion, track: PersonTrack, phases: list[ContactPhase], ankle_height: float,
                  within_m: float = 0.03, slide_m: float = 0.02) -> FeetOnFloor:
    """The measures of the module docstring; ``phases``: the person's stance phases (track frames)."""
    names = motion.rig.names
    pos = joint_positions(motion)
    ankles = pos[:, [names.index("LeftFoot"), names.index("RightFoot")]]  # (T, F, 3)
    where = motion_frames(track, motion)
    heights, slides = [], []
    for p in phases:
        rows = where[p.start:p.stop]
        rows = rows[rows >= 0]
        if len(rows) == 0:
            continue
        seg = ankles[rows, p.foot]
        heights.append(seg[:, 1])
        slides.append(slide(seg))
    h = np.concatenate(heights) if heights else np.zeros(0)
    c = np.abs(h - ankle_height)
    s = np.array(slides)
    nan = float("nan")
    lengths = np.stack([np.linalg.norm(pos[:, j] - pos[:, q], axis=1) for j, q in enumerate(motion.rig.parents)
                        if q >= 0], axis=1)
    cv = float((lengths.std(0) / np.maximum(lengths.mean(0), 1e-9)).max())
    step = np.linalg.norm(np.diff(pos, axis=0), axis=-1)
    accel = np.linalg.norm(np.diff(pos, 2, axis=0), axis=-1)
    depth = ankle_height - ankles[..., 1].min(axis=1)  # (T,) how far the lower ankle is below standing
    return FeetOnFloor(
        int(track.track_id), len(h), len(s),
        float(np.median(h)) if len(h) else nan, float(np.percentile(h, 95)) if len(h) else nan,
        float(np.median(c)) if len(c) else nan, float(np.percentile(c, 95)) if len(c) else nan,
        float(np.mean(c <= within_m)) if len(c) else nan,
        float(np.median(s)) if len(s) else nan, float(s.max()) if len(s) else nan,
        float(np.mean(s < slide_m)) if len(s) else nan,
        int(sum(b - a for a, b in (h_["bvh_frames"] for h_ in motion.report.get("held_pose", [])))), cv,
        float(step.max()) if step.size else nan, float(np.percentile(accel, 99)) if accel.size else nan,
        int((depth > within_m).sum()), float(max(depth.max(initial=0.0), 0.0)))
