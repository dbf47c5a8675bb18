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


def test_the_session_reads_a_darkened_clip_as_it_reads_the_bright_one():
    """The bundled sample clip at 1/24 of its brightness (levels 0-10): with the stretch the joints land within
    a few px of the bright clip's; read as it is, the network loses them."""
    from pathlib import Path

    import av

    from posetracker.session import NetworkSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.types import Frame

    clip = Path(__file__).resolve().parents[2] / "assets" / "sample_dance.mp4"
    with av.open(str(clip)) as c:
        frames = [f.to_ndarray(format="rgb24") for _, f in zip(range(12), c.decode(video=0))]

    def read(dark: int, low_light: bool) -> np.ndarray:
        session = TrackingSession.open(config=SessionConfig(mode="live", network=NetworkSettings(low_light=low_light),
                                                            refine=RefineSettings(refiners=())))
        poses = session.run([Frame(i, i / 30, (f // dark).astype(np.uint8)) for i, f in enumerate(frames)], 30.0)
        return np.stack([p.keypoints[0, :, :2] for p in poses.frames])  # (T, K, 2): one dancer in every frame

    bright = read(1, True)
    gap = lambda xy: float(np.nanmedian(np.linalg.norm(xy - bright, axis=-1)))  # noqa: E731
    stretched = gap(read(24, True))  # 2.2 px when written
    assert stretched < 4.0
    assert gap(read(24, False)) > 3 * stretched  # 10.5 px
