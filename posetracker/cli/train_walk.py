"""``posetracker train walk-head``: the tree walk's own vector head on cached frozen features.

    posetracker train walk-head --config configs/walk_head.yaml --out /tmp/posenet-walkhead.safetensors \\
        [--init-weights models/posenet-human18.safetensors] [--clips CLIP ...] [--threads 1]

Starts from the config's weights (default: the shipped model), labels and features from the
``train distill`` caches (made on a miss), trains only ``PoseNet.walk`` (``posetracker.train.walk_head``)
and writes the weights with ``walk`` among their trained parts, so a session reads them with the walk.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_walk_head(args: argparse.Namespace) -> int:
    import torch

    from posetracker.model.weights import load_posenet, save_posenet
    from posetracker.train.config import load_config
    from posetracker.train.prepare import build_entries
    from posetracker.train.walk_head import train_walk_head

    torch.set_num_threads(max(1, args.threads))
    cfg = load_config(args.config)
    if "walk" not in cfg.stages:
        _log(f"error: {args.config} has no 'walk' stage under stages")
        return 2
    torch.manual_seed(cfg.seed)
    net = load_posenet(args.init_weights or cfg.weights_path)
    t0 = time.time()
    train, val = build_entries(cfg, net, _log, only=args.clips)
    _log(f"prepared {len(train)} train entries ({sum(len(e.feats) for e in train)} frames), {len(val)} val entries "
         f"in {time.time() - t0:.0f} s")
    history = train_walk_head(net, train, val, cfg.stages["walk"], cfg.encode, cfg.seed, _log)
    parts = [s for s in net.meta.get("trained", "").split(",") if s and s != "walk"] + ["walk"]
    src = (f"{net.meta.get('source', 'PoseNet')}; walk head trained by posetracker train walk-head "
           f"({args.config}, teacher {cfg.teacher}, {len(train)} train entries, {time.time() - t0:.0f} s)")
    save_posenet(net, args.out, source=src, trained=",".join(parts))
    _log(json.dumps(history[-3:], indent=1))
    _log(f"wrote {args.out} (trained={','.join(parts)})")
    return 0


def add_walk_parser(tsub) -> None:
    w = tsub.add_parser("walk-head", help="train the tree walk's own vector head (everything else frozen)")
    w.add_argument("--config", required=True, help="configs/walk_head.yaml")
    w.add_argument("--out", required=True, help="weights to write (all of the network, with the walk head)")
    w.add_argument("--init-weights", help="start from these weights instead of the config's 'weights'")
    w.add_argument("--clips", nargs="+", help="only these clips (paths relative to the data root)")
    w.add_argument("--threads", type=int, default=1, help="torch threads (the CPU is shared: default 1)")
    w.set_defaults(func=cmd_walk_head)
