"""Cost of the precision stage's test-time readings (``CropRefiner.readings``: one, flip, flip+scales) on the
people of one frame, interleaved runs, medians; ratios against ``one`` from the same run.

    python studies/tools/crop_readings_cost.py CLIP [--frame 30] [--runs 7]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from posetracker.refiners import build_refiner
from posetracker.refiners.crop import READINGS
from posetracker.session import (
    NetworkSettings,
    PeopleSettings,
    RefineSettings,
    SessionConfig,
    TrackingSession,
)
from posetracker.skeletons import load_skeleton


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("clip")
    ap.add_argument("--frame", type=int, default=30)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(1)
    from posetracker.refiners import load_refiner, refiner_path
    from posetracker.train.features import FrameSelection, iter_frames

    rgb = next(f.image for f in iter_frames(args.clip, FrameSelection()) if f.index >= args.frame)
    session = TrackingSession.open(config=SessionConfig(network=NetworkSettings(threads=1), people=PeopleSettings(track=False),
                                                        refine=RefineSettings(refiners=(), tile_grid=1)))
    pose = session.process_image(rgb)
    xy, conf = pose.keypoints[..., :2].astype(np.float64), pose.confidence.astype(np.float64)
    spec = load_skeleton("human18")
    shipped = load_refiner(refiner_path("crop", "human18"), spec)
    stages = {}
    for r in READINGS:
        stage = build_refiner("crop", spec, readings=r)
        stage.load_state_dict(shipped.state_dict())
        stage.eval().accelerate(1)
        stage.refine_frame(xy, conf, rgb)  # warm-up
        stages[r] = stage
    times = {r: [] for r in READINGS}
    for _ in range(args.runs):
        for r, stage in stages.items():
            t0 = time.perf_counter()
            stage.refine_frame(xy, conf, rgb)
            times[r].append(time.perf_counter() - t0)
    base = np.median(times["one"])
    for r in READINGS:
        ratios = np.array(times[r]) / np.array(times["one"])
        print(f"{r:<12} {np.median(times[r]) * 1000:7.1f} ms for {pose.num_people} people "
              f"({np.median(times[r]) / base:.2f}x; paired ratio median {np.median(ratios):.2f})")


if __name__ == "__main__":
    main()
