"""``posetracker convert``: MoveNet MultiPose (TF.js) to PoseNet safetensors, or with ``--crop``
MoveNet SinglePose Thunder to the crop refiner's weights (``models/refiner-crop-human18.safetensors``),
with ``--crop-fast`` SinglePose Lightning to the fast crop refiner's (``refiner-crop-fast-human18``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_convert(args: argparse.Namespace) -> int:
    from posetracker.model.weights import build_from_movenet, save_posenet
    from posetracker.skeletons import load_skeleton

    kind = "crop-fast" if args.crop_fast else "crop" if args.crop else ""
    source = {"crop": "thunder", "crop-fast": "lightning", "": "multipose"}[kind]
    src = Path(args.src or f"../shared/pretrained/movenet/movenet-{source}.json")
    if not src.exists():
        print(f"error: MoveNet model not found: {src}", file=sys.stderr)
        return 2
    spec = load_skeleton(args.skeleton)
    if kind:
        from posetracker.refiners import save_refiner
        from posetracker.refiners.crop import CropRefiner, FastCropRefiner

        out = args.out or f"models/refiner-{kind}-{spec.name}.safetensors"
        refiner_class = FastCropRefiner if kind == "crop-fast" else CropRefiner
        try:
            refiner = refiner_class.from_tfjs(src, spec)
        except (ValueError, RuntimeError) as exc:  # the other SinglePose, or not one at all
            print(f"error: {src}: {exc}", file=sys.stderr)
            return 2
        save_refiner(refiner, out, {}, detector="", half=True)  # fp16 as published
        print(f"wrote {out}")
        return 0
    out = args.out or f"models/posenet-{spec.name}.safetensors"
    net = build_from_movenet(src, spec)
    save_posenet(net, out, source=f"MoveNet MultiPose Lightning ({src.name}), converted by posetracker convert")
    print(f"wrote {out}")
    return 0


def add_convert_parser(sub) -> None:
    c = sub.add_parser("convert", help="convert MoveNet (TF.js) to the product's safetensors weights")
    c.add_argument("--src", default=None, help="MoveNet's model.json (default: ../shared/pretrained/movenet/"
                                               "movenet-multipose.json, movenet-thunder.json with --crop, "
                                               "movenet-lightning.json with --crop-fast)")
    c.add_argument("--crop", action="store_true", help="MoveNet Thunder -> the crop refiner (precision stage)")
    c.add_argument("--crop-fast", action="store_true",
                   help="MoveNet Lightning -> the crop-fast refiner (the precision stage for live mode)")
    c.add_argument("--skeleton", default="human18", help="skeleton of the heads (default human18)")
    c.add_argument("--out", default=None, help="weights file to write (default: models/posenet-SKELETON.safetensors, "
                                               "models/refiner-crop-SKELETON.safetensors with --crop)")
    c.set_defaults(func=_cmd_convert)
