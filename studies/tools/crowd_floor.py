"""The floor a result stands its people on, measured per person: stance feet and how far people float (issue #46).

    python studies/tools/crowd_floor.py RESULT.json [--phases-from OTHER.json] [--bvh DIR]

RESULT.json: a finished result (``posetracker process`` / ``track_then_finish.py finish``). The floor is the one
every export reads (``analysis.held_ground.held_ground``: the finishing step's, each frame turned first where the
camera tilts, ``FloorFrame.world_to_floor``; the level-camera fallback where none was fitted). Per person:

- over each stance phase (the result's held phases, or ``--phases-from`` another result's, so that two versions
  are measured over the same phases; a result that held none: the phases the floor fit finds again): the ankle
  off standing height (|ankle Y - (own floor + ankle height)|, cm) median and 95th percentile over the stance
  frames, and the slide per phase (largest distance between two of its ankle positions, floor frame, cm) median
  and max;
- every frame the person is seen: the lowest ankle's height above the shared floor less the ankle height (cm):
  how far the person floats (> 0) or sinks (< 0) against the floor drawn, median over the frames, with their
  median distance from the camera (m);
- with ``--bvh DIR`` (the BVH files ``posetracker export RESULT.json --format bvh --out DIR/NAME.bvh`` wrote):
  the files (people exported) and the longest run of frames whose channels do not change at all (frozen).

Also printed: the tracks in the result and the median number of people a frame (the issue's crowd line: tracks
at most 1.5 x that).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def _floor_points(frame, world: np.ndarray, person: int | None) -> np.ndarray:
    to_floor = getattr(frame, "world_to_floor", None)  # older trees: one floor frame for every frame
    if to_floor is not None:
        return to_floor(world, person)
    return frame.to_floor(world) if person is None else frame.to_person_floor(world, person)


def measure(path: Path, phases_from: Path | None) -> tuple[list[dict], dict]:
    from posetracker.analysis.foot_contact import FEET
    from posetracker.analysis.ground import ground_from_sequence
    from posetracker.analysis.held_ground import held_ground
    from posetracker.analysis.stance import slide
    from posetracker.export import read_sequence
    from posetracker.tracks import person_tracks

    seq = read_sequence(path)
    ground = held_ground(seq)
    phases = ground.phases
    if phases_from is not None:
        phases = held_ground(read_sequence(phases_from)).phases
    elif not any(phases.values()):
        phases = ground_from_sequence(seq).phases
    frame = ground.frame
    idx = [seq.skeleton.index(f"{s}_ankle") for s in FEET]
    rows = []
    for tid, tr in person_tracks(seq).items():
        a_h = frame.ankle_height.get(tid, 0.0)
        ok = tr.valid_world(0.2)[:, idx]
        own = _floor_points(frame, tr.world[:, idx], tid)  # (T, 2, 3) the person's own floor at Y = 0
        own[~ok] = np.nan
        shared = _floor_points(frame, tr.world[:, idx], None)[..., 1] - a_h  # (T, 2) above the shared floor
        shared[~ok] = np.nan
        off, slides = [], []
        for p in phases.get(tid, []):
            seg = own[p.start:p.stop, p.foot]
            seg = seg[np.isfinite(seg).all(1)]
            if len(seg):
                off.append(np.abs(seg[:, 1] - a_h))
                slides.append(slide(seg))
        o = np.concatenate(off) if off else np.zeros(0)
        seen = np.isfinite(shared).any(1)
        low = np.nanmin(shared[seen], axis=1) if seen.any() else np.zeros(0)
        dist = np.linalg.norm(np.nanmean(tr.world[:, idx], axis=1), axis=-1)[seen] if seen.any() else np.zeros(0)
        q = lambda a, f: float(f(a)) if len(a) else float("nan")
        rows.append({"person": tid, "phases": len(slides), "off_median": q(o, np.median),
                     "off_p95": q(o, lambda a: np.percentile(a, 95)), "slide_median": q(np.array(slides), np.median),
                     "slide_max": q(np.array(slides), np.max), "float_median": q(low, np.median),
                     "float_p10": q(low, lambda a: np.percentile(a, 10)),
                     "float_p90": q(low, lambda a: np.percentile(a, 90)), "distance_m": q(dist, np.median),
                     "frames": int(seen.sum())})
    counts = [len(f.track_ids) for f in seq.frames]
    info = {"fitted": bool(frame.fitted), "reason": frame.report.get("reason", ""),
            "turned": frame.turn is not None if hasattr(frame, "turn") else False,
            "camera_height_m": frame.report.get("camera_height_m"), "pitch_deg": frame.report.get("pitch_deg"),
            "tracks": len(rows), "median_people": float(np.median(counts))}
    return rows, info


def frozen(path: Path) -> tuple[int, int]:
    """(frames, the longest run of frames whose channels are all equal to the frame before) of a BVH file."""
    lines = path.read_text().splitlines()
    m = lines.index("MOTION")
    rows = np.array([[float(v) for v in line.split()] for line in lines[m + 3:] if line.strip()])
    same = np.concatenate([[False], (np.abs(np.diff(rows, axis=0)) < 1e-9).all(axis=1)])
    longest = run = 0
    for s in same:
        run = run + 1 if s else 0
        longest = max(longest, run)
    return len(rows), longest + (1 if longest else 0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("result", type=Path)
    p.add_argument("--phases-from", type=Path)
    p.add_argument("--bvh", type=Path)
    args = p.parse_args(argv)
    rows, info = measure(args.result, args.phases_from)
    print(" ".join(f"{k}={v}" for k, v in info.items()))
    print("| person | phases | ankle off standing median / p95 (cm) | slide median / max (cm) | lowest ankle above "
          "the floor median (p10 / p90) cm | distance m | frames |")
    print("|---|---|---|---|---|---|---|")
    c = lambda v: "-" if np.isnan(v) else f"{100 * v:.1f}"
    for r in rows:
        print(f"| {r['person']} | {r['phases']} | {c(r['off_median'])} / {c(r['off_p95'])} | {c(r['slide_median'])} / "
              f"{c(r['slide_max'])} | {c(r['float_median'])} ({c(r['float_p10'])} / {c(r['float_p90'])}) | "
              f"{r['distance_m']:.1f} | {r['frames']} |")
    if args.bvh:
        files = sorted(args.bvh.glob("*.bvh"))
        runs = [(f.name, *frozen(f)) for f in files]
        print(f"BVH files (people exported): {len(files)}; longest unchanged run (frames): "
              + ", ".join(f"{n} {r}/{t}" for n, t, r in runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
