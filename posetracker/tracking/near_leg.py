"""Side-view leg repair: the leg on the camera's side is the near one (offline, whole tracks).

In a side view (the clinical gait view) the bottom-up network and the precision stage
read which leg is which from appearance, and near mid-stance, where the two legs
overlap, they can hand the labels over: the knee and ankle called "left" move onto the
right leg and stay there. Nothing jumps between two frames (the labels slide over with
the legs), so :mod:`.mirror` does not see it, and the trunk is read right, so
:mod:`.facing` does not either.

Depth does: seen from the side, one hip and one shoulder stand nearer the camera, and
so does the leg below them, whatever the stride (the legs swing in their own planes, a
hip width apart). Per track, camera-space metres (x right, z away):

1. *Side view* per frame: the body axis ``u`` = the unit vector, in the x-z plane, of
   (left hip - right hip) + (left shoulder - right shoulder). A side view where that sum
   is at least ``min_trunk_m`` long and ``u`` is turned at least ``min_turn_deg`` from
   the image plane towards the depth; its sign in z says which side is near. Facing the
   camera, or three-quarters (a runner seen so has his front foot much nearer: the
   stride, not the side, sets the legs' depths), the frame says nothing.
2. *Segments*: runs of frames with the ankles apart in the image (at least ``min_apart``
   of the track's median torso length) and in one x order. Labels are handed over where
   the legs pass each other: the hand-over changes the ankles' x order, or the labels
   bounce back where the ankles come close; so within a run the labels are all right
   or all exchanged. The frames between two runs go to the nearer one.
3. *Votes*: a frame of a side view votes where the legs stand apart in the image (where
   they overlap, the depth read at each label is the other leg's as often as not) and
   the mean left-minus-right depth of the knees and ankles is at least ``min_leg_m``
   from zero. It votes "exchanged" where the knees' and the ankles' depth differences
   both put the leg called left on the other side from the trunk's left, "as labelled"
   otherwise: a knee and an ankle read on different legs (seen on a tai chi lunge) are
   not a whole leg handed over.
4. A segment whose "exchanged" votes number at least ``min_votes`` and more than
   ``majority`` x its other votes has its knee and ankle pairs exchanged (keypoints,
   confidences, world coordinates) in all its frames.

Crossed legs (a cross-step, sitting cross-legged) put a foot on the other side for
real; they rarely last a whole segment with the legs apart, and a segment needs a clear
majority. Only offline: a segment's votes come from all its frames.
Shapes: T frames of one track, K joints.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.mirror import permute_tracks
from posetracker.types import PoseFrame

TRUNK = (("left_hip", "right_hip"), ("left_shoulder", "right_shoulder"))
LEG = (("left_knee", "right_knee"), ("left_ankle", "right_ankle"))


@dataclass(frozen=True)
class NearLegSettings:
    """See the module docstring (steps 1-4); min_confidence: joints below it are not seen."""

    min_trunk_m: float = 0.1
    min_turn_deg: float = 60.0
    min_leg_m: float = 0.04
    min_apart: float = 0.3
    min_votes: int = 2
    majority: float = 2.0
    min_confidence: float = 0.3

    def check(self) -> None:
        if self.min_trunk_m <= 0 or self.min_leg_m <= 0 or self.min_apart < 0:
            raise ValueError("min_trunk_m and min_leg_m must be positive, min_apart not negative")
        if not 0.0 <= self.min_turn_deg < 90.0:
            raise ValueError(f"min_turn_deg must be in [0, 90), got {self.min_turn_deg}")
        if self.min_votes < 1 or self.majority < 1:
            raise ValueError(f"min_votes and majority must be at least 1, got {self.min_votes}, {self.majority}")


def applies(spec: SkeletonSpec) -> bool:
    """Whether the skeleton has the joints the repair reads (hips, shoulders, knees, ankles)."""
    names = set(spec.joint_names)
    return all(n in names for pair in TRUNK + LEG for n in pair)


def _diff(a: np.ndarray, ok: np.ndarray, spec: SkeletonSpec, left: str, right: str) -> np.ndarray:
    """a (T, K, ...) -> (T, ...) left minus right, nan where either is not seen (ok (T, K))."""
    i, j = spec.index(left), spec.index(right)
    seen = ok[:, i] & ok[:, j]
    d = a[:, i] - a[:, j]
    return np.where(seen.reshape(seen.shape + (1,) * (d.ndim - 1)), d, np.nan)


def segments(xy: np.ndarray, ok: np.ndarray, spec: SkeletonSpec, min_apart: float = 0.3) -> np.ndarray:
    """Step 2 -> (T,) int64 segment number. xy (T, K, 2) px, ok (T, K). A segment is a run of frames with the
    ankles apart in the image (at least ``min_apart`` of the track's median torso length) and in one x order;
    the frames between two runs (ankles close or not seen) go to the nearer run, the first half of them to the
    run before. A hand-over of labels happens where the legs pass each other: it changes the x order, or the
    labels bounce back where the ankles come close."""
    dx = _diff(xy[..., 0], ok, spec, *LEG[1])
    with np.errstate(invalid="ignore"):
        run = apart(xy, ok, spec, min_apart) & (dx != 0)
    seg = np.zeros(len(xy), np.int64)
    key = np.flatnonzero(run)
    if not len(key):
        return seg
    k, prev = 0, key[0]
    for t in key[1:]:
        if t != prev + 1 or np.sign(dx[t]) != np.sign(dx[prev]):
            k += 1
            seg[prev + 1:t] = np.where(np.arange(prev + 1, t) < (prev + 1 + t) / 2, k - 1, k)
        seg[t] = k
        prev = t
    seg[key[-1] + 1:] = k
    return seg


def torso_px(xy: np.ndarray, ok: np.ndarray, spec: SkeletonSpec) -> float:
    """The track's median torso length in the image (mid-hips to mid-shoulders, px; nan if never seen)."""
    mid = lambda a, b: 0.5 * (xy[:, spec.index(a)] + xy[:, spec.index(b)])  # noqa: E731
    length = np.linalg.norm(mid(*TRUNK[0]) - mid(*TRUNK[1]), axis=-1)
    length = length[ok[:, [spec.index(n) for p in TRUNK for n in p]].all(-1)]
    return float(np.median(length)) if len(length) else float("nan")


def apart(xy: np.ndarray, ok: np.ndarray, spec: SkeletonSpec, min_apart: float) -> np.ndarray:
    """(T,) bool: the ankles seen and at least ``min_apart`` torso lengths apart in the image."""
    with np.errstate(invalid="ignore"):
        return np.linalg.norm(_diff(xy, ok, spec, *LEG[1]), axis=-1) >= min_apart * torso_px(xy, ok, spec)


def body_axis(world: np.ndarray, ok: np.ndarray, spec: SkeletonSpec, settings: NearLegSettings) -> np.ndarray:
    """Step 1 -> (T, 2) unit body axis (x, z) towards the body's left; nan where not readable.
    world (T, K, 3) m camera space, ok (T, K) bool."""
    v = sum(_diff(world[..., [0, 2]], ok, spec, *p) for p in TRUNK)
    length = np.linalg.norm(v, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = v / length[:, None]
        turned = np.abs(u[:, 1]) >= np.sin(np.radians(settings.min_turn_deg))
        return np.where(((length >= settings.min_trunk_m) & turned)[:, None], u, np.nan)


def votes(xy: np.ndarray, world: np.ndarray, ok: np.ndarray, spec: SkeletonSpec,
          settings: NearLegSettings) -> np.ndarray:
    """Step 3 -> (T,) int8: +1 the legs read exchanged, -1 as labelled, 0 no vote.
    xy (T, K, 2) px, world (T, K, 3) m camera space, ok (T, K) bool."""
    s = settings
    near = np.sign(body_axis(world, ok, spec, s)[:, 1])  # +1: the body's left is the far side; nan: no side view
    knees, ankles = (_diff(world[..., 2], ok, spec, *p) for p in LEG)  # (T,) m, left minus right depth
    with np.errstate(invalid="ignore"):
        voting = np.isfinite(near) & apart(xy, ok, spec, s.min_apart) & (np.abs(0.5 * (knees + ankles)) >= s.min_leg_m)
        whole = (np.sign(knees) != near) & (np.sign(ankles) != near)  # the whole leg, not a knee or an ankle alone
        return np.where(voting, np.where(whole, 1, -1), 0).astype(np.int8)


def repair_states(xy: np.ndarray, world: np.ndarray, confidence: np.ndarray, spec: SkeletonSpec,
                  settings: NearLegSettings | None = None) -> np.ndarray:
    """(T,) bool: the frames of one track whose knee and ankle pairs should be exchanged (steps 1-4).
    xy (T, K, 2) px, world (T, K, 3) m camera space, confidence (T, K)."""
    s = settings or NearLegSettings()
    s.check()
    ok = (confidence >= s.min_confidence) & np.isfinite(xy).all(-1) & np.isfinite(world).all(-1)
    seg, vote = segments(xy, ok, spec, s.min_apart), votes(xy, world, ok, spec, s)
    state = np.zeros(len(xy), bool)
    for k in np.unique(seg):
        mine = seg == k
        swapped, kept = int((vote[mine] > 0).sum()), int((vote[mine] < 0).sum())
        if swapped >= s.min_votes and swapped > s.majority * kept:
            state[mine] = True
    return state


def repair_near_leg(frames: list[PoseFrame], spec: SkeletonSpec,
                    settings: NearLegSettings | None = None) -> tuple[list[PoseFrame], dict[int, int]]:
    """Exchange the knee and ankle pairs in the frames where a track's legs were read the wrong way round
    (module docstring). frames: T tracked PoseFrames with world coordinates (people with id -1, or frames
    without world, pass through). Returns new frames and {track id: frames exchanged} for tracks with any."""
    if not frames or not applies(spec):
        return list(frames), {}
    perm = np.arange(spec.num_joints)
    for a, b in LEG:
        perm[spec.index(a)], perm[spec.index(b)] = spec.index(b), spec.index(a)
    return permute_tracks(frames, perm, lambda tr: repair_states(tr.xy, tr.world, tr.confidence, spec, settings))


__all__ = ["LEG", "NearLegSettings", "apart", "applies", "repair_near_leg", "repair_states", "segments", "torso_px",
           "votes", "body_axis"]
