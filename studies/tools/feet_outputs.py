"""Feet on the floor in what every output reads: the world coordinates (CSV, TRC, JSON) and the BVH (issue #46).

    python studies/tools/feet_outputs.py RESULT.json [RESULT.json ...] [--json OUT.json]

RESULT.json: ``posetracker process CLIP --out RESULT.json`` (the finished result every export reads). Per file the
floor and the stance phases are those the session decided and every export reads (``metadata["feet"]``,
``analysis.held_ground.held_ground``; for a result without them, fitted again as the exports then fit them:
``analysis.ground.ground_from_sequence``), and per person, over every stance phase:

- ``world``: the sequence's world coordinates (what CSV / JSON / TRC write), taken to the person's floor frame
  (``FloorFrame.to_person_floor``, TRC's ``--origin floor``);
- ``bvh``: the default BVH export's rig (``export.bvh.solve_person``), its forward kinematics (Y = 0 its floor).

Columns: stance phases; ankle off standing height (|ankle Y - (floor + ankle height)|) over the stance frames:
median / p95 / max, and the share within 2 cm; slide per phase (the largest distance between two ankle positions
of the phase, 3-D): median / max, phases under 2 cm; frames where a foot's sole point (the ankle, and in the BVH
the toe end site, an ankle height lower) is more than 2 cm under the floor, and the deepest. Lengths in cm.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

LIMIT = 0.02  # m: the 2 cm


def _phase_stats(ankles: np.ndarray, phases, stand: float) -> dict:
    """ankles (T, 2, 3) floor-frame m (Y up), phases (track frames or motion frames), stand: standing ankle Y."""
    from posetracker.analysis.stance import slide

    off, slides = [], []
    for p in phases:
        seg = ankles[p.start:p.stop, p.foot]
        seg = seg[np.isfinite(seg).all(1)]
        if len(seg) == 0:
            continue
        off.append(np.abs(seg[:, 1] - stand))
        slides.append(slide(seg))
    o = np.concatenate(off) if off else np.zeros(0)
    s = np.array(slides)
    q = lambda a, f: float(f(a)) if len(a) else float("nan")
    return {"phases": len(s), "stance_frames": len(o), "off_median": q(o, np.median),
            "off_p95": q(o, lambda a: np.percentile(a, 95)), "off_max": q(o, np.max),
            "within": q(o, lambda a: np.mean(a <= LIMIT)), "slide_median": q(s, np.median), "slide_max": q(s, np.max),
            "slide_under": q(s, lambda a: np.mean(a <= LIMIT))}


def _under(soles: np.ndarray) -> tuple[int, float]:
    """soles (T, N) Y of sole points above the floor (m) -> (frames with one more than 2 cm under, deepest m)."""
    low = np.nanmin(np.where(np.isfinite(soles), soles, np.inf), axis=1)
    low = low[np.isfinite(low)]
    return int((low < -LIMIT).sum()), float(max(0.0, -low.min())) if len(low) else 0.0


def measure(path: Path) -> list[dict]:
    from posetracker.analysis.foot_contact import FEET
    from posetracker.analysis.held_ground import held_ground
    from posetracker.evaluation.feet_on_floor import joint_positions, motion_frames
    from posetracker.export import read_sequence
    from posetracker.export.bvh import BvhOptions, solve_person
    from posetracker.export.bvh_solve import world_rotations
    from posetracker.tracks import person_tracks

    seq = read_sequence(path)
    ground = held_ground(seq)
    spec = seq.skeleton
    rows = []
    ankle_idx = [spec.index(f"{s}_ankle") for s in FEET]
    for tid, tr in person_tracks(seq).items():
        phases = ground.phases.get(tid, [])
        a_h = ground.frame.ankle_height.get(tid, 0.0)
        to_floor = getattr(ground.frame, "world_to_floor", ground.frame.to_person_floor)  # per frame: a moving camera
        world = to_floor(tr.world[:, ankle_idx], tid)
        world[~tr.valid_world(0.2)[:, ankle_idx]] = np.nan
        row = {"file": path.stem, "person": tid, "fitted": bool(ground.frame.fitted), "ankle_height": a_h}
        n, deep = _under(world[..., 1] - a_h)
        row["world"] = {**_phase_stats(world, phases, a_h), "under_frames": n, "under_max": deep,
                        "frames": int(np.isfinite(world).all(-1).any(-1).sum())}
        try:
            motion = solve_person(tr, spec, seq.fps, BvhOptions(), ground)
        except ValueError as exc:
            row["bvh"] = {"error": str(exc)}
            rows.append(row)
            continue
        pos = joint_positions(motion)  # (M, J, 3) BVH space, origin shift applied: Y = 0 the person's floor
        names = motion.rig.names
        feet = [names.index("LeftFoot"), names.index("RightFoot")]
        rot = world_rotations(motion.euler, motion.rig.parents, motion.order)
        toes = np.stack([pos[:, j] + rot[:, j] @ motion.rig.end_sites[j] for j in feet], axis=1)  # (M, 2, 3)
        where = motion_frames(tr, motion)
        bvh_ankles = np.full((tr.num_frames, 2, 3), np.nan)
        bvh_ankles[where >= 0] = pos[where[where >= 0]][:, feet]
        stand = a_h  # the rig's floor (fitted) is at Y = 0
        n, deep = _under(np.concatenate([pos[:, feet, 1], toes[..., 1]], axis=1) - stand)
        row["bvh"] = {**_phase_stats(bvh_ankles, phases, stand), "under_frames": n, "under_max": deep,
                      "frames": len(pos)}
        rows.append(row)
    return rows


def _cm(v: float) -> str:
    return "" if v != v else f"{100 * v:.1f}"


def table(rows: list[dict]) -> str:
    out = ["| file | person | output | stance phases | ankle off standing median / p95 / max (cm) | within 2 cm (%) "
           "| slide median / max (cm) | phases slide <= 2 cm (%) | frames a sole point > 2 cm under / frames "
           "| deepest (cm) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for k in ("world", "bvh"):
            m = r[k]
            if "error" in m:
                out.append(f"| {r['file']} | {r['person']} | {k} | not exported: {m['error']} |")
                continue
            out.append(f"| {r['file']} | {r['person']} | {k} | {m['phases']} | {_cm(m['off_median'])} / "
                       f"{_cm(m['off_p95'])} / {_cm(m['off_max'])} | {100 * m['within']:.0f} | "
                       f"{_cm(m['slide_median'])} / {_cm(m['slide_max'])} | {100 * m['slide_under']:.0f} | "
                       f"{m['under_frames']} / {m['frames']} | {_cm(m['under_max'])} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--json", type=Path, help="write the rows here too")
    args = p.parse_args(argv)
    rows = [r for path in args.results for r in measure(path)]
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
