"""Command line: ``posetracker process|eval|export|train|bench|convert ...`` (see ``posetracker --help``).

Exit codes: 0 success, 1 failure (message on stderr), 2 bad usage or input not found, 130 interrupted."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from posetracker.defaults import DEFAULT_LOOKAHEAD, DEFAULT_MAX_PEOPLE


def _progress_bar(total: int | None, desc: str):
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit="frame", file=sys.stderr, dynamic_ncols=True, disable=None)

    def update(done: int, _total: int | None) -> None:
        bar.update(done - bar.n)

    return bar, update


def _cmd_process(args: argparse.Namespace) -> int:
    from posetracker.capture import CaptureError, open_source
    from posetracker.export import exporter_for_path
    from posetracker.export.registry import check_target
    from posetracker.refiners import RefinerError
    from posetracker.session import SessionConfig, TrackingSession

    out = Path(args.out) if args.out else Path(Path(args.input.rstrip("/")).stem + ".poses.csv")
    exporter = exporter_for_path(out)
    check_target(out, args.force)
    config = SessionConfig(mode=args.mode, lookahead=args.lookahead, max_people=args.max_people, fov_deg=args.fov,
                           refiners=tuple(args.refiners))
    try:
        session = TrackingSession.open(args.skeleton, args.weights, config)
    except RefinerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for notice in session.notices:
        print(f"warning: {notice}", file=sys.stderr)
    try:
        source = open_source(args.input)
    except CaptureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bar, update = _progress_bar(source.frame_count, f"{args.mode} tracking")
    try:
        with source:
            seq = session.run(source, fps=source.fps, total=source.frame_count, progress=update,
                              metadata={"source": str(args.input), "size": list(source.size), "model": str(session.net.meta.get("source", ""))})
    finally:
        bar.close()
    files = exporter.write(seq, out, force=args.force)
    if "incomplete" in seq.metadata:  # keep what was read, then say why it stopped
        print(f"error: {seq.metadata['incomplete']}", file=sys.stderr)
        print(f"wrote the {len(seq)} frames read before the failure to {', '.join(map(str, files))}", file=sys.stderr)
        return 1
    people = len(seq.track_ids())
    print(f"{len(seq)} frames, {people} tracked {'person' if people == 1 else 'people'} -> {', '.join(map(str, files))}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from posetracker import bench

    if args.input:
        if not Path(args.input).exists() and ":" not in args.input:
            print(f"error: input not found: {args.input}", file=sys.stderr)
            return 2
        if args.paced:
            r = bench.bench_paced(args.input, frames=args.frames * 25, threads=args.threads or 1, weights=args.weights,
                                  lookahead=args.lookahead)
            if args.json:
                print(json.dumps({"machine": bench.machine_description(), "input": args.input, "paced": asdict(r)}, indent=2))
            else:
                print(f"Live-paced on {args.input} ({bench.machine_description()}): the source plays at its fps,")
                print(f"inference takes the newest frame (as the app does); look-ahead {r.lookahead}")
                print(f"inference {r.inference_fps:.1f} fps, latency {r.median_latency_ms:.0f} ms (median), "
                      f"dropped {r.dropped} of {r.frames} frames")
            return 0
        results = []
        for mode in ("live", "offline"):
            if not args.json:
                print(f"timing {mode} mode end to end...", file=sys.stderr, flush=True)
            results.append(bench.bench_pipeline(args.input, mode, runs=args.runs, frames=args.frames * 4,
                                                threads=args.threads or 1, weights=args.weights,
                                                lookahead=args.lookahead, refiners=tuple(args.refiners)))
        if args.json:
            print(json.dumps({"machine": bench.machine_description(), "input": args.input,
                              "results": [asdict(r) for r in results]}, indent=2))
        else:
            extra = f", refiners: {'+'.join(args.refiners)}" if args.refiners else ""
            print(f"End to end on {args.input} ({bench.machine_description()}, {args.threads or 1} inference thread{extra})")
            print(f"median (min/max) of {args.runs} runs of {args.frames * 4} frames after a warm-up run")
            print(bench.format_pipeline_table(results))
        return 0
    from posetracker.model.weights import load_posenet

    net = load_posenet(args.weights)
    threads = [args.threads] if args.threads else [1, 2]
    results = []
    runtimes = ["torch", "onnxruntime"] if args.runtime == "both" else [args.runtime]
    for mode in ("causal", "bidirectional"):
        for runtime in runtimes:
            for n in threads:
                if not args.json:
                    print(f"timing {mode} mode, {runtime}, {n} thread(s)...", file=sys.stderr, flush=True)
                results.append(bench.bench_network(net, n, mode, runs=args.runs, frames=args.frames, runtime=runtime))
    if args.json:
        print(json.dumps(bench.results_json(results), indent=2))
    else:
        print(f"PoseNet forward at 256x256 on {bench.machine_description()}")
        print(f"median of {args.runs} runs of {args.frames} frames after a warm-up run")
        print(bench.format_table(results))
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

    pr = sub.add_parser("process", help="track every person in a video file or image folder")
    pr.add_argument("input", help="video file, image folder, camera:N or lavfi:GRAPH")
    pr.add_argument("--out", help="output file, .csv (tidy) or .json (default: INPUT.poses.csv here)")
    pr.add_argument("--mode", choices=["live", "offline"], default="offline",
                    help="offline: bidirectional, zero-lag smoothing (default); live: causal, as the webcam runs")
    pr.add_argument("--skeleton", default="human18")
    pr.add_argument("--weights", default=None, help="weights file (default: the shipped model for the skeleton)")
    pr.add_argument("--max-people", type=int, default=DEFAULT_MAX_PEOPLE,
                    help=f"most people (or animals) per frame (default {DEFAULT_MAX_PEOPLE}; 1 for one subject)")
    pr.add_argument("--lookahead", type=int, default=DEFAULT_LOOKAHEAD,
                    help=f"live mode: look-ahead frames of the backward GRU (default {DEFAULT_LOOKAHEAD}; 0 = lowest latency)")
    pr.add_argument("--fov", type=float, default=60.0, help="horizontal field of view of the camera, degrees")
    pr.add_argument("--force", action="store_true", help="overwrite an existing output file")
    pr.add_argument("--refiners", nargs="*", default=[], choices=["heatmap", "graph"],
                    help="switch on trained refiners: heatmap (method B), graph (method C)")
    pr.set_defaults(func=_cmd_process)

    from posetracker.cli.evaluate import add_eval_parser
    from posetracker.cli.export import add_export_parser
    from posetracker.cli.train import add_train_parser

    add_eval_parser(sub)
    add_export_parser(sub)
    add_train_parser(sub)

    b = sub.add_parser("bench", help="speed: network forward (no INPUT) or the whole pipeline on INPUT")
    b.add_argument("input", nargs="?", help="video for the end-to-end benchmark (live and offline modes)")
    b.add_argument("--threads", type=int, default=0, help="torch threads (default: time 1 and 2)")
    b.add_argument("--runs", type=int, default=5, help="timed runs per configuration (median reported)")
    b.add_argument("--frames", type=int, default=16, help="frames per run (a multiple of 8)")
    b.add_argument("--weights", default=None, help="weights file (default: the shipped human18 model)")
    b.add_argument("--paced", action="store_true",
                   help="with INPUT: play it at its own fps and infer the newest frame, as the app does "
                        "(inference fps, latency from read to pose, dropped frames)")
    b.add_argument("--lookahead", type=int, default=DEFAULT_LOOKAHEAD,
                   help=f"with INPUT: live look-ahead frames (default {DEFAULT_LOOKAHEAD}, as the app)")
    b.add_argument("--runtime", choices=["torch", "onnxruntime", "both"], default="both",
                   help="network bench: run the backbone in torch, ONNX Runtime, or time both")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.add_argument("--refiners", nargs="*", default=[], choices=["heatmap", "graph"],
                   help="end to end with these refiners on (read beside --weights, else the shipped ones)")
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
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
