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
right knee, left elbow, right elbow); S = 23 numbers of a track's state. Each frame is solved for all its tracks
and limbs at once, a vector's components first and two of them repeated: (5, M, ...) rows x, y, z, x, y, so that
a cross product is two products of slices.
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
HEAD_LIMIT = math.cos(math.radians(MAX_HEAD_TURN_DEG))

_ROWS = np.array([0, 1, 2, 0, 1])  # a vector's rows: x, y, z, x, y
_KNEE = np.array([True, True, False, False])  # (L,) the knees
_ELBOW = np.array([0.0, 0.0, 1.0, -1.0])  # (L,) an elbow's side: +1 left, -1 right (0: a knee)
_EARS = np.array([14, 17])  # the ears in the joints ``_read`` takes
_LINE = np.array([0, 0, 1, 1])  # (L,) each limb's body line: 0 the hips', 1 the shoulders'
#: the smoothsteps of a frame, (4, 1, 1) each: the line's length against its usual, the bend, and an elbow's
#: upper arm below the shoulder and not across the chest (``hinge_references``)
_LO = np.array([LINE_LO, BEND_LO, 0.0, 0.2])[:, None, None]
_WIDTH = np.array([LINE_HI, BEND_HI, 0.3, 0.5])[:, None, None] - _LO
_FRESH = np.concatenate([[-np.inf], np.full(3 * 4, np.nan), np.zeros(2 * 4), np.full(2, np.nan)])  # (S,)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a . b over the first axis: (3 or 5, ...) each -> (...)."""
    p = a[:3] * b[:3]
    return p[0] + p[1] + p[2]


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b: (5, ...) each, rows x, y, z, x, y -> (3, ...)."""
    c = a[1:4] * b[2:5]
    c -= a[2:5] * b[1:4]
    return c


def _unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """v (5 or 3, ...) -> (v / |v| (nan where |v| <= 1e-12), |v| (...))."""
    n = np.sqrt(_dot(v, v))
    return v / np.where(n > 1e-12, n, np.nan), n


def _square(v: np.ndarray, up: np.ndarray) -> np.ndarray:
    return v - _dot(v, up) * up


def _read(g: np.ndarray, usual: np.ndarray | None, running: bool = False) -> dict[str, np.ndarray]:
    """A frame's reading of every track's body and limbs (call under ``np.errstate(all="ignore")``).

    g (5, M, 18): the joints of ``_joint_order`` (L parents, L middles, L ends, left hip, left shoulder, left ear,
    right hip, right shoulder, right ear), rows x, y, z, x, y; usual (M, 2) metres: the hip and
    shoulder lines' usual length (nan unknown; None: half the torso), ``running``: this frame's lengths added to it
    first (LINE_RATE of them; the result returned as ``usual``). Returns, (5, M, L) unless said: ``ref`` the
    body's hinge axis (unit, nan unread) and ``weight`` (M, L) how well it is read; ``normal`` (3, M, L) the
    reading's (middle - parent) x (end - parent), ``bend`` (M, L) its bend weight; ``span`` end - parent; ``ray``
    the middle joint's camera ray (unit); ``up`` (5, M, 1) mid-hips to mid-shoulders (unit); ``head`` (M,) the
    cosine of the ear line's turn from the shoulder line's about ``up`` (1 where unread); ``usual`` (M, 2). See
    the module docstring."""
    p, m, e = g[..., 0:4], g[..., 4:8], g[..., 8:12]
    left, right = g[..., 12:15], g[..., 15:18]  # (5, M, 3): hip, shoulder, ear
    up, torso = _unit(0.5 * (left[..., 1] + right[..., 1] - left[..., 0] - right[..., 0]))
    up = up[..., None]
    lines, length = _unit(_square(left - right, up))  # right to left, square to up: (5, M, 3) unit, (M, 3)
    head = _dot(lines[..., 2], lines[..., 1])
    head, length = np.where(np.isnan(head), 1.0, head), length[:, :2]  # nan where a hip or shoulder is unread
    if running:
        step = usual + LINE_RATE * (length - usual)  # nan where either is: then the one read (fmax skips nan)
        usual = np.where(np.isnan(step), np.fmax(usual, length), step)
    typical = np.broadcast_to(0.5 * torso[:, None], length.shape) if usual is None else \
        np.where(np.isfinite(usual), usual, 0.5 * torso[:, None])
    side = lines[..., _LINE]  # (5, M, L) the limb's body line
    a = m - p
    d1 = _unit(np.concatenate([a, m], -1))[0]
    d1, ray = d1[..., :4], d1[..., 4:]
    rest = np.where(_KNEE, -up, _ELBOW * side)  # knee: a hanging thigh; elbow: the arm held sideways
    rest_axis = np.where(_KNEE, side, -_ELBOW * up)  # ... about the body's left; -up (left) / up (right) for an elbow
    # rest_axis (square to rest) swung by the least rotation taking rest onto d1: x + v x x + v x (v x x) / (1 + c),
    # v = rest x d1, c = rest . d1
    c = _dot(rest, d1)
    k = 1.0 / np.maximum(1.0 + c, 1e-6)
    ref = _unit(rest_axis - _dot(d1, rest_axis) * (rest + k * (d1 - c * rest)))[0]
    span = e - p
    normal = _cross(a, span)
    angle = np.arctan2(np.sqrt(_dot(normal, normal)), _dot(a, e - m))  # the bend: (m - p) x (e - m) = normal
    s = (np.concatenate([(length / typical)[None][..., _LINE], angle[None], -_dot(d1, up)[None], 1.0 + c[None]])
         - _LO) / _WIDTH
    s = np.minimum(np.maximum(s, 0.0), 1.0)
    s = np.fmax(s * s * (3 - 2 * s), 0.0)  # smoothsteps (4, M, L): 0 under lo (and where nan), 1 from hi
    weight = s[0] * np.where(_KNEE, 1.0, s[2] * s[3]) * np.isfinite(ref).all(0)
    return {"ref": ref, "weight": weight, "normal": normal, "bend": s[1], "span": span, "ray": ray, "up": up,
            "head": head, "usual": usual}


def _joint_order(j: dict[str, int]) -> np.ndarray:
    """The joints ``_read`` takes, (18,) indices (the ears as the right shoulder where the skeleton has none)."""
    names = [limb[i] for i in range(3) for limb in LIMBS] + ["left_hip", "left_shoulder", "left_ear", "right_hip",
                                                             "right_shoulder", "right_ear"]
    return np.array([j.get(n, j["right_shoulder"]) for n in names])


def hinge_references(world: np.ndarray, j: dict[str, int], typical: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The body's hinge axis of each limb and how well the frame reads it: world (M, K, 3) -> (ref (M, L, 3) unit,
    nan where unread; weight (M, L) in [0, 1]). A knee's comes from the hip line, an elbow's from the shoulder
    line; typical (M, 2) metres: the track's usual length of each (None or nan: half the torso); a line is read
    fully from LINE_HI of it, not at all under LINE_LO (seen end-on, its depth misread short). j: joint indices by
    name. See the module docstring."""
    with np.errstate(all="ignore"):
        r = _read(world[:, _joint_order(j)][..., _ROWS].transpose(2, 0, 1).astype(np.float64), typical)
    return r["ref"][:3].transpose(1, 2, 0), r["weight"]


