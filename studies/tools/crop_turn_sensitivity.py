"""How a top-down crop model's reading depends on how its crop is turned (studies/fly13.md).

    python studies/tools/crop_turn_sensitivity.py CONFIG WEIGHTS_DIR [--items val|train|extra] [--n 40] [--turns 16]

Each labelled animal of ``--n`` items (drawn with seed 0 from the config's held-out or training items, or its first
extra set's held-out segments: ``extra``, the walking flies) is cut
from a crop centred on its labelled root, as the product cuts it (turned upright first for an aligned crop model,
``top_down: {align: true}``), and read by the crop model in ``WEIGHTS_DIR`` at ``--turns`` turns about the crop's
centre. Printed per turn: the mean joint confidence of the centred reading and its mean joint error (px) against
the labels. One thread; ~25 s for 40 two-fly items at 16 turns.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config")
    p.add_argument("weights_dir")
    p.add_argument("--items", choices=("val", "train", "extra"), default="val")
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--turns", type=int, default=16)
    a = p.parse_args(argv)

    from posetracker.decoding.top_down import (CROP_INPUT, centred_person, crop_affine, crop_window, map_back,
                                               upright_turn, warp_crop)
    from posetracker.evaluation.datasets import FrameCache, item_points, read_image
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession
    from posetracker.train.detector_run import load_training

    cfg, spec, train_items, val_items, cols = load_training(a.config, 1)
    items = val_items if a.items == "val" else train_items
    if a.items == "extra":
        from posetracker.train.detector_samples import extra_held_out

        e = cfg.extra_data[0]
        items, cols = extra_held_out(str(cfg.path(cfg.data_root) / e["data"]), dict(e.get("names", {})),
                                     e["held_out"], spec)
    pick = np.random.default_rng(0).choice(len(items), min(a.n, len(items)), replace=False)
    session = TrackingSession.open(spec, Path(a.weights_dir) / f"posenet-{spec.name}.safetensors",
                                   SessionConfig(mode="offline", network=NetworkSettings(threads=1)))
    crop_px, root = float(spec.top_down["crop_px"]), spec.root
    conf, err = [], []  # per animal: (turns,) each
    with FrameCache() as cache:
        for i in sorted(pick):
            rgb, gt = read_image(items[i], cache), item_points(items[i], cols)
            for g in gt:
                if not np.isfinite(g[root]).all():
                    continue
                up = upright_turn(g, spec.crop_align)
                affines = [crop_affine(crop_window(g[root], crop_px), CROP_INPUT, up + 360.0 * t / a.turns)
                           for t in range(a.turns)]
                reads = session._crop_people(np.stack([warp_crop(rgb, m, CROP_INPUT) for m in affines]))
                c, e = [], []
                for m, read in zip(affines, reads):
                    j = centred_person(read, root, CROP_INPUT)
                    one = map_back(read.take(np.array([j])), m) if j >= 0 else None
                    c.append(0.0 if one is None else float(np.nan_to_num(one.confidence[0]).mean()))
                    e.append(np.nan if one is None else float(np.nanmean(np.linalg.norm(one.keypoints[0] - g, axis=-1))))
                conf.append(c)
                err.append(e)
    conf, err = np.array(conf), np.array(err)
    print(f"{a.config} {a.items}: {len(pick)} items, {len(conf)} animals; turn (deg ccw) / mean confidence / mean px")
    for t in range(a.turns):
        print(f"{360.0 * t / a.turns:6.1f}  {conf[:, t].mean():.3f}  {np.nanmean(err[:, t]):6.2f}")
    best, worst = np.nanmin(np.nanmean(err, 0)), np.nanmax(np.nanmean(err, 0))  # a turn no animal was read at: nan
    print(f"spread of the per-turn mean error: {best:.2f} - {worst:.2f} px; all turns' mean {np.nanmean(err):.2f} px")
    each = np.nanmax(err, 1) - np.nanmin(err, 1)  # (animals,) px: one animal's best turn against its worst
    print(f"one animal's worst turn minus its best: median {np.nanmedian(each):.2f} px (90th pct "
          f"{np.nanpercentile(each, 90):.2f}); its best turn's mean {np.nanmean(np.nanmin(err, 1)):.2f} px")
    return 0


if __name__ == "__main__":
    sys.exit(main())
