"""Aligned crop models (``top_down: {align: true}``): crops turned so the animal stands upright, in training and reading."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from posetracker.decoding import DecodedPeople
from posetracker.decoding.top_down import CropReading, crop_affine, crop_window, map_back, read_crops, upright_turn, warp_crop
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
    m = crop_affine(crop_window(pts[FLY.root], 160), 256, upright_turn(pts, FLY.orientation))
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
                          CropReading(align=FLY.orientation))
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
    read_crops(seed, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 160.0, reader,
               CropReading(turns=4, rounds=3, align=FLY.orientation))
    assert seen == [4, 1, 1]
    seen.clear()
    read_crops(seed, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 160.0, reader, CropReading(turns=4, rounds=3))
    assert seen == [4, 4, 4]  # unaligned: every round at every turn, as before


def test_a_live_session_of_an_aligned_model_keeps_its_turns_for_new_animals():
    from posetracker.session import LIVE_CROP_TURNS, RefineSettings
    from posetracker.session_config import top_down_reading

    turned = dataclasses.replace(FLY, top_down={"crop_px": 256.0, "turns": 8})
    assert top_down_reading(turned, RefineSettings(), "live")[0].turns == LIVE_CROP_TURNS == 2
    aligned = dataclasses.replace(FLY, top_down={"crop_px": 256.0, "turns": 4, "align": True})
    assert top_down_reading(aligned, RefineSettings(), "live")[0].turns == 4


def test_the_last_round_reads_each_crop_at_the_spread_and_mirrored():
    how = CropReading(turns=4, rounds=3, align=FLY.orientation, spread=20.0, mirror=FLY.mirror_index)
    assert how.views(True, False) == [(0.0, False), (90.0, False), (180.0, False), (270.0, False)]
    assert how.views(False, False) == [(0.0, False)]
    assert how.views(False, True) == [(-20.0, False), (0.0, False), (20.0, False), (-20.0, True), (0.0, True), (20.0, True)]
    unaligned = CropReading(turns=2, spread=10.0)  # one round: first and last; every turn at the spread
    assert unaligned.views(True, True) == [(-10.0, False), (0.0, False), (10.0, False), (170.0, False), (180.0, False),
                                           (190.0, False)]


def _dotted_fly() -> tuple[np.ndarray, dict[str, tuple[float, float]]]:
    """(1024, 1024, 3) frame of a fly facing up the screen drawn as dots: thorax red, head green, both wings blue
    (the left wing on the fly's left: image left, seen from above); and where each dot is, source px."""
    at = {"thorax": (500.0, 400.0), "head": (500.0, 370.0), "abdomen": (500.0, 430.0),
          "wingL": (480.0, 420.0), "wingR": (520.0, 420.0)}
    rgb = np.zeros((1024, 1024, 3), np.uint8)
    for name, ch in (("thorax", 0), ("head", 1), ("wingL", 2), ("wingR", 2)):
        x, y = at[name]
        rgb[int(y) - 2:int(y) + 3, int(x) - 2:int(x) + 3, ch] = 255
    return rgb, at


def _side_reader(images: np.ndarray) -> list[DecodedPeople]:
    """A stand-in crop model that names the wings by side as a network does: the wing on the fly's left of its
    thorax -> head line is wingL, whichever wing it really is (so a mirrored crop reads them swapped)."""
    k, out = FLY.num_joints, []
    for img in images:
        blob = lambda m: np.argwhere(m)[:, ::-1].astype(np.float64)  # noqa: E731  (N, 2) x, y
        thorax, head = blob(img[..., 0] > 100).mean(0), blob(img[..., 1] > 100).mean(0)
        wings = blob(img[..., 2] > 100)
        axis = head - thorax
        left = axis[0] * (wings[:, 1] - thorax[1]) - axis[1] * (wings[:, 0] - thorax[0]) < 0  # cross < 0: left
        kp = np.tile(thorax, (k, 1))
        kp[HEAD], kp[ABDOMEN] = head, 2 * thorax - head
        kp[FLY.index("wingL")], kp[FLY.index("wingR")] = wings[left].mean(0), wings[~left].mean(0)
        kp = kp.astype(np.float32)[None]
        out.append(DecodedPeople(kp, np.full((1, k), 0.9, np.float32), np.ones(1, np.float32),
                                 np.full((1, k), np.nan), kp.copy()))
    return out


def test_a_mirrored_crop_s_reading_gives_each_left_and_right_joint_back_its_side():
    rgb, at = _dotted_fly()
    window = crop_window(np.array(at["thorax"]), 160.0)
    for mirrored in (False, True):
        a = crop_affine(window, 256, mirrored=mirrored)
        read = map_back(_side_reader(warp_crop(rgb, a, 256)[None])[0], a, FLY.mirror_index if mirrored else None)
        for name in ("wingL", "wingR", "head"):
            np.testing.assert_allclose(read.keypoints[0, FLY.index(name)], at[name], atol=1.0)
    swapped = map_back(_side_reader(warp_crop(rgb, a, 256)[None])[0], a)  # mirrored, sides not given back
    np.testing.assert_allclose(swapped.keypoints[0, FLY.index("wingL")], at["wingR"], atol=1.0)

    k = FLY.num_joints
    pts = np.tile(np.float32(at["thorax"]), (1, k, 1))
    pts[0, HEAD], pts[0, ABDOMEN] = at["head"], at["abdomen"]
    seed = DecodedPeople(pts, np.zeros((1, k), np.float32), np.ones(1, np.float32), np.full((1, k), np.nan), pts)
    seen = []
    counting = lambda images: seen.append(len(images)) or _side_reader(images)  # noqa: E731
    how = CropReading(rounds=2, align=FLY.orientation, spread=20.0, mirror=FLY.mirror_index)
    read = read_crops(seed, rgb, FLY.root, 160.0, counting, how)
    assert seen == [1, 6]
    for name in ("wingL", "wingR", "head", "thorax"):
        np.testing.assert_allclose(read.keypoints[0, FLY.index(name)], at[name], atol=1.5)


def test_spread_and_mirror_are_refused_out_of_range_or_as_the_wrong_type():
    base = {"name": "x", "joints": [{"name": "a", "parent": None}, {"name": "b", "parent": "a"}]}
    for bad in ({"spread": 60}, {"spread": -5}, {"spread": True}, {"mirror": "yes"}):
        with pytest.raises(SkeletonError, match="top_down"):
            spec_from_dict({**base, "top_down": {"crop_px": 192, **bad}})
    assert spec_from_dict({**base, "top_down": {"crop_px": 192, "spread": 15, "mirror": True}}).top_down == {
        "crop_px": 192.0, "spread": 15.0, "mirror": True}
