"""Contact phases of each ankle joint of a track, in the track's own labels, and what the ankle does in them.

:func:`~posetracker.analysis.foot_contact.foot_contacts` gives per-frame contact of the two
*feet*, with the network's left-right label swaps undone (``FootContacts.swaps``): from
each swap on, its column 0 is the joint the track names "right". The 3-D consumers (the
floor fit, the BVH foot lock) read the track's joints as named, so :func:`ankle_contact`
maps the contact back to them, and :func:`contact_phases` cuts every phase at a swap
(the track's ankle jumps to the other foot there).

A phase is a run of contact frames of one ankle where the ground is *still*: the
estimated ground velocity is at most ``max_ground_speed`` leg lengths per second (a
treadmill belt or a panning camera moves the "standing" foot in camera space, so it
cannot stand on a floor there). :func:`still_parts` then keeps the parts of each phase
where the foot point stands still in the image (at most ``MAX_IMAGE_SLIDE`` leg lengths
over the part): the 2-D contact misses steps slower than its swing threshold (a
shuffle, a turn, a first step), and a foot held there would be dragged along.

Shapes: T = frames of the track, F = 2 feet (left, right), P = phases.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.analysis.foot_contact import CONTACT, FEET, FootContacts
from posetracker.tracks import runs

#: ground speed (leg lengths / s) below which the ground counts as still (ContactSettings.min_speed)
STILL_GROUND = 0.3
#: most a standing foot point moves in the image over a phase, leg lengths (the stance phases of the older
#: woman's walk: 0.05-0.21, median 0.12; a slow step read as stance: 0.4-0.8)
MAX_IMAGE_SLIDE = 0.2


@dataclass(frozen=True)
class ContactPhase:
    """Frames [start, stop) (track indices) where the ankle ``FEET[foot]`` (as the track names it) stands."""

    foot: int
    start: int
    stop: int

    @property
    def side(self) -> str:
        return FEET[self.foot]

    def __len__(self) -> int:
        return self.stop - self.start


def swap_parity(num_frames: int, swaps: np.ndarray) -> np.ndarray:
    """(T,) bool: an odd number of the (S,) swap indices lie at or before each frame."""
    count = np.zeros(num_frames, np.int64)
    for s in np.asarray(swaps, np.int64):
        count[int(s):] += 1
    return count % 2 == 1


def track_labels(values: np.ndarray, contacts: FootContacts) -> np.ndarray:
    """(T, F, ...) per-foot values of ``contacts`` (repaired labels) -> the same for the track's own
    ``{FEET[f]}_ankle`` joints: after an odd number of swaps the joint named "left" is the foot the repaired
    contact calls "right"."""
    out = np.array(values, copy=True)
    odd = swap_parity(contacts.num_frames, contacts.swaps)
    out[odd] = np.asarray(values)[odd][:, ::-1]
    return out


def ankle_contact(contacts: FootContacts) -> np.ndarray:
    """(T, F) int8 contact state (1 contact, 0 swing, -1 unknown) of the track's own ankle joints."""
    return track_labels(contacts.contact, contacts)


def image_slide(contacts: FootContacts, phase: ContactPhase) -> float:
    """How far the phase's foot point moves in the image: :func:`slide` of its (x, y) px over the phase, in
    leg lengths (the median leg length px over the phase); nan when unknown."""
    xy = track_labels(contacts.position, contacts)[phase.start:phase.stop, phase.foot]
    leg = contacts.leg[phase.start:phase.stop]
    leg = float(np.nanmedian(leg)) if np.isfinite(leg).any() else float("nan")
    pts = np.concatenate([xy, np.zeros((len(xy), 1))], axis=1)
    return slide(pts) / leg if leg > 0 else float("nan")


def still_ground(contacts: FootContacts, max_speed: float = STILL_GROUND) -> np.ndarray:
    """(T,) bool: the estimated ground velocity is known and at most ``max_speed`` leg lengths / s."""
    speed = np.linalg.norm(contacts.ground, axis=-1)
    with np.errstate(invalid="ignore"):
        return np.isfinite(speed) & (speed <= max_speed)


