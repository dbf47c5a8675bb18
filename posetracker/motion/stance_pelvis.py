"""The pelvis takes what the feet's heights disagree by, so that each knee keeps the bend it was read with.

Step 1 of :mod:`posetracker.motion.feet` moves the whole body so that its stance ankles stand, as well as one smooth
translation can; what it leaves (two standing ankles read 1-3 cm apart in height, a stance ankle the translation
does not quite bring down, a swinging ankle under standing height) used to be taken by the knees alone: with the
hips fixed, a near-straight knee bends or straightens by 10-15 degrees for 1 cm of hip -> ankle length (on the
4-view trial the walker's cam04 left knee 142 -> 132 degrees where the reference reads 166, her right 138 -> 148
against 159; her swinging left knee bent 20 degrees more where its ankle was lifted to the floor). Here, per
frame, the pelvis moves first:

- its height c_t: the whole body up or down (no joint angle changes, no bone);
- its roll d_t: the hip line turned about the mid-hip in the vertical plane through it, the left hip up by d_t
  and the right one down by d_t, each leg moved with its hip as one piece (no knee angle, no hip angle as the
  mid-hip -> mid-shoulder trunk against the thigh reads it, no bone length; the hips keep their width), at most
  ``MAX_ROLL_DEG``,

minimising, over the track (``lam`` the smoothness prior of :func:`posetracker.motion.solve._prior_bands` on each
of c and d),

    sum_t [ sum_f w_tf (s_tf / K)^2 (e_tf - c_t - sigma_f d_t)^2  +  (ROLL / (K h_t))^2 d_t^2  +  (HEIGHT / K)^2 c_t^2 ]

with e_tf how far ankle f must rise to standing height, w_tf its stance weight (1 wherever it is under standing
height, standing or not: step 2 lifts a swinging ankle there), sigma_f +1 left / -1 right, s_tf the knee's angle
change per metre of ankle height with the hip fixed (deg / m, the knee's hinge linearised: large for a
near-straight knee), h_t the half hip width, ``ROLL`` what a radian of pelvis roll costs in knee degrees (the hip
joints move against the trunk, which PA-MPJPE sees: a degree of roll costs two of knee) and ``HEIGHT`` what a metre
of pelvis height costs (the body moved across its camera ray, off its 2-D by a few pixels a centimetre: a
centimetre costs a degree). What the pelvis does not take the knees still take (step 2 of
:mod:`posetracker.motion.feet`, which then reaches the same points from the moved hips). Costs chosen on the
4-view trial (``studies/floor-and-feet.md``).

Shapes: T frames of a track, K joints, F = 2 feet (left, right); points in the person's floor frame (Y up, m).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse import bmat, diags
from scipy.sparse.linalg import spsolve

from posetracker.analysis.stance import ContactPhase
from posetracker.motion.solve import _prior_bands

SCALE_DEG_PER_M = 1000.0  # K: the costs' unit (a knee 10 degrees a centimetre weighs 1, as step 2's ankle does)
ROLL_DEG_PER_RAD = 2.0 * math.degrees(1.0)  # a degree of pelvis roll costs as much as two degrees of knee
MAX_ROLL_DEG = 10.0  # the most the hip line is turned
HEIGHT_DEG_PER_M = 100.0  # a centimetre of pelvis height costs as much as a degree of knee
MIN_SIN = math.sin(math.radians(3.0))  # a straight knee's sensitivity, kept finite


def knee_sensitivity(hip: np.ndarray, knee: np.ndarray, ankle: np.ndarray) -> np.ndarray:
    """(T,) degrees the knee's angle changes per metre the ankle moves up or down with the hip fixed and both
    bones kept (hip, knee, ankle (T, 3) floor frame, Y up; nan where a joint is unknown)."""
    l1 = np.linalg.norm(knee - hip, axis=1)
    l2 = np.linalg.norm(ankle - knee, axis=1)
    dist = np.linalg.norm(ankle - hip, axis=1)
    cos = (l1**2 + l2**2 - dist**2) / np.maximum(2 * l1 * l2, 1e-12)
    sin = np.sqrt(np.clip(1 - cos**2, MIN_SIN**2, 1.0))
    return np.degrees(np.abs(ankle[:, 1] - hip[:, 1]) / np.maximum(l1 * l2 * sin, 1e-12))


def pelvis_path(rise: np.ndarray, weight: np.ndarray, sens: np.ndarray, half: np.ndarray, lam: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """(c (T,), d (T,)) the pelvis height and roll (m, module docstring) for ankles that must rise by ``rise``
    (T, F) with stance weights ``weight`` (T, F) and knee sensitivities ``sens`` (T, F) deg / m (nan: that foot
    holds nothing), half hip widths ``half`` (T,) m, smoothness ``lam``."""
    t = len(rise)
    ok = np.isfinite(rise) & np.isfinite(sens) & (weight > 0)
    a = np.where(ok, weight * (np.nan_to_num(sens) / SCALE_DEG_PER_M) ** 2, 0.0)  # (T, F)
    e = np.where(ok, rise, 0.0)
    sigma = np.array([1.0, -1.0])
    roll = (ROLL_DEG_PER_RAD / (SCALE_DEG_PER_M * np.where(half > 1e-3, half, np.inf))) ** 2
    height = (HEIGHT_DEG_PER_M / SCALE_DEG_PER_M) ** 2
    ab = _prior_bands(t, lam)
    prior = diags([ab[0, 2:], ab[1, 1:], ab[2], ab[3, :-1], ab[4, :-2]], [2, 1, 0, -1, -2], shape=(t, t))
    cc = prior + diags(a.sum(1) + height + 1e-9)
    dd = prior + diags(a.sum(1) + roll + 1e-9)
    cd = diags((a * sigma).sum(1))
    rhs = np.concatenate([(a * e).sum(1), (a * sigma * e).sum(1)])
    x = spsolve(bmat([[cc, cd], [cd, dd]], format="csc"), rhs)
    return x[:t], x[t:]


def move_pelvis(pts: np.ndarray, hips: tuple[int, int], legs: tuple[tuple[int, ...], tuple[int, ...]],
                c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``pts`` (T, K, 3) floor frame with the whole body raised by ``c`` (T,) and the hip line turned about the
    mid-hip so that the left hip rises by ``d`` (T,) and the right one falls by it (their distance kept); each
    leg's joints ``legs`` (left, right; the hip's descendants) moved with its hip. A frame whose hips are not
    both known, or that would need the hip line past vertical, is only raised."""
    out = pts + np.nan_to_num(c)[:, None, None] * np.array([0.0, 1.0, 0.0])
    lh, rh = out[:, hips[0]], out[:, hips[1]]
    half_line = 0.5 * (lh - rh)  # (T, 3) mid-hip -> left hip
    size = np.linalg.norm(half_line, axis=1)
    flat = np.linalg.norm(half_line[:, [0, 2]], axis=1)
    up = (half_line[:, 1] + np.nan_to_num(d)) / np.maximum(size, 1e-12)
    ok = np.isfinite(half_line).all(1) & (flat > 1e-6) & (np.abs(up) < 1.0)
    across = np.sqrt(np.clip(1 - up**2, 0.0, 1.0)) * size / np.maximum(flat, 1e-12)
    new = np.stack([half_line[:, 0] * across, up * size, half_line[:, 2] * across], axis=1)
    shift = np.where(ok[:, None], new - half_line, 0.0)  # (T, 3) the left hip's move; the right's is minus it
    for sign, joints in zip((1.0, -1.0), legs):
        out[:, list(joints)] += sign * shift[:, None, :]
    return out


