"""The checkpoint-selection score (``posetracker/train/checkpoint_select.py``) of any crop model on a config's
validation frames: each joint at its heatmap's peak plus the offset there, one turn, on plain crops cut at each
validation fly's labelled thorax; mean / median px per validation set (studies/fly13.md, "checkpoint selection").

    python studies/tools/select_score.py models/posenet-fly13-crops.safetensors \
        [--config configs/fly13-crops-walking-select.yaml]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from posetracker.evaluation.datasets import load_labelled_set
from posetracker.model.weights import load_posenet
from posetracker.train.checkpoint_select import VAL_EVERY, peak_points
from posetracker.train.detector import config_spec, load_detector_config
from posetracker.train.detector_samples import (
    extra_columns,
    load_split,
    prepare_samples,
    segment_flags,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("weights")
    ap.add_argument("--config", default="configs/fly13-crops-walking-select.yaml")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = load_detector_config(args.config)
    spec = config_spec(cfg)
    train, _, cols = load_split(str(cfg.data_path), spec, cfg.val_fraction)
    net = load_posenet(args.weights, spec).eval()
    sources = [("main", str(cfg.data_path), train, cols, cfg.select_val)]
    for e in cfg.extra_data:
        if e.get("val"):
            path = str(cfg.path(cfg.data_root) / e["data"])
            ls = load_labelled_set(path)
            sources.append((e["data"], path, list(ls.items),
                            extra_columns(list(ls.keypoint_names), dict(e.get("names", {})), spec, path), e["val"]))
    for name, path, items, c, val in sources:
        chosen = [it for it, f in zip(items, segment_flags(items, val)) if f][::VAL_EVERY]
        data = prepare_samples(path, chosen, c, spec, net, None, cfg.seed, f"select-{val}-{sorted(map(str, c))}",
                               None, "centred")
        err = np.linalg.norm(peak_points(net, data.taps) - data.points[:, 0], axis=-1)
        print(f"{name} {val}: {len(data)} crops, mean {np.nanmean(err):.2f} px, median {np.nanmedian(err):.2f} px")


if __name__ == "__main__":
    main()
