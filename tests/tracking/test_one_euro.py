"""One Euro filter and the offline zero-lag smoother."""

from __future__ import annotations

import math

import numpy as np
import pytest

from posetracker.tracking import PRESETS, OneEuroFilter, OneEuroParams, preset, smooth_offline


class RefLowPass:
    """Low-pass filter as in the paper's Algorithm 1 (scalar)."""

    def __init__(self) -> None:
        self.first = True
        self.hatxprev = 0.0

    def filter(self, x: float, alpha: float) -> float:
        if self.first:
            self.first = False
            hatx = x
        else:
            hatx = alpha * x + (1 - alpha) * self.hatxprev
        self.hatxprev = hatx
        return hatx


class RefOneEuro:
    """Straightforward scalar One Euro filter (Casiez et al., CHI 2012, Algorithm 1)."""

    def __init__(self, mincutoff: float, beta: float, dcutoff: float) -> None:
        self.mincutoff, self.beta, self.dcutoff = mincutoff, beta, dcutoff
        self.x, self.dx = RefLowPass(), RefLowPass()
        self.tprev: float | None = None

    @staticmethod
    def alpha(rate: float, cutoff: float) -> float:
        tau = 1.0 / (2 * math.pi * cutoff)
        te = 1.0 / rate
        return 1.0 / (1.0 + tau / te)

    def __call__(self, x: float, t: float) -> float:
        if self.tprev is None:
            self.tprev = t
            self.dx.filter(0.0, 1.0)
            return self.x.filter(x, 1.0)
        rate = 1.0 / (t - self.tprev)
        self.tprev = t
        dx = (x - self.x.hatxprev) * rate
        edx = self.dx.filter(dx, self.alpha(rate, self.dcutoff))
        cutoff = self.mincutoff + self.beta * abs(edx)
        return self.x.filter(x, self.alpha(rate, cutoff))


FPS = 30.0


def test_matches_scalar_reference_on_random_signal_with_irregular_timestamps() -> None:
    rng = np.random.default_rng(0)
    n = 400
    t = np.cumsum(rng.uniform(0.005, 0.08, n))  # irregular dt
    x = np.cumsum(rng.normal(0, 3, (n, 2, 3)), axis=0) + rng.normal(0, 1, (n, 2, 3))
    mc = np.array([0.5, 1.0, 2.0])
    beta = np.array([0.0, 0.02, 0.5])
    f = OneEuroFilter(mc, beta, 1.3)
    got = np.stack([f(x[i], t[i]) for i in range(n)])
    for a in range(2):
        for c in range(3):
            ref = RefOneEuro(mc[c], beta[c], 1.3)
            want = [ref(float(x[i, a, c]), float(t[i])) for i in range(n)]
            np.testing.assert_allclose(got[:, a, c], want, rtol=0, atol=1e-9)


def test_constant_signal_stays_constant() -> None:
    f = OneEuroFilter.from_params(preset("live", "px"))
    val = np.full((18, 3), 123.25)
    for i in range(100):
        assert np.array_equal(f(val, i / FPS), val)


def _jitter_factors(params: OneEuroParams, sigma: float = 2.0, n: int = 900) -> tuple[float, float]:
    rng = np.random.default_rng(1)
    t = np.arange(n) / FPS
    x = 500.0 + rng.normal(0, sigma, (n, 18, 2))
    f = OneEuroFilter.from_params(params)
    y = np.stack([f(x[i], t[i]) for i in range(n)])[60:]
    x = x[60:]
    std_factor = x.std() / y.std()
    diff_factor = np.diff(x, axis=0).std() / np.diff(y, axis=0).std()
    return float(std_factor), float(diff_factor)


def test_noisy_constant_jitter_reduced_strongly() -> None:
    std_live, diff_live = _jitter_factors(preset("live", "px"))
    std_off, diff_off = _jitter_factors(preset("offline", "px"))
    # Measured (sigma 2 px, 30 fps): live 2.7x position std, 6.7x frame-to-frame
    # jitter; offline 3.7x and 12.7x.
    assert std_live > 2.4 and diff_live > 6.0
    assert std_off > std_live and diff_off > diff_live


def test_step_followed_within_bounded_lag() -> None:
    f = OneEuroFilter.from_params(preset("live", "px"))
    n = 40
    x = np.where(np.arange(n) < 10, 100.0, 200.0)  # 100 px step at frame 10
    y = np.array([float(f(np.array([v]), i / FPS)[0]) for i, v in enumerate(x)])
    settled = np.flatnonzero(np.abs(y - 200.0) < 5.0)  # within 5% of the step
    assert settled.size and settled[0] - 10 <= 3
    assert np.all(np.abs(y[settled[0]:] - 200.0) < 5.0)
    assert np.all(np.diff(y) >= -1e-12)  # no overshoot back and forth


def test_nan_is_skipped_and_stays_nan() -> None:
    rng = np.random.default_rng(2)
    n = 60
    t = np.arange(n) / FPS
    x = rng.normal(0, 1, n).cumsum()
    xn = x.copy()
    xn[[0, 5, 6, 7, 30]] = np.nan
    f = OneEuroFilter(1.0, 0.3, 1.0)
    got = np.array([float(f(np.array([v]), ti)[0]) for v, ti in zip(xn, t)])
    assert np.all(np.isnan(got[[0, 5, 6, 7, 30]]))
    ref = RefOneEuro(1.0, 0.3, 1.0)  # fed only the finite samples, with their times
    keep = ~np.isnan(xn)
    want = [ref(float(v), float(ti)) for v, ti in zip(xn[keep], t[keep])]
    np.testing.assert_allclose(got[keep], want, atol=1e-9)


