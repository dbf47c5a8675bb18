"""Gait analysis of side-view walking: strides between heel strikes, with their timing and knee / hip motion.

Foot contact and the heel strikes / toe offs come from :mod:`.foot_contact`. A
*stride* of a foot runs from one of its heel strikes to its next one when

- the foot's contact is known in every frame in between (a gap breaks strides),
- it lasts at most ``max_stride_s`` (a pause while standing is not a stride).

Per stride (times in seconds):

- ``stride_s``: heel strike to the next heel strike of the same foot;
- ``step_s``: heel strike to the first heel strike of the other foot inside the
  stride (nan when that foot is unseen or does not land in it);
- ``stance_s``: heel strike to the foot's toe off; ``swing_s = stride_s - stance_s``;
  ``stance_pct``, ``swing_pct``: the same in % of the stride;
- ``cadence_spm``: steps per minute, ``120 / stride_s`` (two steps per stride);
- ``knee_rom_deg``, ``hip_rom_deg``: max - min of the foot's side knee flexion and
  hip flexion (:mod:`.joint_angles`) over the stride's frames, heel strike to heel
  strike inclusive; nan when fewer than ``min_angle_coverage`` of them are measured.

"left" and "right" are the legs as the sequence names them, frame by frame, as
every other output reads them: the gait analysis exchanges nothing (its foot
contacts are read without :func:`~posetracker.analysis.foot_contact.repair_swaps`).
Where a side view's left / right labels of the feet swap, the legs are exchanged
back once, in the per-track motion (:mod:`posetracker.motion.sides`: the offline
session before its motion solve, a live result when it is finished), so each
stride's angles are those of the foot that made it.

:func:`summarise_gait`: per person and foot (and ``both``) the number of strides and
the means of the stride numbers above, with the stride time's standard deviation;
the cadence of a row is ``120 / mean stride time``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from posetracker.analysis.foot_contact import (
    FEET, HEEL_STRIKE, TOE_OFF, UNKNOWN, ContactSettings, FootContacts, GaitError, GaitEvent,
    contact_events, foot_contacts,
)
from posetracker.analysis.joint_angles import track_angles
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import PersonTrack, person_tracks
from posetracker.types import PoseSequence

GAIT_ANGLES = ("knee_flexion", "hip_flexion")


@dataclass(frozen=True)
class GaitSettings:
    """Settings of :func:`analyse_gait`: the foot-contact thresholds and the stride rules."""

    contact: ContactSettings = field(default_factory=ContactSettings)
    max_stride_s: float = 2.0
    min_angle_coverage: float = 0.8
    angle_confidence: float = 0.2
    angle_mode: str = "auto"

    def check(self) -> None:
        """Raise GaitError for settings that cannot work."""
        self.contact.check()
        if not self.max_stride_s > 0:
            raise GaitError(f"max_stride_s must be positive, got {self.max_stride_s}")
        if not 0.0 <= self.min_angle_coverage <= 1.0:
            raise GaitError(f"min_angle_coverage must be in [0, 1], got {self.min_angle_coverage}")
        if self.angle_mode not in ("auto", "3d", "2d"):
            raise GaitError(f"angle_mode {self.angle_mode!r}: choose auto, 3d or 2d")


@dataclass(frozen=True)
class Stride:
    """One stride of one foot (see the module docstring); frames are source frame indices."""

    person_id: int
    foot: str
    start_frame: int
    end_frame: int
    start_s: float
    end_s: float
    stride_s: float
    step_s: float
    stance_s: float
    swing_s: float
    stance_pct: float
    swing_pct: float
    cadence_spm: float
    knee_rom_deg: float
    hip_rom_deg: float
    angle_method: str


@dataclass(frozen=True)
class PersonGait:
    """Gait of one person over the T frames of the sequence.

    track:    the person's track, legs exchanged after each repaired swap
    contacts: per-frame foot contact (:class:`~posetracker.analysis.foot_contact.FootContacts`)
    events:   heel strikes and toe offs, in time order
    strides:  the strides of both feet, in time order
    knee:     (T, F) float64 knee flexion, degrees, left and right; nan where not measured
    hip:      (T, F) float64 hip flexion, degrees
    methods:  (T, F) str "3d", "2d" or "" of the knee angles
    """

    person_id: int
    track: PersonTrack
    contacts: FootContacts
    events: list[GaitEvent]
    strides: list[Stride]
    knee: np.ndarray
    hip: np.ndarray
    methods: np.ndarray

    def heel_strikes(self, foot: str | None = None) -> list[GaitEvent]:
        return [e for e in self.events if e.kind == HEEL_STRIKE and (foot is None or e.foot == foot)]


@dataclass(frozen=True)
class GaitSummaryRow:
    person_id: int
    foot: str  # "left", "right" or "both"
    strides: int
    stride_s: float
    stride_sd_s: float
    step_s: float
    cadence_spm: float
    stance_pct: float
    swing_pct: float
    knee_rom_deg: float
    hip_rom_deg: float


def _rom(values: np.ndarray, min_coverage: float) -> float:
    """max - min of (N,) degrees, or nan when fewer than ``min_coverage`` of them are finite."""
    ok = np.isfinite(values)
    if values.size == 0 or ok.mean() < min_coverage or not ok.any():
        return float("nan")
    return float(values[ok].max() - values[ok].min())


def _method(methods: np.ndarray) -> str:
    used = {str(m) for m in methods if m}
    return "" if not used else used.pop() if len(used) == 1 else "mixed"


def find_strides(person_id: int, contacts: FootContacts, events: list[GaitEvent], knee: np.ndarray, hip: np.ndarray,
                 methods: np.ndarray, settings: GaitSettings) -> list[Stride]:
    """The strides of both feet (module docstring rules). knee, hip: (T, F) degrees; methods: (T, F) str."""
    t = contacts.times
    strides: list[Stride] = []
    for f, foot in enumerate(FEET):
        other = FEET[1 - f]
        strikes = [e for e in events if e.foot == foot and e.kind == HEEL_STRIKE]
        for a, b in zip(strikes[:-1], strikes[1:]):
            i, j = a.index, b.index
            duration = float(t[j] - t[i])
            if (contacts.contact[i:j + 1, f] == UNKNOWN).any() or not 0 < duration <= settings.max_stride_s:
                continue
            offs = [e for e in events if e.foot == foot and e.kind == TOE_OFF and i < e.index < j]
            if not offs:
                continue
            stance = float(t[offs[0].index] - t[i])
            lands = [e for e in events if e.foot == other and e.kind == HEEL_STRIKE and i < e.index < j]
            step = float("nan")
            if lands and not (contacts.contact[i:lands[0].index + 1, 1 - f] == UNKNOWN).any():
                step = float(t[lands[0].index] - t[i])
            span = slice(i, j + 1)
            strides.append(Stride(
                person_id, foot, a.frame, b.frame, a.time, b.time, duration, step, stance, duration - stance,
                100.0 * stance / duration, 100.0 * (duration - stance) / duration, 120.0 / duration,
                _rom(knee[span, f], settings.min_angle_coverage), _rom(hip[span, f], settings.min_angle_coverage),
                _method(methods[span, f])))
    strides.sort(key=lambda s: (s.start_s, s.foot))
    return strides


def analyse_track(track: PersonTrack, spec: SkeletonSpec, settings: GaitSettings | None = None,
                  image_size: tuple[int, int] = (0, 0), fps: float = 30.0) -> PersonGait:
    """Foot contact, events, strides and leg angles of one person's track (see the module docstring)."""
    settings = settings or GaitSettings()
    settings.check()
    # the legs as the motion gives them (motion.sides decided left and right): no swap repaired here
    contacts = foot_contacts(track, spec, replace(settings.contact, repair_swaps=False), image_size, fps)
    events = contact_events(contacts, settings.contact.min_swing_s)
    t = track.num_frames
    angles = track_angles(track, spec, [(n, s) for n in GAIT_ANGLES for s in FEET], settings.angle_confidence,
                          settings.angle_mode, image_size)
    knee = np.stack([angles[("knee_flexion", s)][0] for s in FEET], axis=1).reshape(t, len(FEET))
    hip = np.stack([angles[("hip_flexion", s)][0] for s in FEET], axis=1).reshape(t, len(FEET))
    methods = np.stack([angles[("knee_flexion", s)][1] for s in FEET], axis=1).reshape(t, len(FEET))
    strides = find_strides(track.track_id, contacts, events, knee, hip, methods, settings)
    return PersonGait(track.track_id, track, contacts, events, strides, knee, hip, methods)


