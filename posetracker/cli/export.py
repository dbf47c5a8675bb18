"""``posetracker export SESSION_OR_JSON --format FMT [--person ID] [--out PATH]``.

Wire it with ``add_export_parser(subparsers)`` in :func:`posetracker.cli.build_parser`;
the handler returns an exit code (0 success, 1 export failed, 2 bad input).
Input: a sequence JSON written by ``posetracker process --out X.json``, or a
recording folder (with ``poses.jsonl``) when :mod:`posetracker.recording`
provides ``open_recording``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from posetracker.cli.options import add_height_argument


def load_input(path: str | Path) -> Any:
    """A PoseSequence from a sequence JSON file or a recording folder."""
    from posetracker.export import read_sequence
    from posetracker.types import PoseSequence

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file or folder: {p}")
    if p.is_file():
        return read_sequence(p)
    try:
        from posetracker.recording import open_recording  # type: ignore[attr-defined]
    except ImportError:
        raise ValueError(f"{p} is a folder, but this build cannot read recordings yet; export a sequence JSON") from None
    try:
        got = open_recording(p)
    except RuntimeError as exc:  # RecordingError: not a recording, damaged poses.jsonl
        raise ValueError(str(exc)) from None
    parts = got if isinstance(got, tuple) else (got,)
    seq = next((x for x in parts if isinstance(x, PoseSequence)), None)
    for x in parts:  # the recording's video is not needed here
        if x is not seq and hasattr(x, "close"):
            x.close()
    if seq is None:
        raise ValueError(f"cannot get a pose sequence from the recording {p}")
    return seq


def _cmd_export(args: argparse.Namespace) -> int:
    from posetracker.export import (ExportError, default_name_suffix, exporter_for_path, get_exporter, with_suffix,
                                    write_reporting)

    if args.format:
        exporter = get_exporter(args.format)
    elif args.out:
        exporter = exporter_for_path(args.out)
    else:
        print("error: give --format or an --out file name", file=sys.stderr)
        return 2
    out = with_suffix(args.out, exporter) if args.out else Path(Path(str(args.input).rstrip("/")).stem + default_name_suffix(exporter.name))
    try:
        seq = load_input(args.input)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: cannot read {args.input}: {exc}", file=sys.stderr)
        return 2
    if args.height:  # the people's statures given now: scaled to them before writing (motion.heights)
        from posetracker.motion.heights import apply_heights

        seq, height_warnings = apply_heights(seq, args.height)
        for message in height_warnings:
            print(f"warning: {message}", file=sys.stderr)
    options = {k: v for k, v in {"rotation_order": args.rotation_order, "units": args.units, "max_gap_s": args.max_gap,
                                 "min_confidence": args.min_confidence, "origin": args.origin,
                                 "floor": args.floor}.items() if v is not None}
    try:
        if exporter.name in ("csv", "json"):
            if args.person is not None:
                print(f"warning: --person is ignored by the {exporter.name} format (it writes everyone)", file=sys.stderr)
            files, warned = write_reporting(exporter, seq, out, force=args.force)
        else:
            files, warned = write_reporting(exporter, seq, out, force=args.force, person=args.person, **options)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for message in warned:
        print(f"warning: {message}", file=sys.stderr)
    print(f"{exporter.name}: {len(seq)} frames -> {', '.join(map(str, files))}")
    return 0


def add_export_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``export`` subcommand to an argparse subparsers object; returns its parser."""
    from posetracker.export import exporters

    names = list(exporters())
    ex = subparsers.add_parser("export", help="write a tracked sequence as BVH, CSV, JSON, TRC, DeepLabCut CSV or joint angles",
                               description="Export a tracked sequence. Formats: " + "; ".join(
                                   f"{n}: {e.description}" for n, e in exporters().items()))
    ex.add_argument("input", help="sequence JSON (posetracker process --out X.json) or recording folder")
    ex.add_argument("--format", "-f", choices=names, help="output format (default: from the --out suffix)")
    ex.add_argument("--out", "-o", help="output file (default: INPUT stem + the format's suffix, here)")
    ex.add_argument("--person", type=int, default=None, help="only this track id (default: everyone, one file each)")
    ex.add_argument("--force", action="store_true", help="overwrite existing output files")
    add_height_argument(ex)
    ex.add_argument("--rotation-order", default=None, help="BVH rotation channel order (default ZXY)")
    ex.add_argument("--units", choices=["cm", "m", "mm"], default=None, help="BVH units (default cm)")
    ex.add_argument("--origin", choices=["floor", "camera"], default=None,
                    help="BVH (default floor): stand on the floor fitted to the stance feet, Y up, first root at "
                         "X=Z=0; TRC (default camera): floor gives Y up from that floor; camera keeps camera axes")
    ex.add_argument("--floor", choices=["fit", "percentile"], default=None,
                    help="BVH floor: fit (default: to the stance feet, camera pitch and roll undone) or percentile "
                         "(level camera, 2nd percentile of the lowest joint, as before)")
    ex.add_argument("--max-gap", type=float, default=None,
                    help="BVH: longest gap (s) to interpolate; longer ones hold the pose (default 0.5)")
    ex.add_argument("--min-confidence", type=float, default=None, help="joints below this count as missing")
    ex.set_defaults(func=_cmd_export)
    return ex
