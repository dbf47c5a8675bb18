"""``posetracker batch INPUTS... --out DIR [--format csv json bvh ...] [--mode offline|live] [--workers N]
[--address ray://HOST:PORT] [--chunk-s S] [--chunk-overlap-s S]``: every video of files, folders and glob
patterns, on Ray, resumable (library: :mod:`posetracker.batch`). Two progress bars on stderr (a terminal only):
videos finished, and frames tracked (each task's count, reported every ``batch.REPORT_S``). Without a terminal
(a log, cron, CI) no frames are counted: the count's actor (a Ray worker process, ~0.7 CPU s) is not started."""

from __future__ import annotations

import argparse
import sys

from posetracker.cli.options import add_refiners_argument, add_tiles_argument, chosen_refiners


def _cmd_batch(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from posetracker.batch import MANIFEST, BatchError, BatchSettings, run_batch

    try:
        settings = BatchSettings(formats=tuple(args.format), mode=args.mode, skeleton=args.skeleton,
                                 weights=args.weights, max_people=args.max_people, refiners=chosen_refiners(args),
                                 fov_deg=args.fov, tile_grid=args.tiles, chunk_s=args.chunk_s,
                                 chunk_overlap_s=args.chunk_overlap_s, height=args.height)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bar = tqdm(desc="videos", unit="video", file=sys.stderr, dynamic_ncols=True, disable=None, position=0)
    frames_bar = tqdm(desc="frames", unit="frame", file=sys.stderr, dynamic_ncols=True, disable=None, position=1)

    def progress(rec: dict, done: int, total: int) -> None:
        bar.total = total
        bar.set_postfix_str(f"{rec['rel']}: {rec['status']}", refresh=False)
        bar.update(done - bar.n)

    def frame_progress(done: int, total: int) -> None:
        frames_bar.total = total or None
        frames_bar.update(done - frames_bar.n)  # down again when a retried task counts from 0

    try:
        summary = run_batch(args.inputs, args.out, settings, workers=args.workers, address=args.address,
                            progress=progress, frame_progress=None if frames_bar.disable else frame_progress)
    except BatchError as exc:
        frames_bar.close()
        bar.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    frames_bar.close()
    bar.close()
    rate = f", {summary.video_seconds / summary.seconds:.2f} video s per wall s" if summary.seconds and summary.done else ""
    print(f"{summary.done} processed, {summary.skipped} already done, {len(summary.failed)} failed "
          f"({summary.frames} frames in {summary.seconds:.1f} s{rate}); manifest: {args.out}/{MANIFEST}",
          file=sys.stderr)
    for rec in summary.failed:
        print(f"failed: {rec['input']}: {rec['error']}", file=sys.stderr)
    return 1 if summary.failed else 0


def add_batch_parser(sub) -> None:
    from posetracker.batch import BatchSettings
    from posetracker.cli.process import fov_argument
    from posetracker.defaults import DEFAULT_MAX_PEOPLE

    b = sub.add_parser("batch", help="process every video of files, folders and glob patterns on Ray (resumable)")
    b.add_argument("inputs", nargs="+", help="video files, folders (searched recursively) and glob patterns")
    b.add_argument("--out", required=True, help="output folder (mirrors the input tree; holds manifest.jsonl)")
    b.add_argument("--format", nargs="+", default=["csv"], help="export formats (csv, json, bvh, trc, dlc, angles, wide-csv)")
    b.add_argument("--mode", choices=["live", "offline"], default="offline")
    b.add_argument("--skeleton", default="human18")
    b.add_argument("--weights", default=None, help="weights file (default: the shipped model for the skeleton)")
    b.add_argument("--max-people", type=int, default=DEFAULT_MAX_PEOPLE)
    b.add_argument("--fov", type=fov_argument, default="auto",
                   help="field of view of the cameras across the long side of the frame (portrait: its height), "
                        "degrees, or auto (default): each file's focal-length tag, else estimated from its people, "
                        "else 60")
    b.add_argument("--height", default=None, metavar="M | ID=M,...",
                   help="people's standing heights in metres, as posetracker process --height takes them (the same "
                        "for every video)")
    b.add_argument("--workers", type=int, default=None, help="local Ray workers (default: the CPU count)")
    b.add_argument("--address", default=None, help="an existing Ray cluster (ray://HOST:PORT; default: RAY_ADDRESS, "
                   "else a local one)")
    b.add_argument("--chunk-s", type=float, default=BatchSettings.chunk_s,
                   help="offline: split a video longer than this (seconds) into chunks of about this length, "
                   f"tracked in parallel and joined (default {BatchSettings.chunk_s:g}; 0: never)")
    b.add_argument("--chunk-overlap-s", type=float, default=BatchSettings.chunk_overlap_s,
                   help="seconds each chunk also tracks of its neighbours, to join them on "
                   f"(default {BatchSettings.chunk_overlap_s:g})")
    add_refiners_argument(b, "switch on trained refiners")
    add_tiles_argument(b)
    b.set_defaults(func=_cmd_batch)
