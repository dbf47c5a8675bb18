"""``posetracker train crop-labels`` and ``train crop-head``: the precision stage's own network (issue #47).

    posetracker train crop-labels SOURCE... [--every 8] [--max-frames 40] [--out summary.json]
    posetracker train crop-head SOURCE... --val SOURCE... --out refiner-crop-human18.safetensors [--epochs 6]

``crop-labels`` reads unlabelled videos and photos (files or folders) with the teachers and caches each
crop's labels and Thunder's frozen features (``posetracker.train.crop_labels``); ``crop-head`` trains Thunder's
heatmap, offset and regression heads on them (``posetracker.train.crop_head``; labels made on a miss) and writes
the crop refiner's weights (the shipped ones with those heads replaced).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _labeller(args: argparse.Namespace):
    import torch

    from posetracker.model.weights import load_posenet
    from posetracker.refiners import load_refiner, refiner_path
    from posetracker.train.crop_labels import CropLabeller, LabelSettings
    from posetracker.train.teachers.blazepose import BlazePoseTeacher

    torch.set_num_threads(max(1, args.threads))
    net = load_posenet(args.weights)
    refiner = load_refiner(args.crop_weights or refiner_path("crop", net.spec.name), net.spec)
    settings = LabelSettings(every=args.every, max_frames=args.max_frames)
    return CropLabeller(net, refiner, BlazePoseTeacher(args.blazepose), settings, args.threads)


def _entries(args: argparse.Namespace, paths: list[str]) -> list:
    from posetracker.train.crop_labels import find_sources, label_source

    labeller = _labeller(args)
    out = []
    for path in find_sources(paths):
        t0 = time.time()
        entry = label_source(path, labeller, f"thunder+blazepose-{args.blazepose}", _log)
        _log(f"{path}: {0 if entry is None else len(entry) // 2} crops ({time.time() - t0:.0f} s)")
        if entry is not None:
            out.append(entry)
    return out


def cmd_crop_labels(args: argparse.Namespace) -> int:
    from posetracker.train.crop_labels import summary

    stats = summary(_entries(args, args.sources))
    _log(json.dumps(stats, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(stats, indent=2))
    return 0


def cmd_crop_head(args: argparse.Namespace) -> int:
    from posetracker.refiners import load_refiner, refiner_path, save_refiner
    from posetracker.skeletons import load_skeleton
    from posetracker.train.crop_head import HeadSettings, train_crop_heads

    train, val = _entries(args, args.sources), _entries(args, args.val)
    spec = load_skeleton("human18")
    refiner = load_refiner(args.crop_weights or refiner_path("crop", spec.name), spec)
    hs = HeadSettings(epochs=args.epochs, lr=args.lr, batch=args.batch, seed=args.seed, select=args.select)
    history = train_crop_heads(refiner.net, refiner.centre_weight.numpy(), train, val, hs, _log)
    save_refiner(refiner, args.out, {}, half=True)
    _log(json.dumps(history, indent=1))
    _log(f"wrote {args.out}")
    return 0


def add_crop_parsers(tsub) -> None:
    for name, text, func in (
            ("crop-labels", ("teacher-ensemble labels and Thunder's frozen features of person crops in unlabelled "
                             "videos and photos (cached)"), cmd_crop_labels),
            ("crop-head", "train the precision stage's Thunder heads on those labels", cmd_crop_head)):
        c = tsub.add_parser(name, help=text)
        c.add_argument("sources", nargs="+", help="videos, photos or folders of them (never labelled test sets)")
        c.add_argument("--every", type=int, default=8, help="video: every n-th frame")
        c.add_argument("--max-frames", type=int, default=40, help="video: at most this many frames a clip")
        c.add_argument("--weights", default=None, help="the bottom-up network that finds people (default: shipped)")
        c.add_argument("--crop-weights", default=None, help="the crop refiner read and trained (default: shipped)")
        c.add_argument("--blazepose", choices=["full", "heavy"], default="heavy")
        c.add_argument("--threads", type=int, default=1)
        if name == "crop-labels":
            c.add_argument("--out", help="write the labels' summary as JSON")
        else:
            c.add_argument("--val", nargs="+", required=True, help="sources whose labels validate (not trained on)")
            c.add_argument("--out", required=True, help="crop refiner weights to write")
            c.add_argument("--epochs", type=int, default=6)
            c.add_argument("--lr", type=float, default=3e-4)
            c.add_argument("--batch", type=int, default=16)
            c.add_argument("--seed", type=int, default=0)
            c.add_argument("--select", choices=["val", "last"], default="val",
                           help="heads written: the epoch with the lowest val error (the shipped ones if none is "
                           "lower) or the last")
        c.set_defaults(func=func)
