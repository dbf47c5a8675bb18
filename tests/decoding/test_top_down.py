"""Top-down mode (a skeleton's ``top_down``): crops around each animal, in training and in the session."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from posetracker.decoding import DecodedPeople
from posetracker.decoding.top_down import (
    CropReading, centred_person, crop_affine, crop_window, read_crops, search_unsure, warp_crop)
from posetracker.model.preprocess import INPUT_SIZE
from posetracker.skeletons import SkeletonError, load_skeleton, spec_from_dict
from posetracker.train.detector_samples import AugmentConfig, crop_matrix, instance_centres, warp_sample

FLY = dataclasses.replace(load_skeleton("fly13"), top_down={"crop_px": 160.0})


def test_top_down_is_read_from_the_yaml_and_bad_options_are_refused():
    assert load_skeleton("human18").top_down == {}
    base = {"name": "x", "joints": [{"name": "a", "parent": None}, {"name": "b", "parent": "a"}]}
    assert spec_from_dict({**base, "top_down": {"crop_px": 192}}).top_down == {"crop_px": 192.0}
    assert spec_from_dict({**base, "top_down": {"crop_px": 192, "rounds": 2}}).top_down == {"crop_px": 192.0, "rounds": 2}
    for bad in ({"crop_px": 0}, {"crop": 10}, 5, {"crop_px": 192, "rounds": 4}):
        with pytest.raises(SkeletonError, match="top_down"):
            spec_from_dict({**base, "top_down": bad})


def test_a_crop_is_the_window_of_the_frame_scaled_black_outside():
    rgb = np.zeros((100, 200, 3), np.uint8)
    rgb[40:60, 90:110] = 200  # a 20 px square at (100, 50)
    win = crop_window(np.array([100.0, 50.0]), 64)
    assert win == (68.0, 18.0, 64.0)
    crop = warp_crop(rgb, crop_affine(win, 256), 256)  # 4x: the square is 80 px in the middle
    assert crop.shape == (256, 256, 3) and crop[128, 128, 0] == 200 and crop[128, 80, 0] == 0
    edge = warp_crop(rgb, crop_affine(crop_window(np.array([5.0, 5.0]), 64), 256), 256)
    assert edge[:100, :100].max() == 0  # outside the frame


def test_the_person_nearest_the_crop_centre_is_chosen():
    k = FLY.num_joints
    kp = np.zeros((2, k, 2), np.float32)
    kp[0, FLY.root], kp[1, FLY.root] = (30, 30), (130, 120)
    people = DecodedPeople(kp, np.ones((2, k), np.float32), np.array([0.9, 0.5], np.float32), np.zeros((2, k)), kp)
    assert centred_person(people, FLY.root, 256) == 1
    far = DecodedPeople(kp[:1], np.ones((1, k), np.float32), np.array([0.9], np.float32), np.zeros((1, k)), kp[:1])
    assert centred_person(far, FLY.root, 256) == -1


def test_training_crops_move_points_with_the_pixels():
    rgb = np.zeros((1024, 1024, 3), np.uint8)
    pts = np.full((1, FLY.num_joints, 2), np.nan)
    pts[0, FLY.root] = (500, 400)
    pts[0, 0] = (540, 380)  # head
    for x, y in pts[0, [FLY.root, 0]].astype(int):
        rgb[y - 2 : y + 3, x - 2 : x + 3] = 255
    centre = instance_centres(pts, FLY.root)[0]
    np.testing.assert_allclose(centre, (500, 400))
    rng = np.random.default_rng(0)
    for _ in range(6):
        m, flipped = crop_matrix(centre, 160, rng, AugmentConfig(rotate_deg=180, flip=True, colour=0.0))
        img, p = warp_sample(rgb, pts, m, flipped, FLY, rng, 0.0)
        x, y = np.round(p[0, FLY.root]).astype(int)
        assert img[y, x].max() > 100 and abs(x - 128) < 0.06 * 256 * 1.25 and abs(y - 128) < 0.06 * 256 * 1.25
    m, _ = crop_matrix(centre, 160, None, AugmentConfig())  # held out: exactly the inference crop
    np.testing.assert_allclose(m, [[1.6, 0, 128 - 800], [0, 1.6, 128 - 640]])


def test_the_session_reads_every_animal_again_from_its_crop(monkeypatch, shipped_net):
    """Two bright blobs in a large frame; the (untrained) network's reading is replaced by the crop's, one batch."""
    import torch

    from posetracker.session import NetworkSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.train.detector import new_detector

    net = new_detector(FLY, shipped_net).eval()
    session = TrackingSession(net, SessionConfig(mode="offline", network=NetworkSettings(runtime="torch"),
                                                 refine=RefineSettings(refiners=())))
    kp = np.full((2, FLY.num_joints, 2), np.nan, np.float32)
    kp[0, :] = (300, 300)
    kp[1, :] = (700, 650)
    people = DecodedPeople(kp, np.full((2, FLY.num_joints), 0.5, np.float32), np.array([0.9, 0.8], np.float32),
                           np.zeros((2, FLY.num_joints)), kp.copy())
    seen = []
    real = type(session.net).__call__
    monkeypatch.setattr(type(session.net), "__call__", lambda self, x: seen.append(tuple(x.shape)) or real(self, x))
    chosen = {}

    def fake_centred(found, root, size, radius=0.25):
        chosen.setdefault("n", 0)
        chosen["n"] += 1
        return -1 if chosen["n"] == 2 else (0 if found.num_people else -1)

    monkeypatch.setattr("posetracker.decoding.top_down.centred_person", fake_centred)
    with torch.no_grad():
        net.heads.centre.out.bias.fill_(5.0)  # a centre everywhere: each crop finds someone
    out = read_crops(people, np.zeros((1024, 1024, 3), np.uint8), FLY.root, FLY.top_down["crop_px"],
                     session._still_people)
    assert seen == [(2, 1, 3, INPUT_SIZE, INPUT_SIZE)]  # both crops in one batch
    assert not np.array_equal(out.keypoints[0], kp[0])  # replaced by the first crop's reading ...
    assert np.all(np.abs(out.keypoints[0] - 300) <= 84)  # ... which lies in its 160 px crop (+ offsets)
    np.testing.assert_array_equal(out.keypoints[1], kp[1])  # the second crop found nobody centred: kept
    np.testing.assert_array_equal(out.scores, people.scores)


def test_identity_switches_count_a_labelled_track_moving_to_another_id():
    from posetracker.evaluation.datasets import Instance, LabelledItem
    from posetracker.evaluation.held_out import identity_switches
    from posetracker.types import PoseFrame

    k = 3
    a, b = np.array([[10.0, 10, 2]] * k), np.array([[100.0, 100, 2]] * k)
    items = [LabelledItem(None, None, t, 200, 200, (Instance(a, track="male"), Instance(b, track="female")))
             for t in range(4)]
    ids = [(0, 1), (0, 1), (1, 0), (1, 0)]  # the two swap at frame 2: two switches, then stable
    frames = {t: PoseFrame(index=t, timestamp=0.0, keypoints=np.stack([np.c_[a[:, :2], np.zeros(k)],
                                                                         np.c_[b[:, :2], np.zeros(k)]]).astype(np.float32),
                           confidence=np.ones((2, k), np.float32), scores=np.ones(2, np.float32),
                           track_ids=np.array(ids[t]), image_size=(200, 200)) for t in range(4)}
    r = identity_switches(frames, items, np.arange(k))
    assert r["switches"] == 2 and r["switch_frames"] == [2, 2] and r["matched"] == r["track_frames"] == 8


def test_a_second_round_reads_each_animal_from_a_crop_centred_on_its_first_reading():
    """A reader that overshoots what lies off the crop's centre (by half the offset, as a crop model trained on
    centred animals does): from a whole-frame centre 24 px off, one round leaves the animal 12 px off, a second
    round (its crop centred on the first reading) 6 px."""
    k = FLY.num_joints
    rgb = np.zeros((400, 400, 3), np.uint8)
    rgb[196:205, 246:255] = 255  # the animal: a bright square at (250, 200)

    def overshooting(crops):
        out = []
        for crop in crops:  # (size, size, 3): the blob's centre, pushed away from the crop's centre by half
            ys, xs = np.nonzero(crop[..., 0] > 128)
            at = np.array([xs.mean(), ys.mean()], np.float32)
            at = at + 0.5 * (at - crop.shape[0] / 2.0)
            kp = np.repeat(at[None, None], k, axis=1)
            out.append(DecodedPeople(kp, np.ones((1, k), np.float32), np.ones(1, np.float32), np.zeros((1, k)), kp))
        return out

    start = np.full((1, k, 2), (274.0, 200.0), np.float32)
    people = DecodedPeople(start, np.ones((1, k), np.float32), np.ones(1, np.float32), np.zeros((1, k)), start.copy())
    errors = [float(np.abs(read_crops(people, rgb, FLY.root, 160.0, overshooting, CropReading(rounds=r)).keypoints[0, FLY.root, 0]
                           - 250.0)) for r in (1, 2)]
    assert errors[0] == pytest.approx(12.0, abs=1.0) and errors[1] == pytest.approx(6.0, abs=1.0)


def test_a_known_count_keeps_the_readings_surest_of_their_joints():
    """Three centres for two animals (a stronger one between two touching flies): the crops read each; the two
    readings surest of their joints stay, in their order, whatever the centre peaks scored."""
    from posetracker.decoding.top_down import most_confident

    k = FLY.num_joints
    kp = np.stack([np.full((k, 2), x, np.float32) for x in (200.0, 500.0, 800.0)])  # apart: no repeats
    conf = np.stack([np.full(k, c, np.float32) for c in (0.9, 0.3, 0.8)])
    conf[2, :3] = np.nan  # a joint not read counts 0: mean 0.8 * (k - 3) / k, still above 0.3
    people = DecodedPeople(kp, conf, np.array([0.5, 0.9, 0.4], np.float32), np.zeros((3, k)), kp.copy())
    np.testing.assert_array_equal(most_confident(people, 2), [0, 2])
    same = lambda crops: [DecodedPeople.empty(k) for _ in crops]  # noqa: E731 (no crop finds anyone centred)
    out = read_crops(people, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 160.0, same, keep=2)
    np.testing.assert_array_equal(out.keypoints[:, 0, 0], [200.0, 800.0])
    assert read_crops(people, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 160.0, same).num_people == 3


def test_a_top_down_session_with_a_known_count_looks_for_twice_as_many_centres(shipped_net):
    from posetracker.session import NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.train.detector import new_detector

    net = new_detector(FLY, shipped_net).eval()
    two = TrackingSession(net, SessionConfig(mode="offline", network=NetworkSettings(runtime="torch"),
                                             people=PeopleSettings(max_people=2, known_count=2),
                                             refine=RefineSettings(refiners=())))
    assert two.decoder.max_people == 4
    plain = TrackingSession(net, SessionConfig(mode="offline", network=NetworkSettings(runtime="torch"),
                                               people=PeopleSettings(max_people=2),
                                               refine=RefineSettings(refiners=())))
    assert plain.decoder.max_people == 2


def test_an_animal_not_found_is_searched_where_the_last_frame_had_it():
    """A known number of animals, one missing from the whole-frame reading (issue #49): a place holder at its
    last root (confidence 0) is added for the crops to read; none when all are found or none is known."""
    from posetracker.decoding.top_down import with_missing

    k = FLY.num_joints
    one = DecodedPeople(np.full((1, k, 2), 300, np.float32), np.full((1, k), 0.5, np.float32),
                        np.array([0.9], np.float32), np.zeros((1, k)), np.full((1, k, 2), 300, np.float32))
    last = np.array([[302.0, 298.0], [700.0, 650.0]])
    out = with_missing(one, last, 2, FLY.root, FLY.top_down["crop_px"])
    assert out.num_people == 2 and out.confidence[1].max() == 0
    np.testing.assert_array_equal(out.keypoints[1, FLY.root], [700, 650])
    assert with_missing(one, last, 1, FLY.root, 160).num_people == 1  # the count is met
    assert with_missing(one, None, 2, FLY.root, 160).num_people == 1  # nothing known yet
    assert with_missing(one, last[:1], 2, FLY.root, 160).num_people == 1  # the one known is the one found


def test_training_crops_move_the_centre_by_up_to_crop_shift():
    """The crop model learns to read an animal whose centre the whole-frame pass placed off by crop_shift."""
    def offsets(shift):
        rng = np.random.default_rng(1)
        aug = AugmentConfig(rotate_deg=0.0, scale=(1.0, 1.0), flip=False, colour=0.0, crop_shift=shift)
        out = []
        for _ in range(400):
            m, _ = crop_matrix(np.array([500.0, 400.0]), 160, rng, aug)
            out.append(m @ [500.0, 400.0, 1.0] - 128)  # where the labelled centre lands, from the input's middle
        return np.abs(np.array(out)) / 256  # as a fraction of the crop
    default, wide = offsets(0.05), offsets(0.15)
    assert default.max() <= 0.05 + 1e-9 and wide.max() <= 0.15 + 1e-9 and wide.max() > 0.12
    assert AugmentConfig().key() == AugmentConfig(crop_shift=0.05).key() != AugmentConfig(crop_shift=0.15).key()


def _blob_reader(k: int, size: int = 256):
    """A stand-in crop model: reads the bright blob surely (0.9) when it lies within 8 % of the crop's centre, and
    otherwise, as a crop model trained on centred animals does, an animal at the crop's centre unsurely (0.1)."""
    def read(crops):
        out = []
        for c in crops:
            ys, xs = np.nonzero(c[..., 0] > 100)
            at = np.array([xs.mean(), ys.mean()]) if xs.size else np.array([np.nan, np.nan])
            near = xs.size and np.linalg.norm(at - size / 2) < 0.08 * size
            xy, conf = (at, 0.9) if near else (np.full(2, size / 2), 0.1)
            kp = np.tile(xy, (1, k, 1)).astype(np.float32)
            out.append(DecodedPeople(kp, np.full((1, k), conf, np.float32), np.array([conf], np.float32),
                                     np.zeros((1, k)), kp.copy()))
        return out
    return read


def test_an_unsure_reading_is_searched_around_until_a_crop_reads_it_surely():
    k, crop_px = FLY.num_joints, 160.0
    rgb = np.zeros((600, 600, 3), np.uint8)
    rgb[296:305, 296:305] = 255  # the animal's body at (300, 300)
    seed_xy = np.full((1, k, 2), (324.0, 300.0), np.float32)  # the whole-frame pass put its centre on its head
    seed = DecodedPeople(seed_xy, np.full((1, k), 0.3, np.float32), np.array([0.5], np.float32), np.zeros((1, k)),
                         seed_xy.copy())
    read = _blob_reader(k)
    plain = read_crops(seed, rgb, FLY.root, crop_px, read, CropReading(turns=2, rounds=3))
    assert plain.confidence.max() == pytest.approx(0.1)  # round after round at the head, unsure
    found = read_crops(seed, rgb, FLY.root, crop_px, read, CropReading(turns=2, rounds=3, search=0.15))
    assert found.confidence.min() == pytest.approx(0.9)
    np.testing.assert_allclose(found.keypoints[0, FLY.root], (300, 300), atol=1.5)
    # a surer reading that lies on another animal (a quarter crop from its root) is not taken
    other = DecodedPeople(np.full((1, k, 2), (300.0, 310.0), np.float32), np.full((1, k), 0.9, np.float32),
                          np.array([0.9], np.float32), np.zeros((1, k)), np.full((1, k, 2), (300.0, 310.0), np.float32))
    both = DecodedPeople.concat([plain, other])
    kept = search_unsure(both, rgb, FLY.root, crop_px, read, 256, CropReading(turns=2).views(True, False), 0.15)
    np.testing.assert_allclose(kept.keypoints[0], plain.keypoints[0])
