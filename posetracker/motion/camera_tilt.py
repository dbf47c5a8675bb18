"""The floor of a camera that tilts: a floor normal per frame, fitted to everyone's stance feet.

A handheld camera that pans and tilts moves the floor in camera space: the stance ankles of the street-dance
crowd (``studies/floor-and-feet.md``) lie on no one plane (5.9 cm scatter, so no floor was fitted), and the near
woman's stance ankles rise and sink with the camera's tilt (correlation -0.987 with the background's vertical
shift). A camera turning about its centre leaves every distance from it as it was, so the floor keeps its
distance (the camera's height) and only its normal turns: n_t, slowly over time. With n0 a normal to fit about
(first the one-plane fit's, then the mean of the normals found, :func:`fit_tilt`) and e1, e2 two unit directions
across it, n_t = unit(n0 + a_t e1 + b_t e2) and the stance ankle p_i of person k(i) at frame t(i) lies an ankle
height above the floor:

    r_i = n0 . p_i + a_t(i) (e1 . p_i) + b_t(i) (e2 . p_i) - d_k(i)

(linear in a, b and the people's offsets d), fitted by iteratively reweighted least squares with Tukey's biweight
(as :func:`posetracker.analysis.floor_plane.fit_floor_plane`: a foot in the air read as standing gets weight 0)
plus a smoothness prior on a and b (second differences, weighted to halve a tilt that swings at ``cutoff_hz``
against the stance ankles of a typical frame: their squared distances from their person's centroid, the lever a
tilt has on them once each person's offset is free; frames without stance feet take the tilt of the frames
around them) and a small pull of each frame's a, b towards their mean over the clip.

On the street-dance crowd (``studies/floor-and-feet.md``) the pitch found follows the background's vertical
motion (correlation -0.76, 0.73 of its size at 0.5 Hz; 1 Hz and more fit the ankles to the 0.5 cm floor of the
robust scale, with roll swinging 8-13 degrees where the image turns 3.7); the roll is not well seen there
(correlation -0.35 with the image's rotation): the stance feet spread little in depth.

Frames without stance feet get the tilt the smoothness prior carries across them from the frames around (a
straight line at best), which a camera that tilts fast there leaves behind (the crowd: 4.9 degrees in its first
12 frames, carried 0.2). :func:`carry_tilt` fits their pitch to the lower ankle of each person with stance feet
elsewhere instead (a walking person's lower ankle is within a few cm of standing height): on the crowd the
floor's pitch over those frames then follows the background's tilt (within 0.74 degrees; 5.08 carried), and over
the whole clip with correlation -0.92 and the same size (-0.75, 0.73 of it, carried).

:func:`tilt_rotations` turns each frame's normal onto a reference (the mean normal) by the smallest rotation (no
turn about the floor's normal: a pan leaves the floor where it is): C_t (3, 3), with C_t n_t = reference, so C_t p
is frame t's point as the camera at that tilt would see it. :mod:`posetracker.motion.moving_floor` decides when to use it.

Shapes: N stance ankles, K people, T frames.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix, csr_matrix, diags, hstack, vstack
from scipy.sparse.linalg import spsolve

from posetracker.analysis.floor_plane import tukey_weights, unit


@dataclass(frozen=True)
class TiltSettings:
    """cutoff_hz: the tilt's smoothness (a swing at this frequency is halved, against a typical frame's stance
    ankles); ridge: the pull of a frame's tilt towards the mean tilt, relative to a frame's data; tukey_c, min_scale_m: the
    robust weights (as the one-plane fit); iterations: IRLS rounds at most; centre_rounds: fits about the mean
    normal of the fit before at most (:func:`fit_tilt`); carry_cutoff_hz: the smoothness of the pitch fitted
    where there are no stance feet (:func:`carry_tilt`)."""

    cutoff_hz: float = 0.5
    ridge: float = 1e-3
    tukey_c: float = 4.685
    min_scale_m: float = 0.005
    iterations: int = 30
    centre_rounds: int = 5
    carry_cutoff_hz: float = 2.0


@dataclass(frozen=True)
class TiltFit:
    """normals: (T, 3) unit up normal of the floor per frame, camera space; offsets: (K,) each person's plane
    offset n_t . p (m); scale: robust standard deviation of the residuals (m); inliers: (N,) bool."""

    normals: np.ndarray
    offsets: np.ndarray
    scale: float
    inliers: np.ndarray


def _across(n0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit directions (3,) across the unit ``n0`` and across each other: e1 along the camera's x as far as
    it can be (a roll), e2 = n0 x e1 (a pitch)."""
    e1 = np.array([1.0, 0.0, 0.0]) - n0[0] * n0
    if np.linalg.norm(e1) < 1e-6:
        e1 = np.array([0.0, 0.0, 1.0]) - n0[2] * n0
    e1 = unit(e1)
    return e1, np.cross(n0, e1)


