"""Aligned crop models (``top_down: {align: true}``): crops turned so the animal stands upright, in training and reading."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from posetracker.decoding import DecodedPeople
from posetracker.decoding.top_down import crop_affine, crop_window, read_crops, upright_turn
from posetracker.skeletons import SkeletonError, load_skeleton, spec_from_dict
from posetracker.train.detector_samples import AugmentConfig, crop_matrix, sample_warps

FLY = load_skeleton("fly13")
ALIGNED = dataclasses.replace(FLY, top_down={"crop_px": 160.0, "align": True})  # as shipped (fly13.yaml)
HEAD, ABDOMEN = FLY.orientation


def fly_points(heading_deg: float, centre=(500.0, 400.0), length: float = 60.0) -> np.ndarray:
    """(K, 2) px: every joint at the root but the head ``length`` / 2 ahead and the abdomen behind, facing
    ``heading_deg`` (image angle, y down: 90 faces down the screen)."""
    d = np.array([np.cos(np.radians(heading_deg)), np.sin(np.radians(heading_deg))]) * length / 2
    pts = np.tile(np.asarray(centre, np.float64), (FLY.num_joints, 1))
    pts[HEAD], pts[ABDOMEN] = pts[FLY.root] + d, pts[FLY.root] - d
    return pts


def through(m: np.ndarray, xy: np.ndarray) -> np.ndarray:
    return xy @ m[:, :2].T + m[:, 2]


@pytest.mark.parametrize("heading", [0.0, 37.0, 90.0, 180.0, -135.0])
def test_an_upright_turn_stands_the_animal_head_up_in_its_crop(heading):
    pts = fly_points(heading)
    m = crop_affine(crop_window(pts[FLY.root], 160), 256, upright=upright_turn(pts, FLY.orientation))
    head, tail = through(m, pts[HEAD]), through(m, pts[ABDOMEN])
    assert head[1] < tail[1] - 90 and abs(head[0] - tail[0]) < 1e-3  # straight up, 96 px long
    np.testing.assert_allclose(through(m, pts[FLY.root]), (127.5, 127.5), atol=0.75)  # turned about (size - 1) / 2


def test_no_turn_without_ends_or_where_an_end_is_not_read():
    pts = fly_points(30.0)
    assert upright_turn(pts, None) == 0.0
    pts[HEAD] = np.nan
    assert upright_turn(pts, FLY.orientation) == 0.0
    assert upright_turn(np.zeros((FLY.num_joints, 2)), FLY.orientation) == 0.0  # a place holder: all at the root


def test_training_crops_of_an_aligned_model_stand_each_animal_up_within_its_rotation():
    rgb = np.zeros((1024, 1024, 3), np.uint8)
    pts = np.stack([fly_points(120.0), fly_points(-20.0, centre=(300.0, 700.0))])
    aug = AugmentConfig(variants=3, rotate_deg=20.0, flip=True, colour=0.0)
    warps = sample_warps(rgb, pts, ALIGNED, aug, np.random.default_rng(0), "centred")
    assert len(warps) == 6
    for m, flipped, carried, _ in warps:
        head, tail = through(m, carried[0, HEAD]), through(m, carried[0, ABDOMEN])
        lean = np.degrees(np.arctan2(abs(head[0] - tail[0]), tail[1] - head[1]))
        assert head[1] < tail[1] and lean <= 20.0 + 1e-6
    unaligned = sample_warps(rgb, pts[:1], dataclasses.replace(ALIGNED, top_down={"crop_px": 160.0}),
                             dataclasses.replace(aug, rotate_deg=0.0), np.random.default_rng(0), "centred")
    head, tail = through(unaligned[0][0], pts[0, HEAD]), through(unaligned[0][0], pts[0, ABDOMEN])
    assert head[1] > tail[1]  # facing 120 degrees (down the screen) stays so without align
    m, _ = crop_matrix(pts[0, FLY.root], 160, None, AugmentConfig(), upright_turn(pts[0], FLY.orientation))
    assert through(m, pts[0, HEAD])[1] < through(m, pts[0, ABDOMEN])[1]  # held out: upright too


def test_reading_an_aligned_model_cuts_each_crop_upright_and_maps_its_reading_back():
    """A stand-in crop model that reads whatever it is given as a fly standing upright in the crop's centre:
    mapped back, its head lies ahead of the seed's root along the seed's own heading, whatever that is."""
    k = FLY.num_joints
    seen = []

    def upright_reader(images):
        seen.append(len(images))
        out = []
        for _ in images:
            kp = np.full((1, k, 2), 127.5, np.float32)
            kp[0, HEAD], kp[0, ABDOMEN] = (127.5, 80.0), (127.5, 175.0)
            out.append(DecodedPeople(kp, np.full((1, k), 0.9, np.float32), np.ones(1, np.float32),
                                     np.full((1, k), np.nan), kp.copy()))
        return out

    for heading in (10.0, 100.0, -160.0):
        pts = fly_points(heading).astype(np.float32)[None]
        seed = DecodedPeople(pts, np.zeros((1, k), np.float32), np.ones(1, np.float32), np.full((1, k), np.nan), pts)
        read = read_crops(seed, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 160.0, upright_reader,
                          align=FLY.orientation)
        axis = read.keypoints[0, HEAD] - read.keypoints[0, ABDOMEN]
        assert abs(np.degrees(np.arctan2(axis[1], axis[0])) - heading) < 0.5
        plain = read_crops(seed, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 160.0, upright_reader)
        axis = plain.keypoints[0, HEAD] - plain.keypoints[0, ABDOMEN]
        assert abs(np.degrees(np.arctan2(axis[1], axis[0])) + 90.0) < 0.5  # unaligned: up, whatever the seed
    assert seen == [1] * 6


def test_align_is_refused_without_orientation_joints_or_as_a_non_bool():
    base = {"name": "x", "joints": [{"name": "a", "parent": None}, {"name": "b", "parent": "a"}]}
    with pytest.raises(SkeletonError, match="orientation"):
        spec_from_dict({**base, "top_down": {"crop_px": 192, "align": True}})
    with pytest.raises(SkeletonError, match="top_down"):
        spec_from_dict({**base, "orientation": ["b", "a"], "top_down": {"crop_px": 192, "align": "yes"}})
    spec = spec_from_dict({**base, "orientation": ["b", "a"], "top_down": {"crop_px": 192, "align": True}})
    assert spec.crop_align == (1, 0) and load_skeleton("human18").crop_align is None


def test_an_aligned_model_turns_only_its_first_round_later_rounds_stand_on_their_own_reading():
    k = FLY.num_joints
    seen = []

    def reader(images):
        seen.append(len(images))
        kp = np.full((1, k, 2), 127.5, np.float32)
        kp[0, HEAD], kp[0, ABDOMEN] = (127.5, 80.0), (127.5, 175.0)
        return [DecodedPeople(kp.copy(), np.full((1, k), 0.9, np.float32), np.ones(1, np.float32),
                              np.full((1, k), np.nan), kp.copy()) for _ in images]

    pts = np.tile(np.float32([500.0, 400.0]), (1, k, 1))  # a centre model's seed: every joint at the root
    seed = DecodedPeople(pts, np.zeros((1, k), np.float32), np.ones(1, np.float32), np.full((1, k), np.nan), pts)
    read_crops(seed, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 160.0, reader, turns=4, rounds=3,
               align=FLY.orientation)
    assert seen == [4, 1, 1]
    seen.clear()
    read_crops(seed, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 160.0, reader, turns=4, rounds=3)
    assert seen == [4, 4, 4]  # unaligned: every round at every turn, as before


def test_a_live_session_of_an_aligned_model_keeps_its_turns_for_new_animals():
    from posetracker.session import LIVE_CROP_TURNS, RefineSettings
    from posetracker.session_config import top_down_reading

    assert top_down_reading({"crop_px": 256.0, "turns": 8}, RefineSettings(), "live")[0] == LIVE_CROP_TURNS == 2
    assert top_down_reading({"crop_px": 256.0, "turns": 4, "align": True}, RefineSettings(), "live")[0] == 4