def stance_pelvis(pts: np.ndarray, parents: tuple[int, ...], legs: list[tuple[int, int, int]],
                  phases: list[ContactPhase], weight: np.ndarray, owner: np.ndarray, stand: float,
                  valid: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One person's floor-frame points ``pts`` (T, K, 3) with the pelvis of the module docstring -> (points, c (T,),
    d (T,)). parents: the skeleton's (K,) parent of each joint (-1: the root); legs: (hip, knee, ankle) of the left
    and right leg; weight, owner: (T, F) stance weights and the phase each belongs to
    (:func:`posetracker.motion.feet.stance_weights`); stand: standing ankle height; valid: (T, K) bool."""
    t = len(pts)
    zero = np.zeros(t)
    if t < 3:
        return pts, zero, zero
    rise = np.full((t, 2), np.nan)
    sens = np.full((t, 2), np.nan)
    for f, (hip, knee, ankle) in enumerate(legs):
        known = valid[:, ankle] & valid[:, knee] & valid[:, hip]
        rise[:, f] = np.where(known, stand - pts[:, ankle, 1], np.nan)
        sens[:, f] = knee_sensitivity(pts[:, hip], pts[:, knee], pts[:, ankle])
    under = np.nan_to_num(rise) > 0  # an ankle under standing height is lifted to it, standing or not
    weight = np.where(under, 1.0, np.where(owner >= 0, weight, 0.0))
    if not (np.isfinite(rise) & (weight > 0)).any():
        return pts, zero, zero
    half = 0.5 * np.linalg.norm(pts[:, legs[0][0]] - pts[:, legs[1][0]], axis=1)
    c, d = pelvis_path(rise, weight, sens, np.nan_to_num(half), lam)
    most = np.nan_to_num(half) * math.sin(math.radians(MAX_ROLL_DEG))
    d = np.clip(d, -most, most)
    below = [tuple(j for j in range(len(parents)) if _under(parents, j, hip)) for hip, _, _ in legs]
    return move_pelvis(pts, (legs[0][0], legs[1][0]), (below[0], below[1]), c, d), c, d


def _under(parents: tuple[int, ...], joint: int, top: int) -> bool:
    """Whether ``joint`` is ``top`` or hangs below it in the skeleton's tree ``parents``."""
    while joint >= 0:
        if joint == top:
            return True
        joint = parents[joint]
    return False


__all__ = ["knee_sensitivity", "move_pelvis", "pelvis_path", "stance_pelvis"]
