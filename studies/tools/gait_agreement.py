"""Heel strikes found by the gait analysis against the hand counts (studies/gait-events.md).

    python studies/tools/gait_agreement.py [--shared ../shared] [--poses DIR] [--tolerance 3]
                                   [--on-fraction 0.4 --off-fraction 0.55]

Tracks every clip of tests/data/gait_hand_events.json offline (one person, the shipped
model; a few minutes on two CPU cores), or reads DIR/<clip stem>.json when --poses holds
it (the tracked poses are saved there on the first run), and prints one Markdown table
row per clip: hand events, found, missed, extra and the mean absolute frame error, then
an "all" row over the clips the contact thresholds were chosen on and an "all (held out)"
row over the clips marked "held_out" (counted after the thresholds were chosen).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from posetracker.analysis.gait import GaitSettings  # noqa: E402
from posetracker.evaluation.gait_events import (  # noqa: E402
    clip_agreement, detected_heel_strikes, load_hand_events, step_cadence,
)

HAND = REPO / "tests" / "data" / "gait_hand_events.json"


def track(video: Path):
    """The offline-tracked PoseSequence of one person in ``video`` (as ``posetracker process --max-people 1``)."""
    from posetracker.capture import open_source
    from posetracker.session import PeopleSettings, SessionConfig, TrackingSession

    session = TrackingSession.open("human18", None, SessionConfig(mode="offline", people=PeopleSettings(max_people=1)))
    with open_source(str(video)) as source:
        return session.run(source, fps=source.fps, total=source.frame_count, metadata={"source": str(video)})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    p.add_argument("--hand", type=Path, default=HAND)
    p.add_argument("--poses", type=Path, help="folder to keep / reuse the tracked poses (CLIP_STEM.json)")
    p.add_argument("--tolerance", type=int, default=3, help="frames (default 3)")
    p.add_argument("--on-fraction", type=float, default=None)
    p.add_argument("--off-fraction", type=float, default=None)
    args = p.parse_args(argv)
    from posetracker.export import get_exporter, read_sequence

    settings = GaitSettings()
    changes = {k: v for k, v in (("on_fraction", args.on_fraction), ("off_fraction", args.off_fraction)) if v is not None}
    settings = replace(settings, contact=replace(settings.contact, **changes))
    print(f"tolerance +-{args.tolerance} frames; contact on/off fractions "
          f"{settings.contact.on_fraction} / {settings.contact.off_fraction}\n")
    print("| clip | frames evaluated | hand | found | missed (hand frames) | extra (detected frames) | MAE (frames) "
          "| mean error | cadence hand / detected (steps/min) |")
    print("|---|---|---|---|---|---|---|---|---|")
    totals = {held_out: {"hand": 0, "found": 0, "extra": 0, "abs": 0.0} for held_out in (False, True)}
    for clip in load_hand_events(args.hand):
        video = args.shared / clip.path
        if not video.exists():
            print(f"| {Path(clip.path).name} | missing: {video} | | | | | | | |")
            continue
        cached = args.poses / f"{video.stem}.json" if args.poses else None
        if cached is not None and cached.exists():
            seq = read_sequence(cached)
        else:
            seq = track(video)
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                get_exporter("json").write(seq, cached, force=True)
        a = clip_agreement(seq, clip, args.tolerance, settings)
        lo, hi = clip.evaluate
        detected = [f for f in detected_heel_strikes(seq, settings) if lo <= f <= hi]
        cadence = f"{step_cadence(list(clip.heel_strikes), clip.fps):.1f} / {step_cadence(detected, clip.fps):.1f}"
        name = Path(clip.path).name + (" (held out)" if clip.held_out else "")
        errors = f"{a.mae_frames:.2f} | {a.errors.mean():+.2f}" if a.found else "- | -"
        print(f"| {name} | {lo}-{hi} | {len(a.truth)} | {len(a.found)} | {len(a.missed)} "
              f"{list(a.missed)} | {len(a.extra)} {list(a.extra)} | {errors} | {cadence} |")
        total = totals[clip.held_out]
        total["hand"] += len(a.truth)
        total["found"] += len(a.found)
        total["extra"] += len(a.extra)
        total["abs"] += float(abs(a.errors).sum())
    for held_out, label in ((False, "all"), (True, "all (held out)")):
        total = totals[held_out]
        if total["hand"]:
            mae = f"{total['abs'] / total['found']:.2f}" if total["found"] else "-"
            print(f"| {label} | | {total['hand']} | {total['found']} ({100 * total['found'] / total['hand']:.0f} %) "
                  f"| {total['hand'] - total['found']} | {total['extra']} | {mae} | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
