#!/usr/bin/env python3
"""Do our network + decoder find the same people as the original MoveNet MultiPose?

    python3 studies/tools/compare_movenet.py [--shared ../shared] [--out docs/movenet_comparison]

For every multi-person photo in data/video/images_openpose_coco_val2014_unlabeled
and every image of the labelled human sets, runs (a) PoseTracker's tree decoder
on the converted network and (b) the original MoveNet decode on the original
heads (posetracker.evaluation.movenet_baseline), matches the people of (a) and
(b) one-to-one by OKS (Hungarian), and writes a table (summary.md) and
side-by-side PNGs (ours left, MoveNet right) of the first photos.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from posetracker.evaluation.movenet_baseline import MoveNetBaseline  # noqa: E402
from posetracker.model.weights import load_posenet  # noqa: E402
from posetracker.session import NetworkSettings, SessionConfig, TrackingSession  # noqa: E402
from posetracker.oks import joint_sigmas, oks  # noqa: E402

MIN_SCORE = 0.2  # people drawn/counted on both sides


def similarity(a: np.ndarray, b: np.ndarray, sig: np.ndarray) -> float:
    """OKS of two (17, 2) people, scale from b's keypoint box."""
    area = max(np.ptp(b[:, 0]) * np.ptp(b[:, 1]), 1.0)
    return float(oks(((a - b) ** 2).sum(-1), area, sig))


def draw(img: np.ndarray, pose, spec, colour) -> np.ndarray:
    out = img.copy()
    for p in range(pose.num_people):
        if pose.scores[p] < MIN_SCORE:
            continue
        xy = pose.keypoints[p, :, :2]
        for a, b in list(map(tuple, spec.edges)) + list(map(tuple, spec.extra_edges)):
            if spec.root in (a, b) or min(pose.confidence[p, a], pose.confidence[p, b]) < 0.2:
                continue
            cv2.line(out, tuple(int(v) for v in xy[a]), tuple(int(v) for v in xy[b]), colour, 2, cv2.LINE_AA)
        for k in range(17):
            if pose.confidence[p, k] >= 0.2:
                cv2.circle(out, tuple(int(v) for v in xy[k]), 3, (255, 255, 255), -1, cv2.LINE_AA)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[3] / "shared")
    ap.add_argument("--out", type=Path, default=Path("docs/movenet_comparison"))
    ap.add_argument("--pngs", type=int, default=4)
    args = ap.parse_args()
    net = load_posenet()
    ours = TrackingSession(net, SessionConfig(network=NetworkSettings(runtime="torch")))
    base = MoveNetBaseline(args.shared / "pretrained/movenet/movenet-multipose.json", net.backbone, net.spec)
    sig = joint_sigmas(net.spec)[:17]
    images = sorted((args.shared / "data/video/images_openpose_coco_val2014_unlabeled").glob("*.jpg"))
    images += sorted(p for p in (args.shared / "data/human").rglob("*") if p.suffix.lower() in (".jpg", ".png"))
    args.out.mkdir(parents=True, exist_ok=True)
    rows, totals = [], np.zeros(4, int)
    for i, path in enumerate(images):
        rgb = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)
        a, b = ours.process_image(rgb), base.predict(rgb)
        ia = np.flatnonzero(a.scores >= MIN_SCORE)
        ib = np.flatnonzero(b.scores >= MIN_SCORE)
        sim = np.array([[similarity(a.keypoints[p, :17, :2], b.keypoints[q, :17, :2], sig) for q in ib] for p in ia]).reshape(len(ia), len(ib))
        r, c = linear_sum_assignment(-sim) if sim.size else ([], [])
        same = int(sum(sim[x, y] >= 0.5 for x, y in zip(r, c)))
        rows.append((path.relative_to(args.shared).as_posix(), len(ia), len(ib), same,
                     float(np.mean([sim[x, y] for x, y in zip(r, c)])) if len(r) else float("nan")))
        totals += [1, len(ia), len(ib), same]
        if i < args.pngs:
            pair = np.hstack([draw(rgb, a, net.spec, (0, 200, 255)), draw(rgb, b, net.spec, (255, 80, 0))])
            cv2.imwrite(str(args.out / f"{path.stem}.png"), cv2.cvtColor(pair, cv2.COLOR_RGB2BGR))
    lines = ["| image | people (ours) | people (MoveNet) | same people (OKS >= 0.5) | mean OKS ours vs MoveNet |",
             "|---|---|---|---|---|"]
    lines += [f"| {n} | {x} | {y} | {s} | {o:.3f} |" for n, x, y, s, o in rows]
    lines.append(f"| **all {totals[0]} images** | {totals[1]} | {totals[2]} | {totals[3]} | |")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
