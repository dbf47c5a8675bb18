"""Whole-body left/right repair for people who turn their back to the camera (offline, whole tracks).

A bottom-up network learnt left and right mostly from people facing the camera. When a
person turns away it often keeps labelling the joint on the image's right as "left"
(shoulders, hips, arms and legs together), and it may slide back and forth between the
two readings for the rest of the turn. The per-frame check of :mod:`.mirror` cannot see
this: the labels slide through each other over a few frames (nothing jumps between two
frames) and every pair moves at once.

What tells a slide from a real turn is the 3-D body: a real turn rotates the line from
the right to the left shoulder (and hip) about the vertical, so where the two shoulders
pass each other in the image one stands in front of the other and the line keeps its
length; a slide of labels collapses it to a point. So, per track:

1. ``v(t)``: the sum of the left-minus-right vectors of the shoulders and of the hips,
   camera space, in the x-z plane (m; the image's horizontal and the depth). Its angle
   ``yaw(t) = atan2(v_z, v_x)`` is 0 for a person facing the camera (their left on the
   image's right) and 180 degrees for one seen from behind, read as labelled.
2. A frame is *collapsed* where ``|v|`` is below ``min_width`` of the track's median torso
   length (or one of the four joints is not seen): its yaw says nothing.
3. Between two readable frames in a row (adjacent, or with collapsed ones between them,
   at most ``max_gap_s`` apart), the labels are taken to have swapped when the yaw turned
   more than ``135`` degrees: the body turns continuously, so the smaller of the two turns
   (as labelled, or as labelled plus 180) is the one taken. Each such swap toggles the
   state from there on (frames in the swapped state have their labels exchanged back:
   ``motion.sides.facing_sides``); unreadable frames between two readable
   ones take the nearer one's state. A turn of 90-135 degrees could be
   either (a back-facing person's depth is read poorly), so it ends the stretch: the next
   one starts on the network's labels again, and no swap is carried through it.
4. Which state a stretch starts in: where the repair found swaps in it, the faces decide:
   the frames the result shows facing the camera must have more of the face seen (the
   nose and eyes' mean confidence, by at least ``min_face_margin``) than the frames it
   shows from behind; with the opposite the stretch's states are inverted (the network
   read its start the wrong way round); where the faces cannot tell (too few frames on
   either side, or too small a difference: a track that went over to another person
   makes such a stretch) the stretch is left as the network read it. Without swaps
   nothing changes (the face alone is not trusted to mirror anyone).

The states (:func:`repair_states`) are applied pair by pair where left and right are decided,
``motion.sides.facing_sides``: the head and shoulders follow them, each other pair its parent pair.
Only for the offline pipeline: a swap is known once the turn is over. Shapes: T frames
of one track, K joints.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.skeletons import SkeletonSpec

FACE = ("nose", "left_eye", "right_eye")
TRUNK = (("left_shoulder", "right_shoulder"), ("left_hip", "right_hip"))


@dataclass(frozen=True)
class FacingSettings:
    """min_width: a trunk line shorter than this fraction of the track's median torso is collapsed;
    max_gap_s: collapsed stretches longer than this are not bridged (no swap decided across them);
    min_confidence: joints below it are not seen; min_face_frames: frames needed on each side
    (facing the camera, from behind) for the face to pick the start state; min_face_margin: the
    difference of the face's mean confidence between the two sides it needs to decide."""

    min_width: float = 0.5
    max_gap_s: float = 1.0
    min_confidence: float = 0.3
    min_face_frames: int = 5
    min_face_margin: float = 0.05

    def check(self) -> None:
        if not 0.0 < self.min_width < 1.0:
            raise ValueError(f"min_width must be in (0, 1), got {self.min_width}")
        if not self.max_gap_s > 0:
            raise ValueError(f"max_gap_s must be positive, got {self.max_gap_s}")


def applies(spec: SkeletonSpec) -> bool:
    """Whether the skeleton has the joints the repair reads (shoulders, hips, nose, eyes)."""
    names = set(spec.joint_names)
    return all(n in names for pair in TRUNK for n in pair) and all(n in names for n in FACE)


