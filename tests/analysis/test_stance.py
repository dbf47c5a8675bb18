"""Stance phases of the track's own ankles (analysis.stance): label swaps undone, moving ground left out, slow
steps cut out of a phase, slides."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.analysis.foot_contact import CONTACT, SWING, UNKNOWN, FootContacts
from posetracker.analysis.stance import (
    ContactPhase, ankle_contact, contact_phases, image_slide, phase_slides, slide, still_parts,
)


def contacts(state: np.ndarray, swaps=(), ground: np.ndarray | None = None, position: np.ndarray | None = None,
             leg: float = 100.0) -> FootContacts:
    """A FootContacts with the given (T, 2) contact states (repaired labels), swaps, ground (T, 2), feet (T, 2, 2)."""
    t = len(state)
    return FootContacts(
        frames=np.arange(t), times=np.arange(t) / 30.0,
        position=np.zeros((t, 2, 2)) if position is None else position, leg=np.full(t, leg),
        ground=np.zeros((t, 2)) if ground is None else ground, speed=np.zeros((t, 2)),
        contact=np.asarray(state, np.int8), thresholds=np.ones((2, 2)), swaps=np.array(swaps, np.int64),
        bridged=np.zeros((t, 2), bool))


def test_swapped_labels_go_back_to_the_tracks_ankles():
    state = np.array([[CONTACT, SWING]] * 5 + [[SWING, CONTACT]] * 5 + [[UNKNOWN, CONTACT]] * 2, np.int8)
    mine = ankle_contact(contacts(state, swaps=[5, 10]))
    np.testing.assert_array_equal(mine[:5], state[:5])  # before the first swap: as repaired
    np.testing.assert_array_equal(mine[5:10], state[5:10, ::-1])  # the track's "left" is the repaired "right"
    np.testing.assert_array_equal(mine[10:], state[10:])  # swapped back


def test_phases_are_cut_at_swaps_and_leave_moving_ground_out():
    state = np.full((30, 2), CONTACT, np.int8)
    state[12:15, 0] = SWING
    ground = np.zeros((30, 2))
    ground[25:, 0] = 1.0  # a treadmill from frame 25: not a floor
    phases = contact_phases(contacts(state, swaps=[8], ground=ground))
    left = [(p.start, p.stop) for p in phases if p.foot == 0]
    right = [(p.start, p.stop) for p in phases if p.foot == 1]
    assert left == [(0, 8), (8, 25)]  # from 8 the track's left is the repaired right: in contact, cut at the swap
    assert right == [(0, 8), (8, 12), (15, 25)]  # ... and the track's right the repaired left (swing 12-15)
    usable = np.ones((30, 2), bool)
    usable[3, 1] = False
    assert [(p.start, p.stop) for p in contact_phases(contacts(state, ground=ground), usable) if p.foot == 1] \
        == [(0, 3), (4, 25)]
    with pytest.raises(ValueError, match="usable"):
        contact_phases(contacts(state), np.ones(29, bool))


def test_a_slow_step_read_as_stance_is_cut_out():
    """30 frames of 'contact' in which the foot stands, steps 60 px (0.6 leg lengths) over frames 12-18, stands."""
    t = 30
    x = np.concatenate([np.zeros(12), np.linspace(0, 60, 7)[1:], np.full(t - 18, 60.0)])
    position = np.zeros((t, 2, 2))
    position[:, 0, 0] = x + np.random.default_rng(0).normal(0, 0.5, t)
    c = contacts(np.full((t, 2), CONTACT, np.int8), position=position)
    whole = [p for p in contact_phases(c) if p.foot == 0]
    assert whole == [ContactPhase(0, 0, 30)] and image_slide(c, whole[0]) > 0.55
    parts = still_parts(c, whole, max_image_slide=0.2, min_frames=3)
    assert len(parts) == 2 and parts[0].start == 0 and parts[1].stop == 30
    assert parts[0].stop <= 14 and parts[1].start >= 16  # the frames that carry the foot are out
    assert all(image_slide(c, p) <= 0.2 for p in parts)
    # a foot that stands still keeps its whole phase
    still = contacts(np.full((t, 2), CONTACT, np.int8))
    assert still_parts(still, contact_phases(still)) == contact_phases(still)


def test_slide_is_the_largest_distance_between_two_positions():
    assert slide(np.array([[0.0, 0, 0], [0.03, 0.04, 0], [0.01, 0, 0]])) == pytest.approx(0.05)
    assert slide(np.array([[1.0, 2, 3]])) == 0.0 and np.isnan(slide(np.full((3, 3), np.nan)))
    ankles = np.zeros((10, 2, 3))
    ankles[5:, 1, 2] = 0.1
    np.testing.assert_allclose(phase_slides(ankles, [ContactPhase(1, 0, 5), ContactPhase(1, 3, 8)]), [0.0, 0.1])
    with pytest.raises(ValueError, match=r"\(T, 2, 3\)"):
        phase_slides(np.zeros((10, 3)), [])
