"""The detector's still-sample augmentation (posetracker/train/still_augment.py): grey, inversion, gamma, blur and
the floor replaced by a texture; an old recipe's samples unchanged."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from posetracker.skeletons import load_skeleton
from posetracker.train.detector import load_detector_config
from posetracker.train.detector_samples import AugmentConfig, warp_matrix, warp_sample
from posetracker.train.still_augment import animal_mask, augment_input, load_textures

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
MOUSE = load_skeleton("mouse4")


def _mouse_image() -> tuple[np.ndarray, np.ndarray]:
    """(256, 256, 3) light floor with a dark 'mouse' and its points (1, 5, 2): snout, ears, tail base, centre."""
    img = np.full((256, 256, 3), 220, np.uint8)
    cv2.ellipse(img, (128, 128), (30, 12), 0, 0, 360, (30, 30, 30), -1)
    pts = np.array([[[98, 128], [110, 120], [110, 136], [158, 128], [np.nan, np.nan]]], np.float32)
    return img, pts


def test_an_old_recipe_keeps_its_cache_key_and_its_samples():
    aug = AugmentConfig()
    assert aug.key() == [8, 180.0, [0.75, 1.25], True, 0.2]  # the cache key of every existing recipe
    img, pts = _mouse_image()
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    got = augment_input(img, pts, rng_a, 0.2, aug)
    a, b = 1 + rng_b.uniform(-0.2, 0.2), 255 * rng_b.uniform(-0.2, 0.2) / 2  # the jitter as it always was
    assert np.array_equal(got, np.clip(img.astype(np.float32) * a + b, 0, 255).astype(np.uint8))


def test_inversion_makes_a_dark_mouse_on_a_light_floor_light_on_dark():
    img, pts = _mouse_image()
    out = augment_input(img, pts, np.random.default_rng(0), 0.0, AugmentConfig(invert=1.0))
    assert out[128, 128].mean() > 150 and out[20, 20].mean() < 100


def test_grey_gives_one_level_for_the_three_channels_and_blur_softens_edges():
    img, pts = _mouse_image()
    img[:, :, 0] = 10  # a coloured image
    out = augment_input(img, pts, np.random.default_rng(0), 0.0, AugmentConfig(grey=1.0, blur=1.0))
    assert (out[..., 0] == out[..., 1]).all() and (out[..., 1] == out[..., 2]).all()
    edge = out[128, 95:102, 1].astype(int)  # across the mouse's snout: a step becomes a ramp
    assert len(np.unique(edge)) > 3


def test_the_floor_becomes_a_texture_and_the_mouse_keeps_its_pixels(tmp_path):
    tex = np.zeros((64, 64, 3), np.uint8)
    tex[:, :, 2] = 255  # a pure blue 'floor'
    cv2.imwrite(str(tmp_path / "floor.png"), tex)  # BGR: red on disk, blue after the RGB read
    img, pts = _mouse_image()
    aug = AugmentConfig(background=1.0, backgrounds=(str(tmp_path),))
    out = augment_input(img, pts, np.random.default_rng(0), 0.0, aug)
    assert np.array_equal(out[128, 128], img[128, 128])  # the mouse
    assert out[10, 10, 0] > out[10, 10, 2] and out[10, 10, 1] == 0  # the floor: the texture (red), not grey
    mask = animal_mask(pts, 256)
    assert mask[128, 128] == pytest.approx(1.0) and mask[10, 10] == 0.0 and mask[128, 60] < 0.5


def test_load_textures_needs_images(tmp_path):
    with pytest.raises(ValueError, match="no images"):
        load_textures((str(tmp_path),))


def test_warp_sample_applies_the_augmentation_and_moves_no_point():
    img, pts = _mouse_image()
    aug = AugmentConfig(variants=1, rotate_deg=0.0, scale=(1.0, 1.0), flip=False, colour=0.0, invert=1.0)
    m, flipped = warp_matrix((256, 256), np.random.default_rng(0), aug)
    out, p = warp_sample(img, pts, m, flipped, MOUSE, np.random.default_rng(0), 0.0, aug=aug)
    plain, q = warp_sample(img, pts, m, flipped, MOUSE, np.random.default_rng(0), 0.0)
    assert np.array_equal(p, q, equal_nan=True)
    assert out[128, 128].mean() > 150 > plain[128, 128].mean()


def test_a_config_reads_its_background_folders_relative_to_data_root(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("skeleton: mouse4\ndata: a/normalized.json\ndata_root: /data\n"
                   "augment: {invert: 0.3, background: 0.5, backgrounds: [video/coco]}\n")
    aug = load_detector_config(cfg).augment
    assert aug.backgrounds == ("/data/video/coco",) and aug.invert == 0.3
    assert aug.key()[-1] == ["video/coco"]  # the cache key does not depend on where data_root is


def test_the_arenas_recipe_config_loads():
    aug = load_detector_config(REPO / "configs" / "mouse4-arenas.yaml").augment
    assert aug.invert > 0 and aug.grey > 0 and aug.background > 0 and aug.scale[0] < 0.75
