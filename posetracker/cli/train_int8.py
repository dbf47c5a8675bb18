"""``posetracker train int8-calibrate`` and ``posetracker train int8-qat``: the two steps that make the 8-bit
live graph's companion file (``models/posenet-human18.int8.safetensors``; ``posetracker.model.int8``).

    posetracker train int8-calibrate --config configs/distill_quick.yaml --out /tmp/calibrated.int8.safetensors
    posetracker train int8-qat --config configs/distill_quick.yaml --companion /tmp/calibrated.int8.safetensors \\
        --out models/posenet-human18.int8.safetensors

A top-down crop model's companion (``models/posenet-fly13-crops.int8.safetensors``, its still graph's body in 8
bits: ``posetracker.model.still_int8``) is one step, ranges on crops of training frames (``train/int8_crops.py``):

    posetracker train int8-calibrate-crops --config configs/fly13-crops.yaml \\
        --keep-float /body/stem/ /body/blocks.0/ /body/blocks.1/ /body/blocks.2/ \\
        --out models/posenet-fly13-crops.int8.safetensors

The first two are made for the shipped weights (``models/posenet-human18.safetensors``): calibration ranges on frames of
the config's training clips (``posetracker.train.int8_calibration``), then the body fine-tuned for them
(``posetracker.train.int8_qat``).
"""

from __future__ import annotations

import argparse
import sys
import time


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cmd_calibrate(args: argparse.Namespace) -> int:
    import torch

    from posetracker.train.int8_calibration import make_companion

    torch.set_num_threads(1)
    make_companion(args.config, args.out, calib=args.calib, frames=args.frames, step=args.step, log=_log)
    _log(f"wrote {args.out}")
    return 0


def cmd_qat(args: argparse.Namespace) -> int:
    import torch

    from posetracker.train.int8_qat import train_int8_body

    torch.set_num_threads(max(1, args.threads))
    try:
        train_int8_body(args.config, args.companion, args.out, steps=args.steps, lr=args.lr, batch=args.batch,
                        frames_per_clip=args.frames_per_clip, step=args.step, seed=args.seed, log=_log)
    except ValueError as exc:  # a companion of other weights
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _log(f"wrote {args.out}")
    return 0


def cmd_calibrate_crops(args: argparse.Namespace) -> int:
    import torch

    from posetracker.train.int8_crops import make_crop_companion

    from posetracker.model.int8 import KEEP_FLOAT

    torch.set_num_threads(1)
    try:
        make_crop_companion(args.config, args.weights, args.out, first=args.first, end=args.end, step=args.step,
                            qat_steps=args.qat_steps, lr=args.lr, batch=args.batch, seed=args.seed,
                            keep_float=tuple(args.keep_float or KEEP_FLOAT), log=_log)
    except ValueError as exc:  # held-out frames asked for, or no crop model
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _log(f"wrote {args.out}")
    return 0


def add_int8_parsers(tsub) -> None:
    c = tsub.add_parser("int8-calibrate", help="the 8-bit live graph's companion, step 1: ranges calibrated on "
                        "the training clips (then int8-qat)")
    c.add_argument("--config", default="configs/distill_quick.yaml", help="its training clips are calibrated on, "
                   "its held-out clips measure the fidelity")
    c.add_argument("--out", required=True, help="companion to write (e.g. /tmp/calibrated.int8.safetensors)")
    c.add_argument("--calib", type=int, default=24, help="calibration frames per training clip (default 24)")
    c.add_argument("--frames", type=int, default=30, help="fidelity frames per clip (default 30)")
    c.add_argument("--step", type=int, default=4, help="take every STEP-th frame (default 4)")
    c.set_defaults(func=cmd_calibrate)

    q = tsub.add_parser("int8-qat", help="the 8-bit live graph's companion, step 2: the body fine-tuned for 8 bits "
                        "(quantisation-aware)")
    q.add_argument("--config", default="configs/distill_quick.yaml", help="its training clips are the frames")
    q.add_argument("--companion", default="models/posenet-human18.int8.safetensors",
                   help="the calibrated companion (int8-calibrate's, or the shipped one: its ranges are used)")
    q.add_argument("--out", required=True, help="companion to write (models/posenet-human18.int8.safetensors ships)")
    q.add_argument("--steps", type=int, default=200)
    q.add_argument("--lr", type=float, default=5e-6)
    q.add_argument("--batch", type=int, default=8)
    q.add_argument("--frames-per-clip", type=int, default=24)
    q.add_argument("--step", type=int, default=4, help="take every STEP-th frame (default 4)")
    q.add_argument("--threads", type=int, default=2, help="torch threads (default 2: nothing else runs meanwhile)")
    q.add_argument("--seed", type=int, default=0)
    q.set_defaults(func=cmd_qat)

    k = tsub.add_parser("int8-calibrate-crops", help="a top-down crop model's 8-bit companion: ranges calibrated on "
                        "the crops a live session reads on training frames (model/still_int8.py)")
    k.add_argument("--config", default="configs/fly13-crops.yaml", help="the crop model's config: its labelled "
                   "video's frames are read, none of them held out")
    k.add_argument("--weights", default="models/posenet-fly13.safetensors", help="the centre model (the crop model "
                   "sits beside it)")
    k.add_argument("--out", required=True, help="companion to write (models/posenet-fly13-crops.int8.safetensors)")
    k.add_argument("--first", type=int, default=0, help="first frame (default 0)")
    k.add_argument("--end", type=int, default=800, help="frames before this one (default 800: fly13-crops' training "
                   "frames)")
    k.add_argument("--step", type=int, default=10, help="every STEP-th frame (default 10)")
    k.add_argument("--keep-float", nargs="+", metavar="FRAGMENT",  # default: model.int8.KEEP_FLOAT (torch: not at parsing)
                   help="body nodes whose names hold one of these stay float (default: the stem and block 0, as the "
                   "live graph; the shipped fly13 companion: /body/stem/ /body/blocks.0/ /body/blocks.1/ /body/blocks.2/)")
    k.add_argument("--qat-steps", type=int, default=0, help="then fine-tune the body for 8 bits on the same crops "
                   "(as int8-qat; default 0: the float body)")
    k.add_argument("--lr", type=float, default=5e-6)
    k.add_argument("--batch", type=int, default=8)
    k.add_argument("--seed", type=int, default=0)
    k.set_defaults(func=cmd_calibrate_crops)
