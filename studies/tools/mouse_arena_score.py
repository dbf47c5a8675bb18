"""Per-mouse scores of ``posetracker train held-out-eval --out`` results, paired comparisons, and a sheet.

    python studies/tools/mouse_arena_score.py score DATA.json EVAL.json [AFTER.json] [--combos none ...] [--block N]
    python studies/tools/mouse_arena_score.py sheet DATA.json WEIGHTS OUT.png [--refiners heatmap graph] [--animals 2]

``score``: per labelled mouse of DATA (the set the eval scored, in its order; a detector config's .yaml: its
own held-out frames), L = its snout-to-tail-base
length (labelled; where one of the two is missing, the median L of the same track in the same video,
else the longer side of its labelled points' box). A mouse is *found* when the reading matched to it has
a median joint error <= 0.5 L (held-out-eval's own "found" counts any matched reading, however far);
PCK@0.1L counts a labelled joint hit when within 0.1 L, the joints of mice not matched counted wrong.
With AFTER: AFTER - EVAL per combination with a 95 % bootstrap interval, paired, resampling clusters of
mice (same video and ``frame // block``; the default block 1000 makes one cluster per video).
``sheet``: every labelled mouse of DATA cut out at 3 L with its labels (circles: snout red, left ear
blue, right ear green, tail base yellow) and the session's reading (crosses, same colours), captioned
with its number, found and hits; the product's path (``TrackingSession.process_image``).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np


def labelled_mice(data: str):
    """[(item, instance index, points (K, 2) nan = unlabelled, L px)] in held-out-eval's order."""
    from posetracker.evaluation.datasets import item_points, joint_columns, load_labelled_set
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("mouse4")
    if data.endswith(".yaml"):  # a detector config: its own held-out frames, as held-out-eval without --data
        from posetracker.train.detector import load_detector_config
        from posetracker.train.detector_samples import load_split

        cfg = load_detector_config(data)
        _, items, cols = load_split(str(cfg.data_path), spec, cfg.val_fraction)
    else:
        ls = load_labelled_set(data)
        items, cols = ls.items, joint_columns(ls.keypoint_names, spec)
    real = np.array([k not in spec.virtual for k in range(spec.num_joints)])
    rows = []
    for item in items:
        gt = item_points(item, cols)
        gt[:, ~real] = np.nan
        for g in range(len(gt)):
            if np.isfinite(gt[g]).all(-1).any():
                rows.append([item, g, gt[g], np.nan])
    snout, tail = spec.joint_names.index("snout"), spec.joint_names.index("tailbase")
    by_track = defaultdict(list)
    for r in rows:
        r[3] = float(np.linalg.norm(r[2][snout] - r[2][tail]))
        track = r[0].instances[r[1]].track
        if np.isfinite(r[3]) and track is not None:
            by_track[(r[0].file, track)].append(r[3])
    for r in rows:
        if not np.isfinite(r[3]):
            same = by_track.get((r[0].file, r[0].instances[r[1]].track))
            ok = r[2][np.isfinite(r[2]).all(-1)]
            r[3] = float(np.median(same)) if same else float(np.ptp(ok, axis=0).max())
    return rows


