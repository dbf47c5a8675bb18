"""Where the bones' spread of the 4-view Pose2Sim trial comes from (studies/metres.md, "Test-time readings").

Each DIR holds the four views' results ``cam01.json`` ... ``cam04.json`` of
``posetracker process ../shared/data/video/multiview_pose2sim_multiperson/cam0N.mp4 --calibration ... --out DIR/cam0N.json``
(or of ``studies/tools/multiview_readings.py``, the same with the precision stage's test-time readings). The people
are matched and triangulated as ``posetracker eval multiview`` does (``multiview.reference.reconstruct_views``).

    python studies/tools/multiview_spread.py bones DIR [DIR ...]     # per-bone IQR % of each person, speed quartiles;
                                                                     # later DIRs against the first (paired blocks)
    python studies/tools/multiview_spread.py single REFDIR DIR ...   # single views against REFDIR's triangulation
    python studies/tools/multiview_spread.py triangulation DIR [--peer mp_cam01.json ...]
    python studies/tools/multiview_spread.py smoothing RAWDIR        # RAWDIR: process --raw; the solve's cutoff varied

``triangulation``: the same 2-D points triangulated otherwise: a view left out, confidence squared, cam01's
readings of the right elbow and wrist left out (it does not see the woman's right arm), each view's
pose (and focal length, principal point) fitted to the people again and again (self-calibration, cam01 fixed),
a rolling-shutter / time correction of each view's points, and with ``--peer`` (MediaPipe heavy readings,
``studies/tools/mediapipe_world.py``) the peer's points alone and averaged with ours.
Shapes: V = 4 views, T = 100 frames, K joints (human18).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2].parent / "shared/data/video/multiview_pose2sim_multiperson"
VIEWS = ("cam01", "cam02", "cam03", "cam04")
PEOPLE = ("woman", "man")  # P1, P2 of eval multiview (most present first)


def load(folder: str | Path):
    """(sequences, Reconstruction) of a results folder."""
    from posetracker.export.json_io import read_sequence
    from posetracker.multiview.calibration import camera_named, read_calibrations
    from posetracker.multiview.reference import reconstruct_views

    cams = read_calibrations([str(DATA / "calibration.qca.txt")])
    seqs = [read_sequence(Path(folder) / f"{v}.json") for v in VIEWS]
    return seqs, reconstruct_views([camera_named(cams, v) for v in VIEWS], seqs)


def spread(person, cameras, spec, xy: np.ndarray | None = None, confidence: np.ndarray | None = None) -> dict:
    """quality() of a person triangulated from xy (V, T, K, 2) / confidence (V, T, K) (None: the person's own)."""
    from posetracker.multiview.reference import quality, triangulate_person

    xy = person.xy if xy is None else xy
    confidence = person.confidence if confidence is None else confidence
    tri = triangulate_person(cameras, xy, confidence, spec)
    return quality(dataclasses.replace(person, xy=xy, confidence=confidence, triangulation=tri), spec, VIEWS)


def line(q: dict) -> str:
    """'2.66 % (7.2 7.5 5.5 4.5 px)': the body spread and each view's median reprojection."""
    return f"{q['body_spread_pct']['iqr']:.2f} % (" + " ".join(f"{v:.1f}" for v in q["reprojection_px"].values()) + " px)"


def body_spread(xyz: np.ndarray, spec) -> float:
    """quality()'s body_spread_pct iqr of points xyz (T, K, 3): the median over the limb and trunk bones of each
    bone's IQR over the frames in % of its median length."""
    from posetracker.multiview.reference import FACE_JOINTS, bone_lengths

    out = []
    for b, length in bone_lengths(xyz, spec).items():
        length = length[np.isfinite(length)]
        if not set(b.split("-")) & FACE_JOINTS and len(length) >= 2:
            q1, q3 = np.percentile(length, [25, 75])
            out.append(100 * (q3 - q1) / np.median(length))
    return float(np.median(out))


def paired_interval(base: np.ndarray, other: np.ndarray, spec, block: int = 10, draws: int = 1000) -> tuple:
    """95 % interval of body_spread(other) - body_spread(base) over blocks of ``block`` frames drawn with
    replacement (the same blocks for both), base / other (T, K, 3)."""
    rng = np.random.default_rng(0)
    starts = np.arange(0, len(base) - block + 1, block)
    diffs = []
    for _ in range(draws):
        frames = np.concatenate([np.arange(s, s + block) for s in rng.choice(starts, len(starts))])
        diffs.append(body_spread(other[frames], spec) - body_spread(base[frames], spec))
    return tuple(np.percentile(diffs, [2.5, 97.5]))


def cmd_bones(args) -> None:
    from posetracker.multiview.reference import FACE_JOINTS, bone_lengths, quality

    base = None
    for folder in args.dirs:
        seqs, rec = load(folder)
        spec = seqs[0].skeleton
        print(folder)
        if base is None:
            base = [p.xyz for p in rec.people[:2]]
        else:
            for name, b, p in zip(PEOPLE, base, rec.people):
                d = body_spread(p.xyz, spec) - body_spread(b, spec)
                lo, hi = paired_interval(b, p.xyz, spec)
                print(f"  {name}: spread {d:+.2f} points against {args.dirs[0]} [{lo:+.2f}, {hi:+.2f}] (10-frame blocks)")
        for name, p in zip(PEOPLE, rec.people):
            q = quality(p, spec, VIEWS)
            body = {b: s["iqr_mm"] / 10 / s["median_m"] for b, s in q["bones"].items() if not set(b.split("-")) & FACE_JOINTS}
            print(f"  {name}: {line(q)}; " + ", ".join(f"{b.replace('left_', 'L').replace('right_', 'R')} {v:.1f}"
                                                     for b, v in body.items()))
            speed = np.linalg.norm(np.gradient(p.xyz, axis=0), axis=-1) * seqs[0].fps  # (T, K) m/s
            dev, fast = [], []
            for b, length in bone_lengths(p.xyz, spec).items():
                if b in body:
                    j0, j1 = (spec.index(n) for n in b.split("-"))
                    dev.append(np.abs(length / np.nanmedian(length) - 1) * 100)
                    fast.append(np.maximum(speed[:, j0], speed[:, j1]))
            d, s = np.concatenate(dev), np.concatenate(fast)
            ok = np.isfinite(d) & np.isfinite(s)
            d, s = d[ok], s[ok]
            edges = np.percentile(s, [0, 25, 50, 75, 100])
            cells = [float(np.median(d[(s >= edges[i]) & (s <= edges[i + 1])])) for i in range(4)]
            print(f"    median |length / median - 1| by the faster end's speed quartile (m/s {edges[1]:.2f} / "
                  f"{edges[2]:.2f} / {edges[3]:.2f}): " + " / ".join(f"{c:.1f}" for c in cells) + " %")


def cmd_single(args) -> None:
    """Each folder's single views (PA-MPJPE mm / mean angle error degrees, frames) against REFDIR's people."""
    from posetracker.evaluation.multiview_reference import _world_of, compare
    from posetracker.tracks import person_tracks

    seqs, ref = load(args.ref)
    spec = seqs[0].skeleton
    refs = [p.xyz for p in ref.people[:2]]
    for folder in [args.ref, *args.dirs]:
        seqs, rec = load(folder)
        tracks = [person_tracks(s) for s in seqs]
        cells = []
        for v, view in enumerate(VIEWS):
            for k, xyz in enumerate(refs):
                near = [np.nanmean(np.linalg.norm(p.xyz - xyz, axis=-1)) for p in rec.people]
                ids = rec.people[int(np.nanargmin(near))].match.track_ids(v)
                c = compare(xyz, _world_of(tracks[v], ids, len(seqs[0]), spec.num_joints), None, spec)
                cells.append((c["ours"]["pa_mm"], c["ours"]["mean_angle"], c["frames_ours"]))
        a = np.array(cells)
        seven = np.delete(a, 5, axis=0)  # the man in cam03 (half the frames, how many varies with the readings)
        print(f"{folder}: " + ", ".join(f"{VIEWS[i // 2]} {PEOPLE[i % 2]} {pa:.1f} / {ang:.1f} ({n:.0f})"
                                        for i, (pa, ang, n) in enumerate(cells))
              + f"; mean {a[:, 0].mean():.1f} mm / {a[:, 1].mean():.2f} deg, without the man in cam03 "
              f"{seven[:, 0].mean():.1f} / {seven[:, 1].mean():.2f}")


def _with(cam, q: np.ndarray):
    """cam with pose q[:6] (Rodrigues, t) and, where given, focal scale q[6] and principal point shift q[7:9]."""
    import cv2

    k = cam.K.copy()
    if len(q) > 6:
        k[0, 0] *= q[6]
        k[1, 1] *= q[6]
    if len(q) > 7:
        k[0, 2] += q[7]
        k[1, 2] += q[8]
    return dataclasses.replace(cam, R=cv2.Rodrigues(q[:3].reshape(3, 1))[0], t=q[3:6].copy(), K=k)


def self_calibrate(people, cameras, spec, params: int, rounds: int = 4) -> list:
    """The cameras with every view but the first refitted ``rounds`` times to the people triangulated with them
    (params 6: pose; 9: pose, focal scale, principal point), on points of confidence >= 0.5, soft-L1 10 px."""
    import cv2
    from scipy.optimize import least_squares

    from posetracker.multiview.reference import triangulate_person

    cams = list(cameras)
    for _ in range(rounds):
        xyz = np.concatenate([triangulate_person(cams, p.xy, p.confidence, spec).xyz.reshape(-1, 3) for p in people])
        for v in range(1, len(cams)):
            xy = np.concatenate([p.xy[v].reshape(-1, 2) for p in people])
            conf = np.concatenate([p.confidence[v].reshape(-1) for p in people])
            ok = np.isfinite(xyz).all(1) & np.isfinite(xy).all(1) & (conf >= 0.5)
            base = cams[v]
            q0 = np.concatenate([cv2.Rodrigues(base.R)[0].ravel(), base.t, [1.0, 0.0, 0.0][: params - 6]])
            fit = least_squares(lambda q: (_with(base, q).project(xyz[ok]) - xy[ok]).ravel(), q0, loss="soft_l1",
                                f_scale=10.0)
            cams[v] = _with(base, fit.x)
    return cams


def shutter(xy: np.ndarray, frames: float, axis: int, size: float) -> np.ndarray:
    """xy (V, T, K, 2) with each point moved back to its frame's instant, to first order, as if read
    ``frames`` x (coordinate / size - 1/2) frames late (a rolling shutter sweeping along ``axis``)."""
    velocity = np.gradient(xy, axis=1)  # px per frame
    late = frames * (xy[..., axis] / size - 0.5)
    out = xy - late[..., None] * velocity
    return np.where(np.isfinite(out), out, xy)


def cmd_triangulation(args) -> None:
    from posetracker.evaluation.multiview_reference import peer_person

    seqs, rec = load(args.dir)
    spec, cams, people = seqs[0].skeleton, rec.cameras, rec.people[:2]
    rows = [("as eval multiview", lambda p: spread(p, cams, spec))]
    for v, view in enumerate(VIEWS):
        rows.append((f"without {view}", lambda p, v=v: spread(p, cams, spec, np.where(np.arange(4)[:, None, None, None] == v,
                                                                                     np.nan, p.xy))))
    rows.append(("confidence squared", lambda p: spread(p, cams, spec, confidence=p.confidence ** 2)))
    arm = [spec.index("right_elbow"), spec.index("right_wrist")]

    def no_arm(p):  # cam01 does not see the woman's right arm: its readings of it left out
        xy = p.xy.copy()
        xy[0][:, arm] = np.nan
        return spread(p, cams, spec, xy)

    rows.append(("cam01's right elbow, wrist left out", no_arm))
    fitted = {n: self_calibrate(people, cams, spec, n) for n in (6, 9)}
    rows.append(("views' poses refitted x4", lambda p: spread(p, fitted[6], spec)))
    rows.append(("poses, focal, centre refitted x4", lambda p: spread(p, fitted[9], spec)))
    width, height = cams[0].image_size
    for axis, size in ((0, width), (1, height)):
        for frames in (-1.0, 1.0):
            rows.append((f"shutter {'xy'[axis]} {frames:+.0f} frame",
                         lambda p, a=axis, s=size, f=frames: spread(p, cams, spec, shutter(p.xy, f, a, s))))
    if args.peer:
        peers = [json.loads(Path(f).read_text()) for f in args.peer]

        def theirs(p):
            r = [peer_person(peers[v], p.match.track_ids(v), len(seqs[0]), spec) for v in range(4)]
            return np.stack([x[1] for x in r]), np.stack([x[2] for x in r])

        rows.append(("peer's 2-D", lambda p: spread(p, cams, spec, *theirs(p))))

        def mean(p):
            xy, _ = theirs(p)
            both = np.isfinite(xy).all(-1) & np.isfinite(p.xy).all(-1)
            return spread(p, cams, spec, np.where(both[..., None], 0.5 * (xy + p.xy), p.xy))

        rows.append(("ours and the peer's averaged", mean))
    for label, fn in rows:
        print(f"{label:<36}" + " / ".join(line(fn(p)) for p in people), flush=True)


def cmd_smoothing(args) -> None:
    """The --raw readings of each view solved (motion.solve) at several cutoffs, then triangulated."""
    from posetracker.motion.solve import SolveSettings, solve_tracks
    from posetracker.multiview.reference import reconstruct_views

    seqs, rec = load(args.rawdir)
    for cutoff in args.cutoffs:
        solved = [dataclasses.replace(s, frames=solve_tracks(s.frames, SolveSettings(cutoff_hz=cutoff)))
                  if cutoff > 0 else s for s in seqs]
        people = reconstruct_views(rec.cameras, solved, adjust=False).people
        print(f"cutoff {cutoff:g} Hz" if cutoff > 0 else "as read", " / ".join(line(spread(p, rec.cameras, solved[0].skeleton))
                                                                               for p in people[:2]), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bones")
    b.add_argument("dirs", nargs="+")
    s = sub.add_parser("single")
    s.add_argument("ref")
    s.add_argument("dirs", nargs="*")
    t = sub.add_parser("triangulation")
    t.add_argument("dir")
    t.add_argument("--peer", nargs=4, help="MediaPipe heavy readings of cam01..cam04 (mediapipe_world.py)")
    m = sub.add_parser("smoothing")
    m.add_argument("rawdir")
    m.add_argument("--cutoffs", nargs="+", type=float, default=[0, 2, 4, 6, 8, 12])
    args = ap.parse_args(argv)
    {"bones": cmd_bones, "single": cmd_single, "triangulation": cmd_triangulation, "smoothing": cmd_smoothing}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
