"""Legs that follow the physical legs: undo the network's left / right label swaps of the feet, checked against the trunk.

Side views often name the *front* foot "left", so the labels swap when the feet
pass (:func:`posetracker.analysis.foot_contact.repair_swaps` finds where: one label
stops standing where the other goes on). The 3-D exports need each leg to be one
physical leg throughout, so :func:`repair_legs` exchanges the whole legs (hip,
knee, ankle and the foot joints) after each swap.

Steps in place look like swaps to the feet alone (a dancer shifting her weight:
7 found on the SLEAP dancer, none of them real). The trunk tells them apart where
the person faces the camera: the left hip lies on the same side of the body as
the left shoulder in the image. So each swap the feet found is kept only if the
trunk does not speak against it: over the frames it governs (up to the next
swap), among the frames where both the hips and the shoulders are at least
``min_width`` torso lengths apart in the image (a side view, where they overlap,
says nothing), the hips must be crossed against the shoulders *without* the swap
in at least half. A swap in a side view is kept as the feet found it. A swap found within
``min_edge_s`` of the end of the track is not undone: the stance that would show
it is cut off there (a shuffling walk's last step in motion capture read as a
swap 6 frames before the end). Near the start it is kept: which leg the track
first calls "left" is arbitrary, and dropping that swap would exchange every
later frame instead.

Shapes: T = frames of a track, K = joints, S = swaps.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from posetracker.analysis.foot_contact import FOOT_JOINTS, LEG_JOINTS, ContactSettings, GaitError, foot_contacts
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import PersonTrack, frame_time

#: hips and shoulders this many torso lengths apart in the image make a frame's trunk informative
MIN_WIDTH = 0.25
#: informative frames a swap's span needs before the trunk can veto it
MIN_INFORMATIVE = 2
#: seconds of track a swap needs after it
MIN_EDGE_S = 0.25


def leg_pairs(spec: SkeletonSpec) -> list[tuple[int, int]]:
    """(left, right) joint index pairs of the legs and feet the skeleton has."""
    pairs = []
    for name in LEG_JOINTS + FOOT_JOINTS[1:]:
        left, right = name.format(s="left"), name.format(s="right")
        if left in spec.joint_names and right in spec.joint_names:
            pairs.append((spec.index(left), spec.index(right)))
    return pairs


def swap_legs(track: PersonTrack, spec: SkeletonSpec, swaps: np.ndarray) -> PersonTrack:
    """``track`` with the left and right legs exchanged in the frames after an odd number of ``swaps`` (S,) indices."""
    if len(swaps) == 0:
        return track
    swapped = np.zeros(track.num_frames, int)
    for s in np.asarray(swaps, int):
        swapped[s:] += 1
    rows = swapped % 2 == 1
    kp, conf, world = track.keypoints.copy(), track.confidence.copy(), track.world.copy()
    for left, right in leg_pairs(spec):
        for arr in (kp, conf, world):
            arr[rows, left], arr[rows, right] = arr[rows, right].copy(), arr[rows, left].copy()
    return replace(track, keypoints=kp, confidence=conf, world=world)


def trunk_crossed(track: PersonTrack, spec: SkeletonSpec, min_width: float = MIN_WIDTH
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per frame, from the image x of hips and shoulders as named: (informative (T,) bool, crossed (T,) bool).

    informative: both pairs known and each at least ``min_width`` torso lengths (mid-shoulder to mid-hip) apart
    in x; crossed: the left hip on the other side than the left shoulder. Skeletons without hips and shoulders:
    never informative."""
    names = ("left_hip", "right_hip", "left_shoulder", "right_shoulder")
    t = track.num_frames
    if not set(names) <= set(spec.joint_names):
        return np.zeros(t, bool), np.zeros(t, bool)
    lh, rh, ls, rs = (track.keypoints[:, spec.index(n), :2] for n in names)  # (T, 2) each
    torso = np.linalg.norm((ls + rs) / 2 - (lh + rh) / 2, axis=-1)
    hip_dx, sh_dx = lh[:, 0] - rh[:, 0], ls[:, 0] - rs[:, 0]
    with np.errstate(invalid="ignore"):
        informative = (np.abs(hip_dx) >= min_width * torso) & (np.abs(sh_dx) >= min_width * torso) & (torso > 0)
    informative &= np.isfinite(hip_dx) & np.isfinite(sh_dx) & np.isfinite(torso)
    crossed = informative & (np.sign(hip_dx) != np.sign(sh_dx))
    return informative, crossed


def trunk_checked(swaps: np.ndarray, informative: np.ndarray, crossed: np.ndarray,
                  min_informative: int = MIN_INFORMATIVE) -> np.ndarray:
    """The swaps (S,) the trunk does not speak against (module docstring), in order. informative, crossed: (T,)
    as named (:func:`trunk_crossed`); each swap governs the frames up to the next swap found."""
    kept: list[int] = []
    ends = list(np.asarray(swaps, int)[1:]) + [len(crossed)]
    for start, end in zip(np.asarray(swaps, int), ends):
        flipped = len(kept) % 2 == 1  # the legs already exchanged here by the swaps kept
        span = informative[start:end]
        if span.sum() >= min_informative:
            crossed_without = crossed[start:end][span] != flipped  # as the kept swaps leave them
            if crossed_without.mean() < 0.5:  # exchanging the legs here would cross the hips: a step, not a swap
                continue
        kept.append(int(start))
    return np.asarray(kept, np.int64)


def repair_legs(tracks: dict[int, PersonTrack], spec: SkeletonSpec, image_size: tuple[int, int] = (0, 0),
                fps: float = 30.0, settings: ContactSettings | None = None, min_edge_s: float = MIN_EDGE_S
                ) -> tuple[dict[int, PersonTrack], dict[int, np.ndarray]]:
    """Every track with its legs exchanged after each left-right label swap of the feet that
    :func:`~posetracker.analysis.foot_contact.repair_swaps` finds and the trunk does not contradict (module
    docstring; for the 3-D exports: one BVH leg, one set of TRC markers per physical leg). Returns
    ({id: track}, {id: (S,) track indices of the swaps undone}); a track whose feet give no contacts (no legs
    seen, too short) is returned as it is, with no swaps."""
    out: dict[int, PersonTrack] = {}
    swaps: dict[int, np.ndarray] = {}
    for tid, track in tracks.items():
        try:
            found = foot_contacts(track, spec, settings, image_size, fps).swaps
        except GaitError:
            found = np.zeros(0, np.int64)
        edge = int(np.ceil(min_edge_s / frame_time(track.times, fps)))
        found = found[found <= track.num_frames - edge]
        kept = trunk_checked(found, *trunk_crossed(track, spec)) if len(found) else found
        out[tid], swaps[tid] = swap_legs(track, spec, kept), kept
    return out, swaps


__all__ = ["leg_pairs", "repair_legs", "swap_legs", "trunk_checked", "trunk_crossed"]
