"""Clip metrics on synthetic trajectories: jitter, lag, PA-MPJPE, bone-length CV, depth order."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from posetracker.skeletons import load_skeleton
from posetracker.train import metrics

SPEC = load_skeleton("human18")


def _track(t_len=60, noise=0.0, seed=0) -> np.ndarray:
    """(T, 1, K, 2) joints moving on a smooth sine path, plus white noise of std ``noise`` px."""
    t = np.arange(t_len)[:, None, None, None]
    base = np.random.default_rng(1).uniform(0, 100, (1, 1, SPEC.num_joints, 2))
    path = base + np.concatenate([20 * np.sin(t / 10.0), 5 * np.cos(t / 7.0)], -1)
    return path + np.random.default_rng(seed).normal(0, noise, path.shape)


def test_jitter_of_a_noisy_track_exceeds_a_smooth_one():
    smooth, noisy = _track(), _track(noise=2.0)
    assert metrics.jitter(smooth) < 0.3
    assert metrics.jitter(noisy) > 10 * metrics.jitter(smooth)
    ok = np.ones(noisy.shape[:3], bool)
    ok[:, :, 3] = False  # unconfident joints are left out
    assert np.isfinite(metrics.jitter(noisy, ok))
    assert np.isnan(metrics.jitter(noisy[:2]))


def test_lag_of_a_delayed_track():
    ref = _track(120)
    delayed = np.concatenate([ref[:2], ref[:-2]])  # 2 frames behind
    assert metrics.lag_frames(delayed, ref) == pytest.approx(2.0, abs=0.3)
    assert metrics.lag_frames(ref, ref) == pytest.approx(0.0, abs=0.1)


def test_lag_of_a_noisy_smoothed_track_behind_a_clean_reference():
    ref = _track(120)
    noisy = _track(120, noise=5.0)
    smoothed = noisy.copy()
    smoothed[1:-1] = 0.25 * noisy[:-2] + 0.5 * noisy[1:-1] + 0.25 * noisy[2:]
    late = np.concatenate([smoothed[:1], smoothed[:-1]])  # one frame behind
    assert metrics.lag_frames(smoothed, ref) == pytest.approx(0.0, abs=0.2)
    assert metrics.lag_frames(late, ref) == pytest.approx(1.0, abs=0.2)
    ema = noisy.copy()  # causal exponential smoother, memory 0.42: lag 0.42 / 0.58 = 0.72 frames
    for t in range(1, len(ema)):
        ema[t] = 0.42 * ema[t - 1] + 0.58 * noisy[t]
    assert metrics.lag_frames(ema, ref) == pytest.approx(0.72, abs=0.2)


def test_left_right_swaps_are_aligned_to_the_reference():
    ref = _track(40)
    left, right = SPEC.index("left_ankle"), SPEC.index("right_ankle")
    swapped = ref.copy()
    swapped[10:15, :, [left, right]] = ref[10:15, :, [right, left]]
    swapped[20, :, left] = np.nan
    aligned = metrics.align_left_right(swapped, ref, SPEC.mirror_index)
    ok = np.isfinite(aligned).all(-1)
    assert np.array_equal(aligned[ok], ref[ok]) and ok.sum() == ok.size - 1
    assert metrics.lag_frames(aligned, ref) == pytest.approx(0.0, abs=0.05)


def test_added_lag_behind_a_noisy_baseline():
    from types import SimpleNamespace

    ok = np.ones((120, 1, SPEC.num_joints), bool)
    baseline = {"matched_xy": _track(120, noise=1.0, seed=1), "matched_ok": ok}  # a jittery per-frame model
    smoothed = _track(120, noise=1.0, seed=2)
    smoothed[1:-1] = 0.25 * smoothed[:-2] + 0.5 * smoothed[1:-1] + 0.25 * smoothed[2:]
    labels = SimpleNamespace(timestamps=np.arange(120) / 30.0)
    on_time = {"matched_xy": smoothed, "matched_ok": ok}
    late = {"matched_xy": np.concatenate([smoothed[:2], smoothed[:-2]]), "matched_ok": ok}
    assert metrics.added_lag(on_time, baseline, labels, SPEC) == pytest.approx(0.0, abs=0.2)
    assert metrics.added_lag(late, baseline, labels, SPEC) == pytest.approx(2.0, abs=0.2)


def test_pa_mpjpe_is_zero_for_a_rotated_scaled_copy():
    rng = np.random.default_rng(0)
    ref = rng.normal(0, 0.3, (5, SPEC.num_joints, 3))
    rot = Rotation.from_euler("xyz", [20, -35, 60], degrees=True).as_matrix()
    pred = 1.7 * ref @ rot.T + np.array([0.5, -1.0, 3.0])
    assert metrics.pa_mpjpe(pred, ref) == pytest.approx(0.0, abs=1e-6)
    noisy = ref + rng.normal(0, 0.01, ref.shape)
    assert 5 < metrics.pa_mpjpe(noisy, ref) < 20  # ~1 cm noise -> ~10 mm


def test_bone_length_cv():
    rng = np.random.default_rng(0)
    pose = rng.normal(0, 0.3, (1, 1, SPEC.num_joints, 3))
    rigid = np.concatenate([pose @ Rotation.from_euler("z", a, degrees=True).as_matrix().T for a in range(0, 90, 9)])
    assert metrics.bone_length_cv(rigid, SPEC) == pytest.approx(0.0, abs=1e-9)
    wobbly = rigid * rng.uniform(0.8, 1.2, (rigid.shape[0], 1, SPEC.num_joints, 1))
    assert metrics.bone_length_cv(wobbly, SPEC) > 0.05


def test_depth_order_agreement():
    pairs = metrics.mirror_pairs(SPEC)
    assert len(pairs) == 8 and all(SPEC.mirror_index[a] == b for a, b in pairs)
    ref = np.tile(np.linspace(2, 3, SPEC.num_joints), (10, 1))
    assert metrics.depth_order_agreement(ref + 0.01, ref, pairs) == 1.0
    flipped = ref.copy()
    flipped[:, pairs[:, 0]], flipped[:, pairs[:, 1]] = ref[:, pairs[:, 1]], ref[:, pairs[:, 0]]
    assert metrics.depth_order_agreement(flipped, ref, pairs) == 0.0
    half = ref.copy()
    half[:5] = flipped[:5]
    assert metrics.depth_order_agreement(half, ref, pairs) == pytest.approx(0.5)
    assert metrics.depth_order_counts(half, ref, pairs) == (40, 80)
    near = ref.copy()
    near[:, pairs[:, 0]] = ref[:, pairs[:, 1]] + 0.01  # every pair 1 cm apart: skipped at the 5 cm gap
    assert metrics.depth_order_counts(half, near, pairs) == (0, 0)
    assert np.isnan(metrics.depth_order_agreement(half, near, pairs))


def test_one_order_counts_is_the_majority_side_per_track_and_pair():
    pairs = metrics.mirror_pairs(SPEC)
    ref = np.tile(np.linspace(2, 3, SPEC.num_joints), (10, 2, 1))  # (T=10, N=2, K)
    assert metrics.one_order_counts(ref, pairs) == (160, 160)  # one order throughout
    turned = ref.copy()
    turned[:3, 0][:, pairs[:, 0]], turned[:3, 0][:, pairs[:, 1]] = ref[:3, 0][:, pairs[:, 1]], ref[:3, 0][:, pairs[:, 0]]
    # track 0 turns round for 3 of 10 frames: a fixed order gets at most 7 of its 10 frames per pair
    assert metrics.one_order_counts(turned, pairs) == (8 * 7 + 80, 160)
    assert metrics.depth_order_counts(ref, turned, pairs) == (8 * 7 + 80, 160)


def test_match_to_reference_follows_people():
    ref = np.concatenate([_track(10), _track(10, seed=3) + 300], 1)  # two people
    pred = ref[:, ::-1] + 1.0  # same people, other order
    ok = np.ones(ref.shape[:3], bool)
    m = metrics.match_to_reference(pred, ok, ref, ok)
    assert (m == [1, 0]).all()


def test_a_clip_where_the_model_tracks_no_one_gathers_as_unmatched():
    """No model track at all (a clip whose people are never read, as in one of depth-order's held-out clips): every
    label track is unmatched, nan / False, instead of an IndexError."""
    k = SPEC.num_joints
    none = np.zeros((4, 0, k, 2))
    match = metrics.match_to_reference(none, np.zeros(none.shape[:3], bool), _track(4), np.ones((4, 1, k), bool))
    assert (match == -1).all()
    got = metrics._gather(none, match)
    assert got.shape == (4, 1, k, 2) and np.isnan(got).all()
    assert not metrics._gather(np.zeros((4, 0, k), bool), match).any()


def test_root_depth_error_is_the_median_over_matched_frames():
    from posetracker.train.metrics import root_depth_error

    pred = np.array([[3.0, 5.0], [3.5, np.nan], [10.0, 2.0]])
    ref = np.array([[3.2, 4.0], [3.0, 1.0], [2.0, 2.0]])
    ok = np.array([[True, True], [True, True], [False, True]])
    # used: |3-3.2|, |5-4|, |3.5-3|, |2-2| (nan and not-ok skipped) -> median of .2, 1, .5, 0
    assert root_depth_error(pred, ref, ok) == pytest.approx(0.35)
    assert np.isnan(root_depth_error(pred, ref, np.zeros_like(ok)))
