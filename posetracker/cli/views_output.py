"""Where several cameras' people are written, and the writing, as ``process cam1 cam2 ... --calibration`` does it
offline (``process_views``) and live (``process_live_views``)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def views_target(args: argparse.Namespace, stem: str):
    """The exporter and file for ``--out`` / ``--format`` (default ``<stem>.multiview.poses.csv``); refuses an
    existing file without ``--force`` before any tracking."""
    from posetracker.export import exporter_for_path, get_exporter, with_suffix
    from posetracker.export.registry import check_target

    exporter = get_exporter(args.format) if args.format else exporter_for_path(args.out or f"{stem}.poses.csv")
    out = with_suffix(args.out, exporter) if args.out else Path(f"{stem}.multiview.poses.csv")
    check_target(out, args.force)
    return exporter, out


def write_views(seq, lines: list[str], warnings: list[str], exporter, out: Path, force: bool) -> list[Path] | None:
    """Print the run's lines and warnings to stderr and write ``seq``; the files, or None after printing why not."""
    from posetracker.export import ExportError, write_reporting

    for line in lines:
        print(line, file=sys.stderr)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        files, warned = write_reporting(exporter, seq, out, force=force)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    for message in warned:  # a person the format could not take (BVH: joints never seen), as export says it
        print(f"warning: {message}", file=sys.stderr)
    return files
