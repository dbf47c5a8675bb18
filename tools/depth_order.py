#!/usr/bin/env python3
"""Left/right depth order on the held-out clips: the model and BlazePose full against BlazePose heavy.

    python3 tools/depth_order.py [--config configs/distill_quick.yaml] [--weights models/posenet-human18.safetensors]
                                 [--gaps 0.05 0.10 0.15 0.20] [--per-pair]

For each validation clip of the config and each minimum gap (pairs whose sides the heavy
teacher sees closer than the gap, or where a teacher does not see both joints, are skipped),
prints the fraction of left/right joint pairs
whose nearer side agrees with BlazePose heavy: for the model (offline, no smoothing) and for
BlazePose full, the training teacher. The second is the reference's own noise level: where
the two BlazePose variants disagree, the model cannot agree with both; the last columns count
only the pair-frames where they agree (the order both teachers settle). ``--per-pair`` adds a
table per left/right pair at the smallest gap (model vs heavy, full vs heavy, model vs full).
Labels come from the cache that ``posetracker train clip-eval`` fills (computed on first use).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np


def visible_depth(labels):
    """labels with depth (T, N, K) nan where the teacher does not see the joint."""
    return replace(labels, depth=np.where(labels.visible, labels.depth, np.nan))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/distill_quick.yaml")
    ap.add_argument("--weights", default=None, help="default: the shipped model")
    ap.add_argument("--gaps", type=float, nargs="+", default=[0.05, 0.10, 0.15, 0.20])
    ap.add_argument("--per-pair", action="store_true", help="also break the smallest gap down by left/right pair")
    args = ap.parse_args()

    import torch

    from posetracker.model.weights import load_posenet
    from posetracker.session import SessionConfig, TrackingSession
    from posetracker.train.config import load_config
    from posetracker.train.features import iter_frames
    from posetracker.train.labels import cached_clip_labels
    from posetracker.train.metrics import depth_order_agreement, mirror_pairs, run_clip
    from posetracker.train.prepare import make_teacher, selection_for

    torch.set_num_threads(1)
    cfg = load_config(args.config)
    full, heavy = make_teacher(replace(cfg, blazepose="full")), make_teacher(replace(cfg, blazepose="heavy"))
    net = load_posenet(args.weights)
    pairs = mirror_pairs(net.spec)
    print("| clip | min gap m | pairs (heavy) | model vs heavy | BlazePose full vs heavy "
          "| pairs both agree on | model vs both |")
    print("|---|---|---|---|---|---|---|")
    per_pair = []
    for rel in cfg.val:
        path = cfg.data_path / rel
        sel = selection_for(path, cfg)
        frames = lambda: iter_frames(path, sel)  # noqa: E731
        # a joint counts only where that teacher sees it (like PCK and PA-MPJPE): the order of
        # limbs outside the frame (a webcam's knees) is a guess, not a reference
        lab_full, lab_heavy = (visible_depth(cached_clip_labels(t, path, net.spec, sel.key(), frames)) for t in (full, heavy))
        run = run_clip(TrackingSession(net, SessionConfig(mode="offline", smoothing=False, threads=1)), path, lab_heavy)
        model = np.where(run["matched_ok"], run["matched_depth"], np.nan)
        same_tracks = lab_full.depth.shape == lab_heavy.depth.shape  # both label runs track the same people
        for gap in args.gaps:
            ours = depth_order_agreement(model, lab_heavy.depth, pairs, min_gap_m=gap)
            ref = depth_order_agreement(lab_full.depth, lab_heavy.depth, pairs, min_gap_m=gap) if same_tracks else float("nan")
            gaps = lab_heavy.depth[..., pairs[:, 0]] - lab_heavy.depth[..., pairs[:, 1]]
            counted = int((np.abs(np.nan_to_num(gaps)) >= gap).sum())  # pairs-frames the heavy teacher separates
            both, settled = float("nan"), 0
            if same_tracks:
                gaps_full = lab_full.depth[..., pairs[:, 0]] - lab_full.depth[..., pairs[:, 1]]
                agree = np.sign(gaps_full) == np.sign(gaps)  # (T, N, M): both teachers put the same side nearer
                settled = int((agree & (np.abs(np.nan_to_num(gaps)) >= gap)).sum())
                both = depth_order_agreement(model, lab_heavy.depth, pairs, min_gap_m=gap, keep=agree)
            print(f"| {path.name} | {gap:.2f} | {counted} | {ours:.2f} | {ref:.2f} | {settled} | {both:.2f} |")
        gap = min(args.gaps)
        for a, b in pairs:
            one = np.array([[a, b]])
            n = int((np.abs(np.nan_to_num(lab_heavy.depth[..., a] - lab_heavy.depth[..., b])) >= gap).sum())
            scores = [depth_order_agreement(model, lab_heavy.depth, one, min_gap_m=gap)]
            scores += [depth_order_agreement(x, y, one, min_gap_m=gap) if same_tracks else float("nan")
                       for x, y in ((lab_full.depth, lab_heavy.depth), (model, lab_full.depth))]
            per_pair.append(f"| {path.name} | {net.spec.joint_names[a].removeprefix('left_')} | {n} | "
                            + " | ".join(f"{v:.2f}" for v in scores) + " |")
    if args.per_pair:
        print(f"\n| clip | pair (gap >= {min(args.gaps):.2f} m) | pairs (heavy) | model vs heavy | full vs heavy | model vs full |")
        print("|---|---|---|---|---|---|")
        print("\n".join(per_pair))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
