"""``posetracker bench [INPUT] ...``: speed of the network forward (no INPUT) or of the whole pipeline on INPUT
(timing code: :mod:`posetracker.bench`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from posetracker.cli.options import (add_crop_budget_argument, add_refiners_argument, add_tiles_argument,
                                     chosen_refiners, crop_budget)
from posetracker.defaults import DEFAULT_LOOKAHEAD


def _cmd_bench(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from posetracker import bench

    if args.input:
        if not Path(args.input).exists() and ":" not in args.input:
            print(f"error: input not found: {args.input}", file=sys.stderr)
            return 2
        if args.versus_mediapipe:
            r = bench.bench_versus_mediapipe(args.input, args.versus_mediapipe, runs=args.runs, frames=args.frames * 4,
                                             weights=args.weights, lookahead=args.lookahead, refiners=chosen_refiners(args),
                                             cores=args.cores, tile_grid=args.tiles, int8=not args.float_backbone,
                                             two_stage=args.stages, **crop_budget(args))
            if args.json:
                print(json.dumps({"machine": bench.machine_description(), "input": args.input, "ours": asdict(r.ours),
                                  "mediapipe_fps": r.mediapipe_fps, "ratios": r.ratios, "cores": list(r.cores)}, indent=2))
            else:
                where = f"one core ({r.cores[0]})" if len(r.cores) == 1 else f"cores {','.join(map(str, r.cores))}"
                print(f"Live on {where} of {bench.machine_description()}, {args.input}, "
                      f"{r.ours.frames_per_run} frames a run, {args.runs} runs each, interleaved")
                print(f"PoseTracker (live, look-ahead {r.ours.lookahead}, {r.ours.backbone} body, 1 inference thread, "
                      f"{'two stages' if r.ours.two_stage else 'one stage'}, "
                      f"{'+'.join(r.ours.refiners) or 'no refiner'}, 2-D + 3-D, everyone): "
                      f"{r.ours.median_fps:.1f} fps ({r.ours.min_fps:.1f}-{r.ours.max_fps:.1f})")
                print(f"MediaPipe Pose full (smoothing on, one person{', reading on a 2nd thread' if len(r.cores) > 1 else ''}): "
                      f"{r.mediapipe_median:.1f} fps "
                      f"({min(r.mediapipe_fps):.1f}-{max(r.mediapipe_fps):.1f})")
                print(f"ratio PoseTracker / MediaPipe: {r.ratio:.2f} (median of the run pairs; "
                      f"{min(r.ratios):.2f}-{max(r.ratios):.2f})")
            return 0
        if args.paced:
            r = bench.bench_paced(args.input, frames=args.frames * 25, threads=args.threads or 1, weights=args.weights,
                                  lookahead=args.lookahead, int8=not args.float_backbone,
                                  two_stage=args.stages)
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
                                                lookahead=args.lookahead, refiners=chosen_refiners(args),
                                                tile_grid=args.tiles, skeleton=args.skeleton, int8=not args.float_backbone,
                                                max_people=args.max_people, two_stage=args.stages,
                                                **crop_budget(args)))
        if args.json:
            print(json.dumps({"machine": bench.machine_description(), "input": args.input,
                              "results": [asdict(r) for r in results]}, indent=2))
        else:
            print(f"End to end on {args.input} ({bench.machine_description()}, {args.threads or 1} inference thread)")
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


def _cores(text: str) -> tuple[int, ...]:
    try:
        cores = tuple(sorted({int(c) for c in text.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"CPU numbers separated by commas, e.g. 0,1 (got {text!r})") from None
    if not cores or min(cores) < 0:
        raise argparse.ArgumentTypeError(f"CPU numbers separated by commas, e.g. 0,1 (got {text!r})")
    return cores


def add_bench_parser(sub) -> None:
    b = sub.add_parser("bench", help="speed: network forward (no INPUT) or the whole pipeline on INPUT")
    b.add_argument("input", nargs="?", help="video for the end-to-end benchmark (live and offline modes)")
    b.add_argument("--threads", type=int, default=0, help="torch threads (default: time 1 and 2)")
    b.add_argument("--runs", type=int, default=5, help="timed runs per configuration (median reported)")
    b.add_argument("--frames", type=int, default=16, help="frames per run (a multiple of 8)")
    b.add_argument("--weights", default=None, help="weights file (default: the shipped model of --skeleton)")
    b.add_argument("--skeleton", default=None,
                   help="with INPUT: the skeleton / animal mode to time (default human18), e.g. mouse4")
    b.add_argument("--max-people", type=int, default=None, help="with INPUT: most people or animals a frame")
    b.add_argument("--versus-mediapipe", metavar="PYTHON",
                   help="with INPUT: also time MediaPipe Pose full on the same frames, runs interleaved, both on the "
                        "same --cores; PYTHON is an interpreter whose environment has mediapipe (a measuring tool, never a "
                        "dependency: e.g. a venv made with pip install mediapipe==0.10.21)")
    b.add_argument("--cores", type=_cores, default=(0,), metavar="0,1",
                   help="with --versus-mediapipe: the CPUs both programs are pinned to (default: 0, one core)")
    stages = b.add_mutually_exclusive_group()
    stages.add_argument("--one-stage", dest="stages", action="store_false", default=None,
                        help="with INPUT: live mode's network and the rest one after the other on one thread (default "
                             "where only one CPU is usable, e.g. --cores 0)")
    stages.add_argument("--two-stage", dest="stages", action="store_true", default=None,
                        help="with INPUT: the rest of frame t on a second thread while the network runs frame t+1 "
                             "(default where more than one CPU is usable)")
    b.add_argument("--paced", action="store_true",
                   help="with INPUT: play it at its own fps and infer the newest frame, as the app does "
                        "(inference fps, latency from read to pose, dropped frames)")
    b.add_argument("--lookahead", type=int, default=DEFAULT_LOOKAHEAD,
                   help=f"with INPUT: live look-ahead frames (default {DEFAULT_LOOKAHEAD}, as the app)")
    b.add_argument("--runtime", choices=["torch", "onnxruntime", "both"], default="both",
                   help="network bench: run the backbone in torch, ONNX Runtime, or time both")
    b.add_argument("--float-backbone", action="store_true",
                   help="with INPUT: live mode with the float backbone (default: the 8-bit body where it ships)")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_refiners_argument(b, "end to end with these refiners on (read beside --weights, else the shipped ones)")
    add_tiles_argument(b)
    add_crop_budget_argument(b)
    b.set_defaults(func=_cmd_bench)

