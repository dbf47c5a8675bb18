"""The live motion solve's hinges: knees and elbows that do not bend backwards or flip their bend between frames.

Live, each frame's 3-D comes from one camera's depth readings, and a knee or elbow read on the wrong side of
the line from hip to ankle (shoulder to wrist) in depth bends the limb backwards in the 3-D view and in a live
recording; read one way in one frame and the other in the next, its bend flips. The offline solve decides each
knee's side over the whole take (:func:`posetracker.motion.rotations.hinge_signs`). :class:`LiveHinges` is the
causal form, per track and limb (hip-knee-ankle, shoulder-elbow-wrist), one frame at a time, no look-ahead:

- the reading: the limb's hinge axis ``h``, unit ``(middle - parent) x (end - parent)``, and its bend weight
  ``b`` in [0, 1] (0 under 10 degrees of bend, 1 from 30: a straight limb's axis is unread), as
  ``export.bvh_solve`` reads them;
- the body's hinge axis ``ref``, as ``export.bvh_solve`` reads it: for a knee the hip line (right to left, made
  square to the trunk) swung from a hanging thigh onto the thigh; for an elbow the chest's rest elbow axis (the
  arm held sideways bends forwards) swung onto the upper arm. Its weight ``c`` in [0, 1]: the line's length
  against its usual length on the track (running mean), 0 under 0.25, 1 from 0.6 (a line seen end-on: its depth
  misread short, its direction noise); for an elbow also the upper arm below the shoulder and not across the
  chest (there the humerus' own turn, unseen, decides the axis);
- the mirror: the middle joint moved along its camera ray (its image position kept: only its depth changes)
  through the plane of the end-to-end line and ``ref`` (where ``c`` < 0.5: the side the limb had the frame before),
  so that the bend about that axis is reversed. Where the ray runs within 30 degrees of that plane (a leg seen
  from the side: the image itself shows which way it bends) it is not allowed: the image demands the bend;
- the choice: the reading or its mirror, each costing ``c * max(-axis.ref, 0)`` (a backward bend). The one that
  continues the axis of the frame before is kept unless the other's lower cost, summed over the last frames
  (leaky, ``EVIDENCE_KEEP`` a frame), outweighs the extra turn it makes (radians, times the lesser bend weight of
  the two frames). So a limb whose depth reading jumps to the other side keeps its side (no flip on a reading
  alone); the side changes at once where the limb is straight, or after a few frames of a clearly read body
  against it while bent; a new track's limb takes the cheaper at once.

So a knee read bent backwards comes out bent the body's way, and a bend does not flip between frames unless the
image demands it. Besides, a head turns at most ``MAX_HEAD_TURN_DEG`` from the shoulders about the trunk: ears
read further round only by their depths (one ear's depth on the wrong side of the other's) have their depths
exchanged, each moved along its ray, as ``export.bvh_solve`` weighs such ear lines out.

Only ``world`` (camera-space metres, the camera at the origin) and the keypoints' depth move; x, y never do.
Numbers: ``studies/live-smoothing.md``. Shapes: P people, K joints, M tracked people, L = 4 limbs (left knee,
right knee, left elbow, right elbow).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame

LIMBS = (("left_hip", "left_knee", "left_ankle"), ("right_hip", "right_knee", "right_ankle"),
         ("left_shoulder", "left_elbow", "left_wrist"), ("right_shoulder", "right_elbow", "right_wrist"))
BEND_LO, BEND_HI = math.radians(10.0), math.radians(30.0)  # a limb's axis is unread under, fully read from
#: the hip (shoulder) line against its usual length: unread under, fully read from (as ``export.bvh_solve``)
LINE_LO, LINE_HI = 0.25, 0.6
LINE_RATE = 0.02  # its usual length: a running mean, this share of each frame's length added
#: the mirror is allowed while the camera's ray is within 60 degrees of the knee's offset from the hip-ankle line
MIN_RAY_SHARE = 0.5
BLOCKED = 10.0  # the cost of a sign the image does not allow
EVIDENCE_KEEP = 0.8  # the share of a limb's evidence for its other side carried to the next frame
MAX_HEAD_TURN_DEG = 90.0  # ears read turned further round from the shoulders are mirrored in depth


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b over the last axis (3) of two arrays of one shape (np.cross costs ~10x as much on small arrays)."""
    return a[..., _NEXT] * b[..., _LAST] - a[..., _LAST] * b[..., _NEXT]


