#!/usr/bin/env python3
"""Left / right swaps per 1,000 person-frames on back-view clips (``posetracker.evaluation.side_swaps``).

By eye (frames marked facing the camera or seen from behind; the track present in most marked frames):

    python studies/tools/side_swaps.py eye POSES.json --back 220-300 [--front 0-210] [--crossed 46-62 356-390] [--track ID]

Against 4 calibrated views (each view's labels against the sides of the person triangulated from the views, left
and right taken from the 3-D body; ``--reference`` triangulates from other results of the same views, e.g. a
fixed earlier run, so that two versions are judged against one truth):

    python studies/tools/side_swaps.py views --calibration CALIB --views cam01.mp4 ... --results cam01.json ... \\
        [--reference ref01.json ...] [--out swaps.json]

Prints per clip (view and person): person-frames, swapped frames per 1,000 (any pair; trunk, arms, legs) and the
swap events per 1,000 (a frame swapped after one that was not).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from posetracker.evaluation.side_swaps import (  # noqa: E402
    eye_verdicts,
    reference_sides,
    summary,
    view_verdicts,
)
from posetracker.export import read_sequence  # noqa: E402
from posetracker.tracks import person_tracks  # noqa: E402

MIN_CONFIDENCE = 0.3


def spans(text: list[str], n: int) -> np.ndarray:
    """['0-210', '312-449'] -> (n,) bool, inclusive spans."""
    out = np.zeros(n, bool)
    for s in text:
        a, b = (int(v) for v in s.split("-"))
        out[a:b + 1] = True
    return out


def line(name: str, s: dict) -> str:
    parts = [f"{name}: {s['person_frames']} person-frames ({s['decided']} decided)"]
    for g in ("any", "trunk", "arms", "legs"):
        parts.append(f"{g} {s[g]['per_1000']:.1f} ({s[g]['events_per_1000']:.1f} events)")
    return "; ".join(parts)


def cmd_eye(args: argparse.Namespace) -> dict:
    seq = read_sequence(args.poses)
    tracks = person_tracks(seq)
    n = max(f.index for f in seq.frames) + 1
    facing = spans(args.front, n).astype(np.int8) - spans(args.back, n).astype(np.int8)
    crossing = spans(args.crossed, n)
    best, best_n = None, -1
    for tid, tr in tracks.items():
        marked = int((tr.present & (facing[tr.frames] != 0)).sum())
        if (args.track is None and marked > best_n) or tid == args.track:
            best, best_n = tid, marked
    tr = tracks[best]
    f = facing[tr.frames]
    v = eye_verdicts(tr.keypoints[..., :2], tr.confidence >= MIN_CONFIDENCE, f, seq.skeleton,
                     crossing=crossing[tr.frames])
    out = {}
    for name, want in (("from behind", -1), ("facing", 1)):
        sel = tr.present & (f == want)
        if sel.any():
            out[name] = summary(v, sel)
            out[name]["swapped_frames"] = [int(tr.frames[t]) for t in np.flatnonzero(sel & (v == 1).any(1))]
            print(line(f"{Path(args.poses).name} track {best}, marked {name}", out[name]))
    return out


def cmd_views(args: argparse.Namespace) -> dict:
    from posetracker.multiview.calibration import camera_named, read_calibrations
    from posetracker.multiview.reference import reconstruct

    cameras = [camera_named(read_calibrations(args.calibration), Path(v).stem) for v in args.views]
    seqs = [read_sequence(p) for p in args.results]
    refs = [read_sequence(p) for p in args.reference] if args.reference else seqs
    spec = seqs[0].skeleton
    people = reconstruct(cameras, refs, min_views=args.min_views)
    own = reconstruct(cameras, seqs, min_views=args.min_views) if args.reference else people
    out: dict = {}
    for n, person in enumerate(people):
        truth = reference_sides(person.xyz, spec)
        mine = _same_person(person, own)  # the judged results' tracks of this person, per view
        for v, cam in enumerate(cameras):
            ids = mine.match.track_ids(v) if mine is not None else []
            if not ids:
                continue
            tracks = person_tracks(seqs[v])
            t = len(seqs[v])
            xy = np.full((t, spec.num_joints, 2), np.nan)
            seen = np.zeros((t, spec.num_joints), bool)
            for tid in ids:
                tr = tracks[tid]
                xy[tr.frames[tr.present]] = tr.keypoints[tr.present, :, :2]
                seen[tr.frames[tr.present]] = tr.confidence[tr.present] >= MIN_CONFIDENCE
            proj = cam.project(truth)
            verdicts = view_verdicts(xy, seen, proj, spec)
            present = seen.any(1) & np.isfinite(proj).all(-1).any(-1)
            s = summary(verdicts, present)
            s["swapped_frames"] = [int(t) for t in np.flatnonzero(present & (verdicts == 1).any(1))]
            out.setdefault(cam.name, {})[f"P{n + 1}"] = s
            print(line(f"{cam.name} P{n + 1}", s))
    return out


def _same_person(person, own: list):
    """The person of ``own`` (references of the judged results) sharing most tracks' frames with ``person``:
    matched by their triangulated mid-hips (nearest on average), None if none is within 0.5 m."""
    best, best_d = None, 0.5
    for other in own:
        with np.errstate(invalid="ignore"):
            d = np.nanmedian(np.linalg.norm(np.nanmean(person.xyz, 1) - np.nanmean(other.xyz, 1), axis=-1))
        if np.isfinite(d) and d < best_d:
            best, best_d = other, d
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="kind", required=True)
    e = sub.add_parser("eye", help="against frames marked by eye")
    e.add_argument("poses")
    e.add_argument("--front", nargs="*", default=[], help="frame spans marked facing the camera (a-b)")
    e.add_argument("--back", nargs="*", default=[], help="frame spans marked seen from behind (a-b)")
    e.add_argument("--crossed", nargs="*", default=[],
                   help="frame spans where, by eye, the legs or arms really cross (their limbs not judged)")
    e.add_argument("--track", type=int, default=None)
    v = sub.add_parser("views", help="against calibrated views")
    v.add_argument("--calibration", required=True, action="append")
    v.add_argument("--views", nargs="+", required=True)
    v.add_argument("--results", nargs="+", required=True)
    v.add_argument("--reference", nargs="+", help="results of the same views to triangulate the truth from")
    v.add_argument("--min-views", type=int, default=2)
    for p in (e, v):
        p.add_argument("--out", help="write the counts as JSON")
    args = ap.parse_args()
    res = cmd_eye(args) if args.kind == "eye" else cmd_views(args)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
