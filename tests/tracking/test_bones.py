"""Bone lengths: running median estimate and rigidify."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.skeletons import load_skeleton
from posetracker.tracking import BoneLengthEstimator, BoneLengthSolver, bone_lengths, rigidify
from posetracker.tracking.bones import _mirror_pairs
from posetracker.types import PoseFrame

SPEC = load_skeleton("human18")
K, E = SPEC.num_joints, SPEC.num_edges
TRUE = np.random.default_rng(0).uniform(0.05, 0.45, E)  # metres
for _left, _right in _mirror_pairs(SPEC):  # a person's left and right bones are equally long
    TRUE[_right] = TRUE[_left]
REAL = np.array([c not in SPEC.virtual and p not in SPEC.virtual for p, c in SPEC.edges.tolist()])


def pose_from(lengths: np.ndarray, rng: np.random.Generator, root=(0.0, 0.0, 3.0)) -> np.ndarray:
    """(K, 3) world pose with random bone directions and the given lengths (..., E)."""
    w = np.zeros((K, 3))
    w[SPEC.root] = root
    d = rng.normal(size=(E, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    for e, (p, c) in enumerate(SPEC.edges.tolist()):
        w[c] = w[p] + d[e] * lengths[e]
    return w


def test_rigidify_constant_lengths_and_same_directions() -> None:
    rng = np.random.default_rng(1)
    poses = np.stack([pose_from(TRUE * rng.uniform(0.8, 1.2, E), rng) for _ in range(50)]).astype(np.float32)
    fixed = rigidify(poses, np.broadcast_to(TRUE, (50, E)), SPEC)
    assert fixed.dtype == np.float32 and fixed.shape == poses.shape
    lengths = bone_lengths(fixed, SPEC)
    assert np.ptp(lengths, axis=0).max() < 1e-4  # < 0.1 mm variation
    np.testing.assert_allclose(lengths, np.broadcast_to(TRUE, lengths.shape), atol=1e-4)
    e_dir = lambda w: (w[:, SPEC.edges[:, 1]] - w[:, SPEC.edges[:, 0]]) / bone_lengths(w, SPEC)[..., None]  # noqa: E731
    cos = np.sum(e_dir(fixed.astype(np.float64)) * e_dir(poses.astype(np.float64)), axis=-1)
    assert cos.min() > 1 - 1e-6  # directions preserved
    np.testing.assert_array_equal(fixed[:, SPEC.root], poses[:, SPEC.root])  # root stays


def test_rigidify_leaves_unknown_and_unsure_bones_and_handles_nan() -> None:
    rng = np.random.default_rng(2)
    w = pose_from(TRUE * 1.1, rng)
    lengths = TRUE.copy()
    elbow, wrist = SPEC.index("left_elbow"), SPEC.index("left_wrist")
    lengths[SPEC.edge_of_child[elbow]] = np.nan  # unknown upper arm
    out = rigidify(w, lengths, SPEC)
    vec = lambda a, j: a[j] - a[SPEC.parents[j]]  # noqa: E731
    np.testing.assert_allclose(vec(out, elbow), vec(w, elbow))  # kept, moved with its parent
    assert np.linalg.norm(vec(out, wrist)) == pytest.approx(TRUE[SPEC.edge_of_child[wrist]])
    conf = np.ones(K)
    conf[wrist] = 0.1
    out = rigidify(w, TRUE, SPEC, conf, min_confidence=0.5)
    np.testing.assert_allclose(vec(out, wrist), vec(w, wrist))
    w[elbow] = np.nan
    out = rigidify(w, TRUE, SPEC)
    assert np.isnan(out[elbow]).all()
    np.testing.assert_array_equal(out[wrist], w[wrist])  # anchor lost: left as measured
    assert np.isfinite(out[SPEC.index("right_wrist")]).all()


def test_running_median_converges_under_outliers() -> None:
    rng = np.random.default_rng(3)
    est = BoneLengthEstimator(SPEC, window=300, include_virtual=True, refresh_every=1)
    for i in range(400):
        lengths = TRUE + rng.normal(0, 0.005, E)
        bad = rng.random(E) < 0.2  # 20% outliers per bone
        lengths[bad] *= rng.uniform(0.3, 3.0, bad.sum())
        est.update(7, pose_from(lengths, rng), None, i / 30)
    got = est.lengths(7)
    assert np.abs(got - TRUE).max() < 0.004  # noise 5 mm, outliers up to 3x
    assert est.track_ids == [7]


def test_a_left_bone_and_its_right_one_get_one_length() -> None:
    rng = np.random.default_rng(5)
    est = BoneLengthEstimator(SPEC, refresh_every=1)
    read = TRUE.copy()
    thigh, other = SPEC.edge_of_child[SPEC.index("left_knee")], SPEC.edge_of_child[SPEC.index("right_knee")]
    read[thigh], read[other] = 0.50, 0.30  # one thigh read long, the other short
    for i in range(40):
        est.update(2, pose_from(read + rng.normal(0, 0.01, E), rng), None, i / 30)
    got = est.lengths(2)
    assert got[thigh] == got[other] and got[thigh] == pytest.approx(0.40, abs=0.03)
    assert {SPEC.joint_names[SPEC.edges[e][1]] for pair in _mirror_pairs(SPEC) for e in pair} >= {
        "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_knee", "right_knee", "left_ankle", "right_ankle"}


def test_estimator_needs_confident_samples_and_skips_virtual_bones() -> None:
    rng = np.random.default_rng(4)
    est = BoneLengthEstimator(SPEC, min_samples=20, min_confidence=0.5, refresh_every=1)
    conf = np.ones(K)
    knee = SPEC.index("left_knee")
    conf[knee] = 0.2  # thigh and shin never confident
    for i in range(30):
        est.update(1, pose_from(TRUE, rng), conf, i / 30)
    got = est.lengths(1)
    assert np.all(np.isnan(got[~REAL]))  # bones from the virtual centre: not estimated
    unsure = [SPEC.edge_of_child[knee], SPEC.edge_of_child[SPEC.index("left_ankle")]]
    assert np.all(np.isnan(got[unsure]))
    ok = REAL.copy()
    ok[unsure] = False
    np.testing.assert_allclose(got[ok], TRUE[ok], atol=1e-9)
    assert np.all(np.isnan(est.lengths(99)))


def test_solver_per_track() -> None:
    rng = np.random.default_rng(5)
    solver = BoneLengthSolver(SPEC, rigidify=True, min_samples=10)
    other = TRUE * 1.15  # another, larger person
    outs = []
    for i in range(60):
        world = np.stack([pose_from(TRUE * rng.uniform(0.9, 1.1, E), rng), pose_from(other * rng.uniform(0.9, 1.1, E), rng)])
        f = PoseFrame(
            index=i,
            timestamp=i / 30,
            keypoints=np.zeros((2, K, 3), np.float32),
            confidence=np.ones((2, K), np.float32),
            scores=np.ones(2, np.float32),
            track_ids=np.array([0, 1], np.int64),
            world=world.astype(np.float32),
        )
        got = bone_lengths(solver(f).world, SPEC)
        if i >= 10:  # enforced: exactly the current per-track estimate
            want = np.stack([solver.estimator.lengths(0), solver.estimator.lengths(1)])
            np.testing.assert_allclose(got[:, REAL], want[:, REAL], atol=1e-4)
        outs.append(got)
    late = np.array(outs[30:])  # (30, 2, E)
    assert np.ptp(late[..., REAL], axis=0).max() < 0.01  # the median settles
    np.testing.assert_allclose(late[:, 0, REAL].mean(0), TRUE[REAL], atol=0.01)
    np.testing.assert_allclose(late[:, 1, REAL].mean(0), other[REAL], atol=0.01)
    assert np.ptp(late[..., ~REAL], axis=0).min() > 1e-3  # virtual bones left as measured
    plain = BoneLengthSolver(SPEC, rigidify=False)
    assert plain(f) is f and plain.estimator.track_ids == [0, 1]


def noisy_sequence(people: int, seed: int, frames: int = 60, noise_m: float = 0.03):
    """A synthetic walk (test_bvh_synthetic) whose world joints carry ``noise_m`` of Gaussian noise: (the clean
    sequence, the noisy frames, the indices of the anatomical bones, i.e. not touching the virtual centre)."""
    import dataclasses

    from test_bvh_synthetic import make_sequence

    seq = make_sequence(frames, people=people, seed=seed)
    rng = np.random.default_rng(seed)
    noisy = [dataclasses.replace(f, world=(f.world + rng.normal(0, noise_m, f.world.shape)).astype(np.float32))
             for f in seq.frames]
    spec = seq.skeleton
    anatomical = [e for e, (a, c) in enumerate(spec.edges.tolist()) if spec.index("centre") not in (a, c)]
    return seq, noisy, anatomical


def test_rigid_tracks_gives_each_track_one_length_per_bone():
    """Offline rigid bones (issue #22 item 6): every confident bone of a track has one length over the recording."""
    from posetracker.tracking.bones import rigid_tracks

    seq, noisy, anatomical = noisy_sequence(people=2, seed=3)
    spec = seq.skeleton
    before = np.stack([bone_lengths(f.world, spec) for f in noisy])[..., anatomical]  # (T, P, E')
    after = np.stack([bone_lengths(f.world, spec) for f in rigid_tracks(noisy, spec)])[..., anatomical]
    assert (before.std(0) / before.mean(0)).min() > 0.02
    np.testing.assert_allclose(after.std(0), 0.0, atol=1e-5)
    truth = np.stack([bone_lengths(f.world, spec) for f in seq.frames])[..., anatomical].mean(0)
    limbs = truth > 0.2  # (short face bones: 3 cm of noise lengthens them)
    np.testing.assert_allclose(after[0][limbs], truth[limbs], rtol=0.05)  # the median of noisy lengths: the true ones


def test_settle_bones_makes_a_live_result_rigid_and_leaves_the_rest():
    """Exports of a live result (running-median bones) carry one length per bone over the recording."""
    import dataclasses

    from posetracker.tracking.bones import settle_bones

    seq, noisy, anatomical = noisy_sequence(people=1, seed=4)
    spec = seq.skeleton

    def spread(s) -> float:
        lengths = np.stack([bone_lengths(f.world, spec) for f in s.frames])[..., anatomical]
        return float(lengths.std(0).max())

    live = dataclasses.replace(seq, frames=noisy, metadata={"mode": "live"})
    settled = settle_bones(live)
    assert spread(live) > 0.01 and spread(settled) < 1e-5
    assert settled.metadata["bones"] == "recording" and settle_bones(settled) is settled
    for meta in ({"mode": "offline"}, {"mode": "live", "bones": "raw"}):
        other = dataclasses.replace(live, metadata=meta)
        assert settle_bones(other) is other