_NEXT, _LAST = np.array([1, 2, 0]), np.array([2, 0, 1])


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(-1)  # np.einsum costs ~5x as much on small arrays


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.sqrt(_dot(v, v))[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return v / np.where(n > 1e-12, n, np.nan)


def _smoothstep(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """0 under lo (and where nan), 1 from hi, smooth between."""
    s = np.clip((x - lo) / (hi - lo), 0.0, 1.0)
    return np.where(np.isnan(s), 0.0, s * s * (3 - 2 * s))


def _finite(x: np.ndarray, fill: float = 0.0) -> np.ndarray:
    return np.where(np.isnan(x), fill, x)  # nan -> fill (np.nan_to_num costs ~10x as much on small arrays)


def _swing(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """x (..., 3) turned by the least rotation taking unit a onto unit b (..., 3)."""
    v = _cross(a, b)
    k = 1.0 / np.maximum(1.0 + _dot(a, b), 1e-6)[..., None]
    return x + _cross(v, x) + k * _cross(v, _cross(v, x))


def _square(v: np.ndarray, up: np.ndarray) -> np.ndarray:
    return v - _dot(v, up)[..., None] * up


class _Joints:
    """Index arrays of a skeleton's limbs: parent, middle and end joints (L,) each; the elbows' side (L,): 0 for
    a knee, +1 / -1 for the left / right elbow."""

    def __init__(self, j: dict[str, int]):
        self.j = j
        self.parent, self.middle, self.end = (np.array([j[limb[i]] for limb in LIMBS]) for i in range(3))
        self.elbow = np.array([0.0, 0.0, 1.0, -1.0])

    @staticmethod
    def of(j: dict[str, int] | _Joints) -> _Joints:
        return j if isinstance(j, _Joints) else _Joints(j)


def body_axes(world: np.ndarray, j: dict[str, int] | _Joints) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """world (M, K, 3) -> (up (M, 3) unit: mid-hips to mid-shoulders; lines (M, 2, 3): the hip line and the shoulder
    line, right to left, made square to it; torso (M,) metres). j: joint indices by name."""
    j = _Joints.of(j).j
    ls, rs, lh, rh = (world[:, j[n]] for n in ("left_shoulder", "right_shoulder", "left_hip", "right_hip"))
    trunk = 0.5 * (ls + rs - lh - rh)
    up = _unit(trunk)
    return up, _square(np.stack([lh - rh, ls - rs], 1), up[:, None]), np.sqrt(_dot(trunk, trunk))


def hinge_references(world: np.ndarray, j: dict[str, int] | _Joints, typical: np.ndarray | None = None,
                     axes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The body's hinge axis of each limb and how well the frame reads it: world (M, K, 3) -> (ref (M, L, 3) unit,
    nan where unread; weight (M, L) in [0, 1]). A knee's comes from the hip line, an elbow's from the shoulder
    line; typical (M, 2) metres: the track's usual length of each (None or nan: half the torso); a line is read
    fully from LINE_HI of it, not at all under LINE_LO (seen end-on, its depth misread short); axes: ``body_axes``
    of ``world`` if already at hand. See the module docstring."""
    limbs = _Joints.of(j)
    up, lines, torso = body_axes(world, limbs) if axes is None else axes
    length = np.sqrt(_dot(lines, lines))  # (M, 2)
    usual = np.broadcast_to(0.5 * torso[:, None], length.shape) if typical is None else \
        np.where(np.isfinite(typical), typical, 0.5 * torso[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        seen = _smoothstep(length / usual, LINE_LO, LINE_HI)[:, [0, 0, 1, 1]]  # (M, L)
    side = _unit(lines)[:, [0, 0, 1, 1]]  # (M, L, 3)
    d1 = _unit(world[:, limbs.middle] - world[:, limbs.parent])  # (M, L, 3)
    sgn = limbs.elbow[None, :, None]
    knee = sgn == 0.0
    up_l = np.broadcast_to(up[:, None], d1.shape)
    rest = np.where(knee, -up_l, sgn * side)  # knee: a hanging thigh; elbow: the arm held sideways
    rest_axis = np.where(knee, side, -sgn * up_l)  # ... about the body's left; -up (left) / up (right) for an elbow
    ref = _unit(_swing(rest, d1, rest_axis))
    below = _smoothstep(-_dot(d1, up_l), 0.0, 0.3) * _smoothstep(1.0 + _dot(rest, d1), 0.2, 0.5)
    weight = seen * np.where(knee[..., 0], 1.0, below) * np.isfinite(ref).all(-1)
    return ref, weight


def limb_axes(world: np.ndarray, j: dict[str, int] | _Joints) -> tuple[np.ndarray, np.ndarray]:
    """Each limb's reading: world (M, K, 3) -> (normal (M, L, 3): (middle - parent) x (end - parent), its length the
    middle joint's offset from the end-to-end line times that line's length; bend weight (M, L) in [0, 1])."""
    limbs = _Joints.of(j)
    p, m, e = world[:, limbs.parent], world[:, limbs.middle], world[:, limbs.end]
    n0 = _cross(m - p, e - p)
    angle = np.arctan2(np.sqrt(_dot(n0, n0)), _dot(m - p, e - m))  # the bend: (m - p) x (e - m) = n0
    return n0, _smoothstep(angle, BEND_LO, BEND_HI)


def mirror_moves(world: np.ndarray, j: dict[str, int] | _Joints, target: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each limb mirrored about ``target`` (M, L, 3) unit: world (M, K, 3) -> (move (M, L) metres along the middle
    joint's ray (unit, from the camera) that reverses the limb's normal's component along ``target`` (the middle
    joint reflected, along its ray, through the plane of the end-to-end line and ``target``); the mirrored
    limb's normal (M, L, 3); allowed (M, L) bool: the ray within 60 degrees of that plane's normal)."""
    limbs = _Joints.of(j)
    p, m, e = world[:, limbs.parent], world[:, limbs.middle], world[:, limbs.end]
    span = e - p
    n0 = _cross(m - p, span)
    along = _cross(_unit(m), span)  # d(normal)/ds, s metres along the ray
    g = _dot(along, target)
    length = np.sqrt(_dot(span, span))
    allowed = np.isfinite(g) & (np.abs(g) >= MIN_RAY_SHARE * length) & (length > 1e-6)
    with np.errstate(invalid="ignore", divide="ignore"):
        move = np.where(allowed, -2.0 * _dot(n0, target) / np.where(allowed, g, 1.0), 0.0)
    return move, n0 + move[..., None] * along, allowed


@dataclasses.dataclass
class _Track:
    time: float
    axis: np.ndarray  # (L, 3) the last output's hinge axis (unit; nan none yet)
    bend: np.ndarray  # (L,) its bend weight
    evidence: np.ndarray  # (L,) how much the other side has been preferred lately (leaky sum)
    lines: np.ndarray  # (2,) the usual length of the hip and shoulder lines (m, running mean; nan none yet)


class LiveHinges:
    """Per track, knees and elbows kept bending the body's way, and heads turned at most ``MAX_HEAD_TURN_DEG``
    from the shoulders (module docstring). ``update`` takes a tracked PoseFrame with ``world`` and returns it
    with the mirrored joints' depth and world moved along their rays (people with id -1 pass through); a track
    unseen for ``drop_after`` seconds starts again. A skeleton without hips, knees, ankles, shoulders, elbows and
    wrists passes through unchanged."""

    def __init__(self, spec: SkeletonSpec, drop_after: float = 1.0):
        names = list(spec.joint_names)
        wanted = {n for limb in LIMBS for n in limb}
        self.applies = wanted <= set(names)
        self.j = {n: i for i, n in enumerate(names)}
        self.limbs = _Joints(self.j) if self.applies else None
        self.ears = all(n in self.j for n in ("left_ear", "right_ear"))
        self.drop_after = float(drop_after)
        self.reset()

    def reset(self) -> None:
        self._tracks: dict[int, _Track] = {}
        self._last_t = -np.inf

    def _state(self, tids: list[int], t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(axis (M, L, 3), bend (M, L), evidence (M, L), lines (M, 2)) of each track before this frame."""
        if t < self._last_t:  # a seek
            self._tracks.clear()
        self._last_t = t
        self._tracks = {i: s for i, s in self._tracks.items() if t - s.time <= self.drop_after}
        n = len(LIMBS)
        fresh = _Track(t, np.full((n, 3), np.nan), np.zeros(n), np.zeros(n), np.full(2, np.nan))
        states = [self._tracks.get(i, fresh) for i in tids]
        return (np.stack([s.axis for s in states]), np.stack([s.bend for s in states]),
                np.stack([s.evidence for s in states]), np.stack([s.lines for s in states]))

    def choose(self, hinge: np.ndarray, mirrored: np.ndarray, bend: np.ndarray, ref: np.ndarray, ref_weight: np.ndarray,
               allowed: np.ndarray, axis_before: np.ndarray, bend_before: np.ndarray, evidence: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Whether to mirror each limb this frame, (M, L) bool, and the evidence to carry (M, L).

        hinge, mirrored: (M, L, 3) unit axes of the reading and of its mirror. Each costs ``c * max(-axis.ref, 0)``
        (a backward bend; the mirror where not ``allowed``: BLOCKED). With an axis before, the one nearer it is
        kept unless the other's lower cost, summed over the last frames (leaky, EVIDENCE_KEEP a frame), outweighs
        the extra turn it makes (radians, times the lesser bend weight of the two frames): so the side changes at
        once where the limb is straight, after a few frames of a clearly read body against it while bent, and
        never on a reading alone. Without one, the cheaper."""
        cost_read = ref_weight * np.maximum(-_finite(_dot(hinge, ref)), 0.0)
        cost_mirror = ref_weight * np.maximum(-_finite(_dot(mirrored, ref)), 0.0) + np.where(allowed, 0.0, BLOCKED)
        turn_read = np.arccos(np.clip(_dot(hinge, axis_before), -1.0, 1.0))
        turn_mirror = np.arccos(np.clip(_dot(mirrored, axis_before), -1.0, 1.0))
        known = np.isfinite(turn_read) & np.isfinite(turn_mirror)
        keep_read = _finite(turn_read) <= _finite(turn_mirror)
        cost_keep = np.where(keep_read, cost_read, cost_mirror)
        cost_other = np.where(keep_read, cost_mirror, cost_read)
        evidence = EVIDENCE_KEEP * evidence + (cost_keep - cost_other)
        extra_turn = np.minimum(bend, bend_before) * np.abs(_finite(turn_mirror - turn_read))
        switch = known & (evidence > extra_turn)
        mirror = np.where(known, keep_read == switch, cost_mirror < cost_read) & allowed
        return mirror, np.where(known & ~switch, np.maximum(evidence, 0.0), 0.0)

    def update(self, frame: PoseFrame) -> PoseFrame:
        if not self.applies or frame.world is None or frame.num_people == 0:
            return frame
        seen: dict[int, int] = {}  # track id -> its first person (as the smoother takes them)
        for p, tid in enumerate(frame.track_ids.tolist()):
            if tid >= 0 and tid not in seen:
                seen[tid] = p
        if not seen:
            return frame
        t = float(frame.timestamp)
        tids, people = list(seen), np.array(list(seen.values()))
        world = frame.world[people].astype(np.float64)  # (M, K, 3)
        axis_before, bend_before, evidence, usual = self._state(tids, t)
        axes = body_axes(world, self.limbs)
        length = np.sqrt(_dot(axes[1], axes[1]))  # (M, 2) nan where a hip or shoulder is unread
        usual = np.where(np.isnan(usual), length, usual + LINE_RATE * (np.where(np.isnan(length), usual, length) - usual))
        ref, ref_weight = hinge_references(world, self.limbs, usual, axes)
        normal, bend = limb_axes(world, self.limbs)
        # mirrored about the body's axis where it is read, else about the side the limb had
        target = np.where(((ref_weight >= 0.5) | np.isnan(axis_before).any(-1))[..., None], ref, axis_before)
        move, normal_mirrored, allowed = mirror_moves(world, self.limbs, target)
        hinge, flipped = _unit(normal), _unit(normal_mirrored)
        mirrored, evidence = self.choose(hinge, flipped, bend, ref, ref_weight, allowed, axis_before, bend_before,
                                         evidence)
        axis = np.where(mirrored[..., None], flipped, hinge)
        axis = np.where(np.isnan(axis), axis_before, axis)
        for i, tid in enumerate(tids):
            self._tracks[tid] = _Track(t, axis[i], bend[i], evidence[i], usual[i])
        heads = self._head_moves(world) if self.ears else None
        if not mirrored.any() and (heads is None or not heads.any()):
            return frame
        out_world = frame.world.copy()
        kp = frame.keypoints.copy()
        for i, limb in zip(*np.nonzero(mirrored)):
            k = self.j[LIMBS[limb][1]]
            step = move[i, limb] * _unit(world[i, k])
            out_world[people[i], k] = world[i, k] + step
            kp[people[i], k, 2] += step[2]
        if heads is not None:
            for i in np.flatnonzero(heads.any(-1)):
                for e, k in enumerate((self.j["left_ear"], self.j["right_ear"])):
                    step = heads[i, e] * _unit(world[i, k])
                    out_world[people[i], k] = world[i, k] + step
                    kp[people[i], k, 2] += step[2]
        return dataclasses.replace(frame, keypoints=kp.astype(frame.keypoints.dtype),
                                   world=out_world.astype(frame.world.dtype))

    def _head_moves(self, world: np.ndarray) -> np.ndarray:
        """(M, 2) metres each ear moves along its ray (0: none): where the ear line is turned more than
        MAX_HEAD_TURN_DEG from the shoulders' about the trunk and the ears' depths mirrored about their mean
        turn it less far (a misread depth order, not the image's), they are mirrored."""
        j = self.j
        up = _unit(0.5 * (world[:, j["left_shoulder"]] + world[:, j["right_shoulder"]])
                   - 0.5 * (world[:, j["left_hip"]] + world[:, j["right_hip"]]))
        shoulders = _unit(_square(world[:, j["left_shoulder"]] - world[:, j["right_shoulder"]], up))
        ears = world[:, [j["left_ear"], j["right_ear"]]]  # (M, 2, 3)

        def turn_cos(e: np.ndarray) -> np.ndarray:
            return _finite(_dot(_unit(_square(e[:, 0] - e[:, 1], up)), shoulders), 1.0)

        limit = math.cos(math.radians(MAX_HEAD_TURN_DEG))
        out = np.zeros((len(world), 2))
        turned = turn_cos(ears) < limit
        if not turned.any():
            return out
        ray = _unit(ears)  # (M, 2, 3)
        z = ears[..., 2]
        with np.errstate(invalid="ignore", divide="ignore"):
            move = _finite((z.sum(-1, keepdims=True) - 2 * z) / ray[..., 2])  # each ear to the other's depth
        fixed = turn_cos(ears + move[..., None] * ray) >= limit
        return np.where((turned & fixed)[:, None], move, 0.0)

    __call__ = update


__all__ = ["LiveHinges", "body_axes", "hinge_references", "limb_axes", "mirror_moves"]
