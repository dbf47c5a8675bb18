"""``posetracker depth-order``: its tables on synthetic depths (no teachers needed) and its options."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posetracker.skeletons import load_skeleton
from posetracker.train.depth_order import held_out_rows, val_rows
from posetracker.tracking.mirror import mirror_pairs

SPEC = load_skeleton("human18")
PAIRS = mirror_pairs(SPEC)


def synthetic_depths(rel: str):
    """(model, full, heavy) (T=10, N=1, K) depths: heavy puts each left joint 0.12 m nearer; the model agrees,
    full gets every order the wrong way round."""
    heavy = np.full((10, 1, SPEC.num_joints), 3.0)
    heavy[..., PAIRS[:, 0]] -= 0.12
    full = heavy.copy()
    full[..., PAIRS[:, 0]] += 0.24
    return heavy + 0.01, full, heavy


def test_val_table_counts_and_agreement():
    rows = list(val_rows(synthetic_depths, ["clips/a.mp4"], SPEC, PAIRS, [0.05, 0.2], "heavy", "full", per_pair=True))
    counted = 10 * len(PAIRS)
    assert rows[0].startswith("| clip | min gap m | pairs (heavy) | model vs heavy | BlazePose full vs heavy")
    assert rows[2] == f"| a.mp4 | 0.05 | {counted} | 1.00 | 0.00 | 0 | nan |"
    assert rows[3] == "| a.mp4 | 0.20 | 0 | nan | nan | 0 | nan |"  # no pair is 0.2 m apart
    assert rows[4].startswith("\n| clip | pair (gap >= 0.05 m)")
    per_pair = rows[6].splitlines()
    assert len(per_pair) == len(PAIRS) and per_pair[0] == "| a.mp4 | eye | 10 | 1.00 | 0.00 | 0.00 |"
    assert len(list(val_rows(synthetic_depths, ["a", "b"], SPEC, PAIRS, [0.05], "heavy", "full"))) == 2 + 2


def test_held_out_table_pools_the_clips():
    rows = list(held_out_rows(synthetic_depths, ["a", "b"], SPEC, PAIRS, [0.05, 0.1], "heavy", "full"))

    def cells(clips: int) -> str:  # pair-frames, then model / full / one order; the same for the limbs (4 pairs)
        return f"{clips * 10 * len(PAIRS)} | 1.00 | 0.00 | 1.00 | {clips * 10 * 4} | 1.00 | 0.00 | 1.00"

    assert rows[0].startswith("| clip (gap >= 0.05 m) | pairs (heavy) | model vs heavy | full vs heavy | one order")
    assert rows[2:] == [f"| a | {cells(1)} |", f"| b | {cells(1)} |",
                        f"| all 2 clips, gap >= 0.05 m | {cells(2)} |", f"| all 2 clips, gap >= 0.10 m | {cells(2)} |"]


def test_the_command_keeps_the_tool_options():
    from posetracker.cli import build_parser

    args = build_parser().parse_args(["depth-order"])
    assert (args.config, args.weights, args.gaps, args.per_pair, args.reference, args.smoothing, args.no_pose_prior,
            args.clips) == ("configs/distill_quick.yaml", None, [0.05, 0.10, 0.15, 0.20], False, "heavy", False, False, "val")
    args = build_parser().parse_args(["depth-order", "--gaps", "0.1", "--per-pair", "--reference", "full", "--smoothing",
                                      "--no-pose-prior", "--clips", "held-out", "--weights", "w.safetensors"])
    assert (args.gaps, args.per_pair, args.reference, args.smoothing, args.no_pose_prior, args.clips, args.weights) == (
        [0.1], True, "full", True, True, "held-out", "w.safetensors")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["depth-order", "--clips", "all"])


def test_the_command_says_when_it_finds_no_clips(tmp_path, capsys):
    """Run from elsewhere than the repository root, the config's ../shared data root is not there: a message and
    exit 2, not a traceback after the teachers load."""
    from posetracker.cli import main

    cfg = tmp_path / "quick.yaml"
    cfg.write_text((Path(__file__).parents[2] / "configs/distill_quick.yaml").read_text().replace("../shared", str(tmp_path / "none")))
    assert main(["depth-order", "--config", str(cfg), "--clips", "held-out"]) == 2
    assert "no held-out clips under" in capsys.readouterr().err
