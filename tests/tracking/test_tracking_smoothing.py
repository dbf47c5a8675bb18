"""PoseSmoother: per-track One Euro smoothing of tracked PoseFrames."""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import load_skeleton
from posetracker.tracking import OneEuroParams, PoseSmoother, PoseTracker, preset
from posetracker.types import PoseFrame

SPEC = load_skeleton("human18")
K = SPEC.num_joints
FPS = 30.0


def frame(i: int, kp: np.ndarray, ids: list[int], conf: np.ndarray | None = None, world: np.ndarray | None = None) -> PoseFrame:
    p = kp.shape[0]
    return PoseFrame(
        index=i,
        timestamp=i / FPS,
        keypoints=kp.astype(np.float32),
        confidence=np.full((p, K), 0.9, np.float32) if conf is None else conf.astype(np.float32),
        scores=np.ones(p, np.float32),
        track_ids=np.array(ids, np.int64),
        world=None if world is None else world.astype(np.float32),
    )


def test_jitter_reduced_for_tracked_people_only() -> None:
    rng = np.random.default_rng(0)
    base = np.concatenate([rng.uniform(100, 900, (2, K, 2)), np.full((2, K, 1), 3.0)], axis=-1)
    wbase = rng.uniform(-1, 1, (2, K, 3))
    sm = PoseSmoother(SPEC)
    raw, out, wraw, wout = [], [], [], []
    for i in range(200):
        kp = base + np.concatenate([rng.normal(0, 2.0, (2, K, 2)), rng.normal(0, 0.02, (2, K, 1))], axis=-1)
        w = wbase + rng.normal(0, 0.01, wbase.shape)
        f = frame(i, kp, [4, -1], world=w)
        res = sm(f)
        assert res.keypoints.dtype == np.float32 and res.world.dtype == np.float32
        assert np.array_equal(res.keypoints[1], f.keypoints[1])  # id -1 passes through
        assert np.array_equal(res.confidence, f.confidence)
        raw.append(f.keypoints[0])
        out.append(res.keypoints[0])
        wraw.append(f.world[0])
        wout.append(res.world[0])
    for a, b in ((raw, out), (wraw, wout)):
        a, b = np.array(a)[30:], np.array(b)[30:]
        jitter = np.diff(a, axis=0).std(axis=0) / np.diff(b, axis=0).std(axis=0)
        assert np.all(jitter > 4.0)  # frame-to-frame jitter of x, y, z and world xyz
    assert sm.track_ids == [4]


def test_low_confidence_joint_moves_with_body() -> None:
    rng = np.random.default_rng(1)
    pose = np.concatenate([rng.uniform(-100, 100, (K, 2)), np.full((K, 1), 3.0)], axis=-1)
    wrist = SPEC.index("left_wrist")
    sm = PoseSmoother(SPEC)
    for i in range(60):
        kp = pose + [10.0 * i, 0.0, 0.0]  # walking right, 300 px/s
        conf = np.full((1, K), 0.9)
        if i >= 40:
            kp[wrist] = [-999.0, -999.0, 9.0]  # garbage while unsure
            conf[0, wrist] = 0.1
        res = sm(frame(i, kp[None] + 500, [0], conf))
        if i >= 40:
            root = res.keypoints[0, SPEC.root]
            rel = res.keypoints[0, wrist] - root
            np.testing.assert_allclose(rel, (pose[wrist] - pose[SPEC.root]), atol=1e-3)
            assert abs(root[0] - (500 + pose[SPEC.root, 0] + 10.0 * i)) < 20  # the body follows


