"""Left and right decided once: one physical leg per leg label in the per-track motion every output reads.

Side views often name the *front* foot "left", so the labels swap when the feet pass
(:func:`posetracker.analysis.foot_contact.repair_swaps` finds where: one label stops standing
where the other goes on, at once). :func:`one_leg_each` exchanges the legs (knee, ankle and the
foot joints, and the hips unless they already lie as the shoulders do in 3-D: :func:`exchange_legs`)
of the track's frames from each swap on, in the PoseFrames themselves, so the gait table, the angles, the CSVs and the 3-D exports all read the
same legs; none of them repairs after the fact. The offline session runs it between two motion
solves (``TrackingSession._run_offline``: swaps found on the solved motion, the legs exchanged in
the readings, solved again, so the solve never smooths across a label swap); a live result gets
it once, when it is finished (``motion.finish``).

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

Shapes: T = frames of a track (a track spans every frame of the sequence, absent ones nan:
``posetracker.tracks.person_tracks``), K = joints, S = swaps; P = people of a frame.
"""

from __future__ import annotations

import numpy as np

from posetracker.analysis.foot_contact import FOOT_JOINTS, LEG_JOINTS, ContactSettings, GaitError, foot_contacts
from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.mirror import permute_joints
from posetracker.tracks import PersonTrack, TrackError, frame_time, person_tracks
from posetracker.types import PoseFrame, PoseSequence

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


def track_swaps(track: PersonTrack, spec: SkeletonSpec, image_size: tuple[int, int] = (0, 0), fps: float = 30.0,
                settings: ContactSettings | None = None, min_edge_s: float = MIN_EDGE_S) -> np.ndarray:
    """(S,) int64 track indices from which one track's legs are to be exchanged: the feet's label swaps
    (:func:`~posetracker.analysis.foot_contact.foot_contacts`, with their ``repair_swaps``) less those within
    ``min_edge_s`` of the end and those the trunk speaks against (module docstring). A track whose feet give no
    contacts (no legs seen, too short, a skeleton without legs) has none. fps: only where the timestamps cannot
    give the frame time."""
    try:
        found = foot_contacts(track, spec, settings, image_size, fps).swaps
    except GaitError:
        return np.zeros(0, np.int64)
    edge = int(np.ceil(min_edge_s / frame_time(track.times, fps)))
    found = found[found <= track.num_frames - edge]
    return trunk_checked(found, *trunk_crossed(track, spec)) if len(found) else found


def feet_swaps(frames: list[PoseFrame], spec: SkeletonSpec, fps: float = 30.0,
               settings: ContactSettings | None = None) -> dict[int, list[int]]:
    """{track id: source frame indices (``PoseFrame.index``) from which its legs are to be exchanged}
    (:func:`track_swaps` per track; tracks with none are left out). frames: T tracked PoseFrames, in order
    (people with id -1 are not read)."""
    if not frames or not leg_pairs(spec):
        return {}
    try:
        tracks = person_tracks(PoseSequence(list(frames), fps if fps > 0 else 30.0, spec))
    except TrackError:  # no tracked person
        return {}
    out: dict[int, list[int]] = {}
    for tid, track in tracks.items():
        swaps = track_swaps(track, spec, frames[0].image_size, fps)
        if len(swaps):
            out[tid] = [int(track.frames[i]) for i in swaps]
    return out


def _hips_agree(frames: list[PoseFrame], spec: SkeletonSpec, tid: int, span: range) -> bool:
    """Over the frames ``span`` the track's hips lie as its shoulders do in 3-D (the left hip on the left
    shoulder's side: the dot product of the hip and shoulder lines, left minus right, positive in most frames
    with world coordinates), so its feet's labels swapped without the hips'. False without the joints or world."""
    names = ("left_hip", "right_hip", "left_shoulder", "right_shoulder")
    if not all(n in spec.joint_names for n in names):
        return False
    lh, rh, ls, rs = (spec.index(n) for n in names)
    votes = []
    for t in span:
        f = frames[t]
        hit = np.flatnonzero(f.track_ids == tid)
        if f.world is None or hit.size == 0:
            continue
        w = f.world[int(hit[0])]
        d = float(np.dot(w[lh] - w[rh], w[ls] - w[rs]))
        if np.isfinite(d):
            votes.append(d > 0)
    return bool(votes) and float(np.mean(votes)) > 0.5


def exchange_legs(frames: list[PoseFrame], spec: SkeletonSpec, swaps: dict[int, list[int]]) -> list[PoseFrame]:
    """``frames`` (T PoseFrames, in order) with each track's left and right legs (:func:`leg_pairs`: keypoints,
    confidence, world) exchanged in the frames after an odd number of its ``swaps`` ({track id: source frame
    indices}, :func:`feet_swaps`); new frames where changed, the input is not. Where, over such a stretch, the
    hips already lie as the shoulders do in 3-D (:func:`_hips_agree`: only the feet's labels swapped, as a side
    view names the front foot "left"), the hips stay and the knees, ankles and feet are exchanged: exchanging
    them would turn the pelvis by half a turn against the chest."""
    if not swaps:
        return list(frames)
    perm = np.arange(spec.num_joints)
    for left, right in leg_pairs(spec):
        perm[left], perm[right] = right, left
    below = perm.copy()  # the legs below the hips
    for name in ("left_hip", "right_hip"):
        if name in spec.joint_names:
            below[spec.index(name)] = spec.index(name)
    position = {int(f.index): t for t, f in enumerate(frames)}
    orders: dict[int, list[np.ndarray | None]] = {}  # track id -> per frame the joint order of its legs, or None
    for tid, indices in swaps.items():
        starts = sorted(position[int(i)] for i in indices) + [len(frames)]
        per_frame: list[np.ndarray | None] = [None] * len(frames)
        for k in range(0, len(starts) - 1, 2):  # after an odd number of swaps: [s1, s2), [s3, s4), ...
            span = range(starts[k], starts[k + 1])
            order = below if _hips_agree(frames, spec, int(tid), span) else perm
            for t in span:
                per_frame[t] = order
        orders[int(tid)] = per_frame
    out = list(frames)
    for t, f in enumerate(frames):
        rows = [(p, orders[int(tid)][t]) for p, tid in enumerate(f.track_ids)
                if int(tid) in orders and orders[int(tid)][t] is not None]
        if rows:
            order = np.tile(np.arange(f.num_joints), (f.num_people, 1))  # (P, K)
            for p, o in rows:
                order[p] = o
            out[t] = permute_joints(f, order)
    return out


def one_leg_each(frames: list[PoseFrame], spec: SkeletonSpec, fps: float = 30.0,
                 settings: ContactSettings | None = None) -> tuple[list[PoseFrame], dict[int, list[int]]]:
    """Each track's legs exchanged back from every left / right label swap of its feet that the trunk does not
    contradict (module docstring): (frames, {track id: source frame indices of the swaps undone}). frames: T
    tracked PoseFrames in order (keypoints (P, K, 3), confidence (P, K), world (P, K, 3) or None); the input
    is not changed. fps: only where the timestamps cannot give the frame time."""
    swaps = feet_swaps(frames, spec, fps, settings)
    return exchange_legs(frames, spec, swaps), swaps


__all__ = ["exchange_legs", "feet_swaps", "leg_pairs", "one_leg_each", "track_swaps", "trunk_checked",
           "trunk_crossed"]
