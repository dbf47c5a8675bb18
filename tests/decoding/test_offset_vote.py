"""Keypoint positions voted by the offsets around a peak (decoding.peaks.vote_offsets).

A joint's heatmap is a blob several cells wide and every cell of it regresses the joint's
position (cell + offset). Synthetic maps with the offsets' errors fixed per cell (as a
trained head's are: the same cell errs the same way from frame to frame) check that the
vote is steadier than the peak cell's own read, that radius 0 is that read, and that a
neighbouring person's joint does not vote.
"""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.decoding.peaks import keypoint_candidates, vote_offsets
from posetracker.decoding.tree import VOTE_RADIUS, TreeDecoder
from posetracker.session_config import PeopleSettings, SessionConfig

H = W = 24


def maps(points: list[tuple[float, float]], bias: np.ndarray, sigma: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    """Heatmap (1, H, W) with a Gaussian blob at each (x, y) cell position and offsets (2, H, W) pointing at the
    nearest blob's centre, plus ``bias`` (2, H, W): the per-cell error of a regression head."""
    yy, xx = np.mgrid[:H, :W].astype(np.float64)
    heat = np.zeros((1, H, W))
    off = np.zeros((2, H, W))
    near = np.full((H, W), np.inf)
    for x, y in points:
        d2 = (xx - x) ** 2 + (yy - y) ** 2
        heat[0] = np.maximum(heat[0], np.exp(-d2 / (2 * sigma**2)))
        closer = d2 < near
        off[0][closer], off[1][closer] = (x - xx)[closer], (y - yy)[closer]
        near = np.minimum(near, d2)
    return heat, off + bias


def read(heat: np.ndarray, off: np.ndarray, radius: int) -> np.ndarray:
    """(C, 2) candidate positions of joint 0, strongest first."""
    c = keypoint_candidates(heat, (0,), 0.1, 4, off, max_offset=2.0, vote_radius=radius)
    return c.xy[0][c.valid[0]]


def test_radius_zero_is_the_peak_cells_own_offset():
    bias = np.random.default_rng(1).normal(0, 0.3, (2, H, W))
    heat, off = maps([(8.3, 11.6)], bias)
    xy = read(heat, off, 0)[0]
    assert np.allclose(xy, [8 + off[0, 12, 8], 12 + off[1, 12, 8]])


def test_a_moving_joint_is_read_steadier_and_as_close_by_the_vote():
    """A joint gliding 0.13 cells a frame over fixed per-cell errors: the peak cell's read jumps where the peak
    changes cell; the vote's mean second difference is at most half of it and its error no larger."""
    rng = np.random.default_rng(0)
    bias = rng.normal(0, 0.25, (2, H, W))
    xs = 6.0 + 0.13 * np.arange(60)
    truth = np.stack([xs, 10.0 + 0.05 * np.arange(60)], axis=1)
    tracks = {r: np.array([read(*maps([tuple(p)], bias), r)[0] for p in truth]) for r in (0, VOTE_RADIUS)}
    accel = {r: np.linalg.norm(np.diff(t, 2, axis=0), axis=1).mean() for r, t in tracks.items()}
    error = {r: np.linalg.norm(t - truth, axis=1).mean() for r, t in tracks.items()}
    assert accel[VOTE_RADIUS] < 0.5 * accel[0]
    assert error[VOTE_RADIUS] <= error[0]


def test_a_neighbouring_persons_joint_does_not_vote():
    """Two wrists 3 cells apart (two people side by side): each peak's vote stays on its own wrist."""
    heat, off = maps([(8.4, 10.2), (11.4, 10.2)], np.zeros((2, H, W)))
    xy = read(heat, off, VOTE_RADIUS)
    assert len(xy) == 2
    for want in ((8.4, 10.2), (11.4, 10.2)):
        assert np.min(np.linalg.norm(xy - np.array(want), axis=1)) < 0.05


def test_a_peak_without_agreeing_votes_keeps_its_own_read():
    """Neighbours all pointing more than ``agree`` cells away: the peak cell's own offset stays."""
    heat = np.zeros((1, H, W))
    heat[0, 5, 5] = 1.0
    heat[0, 4:7, 4:7] = np.maximum(heat[0, 4:7, 4:7], 0.5)
    off = np.zeros((2, H, W))
    off[:, 4:7, 4:7] = 3.0  # every neighbour votes ~3 cells off
    off[:, 5, 5] = 0.2
    shift = vote_offsets(heat, off, np.array([0]), np.array([5]), np.array([5]), 2, 1.5)
    assert np.allclose(shift, [[0.2, 0.2]])


def test_the_radius_is_a_decoder_and_session_setting():
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("human18")
    assert TreeDecoder(spec).vote_radius == VOTE_RADIUS
    assert TreeDecoder(spec, vote_radius=0).vote_radius == 0
    with pytest.raises(ValueError):
        TreeDecoder(spec, vote_radius=-1)
    with pytest.raises(ValueError):
        SessionConfig(people=PeopleSettings(vote_radius=-1))
