"""The live tracking stage's cheaper forms give exactly numpy's numbers (issue #46, studies/runtime-speed.md):
medians as the mean of the middle two, the first person of each track as np.unique, bone-pair medians as
np.nanmedian, OKS of stacked tracks row by row, mirror-pair distances as np.linalg.norm."""

from __future__ import annotations

from collections import deque

import numpy as np

from posetracker.depth.far_depth import _median
from posetracker.oks import keypoint_bbox_area
from posetracker.skeletons import load_skeleton
from posetracker.tracking.bones import BoneLengthEstimator, _mirror_pairs
from posetracker.tracking.mirror import crossed_pairs, mirror_pairs
from posetracker.tracking.similarity import oks_matrix
from posetracker.tracking.smoothing import first_of_tracks
from posetracker.tracking.tracker import median_over_joints


def test_median_over_joints_is_numpys_median() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        m, k = rng.integers(1, 5), rng.integers(1, 19)
        v = rng.normal(0, 50, (m, k, 2))
        ok = rng.random((m, k)) < 0.7
        got = median_over_joints(np.where(ok[..., None], v, rng.choice([np.nan, 1e9], v.shape)), ok)
        for i in range(m):
            want = np.median(v[i][ok[i]], axis=0) if ok[i].any() else np.full(2, np.nan)
            assert np.array_equal(got[i], want, equal_nan=True)


def test_plain_median_is_numpys_median() -> None:
    rng = np.random.default_rng(1)
    for n in range(1, 70):
        values = deque(rng.lognormal(0, 1, n).tolist(), maxlen=60)
        assert _median(values) == float(np.median(values))


def test_first_of_tracks_is_np_unique() -> None:
    rng = np.random.default_rng(2)
    for _ in range(200):
        ids = rng.integers(-1, 6, rng.integers(0, 9)).astype(np.int64)
        u, first = np.unique(ids, return_index=True)
        assert np.array_equal(first_of_tracks(ids), first[u >= 0])


def test_bone_pair_medians_are_nanmedians() -> None:
    spec = load_skeleton("human18")
    rng = np.random.default_rng(3)
    est = BoneLengthEstimator(spec, window=40, min_samples=5, refresh_every=1)
    for t in range(55):  # the ring buffer wraps
        world = rng.normal(0, 0.4, (spec.num_joints, 3)) + [0, 0, 3]
        est.update(7, world, (rng.random(spec.num_joints) < 0.8).astype(np.float32), t / 30)
        got = est.lengths(7)
        filled = est._buffers[7].samples[: min(est._buffers[7].count, est.window)]
        n = (~np.isnan(filled)).sum(0)
        for e, m in _mirror_pairs(spec):
            if n[e] >= 5 and n[m] >= 5:
                want = float(np.nanmedian(np.concatenate([filled[:, e], filled[:, m]])))
                assert got[e] == want and got[m] == want


def test_stacked_oks_rows_and_pair_distances_are_unchanged() -> None:
    spec = load_skeleton("human18")
    rng = np.random.default_rng(4)
    k = spec.num_joints
    sigmas = np.full(k, 0.07)
    trk, det = rng.normal(300, 80, (3, k, 2)), rng.normal(300, 80, (2, k, 2))
    t_ok, d_ok = rng.random((3, k)) < 0.8, rng.random((2, k)) < 0.8
    area_t, area_d = rng.uniform(1e3, 1e5, 3), rng.uniform(1e3, 1e5, 2)
    both = oks_matrix(np.concatenate([trk, trk + 5]), np.concatenate([t_ok, t_ok]), np.concatenate([area_t, area_t]),
                      det, d_ok, area_d, sigmas)
    assert np.array_equal(both[:3], oks_matrix(trk, t_ok, area_t, det, d_ok, area_d, sigmas))
    assert np.array_equal(both[3:], oks_matrix(trk + 5, t_ok, area_t, det, d_ok, area_d, sigmas))
    pairs = mirror_pairs(spec)
    ref = det[:, spec.mirror_index] + rng.normal(0, 3, det.shape)  # most pairs crossed, give or take noise
    crossed = crossed_pairs(det, d_ok, ref, d_ok, pairs)
    a, b = pairs[:, 0], pairs[:, 1]  # the form before: four np.linalg.norm calls
    straight = np.linalg.norm(det[:, a] - ref[:, a], axis=-1) + np.linalg.norm(det[:, b] - ref[:, b], axis=-1)
    across = np.linalg.norm(det[:, a] - ref[:, b], axis=-1) + np.linalg.norm(det[:, b] - ref[:, a], axis=-1)
    size = np.sqrt(keypoint_bbox_area(det, d_ok))
    want = d_ok[:, a] & d_ok[:, b] & (across < 0.5 * straight) & (straight - across > 0.1 * size[:, None])
    assert want.any() and np.array_equal(crossed, want)
