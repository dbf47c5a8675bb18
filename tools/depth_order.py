#!/usr/bin/env python3
"""Left/right depth order on the held-out clips: the model and BlazePose full against BlazePose heavy.

    python3 tools/depth_order.py [--config configs/distill_quick.yaml] [--weights models/posenet-human18.safetensors]
                                 [--gaps 0.05 0.10 0.15 0.20] [--per-pair] [--clips val|held-out] [--smoothing]
                                 [--reference heavy|full] [--no-pose-prior]

For each validation clip of the config and each minimum gap (pairs whose sides the heavy
teacher sees closer than the gap, or where a teacher does not see both joints, are skipped),
prints the fraction of left/right joint pairs
whose nearer side agrees with BlazePose heavy: for the model (offline, no smoothing, pose prior on unless --no-pose-prior) and for
BlazePose full, the training teacher. The second is the reference's own noise level: where
the two BlazePose variants disagree, the model cannot agree with both; the last columns count
only the pair-frames where they agree (the order both teachers settle). ``--per-pair`` adds a
table per left/right pair at the smallest gap (model vs heavy, full vs heavy, model vs full).
``--clips held-out`` runs every clip under the data root that the config does not train on
(its validation clips and all the others), one row per clip at the smallest gap, then the
pair-frames pooled over them at each gap; its "one order" column is the best score of a model that gives
each pair one order through the clip (heavy's majority side), i.e. how much the clip tests
anything beyond which way the body is turned; the last four columns count the limbs only
(elbows, wrists, knees, ankles).
Labels come from the cache that ``posetracker train clip-eval`` fills (computed on first use).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np


def visible_depth(labels):
    """labels with depth (T, N, K) nan where the teacher does not see the joint."""
    return replace(labels, depth=np.where(labels.visible, labels.depth, np.nan))


def pair_gaps(depth, pairs):
    """depth (T, N, K) -> (T, N, M) z_left - z_right of each pair."""
    return depth[..., pairs[:, 0]] - depth[..., pairs[:, 1]]


LIMBS = ("elbow", "wrist", "knee", "ankle")  # the arms' and legs' joints (not eyes, ears, shoulders, hips)


def fractions(rows):
    """(S, 3, 2) (agree, counted) per pair set -> table cells: counted, then the three fractions, per set."""
    return " | ".join(f"{r[0, 1]} | " + " | ".join(f"{a / n:.2f}" if n else "-" for a, n in r) for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/distill_quick.yaml")
    ap.add_argument("--weights", default=None, help="default: the shipped model")
    ap.add_argument("--gaps", type=float, nargs="+", default=[0.05, 0.10, 0.15, 0.20])
    ap.add_argument("--per-pair", action="store_true", help="also break the smallest gap down by left/right pair")
    ap.add_argument("--reference", choices=("heavy", "full"), default="heavy",
                    help="the teacher to compare with (full: the one the model is trained on)")
    ap.add_argument("--smoothing", action="store_true", help="the product's track smoothing on (default: raw per-frame output)")
    ap.add_argument("--no-pose-prior", action="store_true", help="the depth head alone (default: mixed with the pose prior, "
                    "as the product runs)")
    ap.add_argument("--clips", choices=("val", "held-out"), default="val",
                    help="val: the config's validation clips; held-out: every clip the config does not train on")
    args = ap.parse_args()

    import torch

    from posetracker.model.weights import load_posenet
    from posetracker.session import SessionConfig, TrackingSession
    from posetracker.train.clips import list_clips
    from posetracker.train.config import load_config
    from posetracker.train.features import iter_frames
    from posetracker.train.clip_labels import cached_clip_labels
    from posetracker.train.metrics import (depth_order_agreement, depth_order_counts, mirror_pairs,
                                           one_order_counts, run_clip)
    from posetracker.train.prepare import make_teacher, selection_for

    torch.set_num_threads(1)
    cfg = load_config(args.config)
    full, heavy = make_teacher(replace(cfg, blazepose="full")), make_teacher(replace(cfg, blazepose="heavy"))
    net = load_posenet(args.weights)
    pairs = mirror_pairs(net.spec)

    def clip_depths(rel):
        """(model, other teacher, reference) depths (T, N, K) of one clip (default: full, heavy), nan where
        unmatched or unseen; the second is None where the two label runs track different people."""
        path = cfg.data_path / rel
        sel = selection_for(path, cfg)
        frames = lambda: iter_frames(path, sel)  # noqa: E731
        # a joint counts only where that teacher sees it (like PCK and PA-MPJPE): the order of
        # limbs outside the frame (a webcam's knees) is a guess, not a reference
        lab_full, lab_heavy = (visible_depth(cached_clip_labels(t, path, net.spec, sel.key(), frames)) for t in (full, heavy))
        if args.reference == "full":  # swap the roles: full is the reference, heavy the other teacher
            lab_full, lab_heavy = lab_heavy, lab_full
        run = run_clip(TrackingSession(net, SessionConfig(mode="offline", smoothing=args.smoothing, threads=1,
                                                             pose_prior=not args.no_pose_prior)), path, lab_heavy)
        model = np.where(run["matched_ok"], run["matched_depth"], np.nan)
        same_tracks = lab_full.depth.shape == lab_heavy.depth.shape  # both label runs track the same people
        return model, (lab_full.depth if same_tracks else None), lab_heavy.depth

    ref, other = ("full", "heavy") if args.reference == "full" else ("heavy", "full")
    if args.clips == "held-out":
        gap, train = min(args.gaps), {str(c) for c in cfg.train}
        rels = sorted(str(c) for c in list_clips(cfg.data_path, cfg.min_frames) if str(c) not in train)
        limbs = pairs[[net.spec.joint_names[a].split("_")[-1] in LIMBS for a in pairs[:, 0]]]
        cols = f"model vs {ref} | {other} vs {ref} | one order"
        print(f"| clip (gap >= {gap:.2f} m) | pairs ({ref}) | {cols} | limb pairs | {cols} |")
        print("|---|---|---|---|---|---|---|---|---|")

        def counts(model, zf, zh, gap):
            """(2, 3, 2): (all pairs / limbs, model / full / one order, (agree, counted))."""
            return np.array([[depth_order_counts(model, zh, p, gap),
                              depth_order_counts(zf, zh, p, gap) if zf is not None else (0, 0),
                              one_order_counts(zh, p, gap)] for p in (pairs, limbs)])

        clips = []
        for rel in rels:
            clips.append(clip_depths(rel))
            print(f"| {rel} | {fractions(counts(*clips[-1], gap))} |", flush=True)
        for g in args.gaps:
            total = sum(counts(*c, g) for c in clips)
            print(f"| all {len(rels)} clips, gap >= {g:.2f} m | {fractions(total)} |")
        return 0

    print(f"| clip | min gap m | pairs ({ref}) | model vs {ref} | BlazePose {other} vs {ref} "
          "| pairs both agree on | model vs both |")
    print("|---|---|---|---|---|---|---|")
    per_pair = []
    for rel in cfg.val:
        model, zf, zh = clip_depths(rel)
        name = Path(rel).name
        for gap in args.gaps:
            ours = depth_order_agreement(model, zh, pairs, min_gap_m=gap)
            theirs = depth_order_agreement(zf, zh, pairs, min_gap_m=gap) if zf is not None else float("nan")
            gaps = pair_gaps(zh, pairs)
            counted = int((np.abs(np.nan_to_num(gaps)) >= gap).sum())  # pairs-frames the heavy teacher separates
            both, settled = float("nan"), 0
            if zf is not None:
                agree = np.sign(pair_gaps(zf, pairs)) == np.sign(gaps)  # (T, N, M): both teachers put the same side nearer
                settled = int((agree & (np.abs(np.nan_to_num(gaps)) >= gap)).sum())
                both = depth_order_agreement(model, zh, pairs, min_gap_m=gap, keep=agree)
            print(f"| {name} | {gap:.2f} | {counted} | {ours:.2f} | {theirs:.2f} | {settled} | {both:.2f} |")
        gap = min(args.gaps)
        for a, b in pairs:
            one = np.array([[a, b]])
            n = int((np.abs(np.nan_to_num(zh[..., a] - zh[..., b])) >= gap).sum())
            scores = [depth_order_agreement(model, zh, one, min_gap_m=gap)]
            scores += [depth_order_agreement(x, y, one, min_gap_m=gap) if zf is not None else float("nan")
                       for x, y in ((zf, zh), (model, zf))]
            per_pair.append(f"| {name} | {net.spec.joint_names[a].removeprefix('left_')} | {n} | "
                            + " | ".join(f"{v:.2f}" for v in scores) + " |")
    if args.per_pair:
        print(f"\n| clip | pair (gap >= {min(args.gaps):.2f} m) | pairs ({ref}) | model vs {ref} | {other} vs {ref} "
              f"| model vs {other} |")
        print("|---|---|---|---|---|---|")
        print("\n".join(per_pair))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
