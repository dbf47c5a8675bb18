"""The One Euro filter, vectorised, and an offline zero-lag smoother.

One Euro filter (Casiez, Roussel, Vogel, "1 Euro Filter: A Simple Speed-based
Low-pass Filter for Noisy Input in Interactive Systems", CHI 2012): an
exponential low-pass filter whose cutoff rises with the (filtered) speed of
the signal, so that slow motion is smoothed hard (no jitter) and fast motion
follows with little lag::

    te     = t_i - t_{i-1}                          (seconds, may vary)
    a(fc)  = r / (r + 1),  r = 2 pi fc te           (smoothing factor)
    dx_i   = (x_i - xhat_{i-1}) / te
    dxhat_i = a(d_cutoff) dx_i + (1 - a(d_cutoff)) dxhat_{i-1}
    fc_i   = min_cutoff + beta |dxhat_i|
    xhat_i = a(fc_i) x_i + (1 - a(fc_i)) xhat_{i-1}

The first sample passes through (``xhat_0 = x_0``, ``dxhat_0 = 0``).

:class:`OneEuroFilter` runs one independent filter per element of an array
of any shape (e.g. ``(K, 3)`` = one filter per joint coordinate).
``beta`` is in inverse signal units per second (speed ``|dxhat|`` is in
units/s), so it depends on the unit: see :data:`PRESETS`, given for pixels
(``"px"``) and metres (``"m"``).

:func:`smooth_offline` smooths a whole recorded sequence without lag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.signal import savgol_filter


@dataclass(frozen=True)
class OneEuroParams:
    """Parameters of a One Euro filter.

    min_cutoff: Hz, cutoff at zero speed; lower = less jitter when still, more lag.
    beta:       speed coefficient in 1/(unit); higher = less lag in fast motion.
    d_cutoff:   Hz, cutoff of the low-pass on the speed estimate.
    """

    min_cutoff: float = 1.0
    beta: float = 0.0
    d_cutoff: float = 1.0

    def __post_init__(self) -> None:
        if not (self.min_cutoff > 0 and self.d_cutoff > 0 and self.beta >= 0):
            raise ValueError(f"OneEuroParams: need min_cutoff > 0, d_cutoff > 0, beta >= 0, got {self}")


#: Presets per mode and unit, starting points tuned on synthetic 30 fps data
#: where a standing person spans ~300-600 px (about 250 px per metre); beta
#: for metres = beta for pixels x 250 px/m, so both units smooth alike.
#:
#: - ``"live"``: low lag for interactive display. Still joints with 2 px noise:
#:   position std / 2.7, frame-to-frame jitter / 6.7; a joint moving at
#:   1.5 m/s (~375 px/s) gets a ~12 Hz cutoff (~half a frame of lag).
#: - ``"offline"``: smoother (position std / 3.7, jitter / 12.7), more lag;
#:   meant for :func:`smooth_offline` with ``method="forward_backward"``,
#:   where the lag cancels.
PRESETS: dict[str, dict[str, OneEuroParams]] = {
    "live": {
        "px": OneEuroParams(min_cutoff=0.7, beta=0.03, d_cutoff=1.0),
        "m": OneEuroParams(min_cutoff=0.7, beta=7.5, d_cutoff=1.0),
    },
    "offline": {
        "px": OneEuroParams(min_cutoff=0.4, beta=0.01, d_cutoff=1.0),
        "m": OneEuroParams(min_cutoff=0.4, beta=2.5, d_cutoff=1.0),
    },
}

#: The person size the pixel presets are tuned for: the diagonal (px) of the box around a
#: standing person's keypoints, ~300-600 px tall. :class:`~posetracker.tracking.smoothing.PoseSmoother`
#: divides a smaller person's pixel speeds by its size relative to this, so a small far
#: runner is smoothed like a near one relative to its body.
REFERENCE_PERSON_PX = 450.0

Mode = Literal["live", "offline"]
Unit = Literal["px", "m"]


def preset(mode: str = "live", unit: str = "px") -> OneEuroParams:
    """The :data:`PRESETS` entry for ``mode`` ("live"/"offline") and ``unit`` ("px"/"m")."""
    try:
        return PRESETS[mode][unit]
    except KeyError:
        raise KeyError(f"no One Euro preset for mode={mode!r}, unit={unit!r}; modes {sorted(PRESETS)}, units ['m', 'px']") from None


def _alpha(cutoff: np.ndarray | float, te: np.ndarray | float) -> np.ndarray:
    r = 2.0 * math.pi * cutoff * te
    return r / (r + 1.0)


class OneEuroFilter:
    """One independent One Euro filter per element of an array of any shape.

    ``min_cutoff``, ``beta`` and ``d_cutoff`` are scalars or arrays that
    broadcast to the value shape (e.g. shape ``(3,)`` for per-coordinate
    parameters of ``(K, 3)`` values). Each element keeps its own state and
    last-update time, so irregular timestamps and gaps are handled exactly.

    Per call ``f(x, t, mask)`` and element:

    - ``x`` nan: not observed; the state is kept and the output is nan.
    - ``mask`` False (e.g. a low-confidence joint): not fed to the filter; the
      output holds the last filtered value (the raw value if there is none).
    - first observation: passes through.
    - ``t`` not after the element's last update (duplicate timestamp): the
      sample is ignored and the held value returned.
    """

    def __init__(self, min_cutoff: ArrayLike = 1.0, beta: ArrayLike = 0.0, d_cutoff: ArrayLike = 1.0) -> None:
        self.min_cutoff = np.asarray(min_cutoff, np.float64)
        self.beta = np.asarray(beta, np.float64)
        self.d_cutoff = np.asarray(d_cutoff, np.float64)
        if np.any(self.min_cutoff <= 0) or np.any(self.d_cutoff <= 0) or np.any(self.beta < 0):
            raise ValueError("OneEuroFilter: need min_cutoff > 0, d_cutoff > 0, beta >= 0")
        self._x: np.ndarray | None = None  # filtered value, nan = never observed
        self._dx: np.ndarray | None = None  # filtered speed (units/s)
        self._t: np.ndarray | None = None  # time of the last update, nan = never

    @classmethod
    def from_params(cls, params: OneEuroParams) -> OneEuroFilter:
        return cls(params.min_cutoff, params.beta, params.d_cutoff)

    def reset(self) -> None:
        """Forget all state; the next sample passes through."""
        self._x = self._dx = self._t = None

    @property
    def value(self) -> np.ndarray | None:
        """Current filtered value (nan where never observed), or None before the first call."""
        return None if self._x is None else self._x.copy()

    def __call__(self, x: ArrayLike, t: float, mask: ArrayLike | None = None) -> np.ndarray:
        """Filter one sample ``x`` (any fixed shape) taken at time ``t`` seconds; float64 result."""
        x = np.asarray(x, np.float64)
        if self._x is None:
            self._x = np.full(x.shape, np.nan)
            self._dx = np.zeros(x.shape)
            self._t = np.full(x.shape, np.nan)
        elif x.shape != self._x.shape:
            raise ValueError(f"OneEuroFilter: value shape changed from {self._x.shape} to {x.shape}; call reset()")
        obs = ~np.isnan(x)
        if mask is not None:
            obs &= np.broadcast_to(np.asarray(mask, bool), x.shape)
        self._x, self._dx, self._t = one_euro_step(
            x, t, obs, self._x, self._dx, self._t, self.min_cutoff, self.beta, self.d_cutoff
        )
        return np.where(np.isnan(x), np.nan, np.where(np.isnan(self._x), x, self._x))


def one_euro_step(
    x: np.ndarray,
    t: float,
    obs: np.ndarray,
    x_hat: np.ndarray,
    dx_hat: np.ndarray,
    t_last: np.ndarray,
    min_cutoff: np.ndarray | float,
    beta: np.ndarray | float,
    d_cutoff: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One step of independent One Euro filters, on plain state arrays (all one shape).

    x: new samples; obs: which elements take them; x_hat, dx_hat, t_last: the
    state (filtered value, filtered speed, last update time; nan = never
    observed). Returns the new (x_hat, dx_hat, t_last). The state of elements
    not in ``obs``, or whose ``t`` is not after ``t_last``, is unchanged; a first
    observation passes through. :class:`OneEuroFilter` is a thin wrapper.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        te = t - t_last  # nan where never observed
        first = obs & np.isnan(te)
        upd = obs & (te > 0)
        a_d = _alpha(d_cutoff, te)
        dx_new = a_d * ((x - x_hat) / te) + (1.0 - a_d) * dx_hat
        a = _alpha(min_cutoff + beta * np.abs(dx_new), te)
        x_new = x_hat + a * (x - x_hat)  # = a x + (1 - a) x_hat, exact for a constant x
    return (
        np.where(upd, x_new, np.where(first, x, x_hat)),
        np.where(upd, dx_new, np.where(first, 0.0, dx_hat)),
        np.where(upd | first, float(t), t_last),
    )


def _runs(ok: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) of the True runs of a 1-D bool array."""
    d = np.diff(np.concatenate(([0], ok.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


def _savgol(values: np.ndarray, timestamps: np.ndarray, window_s: float, polyorder: int, gap_factor: float,
            bridge: int = 0) -> np.ndarray:
    t_len = values.shape[0]
    dts = np.diff(timestamps)
    dt = float(np.median(dts)) if dts.size else 1.0
    window = max(int(round(window_s / dt)) if dt > 0 else 1, polyorder + 1)
    window += 1 - window % 2  # odd
    # A time gap (dropped frames) also breaks a run.
    breaks = np.flatnonzero(dts > gap_factor * dt) + 1 if dt > 0 else np.zeros(0, int)
    flat = _bridge(values.reshape(t_len, -1), bridge, breaks)
    out = flat.copy()
    finite = ~np.isnan(flat)
    # Columns sharing one nan pattern are smoothed together.
    patterns, inverse = np.unique(finite.T, axis=0, return_inverse=True)
    for g, pattern in enumerate(patterns):
        cols = np.flatnonzero(inverse.ravel() == g)
        ok_runs = []
        for start, stop in _runs(pattern):
            cuts = [start, *breaks[(breaks > start) & (breaks < stop)].tolist(), stop]
            ok_runs.extend(zip(cuts[:-1], cuts[1:]))
        for start, stop in ok_runs:
            n = stop - start
            w = min(window, n if n % 2 else n - 1)
            if w <= polyorder:
                continue  # too short to fit: left as measured
            block = flat[start:stop][:, cols]
            out[start:stop, cols] = savgol_filter(block, w, polyorder, axis=0, mode="interp")
    out[np.isnan(values.reshape(t_len, -1))] = np.nan  # bridged samples were only for the fit
    return out.reshape(values.shape)


def _bridge(flat: np.ndarray, longest: int, breaks: np.ndarray) -> np.ndarray:
    """flat (T, C) with nan gaps -> a copy whose interior gaps of at most ``longest`` samples (finite on both
    sides, no time break inside) are filled by linear interpolation, so a short dropout does not split a run in
    two: each piece's fit ends at the gap (``mode="interp"``), and a polynomial fitted to a still joint that
    starts to move a few frames later bends at that end (the gait clip: a standing ankle bent 27 px)."""
    out = flat.copy()
    if longest <= 0:
        return out
    for c in range(flat.shape[1]):
        finite = ~np.isnan(flat[:, c])
        for start, stop in _runs(~finite):
            interior = 0 < start and stop < len(finite)
            if not interior or stop - start > longest or ((breaks >= start) & (breaks <= stop)).any():
                continue
            a, b = flat[start - 1, c], flat[stop, c]
            out[start:stop, c] = a + (b - a) * np.arange(1, stop - start + 1) / (stop - start + 1)
    return out


def smooth_offline(
    values: ArrayLike,
    timestamps: ArrayLike,
    method: Literal["savgol", "forward_backward"] = "savgol",
    *,
    window_s: float = 0.35,
    polyorder: int = 2,
    gap_factor: float = 2.5,
    params: OneEuroParams | None = None,
    bridge: int = 0,
) -> np.ndarray:
    """Zero-lag smoothing of a whole sequence; values (T, ...) at timestamps (T,) s -> (T, ...) float64.

    ``method="savgol"``: Savitzky-Golay (local polynomial of degree
    ``polyorder`` over a centred window of ``window_s`` seconds, converted to an
    odd number of samples with the median frame interval; ``mode="interp"`` at
    the ends). A polynomial fit is symmetric, so a ramp (or any polynomial up to
    ``polyorder``) comes out unshifted. It assumes roughly uniform sampling:
    each contiguous run of finite samples is smoothed on its own, a time gap
    over ``gap_factor`` frame intervals also splits a run, nan stays nan, and
    runs too short for a fit are left as they are. The default (0.35 s, degree
    2; 11 samples at 30 fps) keeps motion below ~4 Hz and halves white noise.
    ``bridge`` > 0: gaps of at most that many samples inside a run are filled
    linearly for the fit only (they stay nan), so a short dropout does not
    split the run (:func:`_bridge`).

    ``method="forward_backward"``: the One Euro filter (``params``, default
    the ``"offline"`` preset for pixels) run forward and backward in time and
    averaged; the two lags cancel (exact on a ramp away from the ends). nan
    samples are skipped and stay nan; uses the real timestamps (irregular
    sampling is fine). Averaging two exponential filters flattens fast
    oscillation (a 0.5 Hz, 80 px swing loses ~2 px RMS), so Savitzky-Golay
    is the default and the better smoother for uniformly sampled video.
    """
    v = np.asarray(values, np.float64)
    t = np.asarray(timestamps, np.float64)
    if v.ndim < 1 or t.shape != (v.shape[0],):
        raise ValueError(f"smooth_offline: timestamps shape {t.shape} does not match values {v.shape}")
    if v.shape[0] == 0:
        return v.copy()
    if method == "savgol":
        return _savgol(v, t, window_s, polyorder, gap_factor, bridge)
    if method == "forward_backward":
        p = params or preset("offline", "px")
        fwd, bwd = OneEuroFilter.from_params(p), OneEuroFilter.from_params(p)
        a = np.stack([fwd(v[i], t[i]) for i in range(len(t))])
        tb = t[-1] - t[::-1]
        b = np.stack([bwd(v[::-1][i], tb[i]) for i in range(len(t))])[::-1]
        return 0.5 * (a + b)
    raise ValueError(f"smooth_offline: unknown method {method!r}; choices: 'savgol', 'forward_backward'")
