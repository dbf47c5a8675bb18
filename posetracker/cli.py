"""Command line: ``posetracker bench|convert ...`` (see ``posetracker --help``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _cmd_bench(args: argparse.Namespace) -> int:
    from posetracker.bench import bench_network, format_table, machine_description, results_json
    from posetracker.model.weights import load_posenet

    net = load_posenet(args.weights)
    threads = [args.threads] if args.threads else [1, 2]
    results = []
    for mode in ("causal", "bidirectional"):
        for n in threads:
            if not args.json:
                print(f"timing {mode} mode, {n} thread(s)...", file=sys.stderr, flush=True)
            results.append(bench_network(net, n, mode, runs=args.runs, frames=args.frames))
    if args.json:
        print(json.dumps(results_json(results), indent=2))
    else:
        print(f"PoseNet forward at 256x256 on {machine_description()}")
        print(f"median of {args.runs} runs of {args.frames} frames after a warm-up run")
        print(format_table(results))
    return 0


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="posetracker", description="Multi-person pose tracking from video.")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("bench", help="frames per second of the network forward (causal and bidirectional)")
    b.add_argument("--threads", type=int, default=0, help="torch threads (default: time 1 and 2)")
    b.add_argument("--runs", type=int, default=5, help="timed runs per configuration (median reported)")
    b.add_argument("--frames", type=int, default=16, help="frames per run (a multiple of 8)")
    b.add_argument("--weights", default=None, help="weights file (default: the shipped human18 model)")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.set_defaults(func=_cmd_bench)

    c = sub.add_parser("convert", help="convert MoveNet MultiPose (TF.js) to PoseNet safetensors")
    c.add_argument("--src", default="../shared/pretrained/movenet/movenet-multipose.json")
    c.add_argument("--skeleton", default="human18")
    c.add_argument("--out", default="models/posenet-human18.safetensors")
    c.set_defaults(func=_cmd_convert)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
