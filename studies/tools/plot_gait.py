"""Plot the gait analysis of one tracked walk over time (issue #46): per foot (left blue, right red, the legs as
the sequence names them), three panels sharing the clip's frame axis:

1. foot height in the image: the foot point (:mod:`posetracker.analysis.foot_contact`: the ankle for human18) in
   pixels above the lowest foot point of the surrounding 1 s (both feet), with the events marked on it;
2. the foot's speed relative to the ground (leg lengths / s, the signal contact is read from) with each foot's
   on / off thresholds;
3. contact phases as bars (a gait diagram; unknown frames hatched grey) with the heel strikes (down triangles)
   and toe offs (up triangles), and optional frames counted by eye (black ticks).

    /opt/plotvenv/bin/python studies/tools/plot_gait.py WALK.json OUT.png [--person 0] [--by-eye F1,F2,...]
                                             [--frames A:B] [--title TEXT]

matplotlib is only needed by this tool (a venv of its own, e.g. ``python3.11 -m venv --system-site-packages
/opt/plotvenv && /opt/plotvenv/bin/pip install matplotlib``); it is no product dependency. Prints the events.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from posetracker.analysis.foot_contact import CONTACT, FEET, HEEL_STRIKE, UNKNOWN  # noqa: E402
from posetracker.analysis.gait import analyse_gait  # noqa: E402
from posetracker.export.json_io import read_sequence  # noqa: E402
from posetracker.tracks import runs  # noqa: E402

COLOURS = {"left": "#2859ff", "right": "#ff2a1f"}


def running_max(values: np.ndarray, half: int) -> np.ndarray:
    """Per frame, the max of the finite values within +-half frames (nan where none)."""
    out = np.full(values.shape[0], np.nan)
    for i in range(values.shape[0]):
        w = values[max(0, i - half):i + half + 1]
        w = w[np.isfinite(w)]
        if w.size:
            out[i] = w.max()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sequence", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--person", type=int, default=None, help="track id (default: the first)")
    ap.add_argument("--by-eye", default="", help="frames counted by eye (heel strikes), drawn as black ticks")
    ap.add_argument("--frames", default="", help="A:B, the frame range shown (default: the track)")
    ap.add_argument("--title", default="")
    args = ap.parse_args(argv)
    seq = read_sequence(args.sequence)
    gaits = analyse_gait(seq, args.person)
    gait = gaits[sorted(gaits)[0]]
    c = gait.contacts
    frames = c.frames.astype(float)
    y = c.position[..., 1]  # (T, F) image y, px (down)
    fps = seq.fps
    ground = running_max(np.nanmax(np.where(np.isfinite(y), y, -np.inf), axis=1).astype(float), int(round(fps / 2)))
    ground[~np.isfinite(ground)] = np.nan
    height = ground[:, None] - y

    fig, axes = plt.subplots(3, 1, figsize=(13, 7.2), sharex=True, gridspec_kw={"height_ratios": [3, 2.4, 1.3]})
    ax_h, ax_s, ax_c = axes
    for f, foot in enumerate(FEET):
        col = COLOURS[foot]
        ax_h.plot(frames, height[:, f], color=col, lw=1.2, label=f"{foot} foot")
        ax_s.plot(frames, c.speed[:, f], color=col, lw=1.0, label=f"{foot}")
        on, off = c.thresholds[f]
        ax_s.axhline(on, color=col, lw=0.7, ls="--")
        ax_s.axhline(off, color=col, lw=0.7, ls=":")
        for a, b in runs(c.contact[:, f] == CONTACT):
            ax_c.broken_barh([(frames[a] - 0.5, frames[b - 1] - frames[a] + 1)], (1 - f + 0.15, 0.7), color=col,
                             alpha=0.55)
        for a, b in runs(c.contact[:, f] == UNKNOWN):
            ax_c.broken_barh([(frames[a] - 0.5, frames[b - 1] - frames[a] + 1)], (1 - f + 0.15, 0.7),
                             facecolor="none", edgecolor="0.6", hatch="///", lw=0)
        for e in (e for e in gait.events if e.foot == foot):
            hs = e.kind == HEEL_STRIKE
            i = e.index
            ax_c.plot(frames[i], 1 - f + 0.5, marker="v" if hs else "^", color=col, mec="k", mew=0.6, ms=8)
            if hs:
                ax_c.annotate(str(e.frame), (frames[i], 1 - f + 0.9), ha="center", va="bottom", fontsize=7, color=col)
                if np.isfinite(height[i, f]):
                    ax_h.plot(frames[i], height[i, f], marker="v", color=col, mec="k", mew=0.6, ms=7)
            elif np.isfinite(height[i, f]):
                ax_h.plot(frames[i], height[i, f], marker="^", color=col, mec="k", mew=0.6, ms=7)
    eye = [int(v) for v in args.by_eye.split(",") if v.strip()]
    for v in eye:
        ax_c.axvline(v, ymin=0.0, ymax=0.12, color="k", lw=1.5)
    ax_h.set_ylabel("foot height in the image\n(px above the lowest foot\nof the surrounding 1 s)")
    ax_s.set_ylabel("foot speed over the ground\n(leg lengths / s)")
    ax_s.set_ylim(0, np.nanpercentile(c.speed, 99) * 1.1)
    ax_c.set_yticks([0.5, 1.5], ["right", "left"])
    ax_c.set_ylim(-0.1, 2.25)
    ax_c.set_ylabel("contact")
    ax_c.set_xlabel(f"clip frame ({fps:g} fps)")
    if args.frames:
        a, b = (int(v) for v in args.frames.split(":"))
        ax_c.set_xlim(a, b)
    for ax in axes:
        ax.grid(alpha=0.3, lw=0.5)
    ax_h.legend(loc="upper right", fontsize=8, ncol=2)
    ax_s.legend(loc="upper right", fontsize=8, ncol=2, title="--  on / ..  off threshold", title_fontsize=7)
    strides = len(gait.strides)
    n_hs = sum(e.kind == HEEL_STRIKE for e in gait.events)
    title = args.title or f"{args.sequence.name}, person {gait.person_id}"
    ax_h.set_title(f"{title}: {n_hs} heel strikes (v), {len(gait.events) - n_hs} toe offs (^), {strides} strides"
                   + (f"; black ticks: {len(eye)} heel strikes counted by eye" if eye else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=80)
    for e in gait.events:
        print(f"{e.kind}\t{e.foot}\t{e.frame}\t{e.time:.3f}")
    print(f"{args.out}: {args.out.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
