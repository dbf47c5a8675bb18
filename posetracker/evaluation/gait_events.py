"""Agreement of detected heel strikes with hand-counted ones (``tests/data/gait_hand_events.json``).

The hand file lists clips (a path under ../shared, the frames to ``evaluate`` and
the heel-strike frames, feet not told apart; ``held_out`` for a clip counted after the
contact thresholds were chosen on the others). :func:`clip_agreement` runs
:func:`~posetracker.analysis.gait.analyse_gait` on a tracked clip and matches the
heel strikes of both feet inside the window to the hand ones, one to one, within a
tolerance (:func:`match_events`). ``studies/tools/gait_agreement.py`` prints the table of
``studies/gait-events.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from posetracker.analysis.gait import GaitSettings, analyse_gait
from posetracker.types import PoseSequence


@dataclass(frozen=True)
class HandClip:
    path: str  # relative to the shared folder
    fps: float
    evaluate: tuple[int, int]  # first and last frame compared, inclusive
    heel_strikes: tuple[int, ...]
    held_out: bool = False  # counted after the contact thresholds were chosen (on the other clips)


@dataclass(frozen=True)
class EventAgreement:
    """truth: hand events; found: matched pairs as (hand, detected) frames; missed / extra: unmatched frames."""

    truth: tuple[int, ...]
    found: tuple[tuple[int, int], ...]
    missed: tuple[int, ...]
    extra: tuple[int, ...]

    @property
    def errors(self) -> np.ndarray:
        """(M,) detected - hand frames of the matched pairs."""
        return np.array([d - h for h, d in self.found], float)

    @property
    def mae_frames(self) -> float:
        return float(np.abs(self.errors).mean()) if self.found else float("nan")

    @property
    def found_fraction(self) -> float:
        return len(self.found) / len(self.truth) if self.truth else float("nan")


def match_events(detected: list[int], truth: list[int], tolerance: int = 3) -> EventAgreement:
    """Pair detected and hand frames one to one, closest pairs first, each at most ``tolerance`` frames apart."""
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0 frames, got {tolerance}")
    pairs = sorted(((abs(d - h), h, d) for h in truth for d in detected if abs(d - h) <= tolerance))
    used_h: set[int] = set()
    used_d: set[int] = set()
    found = []
    for _, h, d in pairs:
        if h not in used_h and d not in used_d:
            used_h.add(h)
            used_d.add(d)
            found.append((h, d))
    return EventAgreement(tuple(sorted(truth)), tuple(sorted(found)), tuple(h for h in sorted(truth) if h not in used_h),
                          tuple(d for d in sorted(detected) if d not in used_d))


def step_cadence(frames: list[int], fps: float, max_step_s: float = 1.0) -> float:
    """Steps per minute from heel-strike frames of both feet: 60 / median interval between consecutive ones,
    intervals longer than ``max_step_s`` (a pause, a gap) left out; nan with none left."""
    steps = np.diff(np.sort(np.asarray(frames, float))) / fps
    steps = steps[(steps > 0) & (steps <= max_step_s)]
    return float(60.0 / np.median(steps)) if steps.size else float("nan")


def load_hand_events(path: str | Path) -> list[HandClip]:
    """The clips of a hand-event file; raises ValueError naming what is wrong."""
    data = json.loads(Path(path).read_text())
    try:
        clips = [HandClip(c["path"], float(c["fps"]), (int(c["evaluate"][0]), int(c["evaluate"][1])),
                          tuple(int(f) for f in c["heel_strikes"]), bool(c.get("held_out", False)))
                 for c in data["clips"]]
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"{path}: not a hand-event file ({exc!r})") from None
    for raw in data["clips"]:
        if not isinstance(raw.get("held_out", False), bool):
            raise ValueError(f"{path}: {raw['path']}: held_out must be true or false, not {raw['held_out']!r}")
    for c in clips:
        lo, hi = c.evaluate
        if not all(lo <= f <= hi for f in c.heel_strikes):
            raise ValueError(f"{path}: {c.path}: heel strikes outside its evaluate window {c.evaluate}")
    return clips


def detected_heel_strikes(seq: PoseSequence, settings: GaitSettings | None = None) -> list[int]:
    """Source frames of the heel strikes (both feet) of the person seen in the most frames."""
    gaits = analyse_gait(seq, settings=settings)
    gait = max(gaits.values(), key=lambda g: int(g.track.present.sum()))
    return [e.frame for e in gait.heel_strikes()]


def clip_agreement(seq: PoseSequence, clip: HandClip, tolerance: int = 3,
                   settings: GaitSettings | None = None) -> EventAgreement:
    """Detected heel strikes inside the clip's window against its hand ones (:func:`match_events`)."""
    lo, hi = clip.evaluate
    detected = [f for f in detected_heel_strikes(seq, settings) if lo <= f <= hi]
    return match_events(detected, list(clip.heel_strikes), tolerance)
