"""Standing height from 3-D joints (analysis.stature): the metric-scale check of exports and clip-eval."""

from __future__ import annotations

import numpy as np

from posetracker.analysis.stature import CHAIN_FRACTION, stature, stature_per_frame, track_statures
from posetracker.skeletons import load_skeleton

SPEC = load_skeleton("human18")
# heights above the floor as fractions of stature (Drillis and Contini), the chain's joints
FRACTIONS = {"ankle": 0.039, "knee": 0.285, "hip": 0.530, "shoulder": 0.818, "ear": 0.936}


def standing(height: float, frames: int = 8) -> np.ndarray:
    """(frames, 18, 3) m: an upright person facing the camera, y down, feet at y = 0."""
    w = np.zeros((frames, SPEC.num_joints, 3))
    for side, x in (("left", -0.1), ("right", 0.1)):
        for part, f in FRACTIONS.items():
            w[:, SPEC.index(f"{side}_{part}")] = [x * (1.5 if part == "shoulder" else 1.0), -f * height, 3.0]
    return w


def test_an_upright_person_measures_their_height():
    ok = np.ones((8, SPEC.num_joints), bool)
    for h in (1.2, 1.65, 1.9):
        assert abs(stature(standing(h), ok, SPEC) - h) < 1e-9
    assert abs(CHAIN_FRACTION - (FRACTIONS["ear"] - FRACTIONS["ankle"])) < 1e-9  # the chain is ear minus ankle here


def test_a_side_view_needs_one_leg_and_one_ear_and_gaps_are_skipped():
    w, ok = standing(1.7), np.ones((8, SPEC.num_joints), bool)
    ok[:, SPEC.index("right_ankle")] = False  # the far leg hidden
    ok[:, SPEC.index("right_ear")] = False
    # one ear sits 10 cm off the body's mid line here: within 2%
    np.testing.assert_allclose(stature_per_frame(w, ok, SPEC), 1.7, rtol=0.02)
    ok[:3, SPEC.index("left_hip")] = False  # no hip line in three frames
    per = stature_per_frame(w, ok, SPEC)
    assert np.isnan(per[:3]).all() and np.allclose(per[3:], 1.7, rtol=0.02)
    assert np.isnan(stature(w, ok, SPEC, min_frames=6))  # five whole frames are not enough for six


def test_the_median_resists_a_crouching_frame_and_tracks_are_separate():
    w = np.stack([standing(1.6), standing(1.8)], axis=1)  # (T, 2, K, 3)
    w[0, 0] *= 0.5  # one frame of track 0 half the size (a bad reading)
    ok = np.ones(w.shape[:3], bool)
    ok[:, 1] &= np.arange(8)[:, None] < 3  # track 1 seen in three frames only
    (n0, h0), (n1, h1) = track_statures(w, ok, SPEC)
    assert (n0, n1) == (8, 3)
    assert abs(h0 - 1.6) < 1e-9 and np.isnan(h1)