def test_nan_depth_stays_nan_and_track_dropped_after_gap() -> None:
    sm = PoseSmoother(SPEC, "offline", drop_after=0.5)
    kp = np.full((1, K, 3), 100.0)
    kp[0, :, 2] = np.nan
    res = sm(frame(0, kp, [2]))
    assert np.all(np.isnan(res.keypoints[..., 2]))
    sm(frame(1, kp + 1.0, [2]))
    far = kp + 50.0
    res = sm(frame(5, far, [2]))  # 4 frames later: same filter, smoothed
    assert np.all(res.keypoints[0, :, 0] < 150.0)
    res = sm(frame(30, far + 50.0, [2]))  # > 0.5 s unseen: new filter, passes through
    np.testing.assert_array_equal(res.keypoints[0, :, :2], far[0, :, :2] + 50.0)
    sm.forget([2])
    assert sm.track_ids == []


def test_explicit_params_and_tracker_chain() -> None:
    sm = PoseSmoother(SPEC, OneEuroParams(1.0, 0.0, 1.0), preset("live", "m"))
    assert sm.pixel_params.beta == 0.0 and sm.metric_params == preset("live", "m")
    tracker = PoseTracker(SPEC)
    rng = np.random.default_rng(2)
    kp = np.concatenate([rng.uniform(100, 300, (1, K, 2)), np.full((1, K, 1), 2.0)], axis=-1)
    for i in range(10):
        res = sm(tracker(frame(i, kp + rng.normal(0, 1, kp.shape), [-1])))
    assert res.track_ids.tolist() == [0] and sm.track_ids == [0]


def test_seek_back_resets_filters() -> None:
    sm = PoseSmoother(SPEC)
    kp = np.full((1, K, 3), 100.0)
    for i in range(5):
        sm(frame(10 + i, kp + i, [0]))
    res = sm(frame(0, kp + 300.0, [0]))  # earlier timestamp: fresh filter, passes through
    np.testing.assert_array_equal(res.keypoints, (kp + 300.0).astype(np.float32))


def smoothed_track(scale: float, reference_size: float | None, large_params="auto") -> np.ndarray:
    """A noisy person walking and waving, drawn at ``scale`` x its size -> smoothed keypoints (T, K, 3)."""
    rng = np.random.default_rng(5)
    pose = np.concatenate([rng.uniform(0, 300, (K, 2)), np.full((K, 1), 3.0)], axis=-1)  # ~420 px box diagonal
    sm = PoseSmoother(SPEC, reference_size=reference_size, large_params=large_params)
    out = []
    for i in range(90):
        kp = pose + [6.0 * i, 40.0 * np.sin(i / 4.0), 0.0]
        kp[:, :2] += rng.normal(0, 3.0, (K, 2))
        kp[:, :2] *= scale
        out.append(sm(frame(i, kp[None], [1])).keypoints[0])
    return np.array(out)


def test_pixels_smoothed_relative_to_the_person_size() -> None:
    """The same motion drawn 10x smaller (a far person) is smoothed to the same result, 10x smaller:
    the cutoff follows speed relative to the body, so a small fast runner does not lag more;
    people bigger than the reference size keep the pixel beta. (Live, large people also get their own
    cutoffs, LARGE_LIVE_PX: tests/tracking/test_smoothing_large_people.py; switched off here.)"""
    near, far = smoothed_track(1.0, 450.0, None), smoothed_track(0.1, 450.0, None)
    np.testing.assert_allclose(far[..., :2] * 10.0, near[..., :2], atol=1e-2)
    np.testing.assert_allclose(far[..., 2], near[..., 2], atol=1e-6)  # depth (m) unaffected
    np.testing.assert_array_equal(smoothed_track(0.1, 450.0), far)  # the live default: a small person as before
    plain_far = smoothed_track(0.1, None, None)  # plain pixel units: the small person is smoothed harder, lagging
    assert np.abs(plain_far[..., :2] * 10.0 - near[..., :2]).mean() > 3.0  # ~10 px at the near person's size
    # a person bigger than the reference (a close-up) keeps the pixel parameters: no extra lag
    np.testing.assert_array_equal(smoothed_track(3.0, 450.0), smoothed_track(3.0, None))