def fit_tilt(points: np.ndarray, frames: np.ndarray, person: np.ndarray, num_frames: int, n0: np.ndarray,
             frame_s: float, settings: TiltSettings | None = None) -> TiltFit:
    """The module docstring's fit. points: (N, 3) finite camera-space stance ankles (m); frames: (N,) int frame
    of each in [0, num_frames); person: (N,) int group of each in [0, K); n0: (3,) the one-plane fit's up normal,
    where the fit starts; frame_s: seconds between frames. The fit is made again about the mean of the normals it
    found (``centre_rounds`` at most, until the mean moves less than 0.01 degree): the one-plane fit of a camera
    that tilted can lie 10 degrees off the tilts' mean (synthetic), and the pull towards it would hold every
    frame's tilt back. Raises ValueError for mismatched shapes or no points."""
    s = settings or TiltSettings()
    p = np.asarray(points, np.float64)
    t = np.asarray(frames, np.int64)
    k = np.asarray(person, np.int64)
    if p.ndim != 2 or p.shape[1] != 3 or len(p) == 0 or t.shape != (len(p),) or k.shape != (len(p),):
        raise ValueError(f"points (N, 3), frames and person (N,) expected, got {p.shape}, {t.shape}, {k.shape}")
    centre = unit(np.asarray(n0, np.float64))
    for _ in range(s.centre_rounds):
        fit = _fit_about(p, t, k, num_frames, centre, frame_s, s)
        mean = unit(fit.normals.mean(0))
        moved = float(np.degrees(np.arccos(np.clip(mean @ centre, -1.0, 1.0))))
        centre = mean
        if moved < 0.01:
            break
    return fit


