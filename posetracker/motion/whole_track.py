"""Offline, with the whole clip at hand: every track's motion from its tracked readings, in one place.

``TrackingSession._run_offline`` hands over the tracked frames (ids backfilled); :func:`whole_track_motion`
then, in this order:

1. joins the fragments of one track: a known number of animals (``config.people.known_count``:
   ``tracking.known_count.join_fragments``), else people hidden and back elsewhere (``tracking.relink``);
2. exchanges back left and right where a person seen from behind slid to the other side, pair by pair as
   the facing decides (``config.motion.fix_facing``: ``motion.sides.facing_sides``), then each wrist and ankle pair
   read on each other's limb hung back from its elbows / knees (``motion.limb_pairs``), and where a side view handed a
   knee and ankle to the other leg
   (``config.motion.fix_legs``: ``tracking.near_leg``);
3. solves each track's motion over the whole clip (``config.motion.smoothing``: ``motion.solve``);
4. one leg each (``config.motion.fix_legs``): where the feet's left / right labels swap (found on the solved motion),
   the legs exchanged back in the readings and solved again, so the solve never smooths across a swap
   (``motion.sides``);
5. one length per bone and track (``config.motion.rigid_bones``: ``tracking.bones.rigid_tracks``), a bone read much
   shorter than it is given its length in depth, its joint kept on its camera ray (``tracking.ray_bones``).

Frames: T tracked PoseFrames in order (keypoints (P, K, 3) x, y px and depth m, confidence (P, K), world
(P, K, 3) m or None).
"""

from __future__ import annotations

from typing import Any

from posetracker.motion.limb_pairs import limbs_from_parents
from posetracker.motion.sides import exchange_legs, facing_sides, feet_swaps
from posetracker.motion.solve import solve_tracks
from posetracker.session_config import SessionConfig
from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.bones import rigid_tracks
from posetracker.tracking.known_count import join_fragments
from posetracker.tracking.near_leg import repair_near_leg
from posetracker.tracking.relink import relink_fragments
from posetracker.types import PoseFrame


def whole_track_motion(tracked: list[PoseFrame], spec: SkeletonSpec, config: SessionConfig, fps: float
                       ) -> tuple[list[PoseFrame], dict[str, Any]]:
    """The tracked frames -> (each track's motion, steps 1-5 of the module docstring; the metadata entries of
    what the steps changed: ``known_count``, ``relinked``, ``facing_repairs``, ``limb_repairs``, ``leg_repairs``,
    ``feet_swaps``,
    each present only where it is not empty, keyed by track id as text)."""
    report: dict[str, Any] = {}
    if config.people.known_count:  # a known number of animals: fragments of one animal's track share its id
        tracked, joined = join_fragments(tracked, config.people.known_count, spec.root)
        if joined:
            report["known_count"] = {"animals": config.people.known_count, **joined}
    else:  # fragments of one person's track (hidden, then back elsewhere) joined over the whole clip
        tracked, relinked = relink_fragments(tracked, spec)
        report["relinked"] = {str(k): int(v) for k, v in relinked["joined"].items()}
    if config.motion.fix_facing:  # a person seen from behind: labels that slid to the other side, exchanged back
        tracked, report["facing_repairs"] = facing_sides(tracked, spec)
        tracked, report["limb_repairs"] = limbs_from_parents(tracked, spec)
    if config.motion.fix_legs:  # a side view: the knee and ankle labels handed over to the other leg, exchanged back
        tracked, report["leg_repairs"] = repair_near_leg(tracked, spec)
    read = tracked
    if config.motion.smoothing:  # the motion solve: each track fitted over the whole clip, robust to wrong readings
        tracked = solve_tracks(read)
    if config.motion.fix_legs:  # one leg each (step 4)
        report["feet_swaps"] = swaps = feet_swaps(tracked, spec, fps)
        if swaps:
            tracked = exchange_legs(read, spec, swaps)
            tracked = solve_tracks(tracked) if config.motion.smoothing else tracked
    if config.motion.rigid_bones:
        tracked = rigid_tracks(tracked, spec, on_rays=True)
    return tracked, {k: {str(t): v for t, v in entry.items()} for k, entry in report.items() if entry}


__all__ = ["whole_track_motion"]
