"""posetracker.model.low_light: dark frames stretched before the network, others untouched."""

from __future__ import annotations

import numpy as np

from posetracker.model.low_light import DARK_LEVEL, bright_level, brighten_if_dark


def _scene(peak: int, seed: int = 0) -> np.ndarray:
    """(120, 160, 3) uint8: dark noise with a brighter 'person' block whose values reach ``peak``."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, max(2, peak // 6), (120, 160, 3)).astype(np.uint8)
    img[30:100, 60:90] = rng.integers(peak // 2, peak + 1, (70, 30, 3))
    return img


def test_a_normal_frame_passes_through_untouched():
    img = _scene(200)
    assert bright_level(img) >= DARK_LEVEL
    assert brighten_if_dark(img) is img


def test_a_dark_frame_is_stretched_to_the_full_range_and_keeps_its_order():
    img = _scene(16)
    assert bright_level(img) < DARK_LEVEL
    out = brighten_if_dark(img)
    assert out.shape == img.shape and out.dtype == np.uint8 and out is not img
    assert bright_level(out) > 150  # the person's levels now span most of the range
    person, background = out[40:90, 65:85].mean(), out[:, :40].mean()
    assert person > background + 60  # brighter things stay brighter, far apart
