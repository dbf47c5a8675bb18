"""Command line: ``posetracker process|batch|eval|export|train|bench|convert|depth-order|calibrate ...`` (see ``posetracker --help``),
one module per verb in this package.

Exit codes: 0 success, 1 failure (message on stderr), 2 bad usage or input not found, 130 interrupted."""

from __future__ import annotations

import argparse

from posetracker.cli.batch import add_batch_parser
from posetracker.cli.bench import add_bench_parser
from posetracker.cli.calibrate import add_calibrate_parser
from posetracker.cli.convert import add_convert_parser
from posetracker.cli.depth_order import add_depth_order_parser
from posetracker.cli.evaluate import add_eval_parser
from posetracker.cli.export import add_export_parser
from posetracker.cli.import_labels import add_import_labels_parser
from posetracker.cli.options import run_command
from posetracker.cli.process import add_process_parser
from posetracker.cli.train import add_train_parser


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="posetracker", description="Multi-person pose tracking from video.")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (add_process_parser, add_batch_parser, add_eval_parser, add_export_parser, add_train_parser, add_bench_parser,
                add_convert_parser, add_depth_order_parser, add_import_labels_parser, add_calibrate_parser):
        add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser(), argv)