def _fit_about(p: np.ndarray, t: np.ndarray, k: np.ndarray, num_frames: int, n0: np.ndarray, frame_s: float,
               s: TiltSettings) -> TiltFit:
    """One IRLS fit of the module docstring's model about the unit ``n0`` (:func:`fit_tilt`'s arguments)."""
    e1, e2 = _across(n0)
    nk = int(k.max()) + 1
    n = len(p)
    # unknowns: a (T), b (T), d (K)
    rows = np.repeat(np.arange(n), 3)
    cols = np.stack([t, num_frames + t, 2 * num_frames + k], axis=1).ravel()
    vals = np.stack([p @ e1, p @ e2, -np.ones(n)], axis=1).ravel()
    size = 2 * num_frames + nk + 2  # unknowns: a (T), b (T), d (K), the means of a and b
    a_data = coo_matrix((vals, (rows, cols)), shape=(n, size)).tocsr()
    target = -(p @ n0)
    # the priors' weight: a typical frame's data weight on a tilt (its stance ankles' squared distances from their
    # person's centroid: the lever a tilt has on them once each person's offset is free)
    centroid = np.stack([np.bincount(k, weights=p[:, c], minlength=nk) for c in range(3)], 1) \
        / np.maximum(np.bincount(k, minlength=nk), 1)[:, None]
    per_frame = np.bincount(t, weights=((p - centroid[k]) ** 2).sum(1), minlength=num_frames)
    typical = float(np.median(per_frame[per_frame > 0]))
    w = 2.0 * math.sin(math.pi * min(s.cutoff_hz * frame_s, 0.5))
    lam = typical / w ** 4
    d2 = _second_difference(num_frames)
    zeros = csr_matrix((d2.shape[0], num_frames))
    zk = csr_matrix((d2.shape[0], nk + 2))
    prior = vstack([hstack([d2, zeros, zk]), hstack([zeros, d2, zk])]).tocsr() * math.sqrt(lam)
    # the pull of each frame's tilt towards the tilts' mean (the mean itself is the data's): rows a_t - mean a
    frames_t = np.arange(num_frames)
    r_rows = np.concatenate([frames_t, num_frames + frames_t] * 2)
    r_cols = np.concatenate([frames_t, num_frames + frames_t, np.full(num_frames, 2 * num_frames + nk),
                             np.full(num_frames, 2 * num_frames + nk + 1)])
    r_vals = math.sqrt(s.ridge * typical) * np.concatenate([np.ones(2 * num_frames), -np.ones(2 * num_frames)])
    ridge = coo_matrix((r_vals, (r_rows, r_cols)), shape=(2 * num_frames, size)).tocsr()
    weight = np.ones(n)
    x = np.zeros(size)
    x[2 * num_frames:2 * num_frames + nk] = [np.median(p[k == j] @ n0) if (k == j).any() else 0.0 for j in range(nk)]
    scale = s.min_scale_m
    for _ in range(s.iterations):
        wd = diags(np.sqrt(weight))
        m = vstack([wd @ a_data, prior, ridge]).tocsr()
        rhs = np.concatenate([np.sqrt(weight) * target, np.zeros(m.shape[0] - n)])
        has = np.bincount(k, weights=weight, minlength=nk) > 0  # a person with no weight keeps their offset
        fix = np.concatenate([np.zeros(2 * num_frames, bool), ~has, np.zeros(2, bool)])
        new = x.copy()
        new[~fix] = spsolve((m[:, ~fix].T @ m[:, ~fix]).tocsc(), m[:, ~fix].T @ (rhs - m[:, fix] @ x[fix]))
        res = a_data @ new - target
        weight, scale = tukey_weights(res, weight > 0, s.tukey_c, s.min_scale_m)
        done = float(np.abs(new - x).max()) < 1e-9
        x = new
        if done:
            break
    a, b = x[:num_frames], x[num_frames:2 * num_frames]
    normals = n0[None] + a[:, None] * e1[None] + b[:, None] * e2[None]
    norm = np.linalg.norm(normals, axis=1, keepdims=True)
    return TiltFit(normals / norm, x[2 * num_frames:2 * num_frames + nk], scale, weight > 0)


def _second_difference(n: int) -> csr_matrix:
    """(n-2, n) second-difference operator (empty for n < 3)."""
    if n < 3:
        return csr_matrix((0, n))
    return diags([np.ones(n - 2), -2 * np.ones(n - 2), np.ones(n - 2)], [0, 1, 2], shape=(n - 2, n)).tocsr()


