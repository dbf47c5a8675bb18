"""``posetracker train keypoint-heads``: the keypoint heatmap and offset heads trained on cached frozen features,
everything else frozen (``posetracker.train.keypoint_heads``).

    posetracker train keypoint-heads --config configs/keypoint_heads.yaml --out /tmp/posenet-human18.safetensors \\
        [--init-weights models/posenet-human18.safetensors] [--clips CLIP ...] [--threads 1]

It starts from the config's weights (default: the shipped model), takes labels and features from the
``train distill`` caches (made on a miss) and writes the whole network with ``keypoints`` among its trained
parts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


STAGES = {  # command -> (config stage, trained-part name, trainer module, trainer function)
    "keypoint-heads": ("keypoints", "keypoints", "posetracker.train.keypoint_heads", "train_keypoint_heads"),
}


def cmd_heads(args: argparse.Namespace) -> int:
    import importlib

    import torch

    from posetracker.model.weights import load_posenet, save_posenet
    from posetracker.train.config import load_config
    from posetracker.train.prepare import build_entries

    stage, part, module, function = STAGES[args.train_command]
    torch.set_num_threads(max(1, args.threads))
    cfg = load_config(args.config)
    if stage not in cfg.stages:
        _log(f"error: {args.config} has no '{stage}' stage under stages")
        return 2
    torch.manual_seed(cfg.seed)
    net = load_posenet(args.init_weights or cfg.weights_path)
    t0 = time.time()
    train, val = build_entries(cfg, net, _log, only=args.clips)
    _log(f"prepared {len(train)} train entries ({sum(len(e.feats) for e in train)} frames), {len(val)} val entries "
         f"in {time.time() - t0:.0f} s")
    trainer = getattr(importlib.import_module(module), function)
    history = trainer(net, train, val, cfg.stages[stage], cfg.encode, cfg.seed, _log)
    parts = [s for s in net.meta.get("trained", "").split(",") if s and s != part] + [part]
    src = (f"{net.meta.get('source', 'PoseNet')}; {part} trained by posetracker train {args.train_command} "
           f"({args.config}, teacher {cfg.teacher}, {len(train)} train entries, {time.time() - t0:.0f} s)")
    save_posenet(net, args.out, source=src, trained=",".join(parts))
    _log(json.dumps(history[-3:], indent=1))
    _log(f"wrote {args.out} (trained={','.join(parts)})")
    return 0


def add_heads_parsers(tsub) -> None:
    helps = {"keypoint-heads": ("fine-tune the keypoint heatmap and offset heads on the teachers' labels (everything "
                                "else frozen)", "configs/keypoint_heads.yaml")}
    for name, (text, config) in helps.items():
        w = tsub.add_parser(name, help=text)
        w.add_argument("--config", required=True, help=config)
        w.add_argument("--out", required=True, help="weights to write (all of the network)")
        w.add_argument("--init-weights", help="start from these weights instead of the config's 'weights'")
        w.add_argument("--clips", nargs="+", help="only these clips (paths relative to the data root)")
        w.add_argument("--threads", type=int, default=1, help="torch threads (the CPU is shared: default 1)")
        w.set_defaults(func=cmd_heads)
