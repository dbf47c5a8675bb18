"""The motion solve's rotations: each bone's orientation fitted over a whole take, both directions in time.

A rig's per-frame bone orientations read from the solved joints (its aim at its child, its roll from
neighbouring joints: :func:`posetracker.export.bvh_solve.humanoid_rotations`) are exact where the joints
say enough, and noise where they do not: the roll of a straight arm, a hip line seen end-on, a head seen
from behind. Read frame by frame such a bone spins by half a turn between two frames while barely moving.
Here, per bone and take, the orientation path q_t (unit quaternions, signs made continuous) minimises

    sum_t  c_t * rho(angle(q_t, m_t) / s)  +  lam * sum_t |q_{t-1} - 2 q_t + q_{t+1}|^2

- m_t: the frame's reading, c_t its weight in [0, 1] (how well the joints fix it that frame: the bend
  of a limb for its roll, a line's length against its median for a line seen end-on);
- rho: Cauchy's robust loss with scale s = ``outlier_deg``: a reading that turns a bone by half a turn
  for a few frames while its neighbours agree is rejected, not averaged in;
- the smoothness prior on the quaternions' second differences (``cutoff_hz`` as in
  :class:`posetracker.motion.solve.SolveSettings`), zero-lag, symmetric in time.

Solved by iteratively reweighted least squares (one banded solve per step for the four components,
each reading's sign re-chosen towards the current path before each step), then normalised. Where the
bone aims at its child (``export.bvh_solve``), the solved orientation is then swung by the least rotation that puts
its bone axis on the reading's, so forward kinematics still lands on the joints and only the spin about
the bone comes from the path; except where the reading's direction lies far off the path's (:func:`aim_share`):
there the bone keeps the path's direction, and its child's joint lies off the reading.

Shapes: T frames of one take, J bones; rotations (T, J, 3, 3) rest frame -> posed frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_banded
from scipy.spatial.transform import Rotation

from posetracker.motion.solve import SolveSettings, _prior_bands


@dataclass(frozen=True)
class RotationSettings:
    """cutoff_hz: the prior halves motion at this frequency; outlier_deg: the Cauchy scale; floor: the least
    weight of any reading (a bone never read at all still follows its own readings a little); iterations:
    reweighting steps; max_speed_dps: the fastest a bone turns (:func:`limit_speed`)."""

    cutoff_hz: float = 4.0
    outlier_deg: float = 25.0
    floor: float = 0.02
    iterations: int = 8
    max_speed_dps: float = 2400.0  # degrees a second no bone outturns (a pitcher's arm reaches 7000 about itself)

    def smoothness(self, frame_s: float) -> float:
        """lam of the prior for frames ``frame_s`` seconds apart (as the joint solve's)."""
        return SolveSettings(cutoff_hz=self.cutoff_hz).smoothness(frame_s)


def smoothstep(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """0 up to ``lo``, 1 from ``hi``, smooth in between (nan counts as 0)."""
    s = np.clip((np.nan_to_num(x) - lo) / (hi - lo), 0.0, 1.0)
    return s * s * (3 - 2 * s)


def line_weight(v: np.ndarray, lo: float = 0.25, hi: float = 0.6) -> np.ndarray:
    """(T,) how well a line between two joints (T, 3) gives a direction: 0 while it is shorter than ``lo`` of
    its median length (seen end-on: its direction is noise), 1 from ``hi``."""
    length = np.linalg.norm(v, axis=-1)
    ref = np.nanmedian(length) if np.isfinite(length).any() else 0.0
    return smoothstep(length / max(ref, 1e-9), lo, hi)


def frame_from(aim: np.ndarray, roll: np.ndarray, a0: np.ndarray, n0: np.ndarray) -> np.ndarray:
    """(T, 3, 3) rotations taking rest axis ``a0`` onto ``aim`` (T, 3) and ``n0`` towards ``roll`` (T, 3).

    ``a0`` and ``n0`` are orthogonal unit vectors; ``roll`` is made orthogonal
    to ``aim``. Where roll is parallel to aim the previous frame's roll is used.
    """
    n = np.linalg.norm(aim, axis=-1, keepdims=True)
    u = aim / np.where(n > 1e-12, n, np.nan)
    v = roll - np.sum(roll * u, axis=-1)[:, None] * u
    bad = ~(np.linalg.norm(v, axis=-1) > 1e-9)
    x_axis, y_axis = np.eye(3)[0], np.eye(3)[1]
    for t in np.flatnonzero(bad):  # degenerate roll: keep the previous frame's (or any normal)
        prev = v[t - 1] if t > 0 else np.cross(u[t], x_axis if abs(u[t, 0]) < 0.9 else y_axis)
        v[t] = prev - np.dot(prev, u[t]) * u[t]
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    v = v / np.where(n > 1e-12, n, np.nan)
    data = np.stack([u, v, np.cross(u, v)], axis=-1)  # columns
    rest = np.stack([a0, n0, np.cross(a0, n0)], axis=-1)
    return data @ rest.T


def _continuous(q: np.ndarray, trusted: np.ndarray | None = None) -> np.ndarray:
    """(T, 4) quaternions with signs chosen frame to frame so that each agrees with the last trusted one before
    it ((T,) bool, default all; q and -q are one turn): a half-turn reading between two trusted ones does not
    flip the signs of all after it."""
    out = q.copy()
    ref = out[0]
    for t in range(1, len(out)):
        if np.dot(out[t], ref) < 0:
            out[t] = -out[t]
        if trusted is None or trusted[t]:
            ref = out[t]
    return out


def _first_weights(q: np.ndarray, scale: float) -> np.ndarray:
    """(T,) robust weights to start from: each reading (T, 4) judged by the nearer of its readings two frames
    before and after (a reading that turns a bone by half a turn for a frame or two disagrees with both;
    half the weight of the scale, as two frames apart)."""
    n = len(q)
    near = np.full(n, np.inf)
    for k in (-2, 2):
        other = np.clip(np.arange(n) + k, 0, n - 1)
        angle = 2.0 * np.arccos(np.clip(np.abs(np.sum(q * q[other], axis=1)), 0.0, 1.0))
        near = np.minimum(near, np.where(other != np.arange(n), angle, np.inf))
    near = np.where(np.isfinite(near), near, 0.0)
    return 1.0 / (1.0 + (near / (2.0 * scale)) ** 2)


def solve_bone(measured: np.ndarray, weight: np.ndarray, lam: float, settings: RotationSettings,
               axis: np.ndarray | None = None, spin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One bone over one take -> (solved (T, 3, 3), the final robust weight of each reading (T,) in [0, 1]: near 0
    where it was rejected as an outlier).

    measured: (T, 3, 3) readings; weight: (T,) in [0, 1], how well each frame's joints fix the reading (with
    ``axis``: its direction of ``axis``, the bone's rest axis (3,)); spin: (T,) in [0, 1], how well they fix its
    spin about that axis (a straight limb's roll: not at all): where it is low the reading counts for its
    direction only, its spin taken from the path."""
    n = len(measured)
    q = Rotation.from_matrix(measured).as_quat()  # (T, 4) x, y, z, w
    if n < 3:
        return measured.copy(), np.ones(n)
    c = np.clip(np.nan_to_num(weight), settings.floor, 1.0)
    prior = _prior_bands(n, lam)
    scale = math.radians(settings.outlier_deg)
    # start from the most trusted readings: signs continuous along them, the rest signed towards the last
    robust = _first_weights(q, scale)
    trusted = (robust >= 0.5) & (c >= 0.25) & (np.ones(n, bool) if spin is None else np.asarray(spin) >= 0.25)
    x = _continuous(q, trusted if trusted.any() else None)
    read = q
    for _ in range(max(1, settings.iterations)):
        y = np.where((np.sum(read * x, axis=1) < 0)[:, None], -read, read)  # each reading on the path's side
        w = c * robust
        ab = prior.copy()
        ab[2] += w + 1e-9
        x = solve_banded((2, 2), ab, w[:, None] * y)
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        if axis is not None and spin is not None:  # the readings' spin where they fix it, else the path's
            path = Rotation.from_quat(x).as_matrix()
            aimed = swing_onto(path, axis, measured @ axis)
            step = Rotation.from_matrix(np.swapaxes(aimed, 1, 2) @ measured).as_rotvec()
            read = Rotation.from_matrix(aimed @ Rotation.from_rotvec(np.clip(spin, 0, 1)[:, None] * step).as_matrix()).as_quat()
        angle = 2.0 * np.arccos(np.clip(np.abs(np.sum(x * read, axis=1)), 0.0, 1.0))
        robust = 1.0 / (1.0 + (angle / scale) ** 2)
    return Rotation.from_quat(x).as_matrix(), robust


def swing_onto(rot: np.ndarray, axis: np.ndarray, target: np.ndarray, share: np.ndarray | float = 1.0) -> np.ndarray:
    """(T, 3, 3) ``rot`` turned by ``share`` (T,) or scalar in [0, 1] of the least rotation taking its bone axis
    ``rot @ axis`` onto ``target`` (T, 3)."""
    a = rot @ axis
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b = target / np.maximum(np.linalg.norm(target, axis=1, keepdims=True), 1e-12)
    v = np.cross(a, b)
    s = np.linalg.norm(v, axis=1)
    angle = np.arctan2(s, np.sum(a * b, axis=1))
    turn = np.where(s[:, None] > 1e-12, v / np.maximum(s, 1e-12)[:, None], 0.0) * (angle * share)[:, None]
    return Rotation.from_rotvec(turn).as_matrix() @ rot


def _limit_forward(rot: np.ndarray, limit: float) -> tuple[np.ndarray, int]:
    out = rot.copy()
    changed = 0
    if len(rot) < 2:
        return out, changed
    # each frame's turn from the one before as read, all at once: a frame whose previous frame is kept as read and
    # whose turn is clearly under the limit is kept without the exact step below (most frames)
    turns = np.linalg.norm(Rotation.from_matrix(np.swapaxes(rot[:-1], 1, 2) @ rot[1:]).as_rotvec(), axis=1)
    clear = turns < limit * (1.0 - 1e-6)  # (T - 1,)
    previous_kept = True
    for t in range(1, len(out)):
        if previous_kept and clear[t - 1]:
            continue
        previous_kept = True
        step = Rotation.from_matrix(out[t - 1].T @ rot[t]).as_rotvec()
        angle = float(np.linalg.norm(step))
        if angle > limit:
            out[t] = out[t - 1] @ Rotation.from_rotvec(step * (limit / angle)).as_matrix()
            changed += 1
            previous_kept = False
    return out, changed


def limit_speed(rot: np.ndarray, max_step_deg: float) -> np.ndarray:
    """(T, 3, 3) a bone's orientations with each frame's turn from the one before at most ``max_step_deg``: a
    step past it (a reading that jumps by 150 degrees and stays, the frames before or after it misread) goes
    as far as the limit towards it, the next frame on from there. Run forwards and backwards in time, the pass
    that changes fewer frames kept (a first frame off its neighbours is brought to them, not followed)."""
    limit = math.radians(max_step_deg)
    forward, n_f = _limit_forward(rot, limit)
    if n_f == 0:
        return forward
    backward, n_b = _limit_forward(rot[::-1], limit)
    return forward if n_f <= n_b else backward[::-1].copy()


def direction_weight(path: np.ndarray, read: np.ndarray, settings: RotationSettings) -> np.ndarray:
    """(T,) Cauchy weight (scale ``outlier_deg``) of the angle between a bone's axis on the solved path and in the
    reading, (T, 3) each: the bone's direction alone judged, whatever its spin."""
    cos = np.sum(path * read, axis=1) / np.maximum(np.linalg.norm(path, axis=1) * np.linalg.norm(read, axis=1), 1e-12)
    angle = np.arccos(np.clip(cos, -1.0, 1.0))
    return 1.0 / (1.0 + (angle / math.radians(settings.outlier_deg)) ** 2)


def aim_share(robust: np.ndarray) -> np.ndarray:
    """(T,) how much of the way a bone is swung onto its reading's axis, from the robust weight (T,) of its
    direction (:func:`direction_weight`): fully within ``outlier_deg`` of the path (weight >= 0.5), not at all
    from twice that (<= 0.2: a limb that would swing by 150 degrees in a frame while its neighbours hold still)."""
    s = np.clip((robust - 0.2) / 0.3, 0.0, 1.0)
    return s * s * (3 - 2 * s)


def hinge_signs(hinge: np.ndarray, ref: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """(T,) +1 / -1: each frame's hinge axis ``hinge`` (T, 3) unit, read from a limb's bend, signed so that the
    limb bends the way ``ref`` (T, 3) unit says (a knee never bends backwards), over the whole take at once
    (Viterbi over the two signs): a backward bend costs ``-dot(signed hinge, ref)`` where positive, and a sign
    that turns the axis between two frames costs its turn (radians) times the lesser ``weight`` (T,) in [0, 1]
    of the two (how well each frame's bend fixes its axis). So an axis read at right angles to ``ref`` (a leg
    turned out, or a hip line misread) keeps its sign from the frames around it instead of flipping half a turn
    each time the dot product crosses zero; the sign changes where the limb is straight (its axis unread)."""
    h = np.nan_to_num(hinge)
    n = len(h)
    if n == 0:
        return np.ones(0)
    signs = np.array([1.0, -1.0])
    agree = np.sum(h * np.nan_to_num(ref), axis=1)
    unary = np.maximum(-signs[None, :] * agree[:, None], 0.0)  # (T, 2)
    w = np.clip(np.nan_to_num(weight), 0.0, 1.0)
    cost = unary[0].copy()
    back = np.zeros((n, 2), np.int64)
    for t in range(1, n):
        c = np.clip(np.dot(h[t], h[t - 1]), -1.0, 1.0)
        turn = np.arccos(np.clip(signs[:, None] * signs[None, :] * c, -1.0, 1.0))  # (now, before)
        total = cost[None, :] + min(w[t], w[t - 1]) * turn
        back[t] = np.argmin(total, axis=1)
        cost = total[[0, 1], back[t]] + unary[t]
    out = np.empty(n)
    k = int(np.argmin(cost))
    for t in range(n - 1, -1, -1):
        out[t] = signs[k]
        k = back[t, k]
    return out


__all__ = ["RotationSettings", "aim_share", "direction_weight", "frame_from", "hinge_signs", "limit_speed",
           "line_weight", "smoothstep", "solve_bone", "swing_onto"]