class LiveHinges:
    """Per track, knees and elbows kept bending the body's way, and heads turned at most ``MAX_HEAD_TURN_DEG``
    from the shoulders (module docstring). ``update`` takes a tracked PoseFrame with ``world`` and returns it
    with the mirrored joints' depth and world moved along their rays (people with id -1 pass through); a track
    unseen for ``drop_after`` seconds starts again. A skeleton without hips, knees, ankles, shoulders, elbows and
    wrists passes through unchanged.

    A track's state is a row (S,) of a table: the time last seen, the last output's hinge axis (3, L: unit, nan
    none yet), its bend weight (L,), the evidence for the other side (L: a leaky sum), the hip and shoulder lines'
    usual length (2: metres, a running mean; nan none yet)."""

    def __init__(self, spec: SkeletonSpec, drop_after: float = 1.0):
        names = list(spec.joint_names)
        self.applies = {n for limb in LIMBS for n in limb} <= set(names)
        self.j = {n: i for i, n in enumerate(names)}
        self.ears = all(n in self.j for n in ("left_ear", "right_ear"))
        self.order = _joint_order(self.j) if self.applies else None  # (18,)
        self.drop_after = float(drop_after)
        self.reset()

    def reset(self) -> None:
        self._slot: dict[int, int] = {}  # track id -> its row of the table
        self._table = np.tile(_FRESH, (8, 1))  # (tracks, S)
        self._last_t = -np.inf

    def _rows(self, tids: list[int], t: float) -> tuple[list[int], np.ndarray]:
        """The table's rows of ``tids`` (a new track's, and those of tracks unseen for ``drop_after``, fresh) and a
        copy of them (M, S)."""
        if t < self._last_t:  # a seek
            self._slot.clear()
        self._last_t = t
        if any(tid not in self._slot for tid in tids):
            if len(self._slot) + len(tids) > len(self._table):  # rows of tracks gone by: free again
                self._slot = {i: r for i, r in self._slot.items() if t - self._table[r, 0] <= self.drop_after}
            new = [tid for tid in tids if tid not in self._slot]
            free = sorted(set(range(len(self._table))) - set(self._slot.values()))
            if len(free) < len(new):
                free += range(len(self._table), 2 * len(self._table) + len(new))
                self._table = np.concatenate([self._table, np.tile(_FRESH, (len(self._table) + len(new), 1))])
            for tid, r in zip(new, free):
                self._slot[tid] = r
                self._table[r] = _FRESH
        rows = [self._slot[tid] for tid in tids]
        state = self._table[rows]
        stale = t - state[:, 0] > self.drop_after
        if stale.any():
            state[stale] = _FRESH
        return rows, state

    def choose(self, dots: np.ndarray, weight: np.ndarray, allowed: np.ndarray, bend: np.ndarray,
               bend_before: np.ndarray, evidence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether to mirror each limb this frame, (M, L) bool, and the evidence to carry (M, L).

        dots (2, 2, M, L): the reading's and its mirror's unit axes (first index) dotted with the body's axis and
        with the axis before (second). Each costs ``weight * max(-axis.ref, 0)`` (a backward bend; the mirror
        where not ``allowed``: BLOCKED). With an axis before, the one nearer it is kept unless the other's lower
        cost, summed over the last frames (leaky, EVIDENCE_KEEP a frame), outweighs the extra turn it makes
        (radians, times the lesser bend weight of the two frames): so the side changes at once where the limb is
        straight, after a few frames of a clearly read body against it while bent, and never on a reading alone.
        Without one, the cheaper."""
        cost = weight * np.fmax(-dots[:, 0], 0.0)  # (2, M, L): nan (unread) costs nothing
        cost[1] += BLOCKED * ~allowed
        turn = np.arccos(np.minimum(np.maximum(dots[:, 1], -1.0), 1.0))  # (2, M, L)
        known = np.isfinite(turn).all(0)
        keep_read = turn[0] <= turn[1]  # what it says where not known is never used
        gain = cost[0] - cost[1]  # the kept side's cost less the other's
        evidence = EVIDENCE_KEEP * evidence + np.where(keep_read, gain, -gain)
        switch = known & (evidence > np.minimum(bend, bend_before) * np.abs(turn[1] - turn[0]))
        mirror = np.where(known, keep_read == switch, cost[1] < cost[0]) & allowed
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
        rows, state = self._rows(tids, t)
        n = len(tids)
        before = state[:, 1:13].reshape(n, 3, 4).transpose(1, 0, 2)  # (3, M, L)
        g = frame.world[people[:, None, None], self.order[:, None], _ROWS].transpose(2, 0, 1).astype(np.float64, order="C")
        with np.errstate(all="ignore"):
            mirrored, move, ray, axis, bend, evidence, usual, heads = self._solve(g, before, state)
        state[:, 0] = t
        state[:, 1:13] = axis.transpose(1, 0, 2).reshape(n, 12)
        state[:, 13:17], state[:, 17:21], state[:, 21:23] = bend, evidence, usual
        self._table[rows] = state
        if not mirrored.any() and heads is None:
            return frame
        out_world, kp = frame.world.copy(), frame.keypoints.copy()
        i, limb = np.nonzero(mirrored)
        who, joint = people[i], self.order[4 + limb]  # (moved,) each
        step = move[i, limb, None] * ray[:3, i, limb].T  # (moved, 3)
        if heads is not None:  # both ears of each head turned back
            i = np.flatnonzero(heads.any(-1)).repeat(2)
            ear = np.tile([0, 1], len(i) // 2)
            with np.errstate(all="ignore"):
                to_ears = heads[i, ear, None] * _unit(g[:3, i, _EARS[ear]])[0].T
            who, joint = np.concatenate([who, people[i]]), np.concatenate([joint, self.order[_EARS[ear]]])
            step = np.concatenate([step, to_ears])
        out_world[who, joint] = frame.world[who, joint].astype(np.float64) + step
        kp[who, joint, 2] += step[:, 2]
        return dataclasses.replace(frame, keypoints=kp, world=out_world)

    def _solve(self, g: np.ndarray, before: np.ndarray, state: np.ndarray) -> tuple:
        """One frame of every track: g (5, M, 18) as ``_read`` takes it, before (3, M, L) the axes before, state
        (M, S) -> (mirrored (M, L) bool; move (M, L) metres along the middle joint's ray (unit, from the camera),
        ray (5, M, L); the output's axis (3, M, L), bend (M, L), evidence (M, L), usual lines (M, 2); heads (M, 2)
        metres each ear moves along its ray, None where none)."""
        r = _read(g, state[:, 21:23], running=True)
        ref, weight, normal, span = r["ref"], r["weight"], r["normal"], r["span"]
        # the mirror: about the body's axis where it is read, else about the side the limb had
        target = np.where((weight >= 0.5) | np.isnan(before).any(0), ref[:3], before)
        ray = r["ray"]
        along = _cross(ray, span)  # d(normal)/ds, s metres along the middle joint's ray
        gain = _dot(along, target)
        span_length = np.sqrt(_dot(span, span))
        allowed = np.isfinite(gain) & (np.abs(gain) >= MIN_RAY_SHARE * span_length) & (span_length > 1e-6)
        move = np.where(allowed, -2.0 * _dot(normal, target) / np.where(allowed, gain, 1.0), 0.0)
        axes = np.concatenate([normal[None], (normal + move * along)[None]])  # (2, 3, M, L): the reading, its mirror
        n = np.sqrt(np.add.reduce(axes * axes, 1, keepdims=True))
        axes = axes / np.where(n > 1e-12, n, np.nan)
        p = axes[:, None] * np.concatenate([ref[None, :3], before[None]])  # (2, 2, 3, M, L)
        dots = p[:, :, 0] + p[:, :, 1] + p[:, :, 2]  # (2, 2, M, L)
        mirrored, evidence = self.choose(dots, weight, allowed, r["bend"], state[:, 13:17], state[:, 17:21])
        axis = np.where(mirrored, axes[1], axes[0])
        axis = np.where(np.isnan(axis), before, axis)
        heads = self._head_moves(g, r["up"][..., 0], r["head"]) if self.ears else None
        return mirrored, move, ray, axis, r["bend"], evidence, r["usual"], heads

    @staticmethod
    def _head_moves(g: np.ndarray, up: np.ndarray, head: np.ndarray) -> np.ndarray | None:
        """g (5, M, 18) as ``_read`` takes it, up (5, M) unit, head (M,) the head's turn (``_read``) -> (M, 2)
        metres each ear moves along its ray, None where none: where the ear line is turned more than
        MAX_HEAD_TURN_DEG from the shoulders' about the trunk and the ears' depths mirrored about their mean turn
        it less far (a misread depth order, not the image's), they are mirrored."""
        turned = head < HEAD_LIMIT
        if not turned.any():
            return None
        shoulders = _unit(_square(g[..., 13] - g[..., 16], up))[0]
        ears = g[..., _EARS]  # (5, M, 2)

        def turn_cos(e: np.ndarray) -> np.ndarray:
            c = _dot(_unit(_square(e[..., 0] - e[..., 1], up))[0], shoulders)
            return np.where(np.isnan(c), 1.0, c)

        ray = _unit(ears)[0]  # (5, M, 2)
        z = ears[2]
        move = (z.sum(-1, keepdims=True) - 2 * z) / ray[2]  # each ear to the other's depth
        move = np.where(np.isnan(move), 0.0, move)
        fixed = turn_cos(ears + move * ray) >= HEAD_LIMIT
        heads = np.where((turned & fixed)[:, None], move, 0.0)
        return heads if heads.any() else None

    __call__ = update


__all__ = ["LiveHinges", "hinge_references"]