def trunk_yaw(world: np.ndarray, ok: np.ndarray, spec: SkeletonSpec,
              min_width: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """world (T, K, 3) m camera space, ok (T, K) bool -> (yaw (T,) degrees as labelled, readable (T,) bool).
    Readable: all four trunk joints seen and ``|v|`` at least ``min_width`` of the track's median torso
    (mid-hips to mid-shoulders, 3-D; facing the camera ``|v|`` is about 1.3 torsos)."""
    j = spec.index
    v = np.zeros((len(world), 2))
    seen = np.ones(len(world), bool)
    mids = []
    for left, right in TRUNK:
        d = world[:, j(left)] - world[:, j(right)]
        v += d[:, [0, 2]]
        seen &= ok[:, j(left)] & ok[:, j(right)] & np.isfinite(d).all(-1)
        mids.append(0.5 * (world[:, j(left)] + world[:, j(right)]))
    if not seen.any():
        return np.full(len(world), np.nan), seen
    torso = float(np.median(np.linalg.norm(mids[0][seen] - mids[1][seen], axis=-1)))
    width = np.hypot(v[:, 0], v[:, 1])
    readable = seen & (width >= min_width * torso)
    return np.where(seen, np.degrees(np.arctan2(v[:, 1], v[:, 0])), np.nan), readable


def _turn(a: float, b: float) -> float:
    """Smallest absolute angle (degrees) from a to b."""
    return abs((b - a + 180.0) % 360.0 - 180.0)


def swap_states(yaw: np.ndarray, readable: np.ndarray, times: np.ndarray, max_gap_s: float = 1.0,
                clean_deg: float = 135.0, unsure_deg: float = 90.0) -> tuple[np.ndarray, np.ndarray]:
    """Step 3 -> (state (T,) bool: labels exchanged relative to the stretch's start, stretch (T,) int64).
    yaw: (T,) degrees; readable: (T,) bool; times: (T,) seconds. A turn of more than ``clean_deg`` between
    readable frames in a row toggles the state; one between ``unsure_deg`` and ``clean_deg`` could be either
    (a slide of labels or a quick real turn read through noisy depth), so a new stretch starts there, back
    on the network's labels. A gap longer than ``max_gap_s`` starts a new stretch as well."""
    state = np.zeros(len(yaw), bool)
    stretch = np.zeros(len(yaw), np.int64)
    idx = np.flatnonzero(readable)
    flipped, k = False, 0
    marks = [(0, False, 0)]  # (first frame, state, stretch) wherever either changes
    for a, b in zip(idx[:-1], idx[1:]):
        turn = _turn(yaw[a], yaw[b])
        if times[b] - times[a] > max_gap_s or unsure_deg < turn <= clean_deg:
            flipped, k = False, k + 1
        elif turn > clean_deg:
            flipped = not flipped
        if (flipped, k) != marks[-1][1:]:
            marks.append(((a + b + 1) // 2, flipped, k))  # unreadable frames between: each side's up to halfway
    for (start, flip, kk), (end, _, _) in zip(marks, marks[1:] + [(len(yaw), False, 0)]):
        state[start:end], stretch[start:end] = flip, kk
    return state, stretch


def facing_camera(yaw: np.ndarray, state: np.ndarray) -> np.ndarray:
    """(T,) bool: the body faces the camera once the states' swaps are applied (|corrected yaw| < 90)."""
    corrected = yaw + np.where(state, 180.0, 0.0)
    return np.abs((corrected + 180.0) % 360.0 - 180.0) < 90.0


def repair_states(world: np.ndarray, confidence: np.ndarray, times: np.ndarray, spec: SkeletonSpec,
                  settings: FacingSettings | None = None) -> np.ndarray:
    """(T,) bool: the frames of one track whose mirror pairs should be exchanged (steps 1-4).
    world: (T, K, 3) m; confidence: (T, K); times: (T,) s."""
    s = settings or FacingSettings()
    s.check()
    ok = confidence >= s.min_confidence
    yaw, readable = trunk_yaw(world, ok, spec, s.min_width)
    state, stretch = swap_states(yaw, readable, times, s.max_gap_s)
    face = confidence[:, [spec.index(n) for n in FACE]].mean(axis=1)
    for k in np.unique(stretch[state]):  # step 4, per stretch with swaps
        mine = stretch == k
        front = facing_camera(yaw, state) & readable & mine
        back = ~facing_camera(yaw, state) & readable & mine
        seen = front.sum() >= s.min_face_frames and back.sum() >= s.min_face_frames
        margin = face[front].mean() - face[back].mean() if seen else 0.0
        if margin < -s.min_face_margin:  # the faces are seen in what the result shows from behind: inverted
            state[mine] = ~state[mine]
        elif margin <= s.min_face_margin:  # the faces cannot tell (or the track changed person): leave it
            state[mine] = False
    return state


__all__ = ["FacingSettings", "applies", "facing_camera", "repair_states", "swap_states", "trunk_yaw"]