def analyse_gait(seq: PoseSequence, person: int | None = None,
                 settings: GaitSettings | None = None) -> dict[int, PersonGait]:
    """{track id: PersonGait} for every tracked person of ``seq`` (or only ``person``).

    Raises TrackError when there is no such person, GaitError when the skeleton has no legs
    (hips, knees and ankles) or the settings are bad.
    """
    settings = settings or GaitSettings()
    settings.check()
    size = seq.frames[0].image_size if seq.frames else (0, 0)
    return {tid: analyse_track(tr, seq.skeleton, settings, size, seq.fps)
            for tid, tr in person_tracks(seq, person).items()}


def _mean(values: list[float]) -> float:
    v = np.array(values, float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else float("nan")


def summarise_gait(gaits: dict[int, PersonGait]) -> list[GaitSummaryRow]:
    """Per person: one row per foot and one for both (see the module docstring)."""
    rows: list[GaitSummaryRow] = []
    for pid, gait in gaits.items():
        for foot in FEET + ("both",):
            ss = [s for s in gait.strides if foot == "both" or s.foot == foot]
            times = np.array([s.stride_s for s in ss], float)
            mean = float(times.mean()) if ss else float("nan")
            sd = float(times.std(ddof=1)) if len(ss) > 1 else float("nan")
            rows.append(GaitSummaryRow(
                pid, foot, len(ss), mean, sd, _mean([s.step_s for s in ss]), 120.0 / mean if ss else float("nan"),
                _mean([s.stance_pct for s in ss]), _mean([s.swing_pct for s in ss]),
                _mean([s.knee_rom_deg for s in ss]), _mean([s.hip_rom_deg for s in ss])))
    return rows
