"""Paired comparison of two ``posetracker train held-out-eval --out`` results on the same held-out frames.

    python studies/tools/held_out_paired.py BEFORE.json AFTER.json [--combo none] [--after-combo C] [--block 10] [--resamples 10000]

Both files must score the same labelled instances in the same order (same config, same held-out frames).
Printed per side: instances found (matched to a reading; "on it": matched with a median joint error under
0.2 x the instance's labelled-joint box), mean / median px over the found instances' labelled joints, the
mean px per joint and the worst joint. Then AFTER - BEFORE with a 95 % bootstrap interval that resamples
blocks of ``--block`` consecutive frames (neighbouring frames are not independent), paired: the same
blocks on both sides. A joint's mean is over instances both sides found. ``--after-combo``: AFTER's refiner
combination (default ``--combo``), e.g. ``--after-combo heatmap`` with the same file twice: a refiner against none.
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def load(path: str, combo: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(errors (N, K) px, nan = unlabelled or not found; frames (N,); sides (N,) px; joint names)."""
    r = json.loads(open(path).read())[combo]
    rows = r["per_instance"]
    e = np.array([[np.nan if v is None else v for v in x["errors"]] for x in rows], np.float64)
    frames = np.array([x["frame"] for x in rows])
    sides = np.array([x.get("side", np.nan) for x in rows], np.float64)
    names = list(r["per_joint_mean_px"])  # the labelled joints, skeleton order
    return e, frames, sides, names


def summary(e: np.ndarray, sides: np.ndarray) -> dict[str, float]:
    found = np.isfinite(e).any(1)
    on = found & (np.nanmedian(np.where(found[:, None], e, 0.0), 1) <= 0.2 * np.nan_to_num(sides, nan=np.inf))
    return {"found": found.mean(), "on_it": on.mean(), "mean": np.nanmean(e), "median": np.nanmedian(e)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--combo", default="none")
    ap.add_argument("--after-combo", default=None, help="AFTER's combination (default: --combo)")
    ap.add_argument("--block", type=int, default=10, help="frames per bootstrap block")
    ap.add_argument("--resamples", type=int, default=10_000)
    args = ap.parse_args()
    a, fa, sa, names = load(args.before, args.combo)
    b, fb, sb, _ = load(args.after, args.after_combo or args.combo)
    if a.shape != b.shape or (fa != fb).any():
        raise SystemExit("error: the two files score different instances")
    cols = [k for k in range(a.shape[1]) if np.isfinite(a[:, k]).any() or np.isfinite(b[:, k]).any()]
    a, b = a[:, cols], b[:, cols]
    blocks = fa // args.block
    ids = np.unique(blocks)
    members = [np.flatnonzero(blocks == i) for i in ids]
    rng = np.random.default_rng(0)
    draws = [np.concatenate([members[j] for j in rng.integers(0, len(ids), len(ids))]) for _ in range(args.resamples)]

    def stat(x: np.ndarray, y: np.ndarray, sx: np.ndarray, sy: np.ndarray) -> np.ndarray:
        both = np.isfinite(x) & np.isfinite(y)
        with np.errstate(all="ignore"):
            joint = [np.nanmean(np.where(both[:, k], y[:, k], np.nan)) - np.nanmean(np.where(both[:, k], x[:, k], np.nan))
                     for k in range(x.shape[1])]
        s, t = summary(x, sx), summary(y, sy)
        return np.array([t["found"] - s["found"], t["on_it"] - s["on_it"], t["mean"] - s["mean"], *joint])

    point = stat(a, b, sa, sb)
    boot = np.array([stat(a[d], b[d], sa[d], sb[d]) for d in draws])
    lo, hi = np.nanpercentile(boot, [2.5, 97.5], axis=0)
    print(f"{len(a)} instances in {len(ids)} blocks of {args.block} frames")
    for side, e, s in (("before", a, sa), ("after", b, sb)):
        m = summary(e, s)
        with np.errstate(all="ignore"):
            joints = np.nanmean(e, 0)
        worst = int(np.nanargmax(joints))
        print(f"{side:7s} found {m['found']:.3f} (on it {m['on_it']:.3f})  mean {m['mean']:.2f} px  median "
              f"{m['median']:.2f} px  worst joint {names[worst]} "
              f"{joints[worst]:.2f} px")
        print("        " + "  ".join(f"{names[i]} {v:.1f}" for i, v in enumerate(joints)))
    labels = ["found", "found, on it", "mean px", *[f"{n} px" for n in names]]
    print("after - before, 95 % block-bootstrap interval:")
    for lab, p, l, h in zip(labels, point, lo, hi):
        print(f"  {lab:16s} {p:+.3f}  [{l:+.3f}, {h:+.3f}]")


if __name__ == "__main__":
    main()
