"""The floor plane's geometry: a robust plane fit of stance ankles, the floor rotation and the camera angles.

Used by :mod:`.ground` (which picks the ankles and builds the floor frame).

Fit (:func:`fit_floor_plane`): the ankles of the stance feet lie on a plane parallel to
the floor, one ankle height above it. One normal ``n`` (gravity, pointing up) is shared
by everyone; each person has their own offset ``d_k`` (``n . p = d_k``), because a
monocular depth error scales a person's distance, which moves their floor along the
normal. Iteratively reweighted least squares with Tukey's biweight (``tukey_c`` times
the residuals' MAD scale, at least ``min_scale_m``): a foot in the air read as standing
gets weight 0 and does not move the plane; it starts from the median offsets along
the prior normal, so half the points may be wrong.

The feet cannot show the tilt about a direction they do not spread along (a straight
walk across the image says nothing about the camera's pitch), so the fit adds a prior
on the normal: the stance frames' median body axis (contact ankles -> mid-shoulders;
upright people; the level camera's up where there are none), worth as much as
stance feet spread ``prior_spread_m`` along every direction. The normal is the smallest
eigenvector of ``C + prior_spread_m^2 (I - u u^T)`` (``C``: the weighted scatter of the
ankles about their person's centroid, ``u``: the prior): along a direction the feet
spread over with standard deviation ``s`` their tilt weighs ``s^2 / (s^2 + prior^2)``.

Camera angles (:func:`camera_angles`): pitch = degrees the optical axis points below
the horizontal (down positive); roll = degrees the camera is turned clockwise about its
optical axis, seen from behind it (its right side down).

Shapes: N = points, K = groups (people).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.analysis.stance import MAX_IMAGE_SLIDE, STILL_GROUND

#: the level camera's floor frame: X = x, Y = -y (up), Z = -z
LEVEL = np.diag([1.0, -1.0, -1.0])


class GroundError(ValueError):
    """Input the floor fit cannot use (wrong shapes, non-finite points, bad settings)."""


@dataclass(frozen=True)
class GroundSettings:
    """Settings of the floor fit (lengths in metres)."""

    min_stance_s: float = 1.0
    min_inlier_fraction: float = 0.8
    max_scale_m: float = 0.05
    min_scale_m: float = 0.005
    tukey_c: float = 4.685
    prior_spread_m: float = 0.3
    max_prior_tilt_deg: float = 45.0
    percentile: float = 2.0
    min_confidence: float = 0.2
    max_ground_speed: float = STILL_GROUND
    max_image_slide: float = MAX_IMAGE_SLIDE
    max_iter: int = 50

    def check(self) -> None:
        """Raise GroundError for settings that cannot work."""
        if not self.min_stance_s >= 0:
            raise GroundError(f"min_stance_s must be >= 0, got {self.min_stance_s}")
        if not 0.0 < self.min_inlier_fraction <= 1.0:
            raise GroundError(f"min_inlier_fraction must be in (0, 1], got {self.min_inlier_fraction}")
        for name in ("max_scale_m", "min_scale_m", "tukey_c", "max_ground_speed", "max_image_slide"):
            if not getattr(self, name) > 0:
                raise GroundError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.prior_spread_m >= 0:
            raise GroundError(f"prior_spread_m must be >= 0, got {self.prior_spread_m}")
        if not 0.0 < self.max_prior_tilt_deg < 90.0:
            raise GroundError(f"max_prior_tilt_deg must be in (0, 90), got {self.max_prior_tilt_deg}")
        if not 0.0 <= self.percentile <= 100.0:
            raise GroundError(f"percentile must be in [0, 100], got {self.percentile}")


@dataclass(frozen=True)
class PlaneFit:
    """Result of :func:`fit_floor_plane`.

    normal:  (3,) unit up normal, camera space
    offsets: (K,) each group's plane offset ``n . p`` (m; nan for a group without inliers)
    inliers: list of K (N_k,) bool, the points with non-zero final weight
    scale:   robust standard deviation of the residuals (m)
    feet_normal: (3,) the weighted plane normal of the points alone (no prior), camera space
    spread:  (2,) standard deviations (m) of the inliers along the two in-plane principal axes
    """

    normal: np.ndarray
    offsets: np.ndarray
    inliers: list[np.ndarray]
    scale: float
    feet_normal: np.ndarray
    spread: np.ndarray
    iterations: int

    @property
    def num_points(self) -> int:
        return int(sum(len(i) for i in self.inliers))

    @property
    def num_inliers(self) -> int:
        return int(sum(int(i.sum()) for i in self.inliers))


def unit(v: np.ndarray) -> np.ndarray:
    """(3,) ``v`` scaled to length 1; GroundError for a zero vector."""
    n = float(np.linalg.norm(v))
    if not n > 1e-12:
        raise GroundError("a direction of zero length")
    return np.asarray(v, np.float64) / n


def _check_groups(groups: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for k, g in enumerate(groups):
        g = np.asarray(g, np.float64)
        if g.ndim != 2 or g.shape[1] != 3:
            raise GroundError(f"points of group {k} must have shape (N, 3), got {g.shape}")
        if not np.isfinite(g).all():
            raise GroundError(f"points of group {k} must be finite (drop unknown ankles first)")
        out.append(g)
    if not out:
        raise GroundError("no groups of points")
    return out


def _min_eigvec(m: np.ndarray, towards: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(0.5 * (m + m.T))
    n = v[:, 0]
    return n if np.dot(n, towards) >= 0 else -n


def _scatter(groups: list[np.ndarray], weights: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """(3, 3) weighted scatter of the points about their group's weighted centroid (per unit weight), centroids."""
    total = np.zeros((3, 3))
    wsum = 0.0
    cents: list[np.ndarray | None] = []
    for g, w in zip(groups, weights):
        sw = float(w.sum())
        if sw <= 0:
            cents.append(None)
            continue
        c = (w[:, None] * g).sum(0) / sw
        d = g - c
        total += (w[:, None] * d).T @ d
        wsum += sw
        cents.append(c)
    return (total / wsum if wsum > 0 else total), cents


