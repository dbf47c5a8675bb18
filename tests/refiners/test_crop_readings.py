"""The precision stage's test-time readings (``CropRefiner.readings``): the crop's mirror image and two more
scales, averaged where they agree with the crop's own reading (issue #47)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posetracker.refiners import RefinerError, build_refiner, load_refiner, refiner_path
from posetracker.skeletons import load_skeleton
from posetracker.train.features import FrameSelection, iter_frames

ROOT = Path(__file__).resolve().parents[2]


def test_mirrored_and_scaled_readings_stay_on_the_person():
    spec = load_skeleton("human18")
    rgb = next(iter(iter_frames(ROOT / "assets" / "sample_dance.mp4", FrameSelection(step=30, max_frames=1)))).image
    h, w = rgb.shape[:2]
    xy = np.zeros((1, 18, 2))
    xy[0, :, 0], xy[0, :, 1] = np.linspace(w * 0.35, w * 0.65, 18), np.linspace(h * 0.15, h * 0.9, 18)
    conf = np.full((1, 18), 0.2)
    shipped = load_refiner(refiner_path("crop", "human18"), spec)
    out = {}
    for readings in ("one", "flip", "flip+scales"):
        stage = build_refiner("crop", spec, readings=readings)
        stage.load_state_dict(shipped.state_dict())
        out[readings] = stage.eval().refine_frame(xy, conf, rgb)
    one = out["one"][0][0, :17]
    for readings in ("flip", "flip+scales"):
        moved = np.linalg.norm(out[readings][0][0, :17] - one, axis=1)
        assert moved.max() < 0.03 * h and moved.max() > 0  # another reading of the same joints, averaged in
    with pytest.raises(RefinerError):
        build_refiner("crop", spec, readings="twice")
