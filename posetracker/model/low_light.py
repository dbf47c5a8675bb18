"""Dark frames stretched before the network reads them (a dim room, a street at night).

A frame is *dark* when the 99.5th percentile of its brightest channel, sampled on a grid of about 160 points
along its long side, is below ``DARK_LEVEL`` (32 of 255): its people are then a few grey levels above black,
where the network was never trained. Such a frame is stretched through a lookup table, that percentile to 255
with gamma 0.5 (the shadows lifted most), and blurred with sigma = long side / 1280 px to even out the sensor noise the
gain brings up (the network's own input is area-downscaled; the blur serves the full-resolution crops of
the precision stage). Other frames pass through untouched (the same array). About 6 ms for a dark
1920 x 1200 frame on one core; the check 0.3-0.6 ms (640 x 480 to 1920 x 1080).

Measured on the two ExLPose low-light photos (values 0-18, mean 0.3; `posetracker eval --data
../shared/data/human/mmpose_exlpose [--no-low-light]`): 1 of their 6 people found with it, none without;
MoveNet's own decode finds none, and the same one when given the same stretch, so the gain is the
stretch's, not the network's. The bundled sample clip darkened 24x (levels 0-10), offline, 60 frames: joints
a median 1.7 px from the bright clip's with the stretch, 28.8 px without (12x darker: 0.8 against 2.3 px);
`tests/model/test_low_light.py` checks the live case. The app on that darkened clip, live with its defaults (the
frame is shown as it is; the network reads it stretched): `docs/screenshots/low-light-live.png`.
"""

from __future__ import annotations

import cv2
import numpy as np

DARK_LEVEL = 32.0  # the 99.5th percentile of the brightest channel below this: the frame is dark
GAMMA = 0.5
_SAMPLE_POINTS = 160  # points of the check's grid along the long side (at least every 8th pixel)


def bright_level(rgb: np.ndarray) -> float:
    """The 99.5th percentile of the brightest channel of (H, W, 3) uint8, over a grid of about 160 points along
    the long side (at least every 8th pixel each way)."""
    step = max(8, max(rgb.shape[:2]) // _SAMPLE_POINTS)
    return float(np.percentile(rgb[::step, ::step].max(axis=-1), 99.5))


def brighten_if_dark(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 RGB -> the same array if the frame is not dark, else a stretched copy (same shape)."""
    level = bright_level(rgb)
    if level >= DARK_LEVEL:
        return rgb
    lut = (np.clip(np.arange(256) / max(level, 1.0), 0.0, 1.0) ** GAMMA * 255.0).round().astype(np.uint8)
    out = cv2.LUT(np.ascontiguousarray(rgb), lut)
    return cv2.GaussianBlur(out, (0, 0), max(rgb.shape[:2]) / 1280.0)
