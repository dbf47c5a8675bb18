"""A foot's contact state per frame (``CONTACT``, ``SWING``, ``UNKNOWN``) and the rules on its runs.

:func:`hysteresis` reads the states from a speed, :func:`trim_ends` ends each contact at its last slow frame,
:func:`drop_short` fills runs too short to be real, and :func:`repair_swaps` undoes left-right label swaps of
the two feet. :mod:`posetracker.analysis.foot_contact` applies them (its docstring says why and with what
thresholds); shapes: T = frames, F = 2 feet (left, right).
"""

from __future__ import annotations

import numpy as np

from posetracker.tracks import frame_time, runs

CONTACT, SWING, UNKNOWN = 1, 0, -1


def hysteresis(speed: np.ndarray, on: float, off: float) -> np.ndarray:
    """(T,) int8 contact state from (T,) speed: CONTACT below ``on``, SWING above ``off``, else as before."""
    state = np.full(speed.shape[0], UNKNOWN, np.int8)
    prev = UNKNOWN
    for i, s in enumerate(speed):
        if not np.isfinite(s):
            prev = UNKNOWN
        elif s < on:
            prev = CONTACT
        elif s > off:
            prev = SWING
        elif prev == UNKNOWN:
            prev = CONTACT if s < 0.5 * (on + off) else SWING
        state[i] = prev
    return state


def trim_ends(state: np.ndarray, speed: np.ndarray, on: float) -> np.ndarray:
    """End each contact run at its last frame below ``on``: the frames where the foot is already
    speeding up (above ``on``, not yet above ``off``) are swing, so both edges sit at the same level."""
    out = state.copy()
    for a, b in runs(state == CONTACT):
        end = b
        while end > a + 1 and speed[end - 1] >= on:
            end -= 1
        if b < len(state) and state[b] == SWING:
            out[end:b] = SWING
    return out


def drop_short(state: np.ndarray, value: int, min_len: int) -> np.ndarray:
    """Runs of ``value`` shorter than ``min_len`` frames, with one known other state on both sides, take it."""
    out = state.copy()
    for a, b in runs(state == value):
        if b - a >= min_len or a == 0 or b == len(state):
            continue
        left, right = state[a - 1], state[b]
        if left == right and left != UNKNOWN:
            out[a:b] = left
    return out


def swap_after(arr: np.ndarray, start: int) -> None:
    """Exchange the left and right columns (axis 1) of ``arr`` from index ``start`` on, in place."""
    arr[start:] = arr[start:, ::-1].copy()


def contact_starts(state: np.ndarray) -> np.ndarray:
    """Indices where a (T,) state array enters CONTACT from anything else."""
    c = state == CONTACT
    return np.flatnonzero(c[1:] & ~c[:-1]) + 1


def contact_ends(state: np.ndarray) -> np.ndarray:
    """Indices of the first frame after each CONTACT run that is followed by a frame (swing or unknown)."""
    c = state == CONTACT
    return np.flatnonzero(c[:-1] & ~c[1:]) + 1


def _first_swap(contact: np.ndarray, position: np.ndarray, leg: np.ndarray, k: int, near: float,
                done: int) -> tuple[int, int, int] | None:
    """The earliest swap at or after ``done``: (first frame, frame after the blend, label of the standing foot)."""
    best = None
    for f in range(2):
        o = 1 - f
        ends = contact_ends(contact[:, o])
        for i in contact_starts(contact[:, f]):
            for b in ends[(np.abs(ends - i) <= k)]:
                lo, hi = int(min(b, i)), int(max(b, i))
                if lo < done or (best is not None and lo >= best[0]):
                    continue
                if np.linalg.norm(position[i, f] - position[b - 1, o]) < near * leg[i]:
                    best = (lo, hi, o)
    return best


def repair_swaps(contact: np.ndarray, position: np.ndarray, leg: np.ndarray, times: np.ndarray,
                 within_s: float = 0.15, near: float = 0.3) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Undo left-right label swaps of the feet (side views: the network may name the front foot "left").

    contact: (T, F) int8 states; position: (T, F, 2) px; leg: (T,) px.
    A swap shows as one label ending a contact (at ``b``) and the other starting one
    (at ``i``) within ``within_s`` seconds at the same place (closer than ``near`` leg
    lengths): the standing foot did not move, only its label did. Walking never lands a
    foot where the other is lifting off. From ``min(b, i)`` on the labels are exchanged;
    up to ``max(b, i)`` the label of the standing foot is in contact and the other in
    swing wherever they were seen (unseen frames stay unknown). Returns (contact,
    position, swap indices), new arrays.
    """
    contact, position = contact.copy(), position.copy()
    k = max(1, int(round(within_s / frame_time(times, 30.0))))
    swaps: list[int] = []
    done = 0
    while True:
        hit = _first_swap(contact, position, leg, k, near, done)
        if hit is None:
            return contact, position, swaps
        lo, hi, standing = hit
        swap_after(contact, lo)
        swap_after(position, lo)
        seen = contact[lo:hi] != UNKNOWN
        contact[lo:hi, standing][seen[:, standing]] = CONTACT
        contact[lo:hi, 1 - standing][seen[:, 1 - standing]] = SWING
        swaps.append(lo)
        done = hi
