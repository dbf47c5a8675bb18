"""The offline motion solve (posetracker.motion.solve): robust, zero-lag, and nothing invented across gaps."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.motion.solve import SolveSettings, fit_path, solve_tracks
from posetracker.train.metrics import jitter
from posetracker.types import PoseFrame

K = 18


def _track(xy: np.ndarray, conf: np.ndarray | float = 0.9, tid: int = 0, present: np.ndarray | None = None,
           depth: float = 3.0) -> list[PoseFrame]:
    """One person, every joint at xy (T, 2) px (+ joint j offset by 10 j px in x), 30 fps."""
    t_len = len(xy)
    conf = np.broadcast_to(np.asarray(conf, np.float32), (t_len,))
    present = np.ones(t_len, bool) if present is None else present
    frames = []
    for t in range(t_len):
        if not present[t]:
            frames.append(PoseFrame.empty(t, t / 30, K, (640, 480)))
            continue
        kp = np.zeros((1, K, 3), np.float32)
        kp[0, :, 0] = xy[t, 0] + 10 * np.arange(K)
        kp[0, :, 1] = xy[t, 1] + 20 * np.arange(K)  # a person ~500 px tall
        kp[0, :, 2] = depth
        frames.append(PoseFrame(t, t / 30, kp, np.full((1, K), conf[t], np.float32), np.ones(1, np.float32),
                                np.array([tid]), (640, 480), world=kp / 100))
    return frames


def _series(frames: list[PoseFrame], joint: int = 0) -> np.ndarray:
    return np.array([f.keypoints[0, joint, :2] if f.num_people else [np.nan, np.nan] for f in frames])


def test_a_far_off_reading_is_rejected_not_averaged():
    rng = np.random.default_rng(0)
    t = np.arange(90)
    truth = np.stack([200 + 40 * np.sin(t / 8), 100 + t * 0.5], 1)
    xy = truth + rng.normal(0, 1.0, truth.shape)
    xy[40:43, 0] += 150  # an elbow read on the head for three frames, confidence as usual
    solved = _series(solve_tracks(_track(xy)))
    plain = fit_path(np.c_[xy, np.zeros(90)], np.ones(90), SolveSettings().smoothness(1 / 30), 25.0, 1)[0][:, :2]
    assert np.abs(plain[40:43, 0] - truth[40:43, 0]).max() > 40  # least squares follows the wrong reading
    assert np.abs(solved[40:43] - truth[40:43]).max() < 12  # the robust solve does not
    assert jitter(solved[:, None, None]) < 0.5 * jitter(xy[:, None, None])


def test_zero_lag_on_a_ramp_and_a_swing():
    t = np.arange(60)
    truth = np.stack([100 + 5.0 * t, 300 + 30 * np.sin(2 * np.pi * 1.0 * t / 30)], 1)  # 1 Hz swing, 150 px/s
    solved = _series(solve_tracks(_track(truth)))
    assert np.abs(solved[:, 0] - truth[:, 0]).max() < 1e-3  # a ramp is in the prior's null space
    assert np.abs(solved[5:-5, 1] - truth[5:-5, 1]).max() < 2.0  # 1 Hz passes (4 Hz cutoff)


def test_absent_means_absent_long_gaps_split_the_run():
    t = np.arange(60)
    xy = np.stack([100 + 2.0 * t, np.full(60, 200.0)], 1)
    xy[30:] += [300, 0]  # after a 10-frame absence the person is elsewhere
    present = np.ones(60, bool)
    present[20:30] = False
    out = solve_tracks(_track(xy, present=present))
    assert all(out[i].num_people == 0 for i in range(20, 30))  # nothing invented in the gap
    solved = _series(out)
    assert np.abs(solved[:20] - xy[:20]).max() < 1e-3  # neither side pulled towards the other
    assert np.abs(solved[30:] - xy[30:]).max() < 1e-3


def test_low_confidence_weighs_less():
    t = np.arange(60)
    truth = np.stack([100 + 2.0 * t, np.full(60, 200.0)], 1)
    xy = truth.copy()
    conf = np.full(60, 0.9, np.float32)
    xy[20:26, 1] += 12  # a small wrong reading (inside the robust scale) at low confidence
    conf[20:26] = 0.05
    solved = _series(solve_tracks(_track(xy, conf)))
    assert np.abs(solved[20:26, 1] - truth[20:26, 1]).max() < 4


def test_untracked_people_unknown_depth_and_world_pass_through():
    xy = np.stack([np.arange(30) * 3.0, np.full(30, 50.0)], 1)
    frames = _track(xy, tid=-1)
    out = solve_tracks(frames)
    assert all(np.array_equal(a.keypoints, b.keypoints) for a, b in zip(out, frames))
    frames = _track(xy, depth=np.nan)
    out = solve_tracks(frames)
    assert all(np.isnan(f.keypoints[0, :, 2]).all() for f in out)
    assert all(np.isfinite(f.keypoints[0, :, :2]).all() for f in out)
    assert all(f.world is not None and np.isnan(f.world[0, :, 2]).all() for f in out)


@pytest.mark.parametrize("fps", [25.0, 30.0, 60.0])
def test_the_prior_halves_its_cutoff_at_any_frame_rate(fps):
    s = SolveSettings(cutoff_hz=4.0)
    lam = s.smoothness(1 / fps)
    w = 2 * np.pi * s.cutoff_hz / fps  # gain of the Whittaker smoother at frequency w: 1 / (1 + lam (2 - 2 cos w)^2)
    assert 1 / (1 + lam * (2 - 2 * np.cos(w)) ** 2) == pytest.approx(0.5)