def carry_tilt(fit: TiltFit, points: np.ndarray, frames: np.ndarray, person: np.ndarray, low: np.ndarray,
               low_frames: np.ndarray, low_person: np.ndarray, frame_s: float,
               settings: TiltSettings | None = None) -> np.ndarray:
    """(T, 3) ``fit.normals`` with the pitch of every frame without stance feet fitted to the people's lowest
    ankles there. The stance fit's smoothness carries the tilt of the frames with stance feet across a stretch
    without them (a straight line at best): the crowd's camera tilts 4.9 degrees in the 12 frames before its first
    stance feet and the carried floor 0.2, so people stood 43-76 cm above it. A walking person's lower ankle is
    within a few cm of standing height, so each stretch's pitch is fitted to it, each person at their stance
    feet's offset (the median of n_t . p over their stance ankles): n_t = unit(fit n_t + beta_t e2_t) (e2_t the
    pitch direction across fit n_t, :func:`_across`), robust as the stance fit, smooth at ``carry_cutoff_hz``
    (second differences, against a typical frame's lowest ankles' lever: (e2 . p)^2, the distance), with beta = 0
    on the frames with stance feet (continuous with them); a frame with no lowest ankle follows its neighbours.

    points, frames, person: :func:`fit_tilt`'s stance ankles (N, 3), (N,), (N,); low, low_frames, low_person:
    (M, 3) lowest ankles of the same people at frames without stance feet, their (M,) frames and (M,) groups."""
    s = settings or TiltSettings()
    normals = np.array(fit.normals, np.float64)
    num_frames = len(normals)
    low = np.asarray(low, np.float64)
    covered = np.zeros(num_frames, bool)
    covered[np.asarray(frames, np.int64)] = True
    if len(low) == 0 or covered.all():
        return normals
    t_low, k_low = np.asarray(low_frames, np.int64), np.asarray(low_person, np.int64)
    heights = np.einsum("ij,ij->i", normals[frames], points)
    offsets = np.array([np.median(heights[(person == k) & fit.inliers]) if ((person == k) & fit.inliers).any()
                        else np.median(heights[person == k]) for k in range(int(person.max()) + 1)])
    pitch_dir = np.array([_across(n)[1] for n in normals])  # (T, 3) e2_t
    free = np.flatnonzero(~covered)
    column = np.full(num_frames, -1)
    column[free] = np.arange(len(free))
    lever = np.einsum("ij,ij->i", pitch_dir[t_low], low)
    data = csr_matrix((lever, (np.arange(len(low)), column[t_low])), shape=(len(low), len(free)))
    target = offsets[k_low] - np.einsum("ij,ij->i", normals[t_low], low)
    w = 2.0 * math.sin(math.pi * min(s.carry_cutoff_hz * frame_s, 0.5))
    typical = float(np.median(np.bincount(t_low, weights=lever ** 2)[np.unique(t_low)]))
    smooth = (_second_difference(num_frames)[:, free] * math.sqrt(typical / w ** 4)).tocsr()
    tiny = diags(np.full(len(free), math.sqrt(1e-9 * typical)))
    weight = np.ones(len(low))
    beta = np.zeros(len(free))
    for _ in range(s.iterations):
        m = vstack([diags(np.sqrt(weight)) @ data, smooth, tiny]).tocsr()
        rhs = np.concatenate([np.sqrt(weight) * target, np.zeros(m.shape[0] - len(low))])
        new = spsolve((m.T @ m).tocsc(), m.T @ rhs)
        res = data @ new - target
        weight, _ = tukey_weights(res, weight > 0, s.tukey_c, s.min_scale_m)
        done = float(np.abs(new - beta).max()) < 1e-12
        beta = new
        if done:
            break
    normals[free] += beta[:, None] * pitch_dir[free]
    return normals / np.linalg.norm(normals, axis=1, keepdims=True)


def tilt_rotations(normals: np.ndarray, n0: np.ndarray) -> np.ndarray:
    """(T, 3, 3) the smallest rotation C_t with C_t normals[t] = n0, for (T, 3) unit ``normals`` and (3,) ``n0``
    (the reference)."""
    n0 = unit(np.asarray(n0, np.float64))
    out = np.empty((len(normals), 3, 3))
    for i, v in enumerate(np.asarray(normals, np.float64)):
        axis = np.cross(v, n0)
        s, c = float(np.linalg.norm(axis)), float(np.dot(v, n0))
        if s < 1e-12:
            out[i] = np.eye(3)
            continue
        kx = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]]) / s
        out[i] = np.eye(3) + s * kx + (1 - c) * kx @ kx
    return out


__all__ = ["TiltFit", "TiltSettings", "carry_tilt", "fit_tilt", "tilt_rotations"]
