"""``posetracker depth-order``: left/right depth order on the held-out clips, the model and BlazePose full
against BlazePose heavy (tables: :mod:`posetracker.train.depth_order`).

    posetracker depth-order [--config configs/distill_quick.yaml] [--weights models/posenet-human18.safetensors]
                            [--gaps 0.05 0.10 0.15 0.20] [--per-pair] [--clips val|held-out] [--smoothing]
                            [--reference heavy|full] [--no-pose-prior]
"""

from __future__ import annotations

import argparse
import sys


def cmd_depth_order(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from functools import partial

    import torch

    from posetracker.session import DepthSettings, MotionSettings, NetworkSettings, SessionConfig, TrackingSession
    from posetracker.train.config import load_config
    from posetracker.train.depth_order import clip_depths, held_out_clips, held_out_rows, val_rows
    from posetracker.tracking.mirror import mirror_pairs
    from posetracker.train.prepare import make_teacher

    torch.set_num_threads(1)
    cfg = load_config(args.config)
    clips = held_out_clips(cfg) if args.clips == "held-out" else list(cfg.val)
    if not clips or not cfg.data_path.is_dir():
        print(f"depth-order: no {args.clips} clips under {cfg.data_path} (the config's data root: run from the "
              "repository root with ../shared beside it)", file=sys.stderr)
        return 2
    teachers = make_teacher(replace(cfg, blazepose="full")), make_teacher(replace(cfg, blazepose="heavy"))
    config = SessionConfig(mode="offline", network=NetworkSettings(threads=1),
                           motion=MotionSettings(smoothing=args.smoothing),
                           depth=DepthSettings(pose_prior=not args.no_pose_prior))
    session = TrackingSession.open(weights=args.weights, config=config)
    depths = partial(clip_depths, session, cfg, teachers, reference=args.reference)
    pairs = mirror_pairs(session.spec)
    ref, other = ("full", "heavy") if args.reference == "full" else ("heavy", "full")
    if args.clips == "held-out":
        rows = held_out_rows(depths, clips, session.spec, pairs, args.gaps, ref, other)
    else:
        rows = val_rows(depths, clips, session.spec, pairs, args.gaps, ref, other, per_pair=args.per_pair)
    for row in rows:
        print(row, flush=True)
    return 0


def add_depth_order_parser(sub) -> None:
    d = sub.add_parser("depth-order", help="left/right depth order on held-out clips against the BlazePose teachers",
                       description="Left/right depth order on the held-out clips: the model and BlazePose full "
                                   "against BlazePose heavy (the model card's depth-order tables).")
    d.add_argument("--config", default="configs/distill_quick.yaml")
    d.add_argument("--weights", default=None, help="default: the shipped model")
    d.add_argument("--gaps", type=float, nargs="+", default=[0.05, 0.10, 0.15, 0.20])
    d.add_argument("--per-pair", action="store_true", help="also break the smallest gap down by left/right pair")
    d.add_argument("--reference", choices=("heavy", "full"), default="heavy",
                   help="the teacher to compare with (full: the one the model is trained on)")
    d.add_argument("--smoothing", action="store_true", help="the product's track smoothing on (default: raw per-frame output)")
    d.add_argument("--no-pose-prior", action="store_true", help="the depth head alone (default: mixed with the pose prior, "
                   "as the product runs)")
    d.add_argument("--clips", choices=("val", "held-out"), default="val",
                   help="val: the config's validation clips; held-out: every clip the config does not train on")
    d.set_defaults(func=cmd_depth_order)