def contact_phases(contacts: FootContacts, usable: np.ndarray | None = None,
                   max_ground_speed: float = STILL_GROUND) -> list[ContactPhase]:
    """Phases of both ankles (track labels), in time order: runs of contact on still ground, also ``usable``
    (T,) bool where given (e.g. the ankle's 3-D position is known), cut at every label swap."""
    state = ankle_contact(contacts)
    ok = still_ground(contacts, max_ground_speed)
    if usable is not None:
        usable = np.asarray(usable, bool)
        if usable.shape not in ((contacts.num_frames,), (contacts.num_frames, len(FEET))):
            raise ValueError(f"usable must have shape (T,) or (T, 2) with T={contacts.num_frames}, got {usable.shape}")
    cuts = np.zeros(contacts.num_frames + 1, bool)
    cuts[np.asarray(contacts.swaps, np.int64)] = True
    phases: list[ContactPhase] = []
    for f in range(len(FEET)):
        mask = (state[:, f] == CONTACT) & ok
        if usable is not None:
            mask &= usable if usable.ndim == 1 else usable[:, f]
        for a, b in runs(mask):
            edges = [a] + [int(i) for i in np.flatnonzero(cuts[a + 1:b]) + a + 1] + [b]
            phases.extend(ContactPhase(f, s, e) for s, e in zip(edges[:-1], edges[1:]))
    phases.sort(key=lambda p: (p.start, p.foot))
    return phases


def still_parts(contacts: FootContacts, phases: list[ContactPhase], max_image_slide: float = MAX_IMAGE_SLIDE,
                min_frames: int = 3) -> list[ContactPhase]:
    """The parts of ``phases`` where the foot stands still in the image: while a part's foot point moves more than
    ``max_image_slide`` leg lengths (:func:`image_slide`), its fastest frame (the largest step from the frame
    before) is taken out and the part split there; parts shorter than ``min_frames`` are dropped. A slow step the
    contact reads as stance (the foot never reaches the swing speed) so leaves the stance before and after it,
    without the frames that carry the foot across."""
    xy = track_labels(contacts.position, contacts)
    out: list[ContactPhase] = []
    todo = list(phases)
    while todo:
        p = todo.pop()
        if len(p) < min_frames:
            continue
        moved = image_slide(contacts, p)
        if not moved > max_image_slide:  # nan (unknown leg) counts as still: nothing to split on
            out.append(p)
            continue
        q = xy[p.start:p.stop, p.foot]
        step = np.linalg.norm(np.diff(q, axis=0), axis=1)  # step[i]: frame p.start + i -> p.start + i + 1
        i = p.start + 1 + int(np.nanargmax(step)) if np.isfinite(step).any() else p.start + len(p) // 2
        todo += [ContactPhase(p.foot, p.start, i), ContactPhase(p.foot, i + 1, p.stop)]
    out.sort(key=lambda p: (p.start, p.foot))
    return out


def phase_mask(phases: list[ContactPhase], num_frames: int) -> np.ndarray:
    """(T, F) bool: the frames of ``phases``."""
    out = np.zeros((num_frames, len(FEET)), bool)
    for p in phases:
        out[p.start:p.stop, p.foot] = True
    return out


def slide(points: np.ndarray) -> float:
    """The largest distance between two of the finite (N, 3) points (a phase's ankle): 0 for one point,
    nan for none. Units as the points."""
    p = np.asarray(points, np.float64)
    p = p[np.isfinite(p).all(axis=1)]
    if len(p) == 0:
        return float("nan")
    d = p[:, None, :] - p[None, :, :]
    return float(np.sqrt((d * d).sum(-1)).max())


def phase_slides(ankles: np.ndarray, phases: list[ContactPhase]) -> np.ndarray:
    """(P,) :func:`slide` of each phase's ankle, from ankles (T, F, 3) (the track's left, right ankle)."""
    if ankles.ndim != 3 or ankles.shape[1:] != (len(FEET), 3):
        raise ValueError(f"ankles must have shape (T, 2, 3), got {ankles.shape}")
    return np.array([slide(ankles[p.start:p.stop, p.foot]) for p in phases], np.float64)