def fit_floor_plane(groups: list[np.ndarray], prior_up: np.ndarray | None = None,
                    settings: GroundSettings | None = None) -> PlaneFit:
    """Robust plane through stance ankles with one normal and an offset per group (see the module docstring).

    groups: K arrays (N_k, 3) of finite camera-space points (m), one per person (N_k may be 0).
    prior_up: (3,) the prior up direction (default: the level camera's, (0, -1, 0)).
    Raises GroundError for bad shapes, non-finite points, or fewer than 3 points in all.
    """
    settings = settings or GroundSettings()
    settings.check()
    groups = _check_groups(groups)
    u = unit(np.array([0.0, -1.0, 0.0]) if prior_up is None else np.asarray(prior_up, np.float64).reshape(-1))
    if u.shape != (3,):
        raise GroundError(f"prior_up must have shape (3,), got {np.shape(prior_up)}")
    if sum(len(g) for g in groups) < 3:
        raise GroundError(f"a plane needs at least 3 points, got {sum(len(g) for g in groups)}")
    prior = settings.prior_spread_m ** 2 * (np.eye(3) - np.outer(u, u))
    n = u.copy()
    offsets = np.array([np.median(g @ n) if len(g) else np.nan for g in groups])
    weights = [np.ones(len(g)) for g in groups]
    scale = settings.min_scale_m
    it = 0
    for it in range(1, settings.max_iter + 1):
        res = np.concatenate([g @ n - d for g, d in zip(groups, offsets) if len(g)])
        scale = max(1.4826 * float(np.median(np.abs(res))), settings.min_scale_m)
        weights = []
        for g, d in zip(groups, offsets):
            z = (g @ n - d) / (settings.tukey_c * scale) if len(g) and np.isfinite(d) else np.full(len(g), np.inf)
            weights.append(np.where(np.abs(z) < 1, (1 - z * z) ** 2, 0.0))
        scatter, cents = _scatter(groups, weights)
        new = _min_eigvec(scatter + prior, u)
        offsets = np.array([np.dot(c, new) if c is not None else np.nan for c in cents])
        done = float(np.linalg.norm(new - n)) < 1e-10
        n = new
        if done:
            break
    scatter, _ = _scatter(groups, weights)
    feet = _min_eigvec(scatter, u)
    spread = np.sqrt(np.maximum(np.linalg.eigvalsh(scatter)[1:], 0.0))[::-1]  # along the points' in-plane axes
    return PlaneFit(n, offsets, [wk > 0 for wk in weights], scale, feet, spread.copy(), it)


def tukey_weights(res: np.ndarray, used: np.ndarray, c: float, min_scale: float) -> tuple[np.ndarray, float]:
    """(N,) residuals -> ((N,) Tukey biweights, the robust scale they are on): the scale of the ``used`` (N,)
    residuals, 1.4826 x their median absolute value, at least ``min_scale`` (``min_scale`` when none is used);
    ``c`` the cut in scales."""
    scale = max(1.4826 * float(np.median(np.abs(res[used]))), min_scale) if used.any() else min_scale
    z = res / (c * scale)
    return np.where(np.abs(z) < 1, (1 - z * z) ** 2, 0.0), scale


def floor_rotation(normal: np.ndarray) -> np.ndarray:
    """(3, 3) camera -> floor rotation (rows: the floor's X, Y, Z axes in camera space) for the up ``normal`` (3,):
    Y = normal, X = camera x projected onto the floor, Z = X x Y. The level camera's is :data:`LEVEL`."""
    y = unit(normal)
    x = np.array([1.0, 0.0, 0.0]) - y[0] * y
    if np.linalg.norm(x) < 1e-6:
        raise GroundError("the floor normal lies along the camera's x axis: no floor X direction")
    x = unit(x)
    return np.stack([x, y, np.cross(x, y)])


def camera_angles(normal: np.ndarray) -> tuple[float, float]:
    """(pitch, roll) in degrees of the camera for the floor's up ``normal`` (3,) in camera space: pitch > 0
    looking down, roll > 0 turned clockwise seen from behind the camera."""
    n = unit(normal)
    pitch = float(np.degrees(np.arcsin(np.clip(-n[2], -1.0, 1.0))))
    roll = float(np.degrees(np.arctan2(-n[0], -n[1])))
    return pitch, roll


def percentile_floor(heights: np.ndarray, percentile: float = 2.0) -> float:
    """The fallback floor: the ``percentile``-th percentile over frames of the lowest of the (T, J) joint heights
    (m, Y up, nan = unknown); nan when no frame has a joint."""
    h = np.asarray(heights, np.float64)
    if h.ndim != 2:
        raise GroundError(f"heights must have shape (T, J), got {h.shape}")
    known = np.isfinite(h).any(axis=1)
    if not known.any():
        return float("nan")
    return float(np.percentile(np.nanmin(h[known], axis=1), percentile))


__all__ = ["LEVEL", "GroundError", "GroundSettings", "PlaneFit", "camera_angles", "fit_floor_plane", "floor_rotation",
           "percentile_floor", "unit"]
