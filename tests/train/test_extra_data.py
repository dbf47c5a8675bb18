"""Extra labelled sets in detector training (a config's ``extra_data``): other recordings whose keypoint names
differ and which lack some joints; the joints a set lacks carry no heatmap loss."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from posetracker.skeletons import load_skeleton
from posetracker.train.detector import batch_targets, load_detector_config, new_detector
from posetracker.train.detector_samples import (
    AugmentConfig, LabelledSamples, extra_held_out, extra_samples, join_samples,
)


@pytest.fixture(scope="module")
def mouse():
    return load_skeleton("mouse4")


def _part(n: int, p: int, k: int, labelled: np.ndarray | None = None) -> LabelledSamples:
    taps = {"c2": np.zeros((n, 40, 64, 64)), "c3": np.zeros((n, 48, 32, 32)), "c4": np.zeros((n, 96, 16, 16)),
            "c5": np.zeros((n, 1280, 8, 8))}
    pts = np.full((n, p, k, 2), 100.0, np.float32)
    return LabelledSamples({t: v.astype(np.float16) for t, v in taps.items()}, np.zeros((n, 256, 256, 3), np.uint8),
                           pts, labelled)


def test_a_joint_the_set_lacks_carries_no_heatmap_loss(mouse):
    k = mouse.num_joints
    pts = np.full((2, 1, k, 2), np.nan, np.float32)
    pts[:, 0, :4] = [[100, 100], [110, 90], [90, 90], [100, 150]]
    labelled = np.ones((2, k), bool)
    labelled[1, 1] = False  # the second sample's set has no left ear
    pts[1, 0, 1] = np.nan
    tgt = batch_targets(pts, mouse, 1.0, (64, 64), labelled=labelled)
    w = tgt["heatmaps_weight"][:, 0]  # (B, K, h, w)
    assert float(w[1, 1].sum()) == 0.0  # no loss on the missing joint's map ...
    assert float(w[1, 0].min()) == 1.0 and float(w[0, 1].min()) == 1.0  # ... the others as before
    plain = batch_targets(pts, mouse, 1.0, (64, 64))
    assert float(plain["heatmaps_weight"][1, 0, 1].min()) == 1.0  # without the mask: "no ear here" is learnt


def test_joined_samples_pad_people_and_mark_labelled_joints():
    a = _part(3, 2, 5)
    b = _part(2, 1, 5, np.array([[True, True, False, True, True]] * 2))
    j = join_samples([a, b])
    assert len(j) == 5 and j.points.shape == (5, 2, 5, 2) and np.isnan(j.points[3:, 1]).all()
    assert j.labelled[:3].all() and j.labelled[3:, 2].sum() == 0 and j.taps["c5"].shape[0] == 5
    assert join_samples([a, _part(1, 2, 5)]).labelled is None


def test_extra_set_is_read_by_its_own_names(tmp_path, mouse, monkeypatch, shipped_net):
    """A set that calls the snout 'nose' and has no tail base: every item trains, its joints mapped by name."""
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    names = ["nose", "leftear", "rightear"]
    images = []
    for i in range(4):
        cv2.imwrite(str(tmp_path / f"f{i}.png"), np.full((120, 160, 3), 40 * i, np.uint8))
        images.append({"file": f"f{i}.png", "width": 160, "height": 120,
                       "instances": [{"keypoints": [[80 + i, 40, 2], [70, 50, 2], [90, 50, 2]]}]})
    path = tmp_path / "normalized.json"
    path.write_text(json.dumps({"keypoint_names": names, "images": images}))
    net = new_detector(mouse, shipped_net)
    s = extra_samples(str(path), {"snout": "nose"}, 2, mouse, net, None, 0)
    assert len(s) == 2  # every 2nd of 4 items, one letterboxed copy each
    assert s.labelled.tolist() == [[True, True, True, False, False]] * 2  # no tail base; the centre is virtual
    assert np.isfinite(s.points[:, 0, 0]).all() and np.isnan(s.points[:, 0, 3]).all()
    np.testing.assert_allclose(s.points[1, 0, 0, 0] / s.points[0, 0, 0, 0], 82 / 80, rtol=1e-3)  # item 2, not 1
    with pytest.raises(ValueError, match="nose2"):
        extra_samples(str(path), {"snout": "nose2"}, 1, mouse, net, None, 0)


def test_extra_data_config_is_checked(tmp_path):
    base = "skeleton: mouse4\ndata: x.json\n"
    good = tmp_path / "good.yaml"
    good.write_text(base + "extra_data: [{data: y.json, names: {snout: nose}, every: 2}]\n")
    assert load_detector_config(good).extra_data == [{"data": "y.json", "names": {"snout": "nose"}, "every": 2}]
    for bad in ("[{names: {}}]", "[{data: y.json, every: 0}]", "[{data: y.json, colour: 1}]", "[y.json]",
                "[{data: y.json, held_out: [[5, 5]]}]"):
        p = tmp_path / "bad.yaml"
        p.write_text(base + f"extra_data: {bad}\n")
        with pytest.raises(ValueError, match="extra_data"):
            load_detector_config(p)


def _video_set(tmp_path, n: int) -> str:
    """A labelled 'video' set of n frames (frame_idx 0..n-1), two mice each, the snout called 'nose'."""
    frames = [{"file": "v.mp4", "video": "v.mp4", "frame_idx": i, "width": 160, "height": 120,
               "instances": [{"keypoints": [[80 + i, 40, 2], [70, 50, 2], [90, 50, 2]]}] * (1 if i == 12 else 2)}
              for i in range(n)]
    path = tmp_path / "video.json"
    path.write_text(json.dumps({"keypoint_names": ["nose", "leftear", "rightear"], "images": frames}))
    return str(path)


def test_held_out_segments_never_train_and_are_scored(tmp_path, mouse, monkeypatch):
    """held_out [[10, 15)] with gap 3: frames 7-17 give no sample; held-out-eval scores 10-14 (with a known
    count of 2, not frame 12, labelled with one mouse)."""
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    path = _video_set(tmp_path, 30)
    seen = []
    monkeypatch.setattr("posetracker.train.detector_samples.prepare_samples",
                        lambda p, items, cols, *a, **k: seen.append([it.frame_idx for it in items]) or _part(
                            len(items), 2, mouse.num_joints))
    aug = AugmentConfig(variants=2)
    extra_samples(path, {"snout": "nose"}, 1, mouse, None, aug, 0, held_out=[[10, 15]], gap=3)
    assert seen[-1] == [*range(7), *range(18, 30)]
    items, cols = extra_held_out(path, {"snout": "nose"}, [[10, 15]], mouse)
    assert [it.frame_idx for it in items] == [10, 11, 12, 13, 14] and cols.tolist()[:4] == [0, 1, 2, -1]
    assert [it.frame_idx for it in extra_held_out(path, {"snout": "nose"}, [[10, 15]], mouse, 2)[0]] == \
        [10, 11, 13, 14]


def test_an_extra_set_may_give_more_copies(tmp_path, mouse, monkeypatch):
    """variants: N warps each of a small set's items N times, whatever the config's augmentation says."""
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    path = _video_set(tmp_path, 3)
    got = []
    monkeypatch.setattr("posetracker.train.detector_samples.prepare_samples",
                        lambda p, items, cols, spec, net, aug, *a, **k: got.append(aug.variants) or _part(
                            len(items), 2, mouse.num_joints))
    extra_samples(path, {"snout": "nose"}, 1, mouse, None, AugmentConfig(variants=2), 0, variants=16)
    extra_samples(path, {"snout": "nose"}, 1, mouse, None, AugmentConfig(variants=2), 0)
    assert got == [16, 2]


def test_a_null_name_drops_a_joint_whose_point_is_another(tmp_path, mouse, monkeypatch):
    """names: {joint: null} (the set has a point of that name, but another one of the body): the joint is not
    trained on from that set (unlabelled there) and the set's cached samples are not those with the joint."""
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    path = _video_set(tmp_path, 3)
    got = []
    monkeypatch.setattr("posetracker.train.detector_samples.prepare_samples",
                        lambda p, items, cols, spec, net, aug, seed, tag, *a, **k: got.append((cols.tolist(), tag))
                        or _part(len(items), 2, mouse.num_joints))
    s = extra_samples(path, {"snout": "nose", "leftear": None}, 1, mouse, None, None, 0)
    extra_samples(path, {"snout": "nose"}, 1, mouse, None, None, 0)
    assert got[0][0][:3] == [0, -1, 2] and got[1][0][:3] == [0, 1, 2] and got[0][1] != got[1][1]
    assert s.labelled[:, :3].tolist() == [[True, False, True]] * 3
