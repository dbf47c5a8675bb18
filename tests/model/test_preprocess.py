"""Letterboxing (model/preprocess.py): the float area path gives OpenCV's uint8 area resize exactly."""

import cv2
import numpy as np
import pytest

from posetracker.model.preprocess import letterbox


@pytest.mark.parametrize("shape", [(576, 576), (720, 406), (1080, 1920), (720, 1280), (300, 200)])
def test_letterbox_pixels_are_opencvs_uint8_area_resize(shape):
    rng = np.random.default_rng(sum(shape))
    h, w = shape
    smooth = cv2.GaussianBlur(rng.integers(0, 256, (h, w, 3)).astype(np.uint8), (0, 0), 3)  # frame-like
    for rgb in (rng.integers(0, 256, (h, w, 3)).astype(np.uint8), smooth):
        out, box = letterbox(rgb, fit=True)
        nw, nh = max(1, round(w * box.scale)), max(1, round(h * box.scale))
        interp = cv2.INTER_AREA if box.scale < 1 else cv2.INTER_LINEAR
        np.testing.assert_array_equal(out[:nh, :nw], cv2.resize(rgb, (nw, nh), interpolation=interp))
        assert not out[nh:].any() and not out[:, nw:].any()
