"""Would a second 3-D reader averaged in beat MediaPipe heavy in every cell? (studies/multiview-reference.md)

    python studies/tools/single_view_blend.py BASE --peer mp_cam01.json ... mp_cam04.json --weights 0.3 0.5 [--rays] \
        [--reader ghum_cam01.json ... ghum_cam04.json]

BASE holds cam1.json .. cam4.json (``posetracker process`` of the 4-view trial's views); ``--peer``: MediaPipe
heavy's readings of each view (``studies/tools/mediapipe_world.py``), what the blend is compared with;
``--reader``: the second reader's readings averaged in (default: the peer's; ``studies/tools/ghum_world.py`` reads
BlazePose GHUM with the product's own rebuild on ROIs from our 2-D). Per frame, the reader's world landmarks of
each person are fitted onto ours (rotation, scale, translation over the body joints: a reader's pose, not its
place) and averaged with ours, weight W on the reader's. ``--rays``: only the averaged depth is kept, each joint
staying on its own 2-D ray (our overlay unchanged, as a depth source inside the product would leave it). Scored
against the own reference (``--reference mp2d``: the check built from MediaPipe's 2-D) as
``single_view_compare.py`` does: per view-person cell, the blend against MediaPipe
(paired 95 % block-bootstrap interval; + better, - worse, = tied) on PA-MPJPE and the mean knee / hip / elbow
angle error.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from single_view_compare import NAMES, cells, references  # noqa: E402

from posetracker.evaluation.multiview_reference import _per_metric, block_bootstrap, frame_errors  # noqa: E402


def fit_onto(src: np.ndarray, dst: np.ndarray, use: np.ndarray) -> np.ndarray:
    """(T, K, 3) ``src`` moved per frame by the similarity that best fits its ``use`` (K,) joints onto ``dst``'s
    (T, K, 3); nan in frames with fewer than 4 joints both read."""
    out = np.full_like(src, np.nan)
    for t in range(len(src)):
        ok = np.isfinite(src[t]).all(-1) & np.isfinite(dst[t]).all(-1) & use
        if ok.sum() < 4:
            continue
        a, b = src[t][ok], dst[t][ok]
        ma, mb = a.mean(0), b.mean(0)
        u, s, vt = np.linalg.svd((a - ma).T @ (b - mb))
        d = np.diag([1.0, 1.0, np.sign(np.linalg.det(u @ vt))])
        scale = (s * np.diag(d)).sum() / ((a - ma) ** 2).sum()
        out[t] = (src[t] - ma) @ (u @ d @ vt) * scale + mb
    return out


def image_points(base: Path, refs, spec) -> dict:
    """{(view, person): (T, K, 2) our 2-D joints px (nan where absent)}."""
    from posetracker.export.json_io import read_sequence
    from posetracker.tracks import person_tracks

    out = {}
    for v in range(4):
        seq = read_sequence(base / f"cam{v + 1}.json")
        tracks = person_tracks(seq)
        for n, r in enumerate(refs):
            xy = np.full((len(seq), spec.num_joints, 2), np.nan)
            for tid in r["ids"][v]:
                xy[tracks[tid].present] = tracks[tid].keypoints[tracks[tid].present, :, :2]
            out[(v, n)] = xy
    return out


def camera_of(world: np.ndarray, xy: np.ndarray) -> tuple[float, float, float]:
    """(T, K, 3) camera metres and their (T, K, 2) px -> (focal, cx, cy) by least squares (u = f x / z + cx)."""
    ok = np.isfinite(world).all(-1) & np.isfinite(xy).all(-1)
    a = np.stack([world[ok][:, 0] / world[ok][:, 2], np.ones(ok.sum())], 1)
    b = np.stack([world[ok][:, 1] / world[ok][:, 2], np.ones(ok.sum())], 1)
    (fx, cx), (fy, cy) = np.linalg.lstsq(a, xy[ok][:, 0], rcond=None)[0], np.linalg.lstsq(b, xy[ok][:, 1], rcond=None)[0]
    return 0.5 * (fx + fy), cx, cy


def on_rays(xy: np.ndarray, z: np.ndarray, camera: tuple[float, float, float]) -> np.ndarray:
    """(T, K, 2) px at depths (T, K) -> (T, K, 3) camera metres."""
    f, cx, cy = camera
    return np.stack([(xy[..., 0] - cx) * z / f, (xy[..., 1] - cy) * z / f, z], -1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("--peer", nargs=4, required=True)
    ap.add_argument("--reader", nargs=4, help="the readings averaged in (default: --peer)")
    ap.add_argument("--reference", choices=("own", "mp2d"), default="own",
                    help="own: our 2-D triangulated (the issue's); mp2d: MediaPipe's 2-D triangulated (the check)")
    ap.add_argument("--weights", nargs="+", type=float, default=[0.3, 0.5])
    ap.add_argument("--rays", action="store_true", help="keep each joint on its own 2-D ray (depth only)")
    ap.add_argument("--image", action="store_true",
                    help="each joint on the ray of the two readers' mean 2-D point, at the blend's depth")
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    refs, spec, _ = references(args.base, args.peer)
    ours_by_cell = cells(args.base, refs, spec)
    xy_by_cell = image_points(args.base, refs, spec)
    readers = references(args.base, args.reader)[0] if args.reader else refs
    body = np.array([j not in spec.virtual for j in range(spec.num_joints)])
    better = {w: [0, 0, 0] for w in args.weights}  # PA, angles, both
    print("| view | person | ours PA / angle | MediaPipe | " + " | ".join(f"W {w}" for w in args.weights) + " |")
    print("|---|---|---|---|" + "---|" * len(args.weights))
    for (v, n), ours in ours_by_cell.items():
        ref, peer = refs[n][args.reference], refs[n]["peer"][v]
        fitted = fit_onto(readers[n]["peer"][v], ours, body)
        eo, ep = (_per_metric(frame_errors(x, ref, spec)) for x in (ours, peer))
        both = np.isfinite(eo["pa_mm"]) & np.isfinite(ep["pa_mm"])
        row = [NAMES[v], f"P{n + 1}", f"{eo['pa_mm'][both].mean():.1f} / {np.nanmean(eo['mean_angle'][both]):.1f}",
               f"{ep['pa_mm'][both].mean():.1f} / {np.nanmean(ep['mean_angle'][both]):.1f}"]
        for w in args.weights:
            blend = np.where(np.isfinite(fitted), (1 - w) * ours + w * fitted, ours)
            if args.rays:  # the blended depth on our own ray
                blend = ours * (blend[..., 2] / ours[..., 2])[..., None]
            elif args.image:  # the mean 2-D point's ray, at the blend's depth
                xy = xy_by_cell[(v, n)]
                other = readers[n]["xy"][v]
                mean_xy = np.where(np.isfinite(other), (1 - w) * xy + w * other, xy)
                blend = on_rays(mean_xy, blend[..., 2], camera_of(ours, xy))
            eb = _per_metric(frame_errors(blend, ref, spec))
            marks = []
            for i, m in enumerate(("pa_mm", "mean_angle")):
                _, lo, hi = block_bootstrap(np.where(both, eb[m] - ep[m], np.nan))
                marks.append(f"{np.nanmean(eb[m][both]):.1f} {'+' if hi < 0 else '-' if lo > 0 else '='}")
                better[w][i] += hi < 0
            better[w][2] += marks[0].endswith("+") and marks[1].endswith("+")
            row.append(" / ".join(marks))
        print("| " + " | ".join(row) + " |")
    for w, (pa, angle, both_) in better.items():
        print(f"W {w}: better than MediaPipe on PA-MPJPE in {pa} / 8 cells, on angles in {angle} / 8, on both in {both_} / 8")


if __name__ == "__main__":
    main()
