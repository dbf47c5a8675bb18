"""``posetracker convert``: MoveNet MultiPose (TF.js) to PoseNet safetensors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_convert(args: argparse.Namespace) -> int:
    from posetracker.model.weights import build_from_movenet, save_posenet
    from posetracker.skeletons import load_skeleton

    src = Path(args.src)
    if not src.exists():
        print(f"error: MoveNet model not found: {src}", file=sys.stderr)
        return 2
    spec = load_skeleton(args.skeleton)
    net = build_from_movenet(src, spec)
    save_posenet(net, args.out, source=f"MoveNet MultiPose Lightning ({src.name}), converted by posetracker convert")
    print(f"wrote {args.out}")
    return 0


def add_convert_parser(sub) -> None:
    c = sub.add_parser("convert", help="convert MoveNet MultiPose (TF.js) to PoseNet safetensors")
    c.add_argument("--src", default="../shared/pretrained/movenet/movenet-multipose.json", help="MoveNet's model.json")
    c.add_argument("--skeleton", default="human18", help="skeleton of the heads (default human18)")
    c.add_argument("--out", default="models/posenet-human18.safetensors", help="weights file to write")
    c.set_defaults(func=_cmd_convert)