def per_mouse(rows, result: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(found (N,) bool, hits (N,) joints within 0.1 L, labelled (N,) joints) of one combination's result."""
    per = result["per_instance"]
    if len(per) != len(rows):
        raise SystemExit(f"the eval scored {len(per)} mice, the set has {len(rows)}: not the same set")
    found, hits, lab = [], [], []
    for r, p in zip(rows, per):
        n = int(np.isfinite(r[2]).all(-1).sum())
        e = np.array([np.nan if v is None else v for v in p["errors"]], np.float64)
        e = e[np.isfinite(e)]
        found.append(bool(len(e)) and float(np.median(e)) <= 0.5 * r[3])
        hits.append(int((e <= 0.1 * r[3]).sum()))
        lab.append(n)
    return np.array(found), np.array(hits), np.array(lab)


def clusters(rows, block: int) -> np.ndarray:
    keys = [(r[0].file, (r[0].frame_idx or 0) // block) for r in rows]
    index = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return np.array([index[k] for k in keys])


def bootstrap(diff_found, diff_hits, lab, cl, n=10000, seed=0) -> tuple[np.ndarray, np.ndarray]:
    """95 % intervals of the found-rate and PCK differences, resampling clusters ``cl`` (N,)."""
    rng = np.random.default_rng(seed)
    ids = np.unique(cl)
    members = [np.flatnonzero(cl == i) for i in ids]
    f, p = [], []
    for _ in range(n):
        pick = np.concatenate([members[i] for i in rng.integers(0, len(ids), len(ids))])
        f.append(diff_found[pick].mean())
        p.append(diff_hits[pick].sum() / max(lab[pick].sum(), 1))
    return np.percentile(f, [2.5, 97.5]), np.percentile(p, [2.5, 97.5])


def cmd_score(a) -> None:
    rows = labelled_mice(a.data)
    before = json.loads(open(a.eval).read())
    after = json.loads(open(a.after).read()) if a.after else None
    cl = clusters(rows, a.block)
    for combo in a.combos or [c for c in before if c != "tracking"]:
        f, h, n = per_mouse(rows, before[combo])
        line = f"{combo:14s} found {f.sum()}/{len(f)}  PCK@0.1L {h.sum() / n.sum():.3f}"
        if after is not None and combo in after:
            f2, h2, _ = per_mouse(rows, after[combo])
            fi, pi = bootstrap(f2.astype(float) - f, h2 - h, n, cl)
            line += (f"  ->  found {f2.sum()}/{len(f2)}  PCK@0.1L {h2.sum() / n.sum():.3f}   diff found "
                     f"{(f2.sum() - f.sum()) / len(f):+.3f} [{fi[0]:+.3f}, {fi[1]:+.3f}]  PCK "
                     f"{(h2.sum() - h.sum()) / n.sum():+.3f} [{pi[0]:+.3f}, {pi[1]:+.3f}]")
        print(line)
        if a.per_mouse:
            for i, (r, ff, hh, nn) in enumerate(zip(rows, f, h, n)):
                print(f"   {i:2d} {r[0].file}#{r[0].frame_idx} {r[0].instances[r[1]].track} L {r[3]:.0f}px "
                      f"{'found' if ff else 'MISSED'} {hh}/{nn}")


def cmd_sheet(a) -> None:
    import cv2

    from posetracker.evaluation.datasets import FrameCache, read_image
    from posetracker.evaluation.held_out import match_instances
    from posetracker.session import NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("mouse4")
    session = TrackingSession.open(spec, a.weights, SessionConfig(
        mode="live", network=NetworkSettings(threads=1), people=PeopleSettings(known_count=a.animals),
        refine=RefineSettings(refiners=tuple(a.refiners))))
    rows = labelled_mice(a.data)
    colours = [(255, 0, 0), (0, 0, 255), (0, 255, 0), (255, 255, 0)]
    tiles, cache, frames = [], FrameCache(), {}
    for n, (item, g, gt, length) in enumerate(rows):
        key = (item.file, item.frame_idx)
        if key not in frames:
            rgb = read_image(item, cache)
            pose = session.process_image(rgb)
            allgt = np.stack([r[2] for r in rows if (r[0].file, r[0].frame_idx) == key])
            frames[key] = (rgb, pose, dict(match_instances(pose.keypoints[:, :, :2].astype(np.float64), allgt)))
        rgb, pose, pairs = frames[key]
        own = [i for i, r in enumerate(rows) if (r[0].file, r[0].frame_idx) == key].index(n)
        c = np.nanmean(gt, 0)
        half = 1.5 * length
        x0, y0 = int(c[0] - half), int(c[1] - half)
        m = np.array([[200 / (2 * half), 0, -x0 * 200 / (2 * half)], [0, 200 / (2 * half), -y0 * 200 / (2 * half)]])
        tile = cv2.warpAffine(rgb, m, (200, 200))
        pred = pose.keypoints[pairs[own], :4, :2] if own in pairs else np.full((4, 2), np.nan)
        err = np.linalg.norm(pred - gt[:4], axis=-1)
        ok = np.isfinite(err)
        found = bool(ok.any()) and float(np.median(err[ok])) <= 0.5 * length
        for k in range(4):
            for pt, cross in ((gt[k], False), (pred[k], True)):
                if np.isfinite(pt).all():
                    q = (int(pt[0] * m[0, 0] + m[0, 2]), int(pt[1] * m[1, 1] + m[1, 2]))
                    if cross:
                        cv2.drawMarker(tile, q, colours[k], cv2.MARKER_CROSS, 10, 2)
                    else:
                        cv2.circle(tile, q, 4, colours[k], 1)
        cv2.putText(tile, f"{n} {'found' if found else 'MISS'} {int((err[ok] <= 0.1 * length).sum())}/"
                    f"{int(np.isfinite(gt[:4]).all(-1).sum())}", (3, 14), 0, 0.45, (255, 0, 255), 1)
        tiles.append(tile)
    cache.close()
    per_row = 7
    while len(tiles) % per_row:
        tiles.append(np.zeros_like(tiles[0]))
    sheet = np.vstack([np.hstack(tiles[i : i + per_row]) for i in range(0, len(tiles), per_row)])
    cv2.imwrite(a.out, cv2.cvtColor(sheet, cv2.COLOR_RGB2BGR))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(required=True)
    s = sub.add_parser("score")
    s.add_argument("data")
    s.add_argument("eval")
    s.add_argument("after", nargs="?")
    s.add_argument("--combos", nargs="+")
    s.add_argument("--block", type=int, default=1000)
    s.add_argument("--per-mouse", action="store_true")
    s.set_defaults(func=cmd_score)
    t = sub.add_parser("sheet")
    t.add_argument("data")
    t.add_argument("weights")
    t.add_argument("out")
    t.add_argument("--refiners", nargs="*", default=[])
    t.add_argument("--animals", type=int, default=None)
    t.set_defaults(func=cmd_sheet)
    a = ap.parse_args()
    a.func(a)


if __name__ == "__main__":
    main()