def test_mask_holds_and_duplicate_timestamp_is_ignored_and_reset() -> None:
    f = OneEuroFilter(1.0, 0.0, 1.0)
    f(np.array([1.0, 2.0]), 0.0, np.array([True, False]))
    out = f(np.array([5.0, 7.0]), 0.1, np.array([False, False]))
    assert out[0] == 1.0  # held
    assert out[1] == 7.0  # never observed: raw value passes
    held = f(np.array([9.0, 7.0]), 0.0)  # t not after element 0's last update: ignored
    assert held[0] == 1.0 and held[1] == 7.0
    moved = f(np.array([9.0, 7.0]), 0.2)
    assert 1.0 < moved[0] < 9.0 and moved[1] == 7.0  # element 1 now starts: passes through
    f.reset()
    assert np.array_equal(f(np.array([3.0, 4.0]), 5.0), [3.0, 4.0])
    with pytest.raises(ValueError):
        f(np.zeros(3), 6.0)


def test_presets_exposed() -> None:
    assert set(PRESETS) == {"live", "offline"}
    for mode in PRESETS:
        assert preset(mode, "px").min_cutoff > 0 and preset(mode, "m").beta > preset(mode, "px").beta
    assert preset("offline").min_cutoff < preset("live").min_cutoff
    with pytest.raises(KeyError):
        preset("fast")
    with pytest.raises(ValueError):
        OneEuroParams(min_cutoff=0.0)


def test_offline_zero_lag_on_ramp() -> None:
    t = np.arange(120) / FPS
    ramp = np.stack([3.0 * np.arange(120), -2.0 * np.arange(120) + 50], axis=1)
    sg = smooth_offline(ramp, t, "savgol")
    np.testing.assert_allclose(sg, ramp, atol=1e-9)  # no shift anywhere
    fb = smooth_offline(ramp, t, "forward_backward")
    fwd = OneEuroFilter.from_params(preset("offline", "px"))
    causal = np.stack([fwd(ramp[i], t[i]) for i in range(len(t))])
    mid = slice(40, 80)
    assert np.abs(causal[mid] - ramp[mid]).max() > 1.0  # a causal filter lags ...
    assert np.abs(fb[mid] - ramp[mid]).max() < 1e-3  # ... forward-backward does not


@pytest.mark.parametrize("method", ["savgol", "forward_backward"])
def test_offline_reduces_noise(method: str) -> None:
    rng = np.random.default_rng(3)
    t = np.arange(300) / FPS
    clean = 200 + 50 * np.sin(2 * np.pi * 0.25 * t)[:, None, None] * np.ones((1, 4, 2))
    noisy = clean + rng.normal(0, 2.0, clean.shape)
    out = smooth_offline(noisy, t, method)
    err_in = np.sqrt(np.mean((noisy - clean) ** 2))
    err_out = np.sqrt(np.mean((out - clean) ** 2))
    assert err_out < 0.6 * err_in  # measured ~0.45 (savgol) / ~0.48 (forward-backward)


def test_offline_savgol_nan_gaps() -> None:
    rng = np.random.default_rng(4)
    t = np.arange(100) / FPS
    x = 0.5 * t[:, None] ** 2 * np.ones((1, 3)) + rng.normal(0, 0.01, (100, 3))
    x[40:45, 0] = np.nan  # gap in one column
    x[90, 1] = np.nan
    x[96:, 2] = np.nan
    x[91:94, 2] = np.nan  # leaves a 2-sample run (too short to fit)
    out = smooth_offline(x, t, "savgol")
    assert np.array_equal(np.isnan(out), np.isnan(x))
    np.testing.assert_array_equal(out[94:96, 2], x[94:96, 2])
    clean = 0.5 * t[:, None] ** 2 * np.ones((1, 3))
    fin = ~np.isnan(x)
    assert np.abs(out - clean)[fin].max() < 0.03
    fb = smooth_offline(x, t, "forward_backward")
    assert np.array_equal(np.isnan(fb), np.isnan(x))
    with pytest.raises(ValueError):
        smooth_offline(x, t, "median")
    with pytest.raises(ValueError):
        smooth_offline(x, t[:-1])


def test_offline_savgol_bridges_a_short_dropout() -> None:
    """A still joint that starts to move a few frames after a one-frame dropout: split at the dropout, the
    second piece's fit bends at its start; bridged (the gap filled for the fit only), it stays still there."""
    t = np.arange(40) / FPS
    x = np.full((40, 1), 600.0)
    x[8:, 0] = 600.0 - 25.0 * np.arange(1, 33)  # moves from frame 8 on, 25 px a frame
    x[4, 0] = np.nan
    split = smooth_offline(x, t, "savgol")
    bridged = smooth_offline(x, t, "savgol", bridge=2)
    assert np.isnan(bridged[4, 0]) and np.array_equal(np.isnan(bridged), np.isnan(x))
    assert abs(split[5, 0] - 600.0) > 5.0  # the end effect
    assert abs(bridged[5, 0] - 600.0) < abs(split[5, 0] - 600.0) / 3
    x[4:7, 0] = np.nan  # longer than the bridge: split as before
    np.testing.assert_array_equal(smooth_offline(x, t, "savgol", bridge=2), smooth_offline(x, t, "savgol"))
