"""Single-view 3-D variants against the 4-view trial's references, paired with a base (studies/multiview-reference.md).

    python studies/tools/single_view_compare.py BASE NAME=DIR ... --peer mp_cam01.json ... mp_cam04.json
    python studies/tools/single_view_compare.py BASE --lifting RECORDED --peer ...

BASE and each DIR hold cam1.json .. cam4.json (``posetracker process`` of cam01-04, or
``studies/tools/single_view_replay.py``); ``--peer``: MediaPipe heavy readings of each view
(``studies/tools/mediapipe_world.py``). The references are built from BASE's 2-D points as ``posetracker eval
multiview`` builds them (own), and from MediaPipe's 2-D landmarks (the check); a variant that changes only 3-D
has the same references. One table row per variant: pooled PA-MPJPE and mean knee / hip / elbow angle error
(frames all three read), and the view-person cells whose paired 95 % block-bootstrap interval of variant - base
lies below / above 0.

``--lifting RECORDED`` (a ``single_view_replay.py record`` folder): per frame, no motion solve, each matched
person lifted from the depth head alone, from the pose prior alone, and from the pose prior fed the 2-D rectified
to a level camera (the calibration's gravity), knee / hip / elbow angle error against the own reference. With
``--level-prior WEIGHTS`` (a prior trained on level cameras, ``configs/pose_prior_level.yaml``) two more: that
prior alone on the level camera's 2-D, and mixed half and half with the depth head as the session mixes it
(``DepthEstimator`` with the calibration's gravity), beside the shipped mix.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np

from posetracker.evaluation.multiview_reference import (
    _per_metric,
    _world_of,
    block_bootstrap,
    frame_errors,
    joint_angles,
    peer_person,
)
from posetracker.export.json_io import read_sequence
from posetracker.multiview.calibration import camera_named, read_calibrations
from posetracker.multiview.reference import reconstruct_views, triangulate_person
from posetracker.tracks import person_tracks

D = Path("../shared/data/video/multiview_pose2sim_multiperson")
NAMES = ("cam01", "cam02", "cam03", "cam04")
GROUPS = (("knee", [0, 3]), ("hip", [1, 4]), ("elbow", [2, 5]))


def references(base: Path, peers: list[str]):
    cams = read_calibrations([str(D / "calibration.qca.txt")])
    cams = [camera_named(cams, n) for n in NAMES]
    seqs = [read_sequence(base / f"cam{v + 1}.json") for v in range(4)]
    spec, t = seqs[0].skeleton, len(seqs[0])
    readings = [json.loads(Path(p).read_text()) for p in peers]
    rec = reconstruct_views(cams, seqs)
    refs = []
    for person in rec.people:
        got = [peer_person(readings[v], person.match.track_ids(v), t, spec) for v in range(4)]
        xy, vis = np.stack([g[1] for g in got]), np.stack([g[2] for g in got])
        tri = triangulate_person(rec.cameras, xy, vis, spec, 15.0, min_views=2)
        refs.append({"ids": [person.match.track_ids(v) for v in range(4)], "own": person.xyz, "mp2d": tri.xyz,
                     "peer": [g[0] for g in got], "xy": xy})
    return refs, spec, cams


def cells(d: Path, refs, spec) -> dict:
    seqs = [read_sequence(d / f"cam{v + 1}.json") for v in range(4)]
    return {(v, n): _world_of(person_tracks(seqs[v]), r["ids"][v], len(seqs[v]), spec.num_joints)
            for v in range(4) for n, r in enumerate(refs)}


def per_cell(base: Path, variants: list[str], refs, spec) -> None:
    """Per view-person cell, own reference: base and variant PA-MPJPE and knee / hip / elbow / mean angle error,
    variant - base and variant - MediaPipe with their paired 95 % block-bootstrap intervals."""
    b = cells(base, refs, spec)
    print("| variant | view | person | metric | base | variant | variant - base [95 %] | variant - MediaPipe [95 %] |")
    print("|---|---|---|---|---|---|---|---|")
    for item in variants:
        name, _, d = item.partition("=")
        c = cells(Path(d), refs, spec)
        for (v, n), w in c.items():
            ref, peer = refs[n]["own"], refs[n]["peer"][v]
            eb, ev = _per_metric(frame_errors(b[(v, n)], ref, spec)), _per_metric(frame_errors(w, ref, spec))
            ep = _per_metric(frame_errors(peer, ref, spec))
            both = np.isfinite(eb["pa_mm"]) & np.isfinite(ev["pa_mm"]) & np.isfinite(ep["pa_mm"])
            for m in ("pa_mm", "knee", "hip", "elbow", "mean_angle"):
                diff = block_bootstrap(np.where(both, ev[m] - eb[m], np.nan))
                peer_diff = block_bootstrap(np.where(both, ev[m] - ep[m], np.nan))
                print(f"| {name} | {NAMES[v]} | P{n + 1} | {m} | {np.nanmean(np.where(both, eb[m], np.nan)):.1f} | "
                      f"{np.nanmean(np.where(both, ev[m], np.nan)):.1f} | {diff[0]:+.1f} [{diff[1]:+.1f}, {diff[2]:+.1f}] | "
                      f"{peer_diff[0]:+.1f} [{peer_diff[1]:+.1f}, {peer_diff[2]:+.1f}] |")


def summary(base: Path, variants: list[str], refs, spec) -> None:
    b = cells(base, refs, spec)
    print("| variant | PA-MPJPE mm, own / MediaPipe-2-D reference | mean angle °, own / MP-2-D | cells better / "
          "worse: PA own, PA MP-2-D, angle own, angle MP-2-D | cells worse |")
    print("|---|---|---|---|---|")
    for item in variants:
        name, _, d = item.partition("=")
        c = cells(Path(d), refs, spec)
        pooled, counts, worse = {}, [], set()
        for m in ("pa_mm", "mean_angle"):
            for key in ("own", "mp2d"):
                better = worse_n = 0
                before, after = [], []
                for (v, n), w in c.items():
                    ref, peer = refs[n][key], refs[n]["peer"][v]
                    eb, ev = _per_metric(frame_errors(b[(v, n)], ref, spec)), _per_metric(frame_errors(w, ref, spec))
                    ep = _per_metric(frame_errors(peer, ref, spec))
                    both = np.isfinite(eb["pa_mm"]) & np.isfinite(ev["pa_mm"]) & np.isfinite(ep["pa_mm"])
                    _, lo, hi = block_bootstrap(np.where(both, ev[m] - eb[m], np.nan))
                    better, worse_n = better + (hi < 0), worse_n + (lo > 0)
                    if lo > 0:
                        worse.add(f"{NAMES[v]} P{n + 1}")
                    before.append(np.where(both, eb[m], np.nan))
                    after.append(np.where(both, ev[m], np.nan))
                pooled[(key, m)] = (np.nanmean(np.concatenate(before)), np.nanmean(np.concatenate(after)))
                counts.append(f"{better}/{worse_n}")
        def cell(m: str, i: int, p: dict = pooled) -> str:
            return f"{p[('own', m)][i]:.1f} / {p[('mp2d', m)][i]:.1f}"

        if item is variants[0]:
            print(f"| (base) | {cell('pa_mm', 0)} | {cell('mean_angle', 0)} | | |")
        print(f"| {name} | {cell('pa_mm', 1)} | {cell('mean_angle', 1)} | {', '.join(counts)} | "
              f"{', '.join(sorted(worse)) or '-'} |")


def lifting(base: Path, recorded: Path, refs, spec, cams, level_weights: Path | None = None) -> None:
    from posetracker.decoding.tree import path_matrix
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # level_prior.py beside this file
    from level_prior import LevelDepthEstimator, level_relative_depth, level_turn

    from posetracker.depth.estimator import DepthEstimator
    from posetracker.depth.lift import Camera, joint_depths
    from posetracker.depth.pose_prior import load_pose_prior

    prior, path = load_pose_prior(spec=spec), path_matrix(spec)
    level = load_pose_prior(level_weights, spec) if level_weights else None
    camera = Camera(1088, 1920, 60.0)  # what process tracks the trial with (default field of view)
    k, k_inv = camera.matrix, np.linalg.inv(camera.matrix)

    def by_prior(xy, conf, root, turn=None):
        if turn is not None:  # the pixels a level camera at the same place would see
            h = np.concatenate([xy, np.ones((len(xy), 1))], -1) @ k_inv.T @ turn.T @ k.T
            xy = h[:, :2] / h[:, 2:]
        rel = prior.relative_depth(xy[None], (conf >= prior.min_confidence)[None], np.array([root]), camera.focal)[0]
        return camera.to_camera(xy, root + rel)

    names = "head / prior / prior, level" + (" / level prior / mix / level mix" if level else "")
    print(f"| view | person | camera pitch ° | knee: {names} | hip | elbow |")
    print("|---|---|---|---|---|---|")
    for v in range(4):
        down = cams[v].R @ np.array([0.0, 0.0, -1.0])  # Z up in the calibration's world
        turn = level_turn(down)
        mixes = (DepthEstimator(spec, 60.0, True, prior),
                 LevelDepthEstimator(DepthEstimator(spec, 60.0, True, prior), level, down) if level else None)
        store = pickle.loads((recorded / f"cam{v + 1}.pkl").read_bytes())
        tracks = person_tracks(read_sequence(base / f"cam{v + 1}.json"))
        for n, r in enumerate(refs):
            kp = np.full((len(r["own"]), spec.num_joints, 2), np.nan)
            for tid in r["ids"][v]:
                kp[tracks[tid].present] = tracks[tid].keypoints[tracks[tid].present, :, :2]
            truth = joint_angles(r["own"], spec.joint_names)
            errs = []
            for pose, args, _ in store:
                xy, conf, reads = args[0], args[1], args[2]
                if not len(xy) or not np.isfinite(kp[pose.index]).any():
                    continue
                p = int(np.nanargmin(np.nanmean(np.linalg.norm(xy - kp[pose.index][None], axis=-1), axis=1)))
                depth = joint_depths(reads[p:p + 1], path)[0]
                root = float(depth[spec.root])
                lifted = [camera.to_camera(xy[p], depth), by_prior(xy[p], conf[p], root),
                          by_prior(xy[p], conf[p], root, turn)]
                if level is not None:
                    rel = level_relative_depth(level, xy[p:p + 1], (conf[p:p + 1] >= level.min_confidence),
                                               np.array([root]), camera.focal, turn, camera.principal_point,
                                               depth[None, level.hips])[0]
                    lifted.append(camera.to_camera(xy[p], depth[level.hips].mean() + rel))
                    one = [a[p:p + 1] if isinstance(a, np.ndarray) else a for a in args]
                    lifted += [m.estimate(*one)[1][0] for m in mixes]
                errs.append([np.abs(joint_angles(x, spec.joint_names) - truth[pose.index]) for x in lifted])
            e = np.array(errs)  # (T, sources, A)
            cols = [" / ".join(f"{x:.1f}" for x in np.nanmean(e[:, :, idx], axis=(0, 2))) for _, idx in GROUPS]
            print(f"| {NAMES[v]} | P{n + 1} | {np.degrees(np.arcsin(down[2])):.1f} | " + " | ".join(cols) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("variants", nargs="*", help="NAME=DIR")
    ap.add_argument("--peer", nargs=4, required=True)
    ap.add_argument("--lifting", type=Path, help="a single_view_replay.py record folder")
    ap.add_argument("--level-prior", type=Path, help="with --lifting: a pose prior trained on level cameras")
    ap.add_argument("--cells", action="store_true", help="also each cell's metrics, against the base and MediaPipe")
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    refs, spec, cams = references(args.base, args.peer)
    if args.variants:
        summary(args.base, args.variants, refs, spec)
        if args.cells:
            per_cell(args.base, args.variants, refs, spec)
    if args.lifting:
        lifting(args.base, args.lifting, refs, spec, cams, args.level_prior)


if __name__ == "__main__":
    main()
