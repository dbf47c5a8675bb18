#!/usr/bin/env python3
"""Numpy re-implementation of the post-processing ("decode") built into the
MoveNet MultiPose TF.js graph, checked against the graph's own output.

    python3 tools/tfjs_reference/check_decode.py [tests/data/movenet_parity.npz]

Takes the stored head outputs (centre, heatmap, regress, offset, box_scale,
box_offset; raw logits, NHWC) of each fixture input, decodes them exactly as
the graph does (see README.md, "Built-in decode"), and prints the max abs
difference to the stored `final_{i}` (the graph's `Identity`, 1x6x56).
Exit status 1 if any difference exceeds --tol (default 1e-5).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from posetracker.evaluation.movenet_decode import decode  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("npz", nargs="?", type=Path,
                    default=Path(__file__).resolve().parents[2] / "tests" / "data" / "movenet_parity.npz")
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    fx = np.load(args.npz)
    worst = 0.0
    for i in range(int(fx["n_inputs"])):
        got = decode(*(fx[f"{k}_{i}"] for k in ("centre", "heatmap", "regress", "offset", "box_scale", "box_offset")))
        ref = fx[f"final_{i}"]
        d = np.abs(got - ref)
        worst = max(worst, float(d.max()))
        print(f"input {i}: max|decode - final| = {d.max():.3e} "
              f"(kpt yx {d[0, :, :51].reshape(6, 17, 3)[..., :2].max():.1e}, "
              f"kpt score {d[0, :, 2:51:3].max():.1e}, box {d[0, :, 51:55].max():.1e}, "
              f"person score {d[0, :, 55].max():.1e})")
    print(f"overall max abs diff: {worst:.3e}")
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
