"""Turned crops (a skeleton's ``top_down: {turns: 4}``): each animal's crop is read at quarter turns and the
readings that agree are joined, so a crop model unsure of head and tail at some turns is outvoted."""

from __future__ import annotations

import numpy as np
import pytest

from posetracker.decoding import DecodedPeople
from posetracker.decoding.top_down import CropReading, agreeing_reads, crop_affine, map_back, read_crops, warp_crop
from posetracker.skeletons import SkeletonError, spec_from_dict

SIZE = 64


def _people(kp: np.ndarray, conf: np.ndarray | None = None) -> DecodedPeople:
    """kp: (P, K, 2) -> DecodedPeople with the given (or 0.8) confidences."""
    p, k = kp.shape[:2]
    conf = np.full((p, k), 0.8, np.float32) if conf is None else conf.astype(np.float32)
    return DecodedPeople(kp.astype(np.float32), conf, np.full(p, 0.9, np.float32), np.zeros((p, k)),
                         kp.astype(np.float32))


@pytest.mark.parametrize("turn", [0, 1, 2, 3])
def test_a_turned_crop_maps_back_to_the_source_pixel(turn):
    rgb = np.zeros((300, 400, 3), np.uint8)
    rgb[120, 230] = 255  # one bright pixel
    window = (180.0, 90.0, 128.0)  # a 128 px square, read at 64 px
    crop = warp_crop(rgb, crop_affine(window, SIZE, 90.0 * turn), SIZE)
    y, x = np.unravel_index(np.argmax(crop[..., 0]), crop.shape[:2])
    back = map_back(_people(np.array([[[x, y]]], np.float64)), crop_affine(window, SIZE, 90.0 * turn))
    np.testing.assert_allclose(back.keypoints[0, 0], (230, 120), atol=1.5)  # one crop px = 2 source px
    # the affine itself is exact: the source pixel lands where the crop shows it
    a = crop_affine(window, SIZE, 90.0 * turn)
    np.testing.assert_allclose(a @ [230, 120, 1], (x, y), atol=1.0)


def test_the_reading_most_others_agree_with_wins_and_its_group_gives_each_joints_median():
    animal = np.array([[100.0, 100], [100, 60], [100, 140]])  # centre, head, tail
    reversed_ = animal[[0, 2, 1]]
    reads = _people(np.stack([animal + 1, reversed_, animal - 1, animal + (3, 0)]))
    one = agreeing_reads(reads, agree_px=10)
    assert one.num_people == 1
    np.testing.assert_allclose(one.keypoints[0], animal + (1, 0), atol=1e-4)  # median of -1, +1, +3 in x; 0 in y
    # one turn with a stray leg tip does not move the joint: it is read where the other turns put it
    stray = reads.keypoints.copy()
    stray[2, 2] = (100, 120)  # 20 px off: still agreeing by the median over joints
    np.testing.assert_allclose(agreeing_reads(_people(stray), 10).keypoints[0, 2], (102, 140.5), atol=1e-4)
    # a single sure reading does not outvote three agreeing ones however sure it is ...
    conf = np.array([[0.3] * 3, [1.0] * 3, [0.3] * 3, [0.3] * 3])
    np.testing.assert_allclose(agreeing_reads(_people(reads.keypoints, conf), 10).keypoints[0, 1], (101, 60), atol=1e-4)
    # ... a tie goes to the surer side ...
    two = _people(np.stack([animal, reversed_]), np.array([[0.4] * 3, [0.9] * 3]))
    np.testing.assert_allclose(agreeing_reads(two, 10).keypoints[0], reversed_)
    # ... and a joint only some turns see is the median of those
    conf = np.full((4, 3), 0.8)
    conf[[0, 2], 1] = 0.0
    np.testing.assert_allclose(agreeing_reads(_people(reads.keypoints, conf), 10).keypoints[0, 1], (103, 60), atol=1e-4)


def test_turns_split_between_two_places_give_one_of_them_not_a_point_between():
    """Eight turns of a fly: four put a leg tip on one leg, four on the next leg 42 px away. The coordinate-wise
    median of all eight, (85, 145), lies between the two legs, in the background; the joint is read on the leg
    whose turns are surer."""
    body = np.array([[100.0, 100], [100, 60], [100, 140]])  # thorax, head, leg tip
    reads = np.repeat(body[None], 8, axis=0)
    reads[:4, 2], reads[4:, 2] = (70, 130), (100, 160)
    reads[:, 2] += np.random.default_rng(0).normal(0, 1, (8, 2))
    conf = np.full((8, 3), 0.5)
    conf[:4, 2] = 0.6  # the first leg's turns are surer
    tip = agreeing_reads(_people(reads, conf), agree_px=40).keypoints[0, 2]
    assert np.linalg.norm(tip - (70, 130)) < 2.0, tip


def test_read_crops_with_turns_outvotes_a_head_down_misreading():
    """A fake crop model that reads an animal end to end whenever its head points to the crop's lower left
    (one of four quarter turns, two of eight): read unturned it errs, read at four or eight turns it does not."""
    spec_root = 0
    rgb = np.zeros((400, 400, 3), np.uint8)
    centre, head, tail = np.array([200.0, 200]), np.array([170.0, 230]), np.array([230.0, 170])  # head lower left
    rgb[int(head[1]) - 2:int(head[1]) + 3, int(head[0]) - 2:int(head[0]) + 3, 0] = 255
    rgb[int(tail[1]) - 2:int(tail[1]) + 3, int(tail[0]) - 2:int(tail[0]) + 3, 1] = 255

    def fake_read(crops: np.ndarray) -> list[DecodedPeople]:
        out = []
        for c in crops:
            h = np.argwhere(c[..., 0] > 100).mean(0)[::-1]
            t = np.argwhere(c[..., 1] > 100).mean(0)[::-1]
            mid = np.full(2, (SIZE - 1) / 2.0)
            if h[0] < mid[0] and h[1] > mid[1]:  # head to the lower left: read end to end
                h, t = t, h
            out.append(_people(np.stack([mid, h, t])[None]))
        return out

    truth = np.stack([centre, head, tail])
    people = _people(truth[None] + 3.0)
    plain = read_crops(people, rgb, spec_root, 128.0, fake_read, size=SIZE)
    assert np.linalg.norm(plain.keypoints[0, 1] - tail) < 4  # the head read where the tail is
    for turns in (4, 8):
        turned = read_crops(people, rgb, spec_root, 128.0, fake_read, CropReading(turns=turns), size=SIZE)
        np.testing.assert_allclose(turned.keypoints[0], truth, atol=2.5)


def test_turns_is_a_top_down_option():
    base = {"name": "x", "joints": [{"name": "a", "parent": None}, {"name": "b", "parent": "a"}]}
    assert spec_from_dict({**base, "top_down": {"crop_px": 192, "turns": 4}}).top_down == {"crop_px": 192.0, "turns": 4}
    assert spec_from_dict({**base, "top_down": {"crop_px": 192, "turns": 1}}).top_down == {"crop_px": 192.0}
    assert spec_from_dict({**base, "top_down": {"crop_px": 192, "turns": 8}}).top_down["turns"] == 8
    with pytest.raises(SkeletonError, match="turns"):
        spec_from_dict({**base, "top_down": {"crop_px": 192, "turns": 3}})

