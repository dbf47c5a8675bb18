"""Top-down mode split as SLEAP splits it: a centre model (whole frames) and a crop model (centred crops),
selected by ``top_down: {crop_px, crop_weights}``; one reading per animal after the crops."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from posetracker.decoding import DecodedPeople
from posetracker.decoding.top_down import drop_repeats, read_crops
from posetracker.model.preprocess import INPUT_SIZE
from posetracker.skeletons import SkeletonError, load_skeleton, spec_from_dict
from posetracker.train.detector_samples import AugmentConfig, sample_warps, warp_and_extract, warp_sample

FLY = dataclasses.replace(load_skeleton("fly13"), top_down={"crop_px": 256.0, "crop_weights": "crops.safetensors"})
K = FLY.num_joints


def _two_flies() -> np.ndarray:
    """(2, K, 2) source px: two flies of a 1024 px frame, thorax (root), head and abdomen labelled."""
    pts = np.full((2, K, 2), np.nan)
    for i, (cx, cy) in enumerate([(300.0, 450.0), (400.0, 420.0)]):
        pts[i, FLY.root] = (cx, cy)
        pts[i, 0] = (cx + 35, cy - 5)  # head
        pts[i, 2] = (cx - 30, cy + 8)  # abdomen
    return pts


def test_crop_weights_are_read_from_the_yaml_and_bad_ones_refused():
    base = {"name": "x", "joints": [{"name": "a", "parent": None}, {"name": "b", "parent": "a"}]}
    spec = spec_from_dict({**base, "top_down": {"crop_px": 256, "crop_weights": "c.safetensors"}})
    assert spec.top_down == {"crop_px": 256.0, "crop_weights": "c.safetensors"}
    for bad in ({"crop_weights": "c.safetensors"}, {"crop_px": 256, "crop_weights": ""},
                {"crop_px": 256, "crop_weights": 3}, {"crop_px": 256, "centre": "c"}):
        with pytest.raises(SkeletonError, match="top_down"):
            spec_from_dict({**base, "top_down": bad})


def test_sample_kinds_give_whole_frames_or_centred_crops():
    rgb = np.zeros((1024, 1024, 3), np.uint8)
    pts = _two_flies()
    rng = np.random.default_rng(0)
    aug = AugmentConfig(variants=3)
    kinds = {k: sample_warps(rgb, pts, FLY, aug, rng, k) for k in ("auto", "frames", "centred")}
    assert [len(v) for v in kinds.values()] == [3 + 2 * 3, 3, 2 * 3]
    assert all(c.shape == (2, K, 2) for _, _, c, _ in kinds["auto"] + kinds["frames"])
    # centred: each crop carries only the fly it is cut around, whose thorax lands near the crop's centre
    for n, (m, flipped, carried, boxed) in enumerate(kinds["centred"]):
        assert carried.shape == (1, K, 2) and not boxed
        np.testing.assert_array_equal(carried[0], pts[n // 3])
        _, p = warp_sample(rgb, carried, m, flipped, FLY, None, 0.0)
        assert np.abs(p[0, FLY.root] - INPUT_SIZE / 2).max() <= 0.05 * 256 * 1.25 + 1e-6
    held = sample_warps(rgb, pts, FLY, None, rng, "centred")  # no augmentation: exactly the inference crop
    for n, (m, flipped, carried, _) in enumerate(held):
        _, p = warp_sample(rgb, carried, m, flipped, FLY, None, 0.0)
        np.testing.assert_allclose(p[0, FLY.root], (INPUT_SIZE / 2, INPUT_SIZE / 2))
    with pytest.raises(ValueError, match="top-down"):
        sample_warps(rgb, pts, load_skeleton("mouse4"), aug, rng, "centred")
    with pytest.raises(ValueError, match="samples"):
        sample_warps(rgb, pts, FLY, aug, rng, "crops")


def test_centred_samples_hold_one_instance_each(tmp_path, monkeypatch, shipped_net):
    from posetracker.train.detector import new_detector

    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    net = new_detector(FLY, shipped_net)
    rgb = np.zeros((1024, 1024, 3), np.uint8)
    data = warp_and_extract(iter([(rgb, _two_flies())]), 1, 2, "t", FLY, net, AugmentConfig(variants=1), 0,
                            samples="centred")
    assert data.points.shape == (2, 1, K, 2) and data.images.shape == (2, INPUT_SIZE, INPUT_SIZE, 3)
    assert data.taps["c2"].shape[0] == 2
    frames = warp_and_extract(iter([(rgb, _two_flies())]), 1, 2, "t", FLY, net, AugmentConfig(variants=1), 0,
                              samples="frames")
    assert frames.points.shape == (1, 2, K, 2)


def test_config_refuses_an_unknown_sample_kind(tmp_path):
    from posetracker.train.detector import load_detector_config

    path = tmp_path / "c.yaml"
    path.write_text("skeleton: fly13\ndata: x.json\nsamples: centred\n")
    assert load_detector_config(path).samples == "centred"
    path.write_text("skeleton: fly13\ndata: x.json\nsamples: crops\n")
    with pytest.raises(ValueError, match="samples"):
        load_detector_config(path)


def _people(points: np.ndarray, confidence: float | np.ndarray = 0.8) -> DecodedPeople:
    n = len(points)
    conf = np.broadcast_to(np.asarray(confidence, np.float32).reshape(-1, 1), (n, K)).copy()
    return DecodedPeople(points.astype(np.float32), conf, np.full(n, 0.9, np.float32), np.zeros((n, K)),
                         points.astype(np.float32))


def test_one_reading_per_animal():
    rng = np.random.default_rng(1)
    fly = rng.uniform(0, 60, (K, 2)) + 300
    other = fly + (100, -30)  # another fly, close
    again = fly + rng.normal(0, 3, (K, 2))  # the first fly read a second time
    people = _people(np.stack([fly, other, again]), np.array([0.5, 0.8, 0.7]))
    # a crop's reading beats a whole-frame one, whatever the confidences
    np.testing.assert_array_equal(drop_repeats(people, np.array([False, True, True]), 256), [1, 2])
    # both from crops: the surer one stays
    np.testing.assert_array_equal(drop_repeats(people, np.ones(3, bool), 256), [1, 2])
    np.testing.assert_array_equal(drop_repeats(people, np.array([True, True, False]), 256), [0, 1])
    # apart by more than a tenth of the crop (mean over joints): two animals
    far = _people(np.stack([fly, fly + 30]))
    np.testing.assert_array_equal(drop_repeats(far, np.ones(2, bool), 256), [0, 1])
    np.testing.assert_array_equal(drop_repeats(far, np.ones(2, bool), 500), [0])


def test_two_centres_on_one_animal_give_one_reading():
    """The centre finder put two centres on one fly (thorax and abdomen); both crops read that fly."""
    fly = np.full((K, 2), 500.0) + np.arange(K)[:, None]
    fly[FLY.root] = (500, 500)
    centres = np.stack([fly, fly + (-30, 0)])  # the second found at the abdomen
    whole = _people(centres, 0.3)

    def read(crops: np.ndarray) -> list[DecodedPeople]:  # each crop: the fly, in crop-input px (crop = 1x here)
        assert crops.shape == (2, INPUT_SIZE, INPUT_SIZE, 3)
        out = []
        for c in centres:
            x0, y0 = c[FLY.root] - 128
            out.append(_people((fly - (x0, y0))[None], 0.9 if x0 == 372 else 0.6))
        return out

    got = read_crops(whole, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 256.0, read)
    assert got.num_people == 1
    np.testing.assert_allclose(got.keypoints[0], fly, atol=1e-4)
    np.testing.assert_allclose(got.confidence[0], 0.9)


def test_the_session_reads_crops_with_the_crop_model(tmp_path, monkeypatch, shipped_net):
    import torch

    from posetracker.model.network import PoseNet
    from posetracker.model.weights import WeightsError, save_posenet
    from posetracker.session import NetworkSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.train.detector import new_detector

    centre = new_detector(FLY, shipped_net).eval()
    crop = new_detector(FLY, shipped_net).eval()
    with torch.no_grad():
        crop.heads.centre.out.bias.fill_(5.0)  # the crop model finds someone in every crop
    save_posenet(crop, tmp_path / "crops.safetensors", source="test")
    config = SessionConfig(mode="offline", network=NetworkSettings(runtime="torch"),
                           refine=RefineSettings(refiners=()))
    session = TrackingSession(centre, config, tmp_path)
    assert session.crop_model is not None and session.crop_model.net is not centre
    calls = []
    real = PoseNet.__call__
    monkeypatch.setattr(PoseNet, "__call__", lambda self, x: calls.append((self is centre, tuple(x.shape)))
                        or real(self, x))
    kp = np.full((2, K, 2), np.nan, np.float32)
    kp[0, :], kp[1, :] = (300, 300), (700, 650)
    people = DecodedPeople(kp, np.full((2, K), 0.5, np.float32), np.array([0.9, 0.8], np.float32),
                           np.zeros((2, K)), kp.copy())
    read_crops(people, np.zeros((1024, 1024, 3), np.uint8), FLY.root, 256.0, session._crop_people)
    assert calls == [(False, (2, 1, 3, INPUT_SIZE, INPUT_SIZE))]  # the crop model, both crops in one batch
    # a skeleton without crop_weights keeps one network; a missing crop model is an error, not a silent fallback
    plain = dataclasses.replace(FLY, top_down={"crop_px": 256.0})
    assert TrackingSession(new_detector(plain, shipped_net), config, tmp_path).crop_model is None
    with pytest.raises(WeightsError, match="crops.safetensors"):
        TrackingSession(centre, config, tmp_path / "elsewhere")


def _centre_with_crop_model(folder, shipped_net):
    """A fresh fly13 centre model, and a crop model beside it in ``folder`` (crops.safetensors) whose centre head
    finds a fly in any crop; the new heads' weights seeded, whatever ran before."""
    import torch

    from posetracker.model.weights import save_posenet
    from posetracker.train.detector import new_detector

    torch.manual_seed(0)
    centre = new_detector(FLY, shipped_net).eval()
    crop = new_detector(FLY, shipped_net).eval()
    with torch.no_grad():
        crop.heads.centre.out.bias.fill_(5.0)
    save_posenet(crop, folder / "crops.safetensors", source="test")
    return centre


def test_the_crop_model_runs_in_onnx_runtime_and_reads_as_torch(tmp_path, shipped_net):
    """runtime "auto": the crops' batch goes through ONNX Runtime (the split mode's cost was the crop model in
    torch, studies/fly13.md); its readings equal torch's within a twentieth of a pixel."""
    pytest.importorskip("onnxruntime")
    from posetracker.model.runtime import OnnxBackbone
    from posetracker.session import NetworkSettings, RefineSettings, SessionConfig, TrackingSession

    centre = _centre_with_crop_model(tmp_path, shipped_net)
    fast = TrackingSession(centre, SessionConfig(mode="offline", network=NetworkSettings(runtime="auto"),
                                                 refine=RefineSettings(refiners=())), tmp_path)
    slow = TrackingSession(centre, SessionConfig(mode="offline", network=NetworkSettings(runtime="torch"),
                                                 refine=RefineSettings(refiners=())), tmp_path)
    assert fast.crop_model.runtime == "onnxruntime" and isinstance(fast.crop_model.net.backbone, OnnxBackbone)
    assert slow.crop_model.runtime == "torch"
    crops = np.random.default_rng(0).integers(0, 255, (2, INPUT_SIZE, INPUT_SIZE, 3), dtype=np.uint8)
    for a, b in zip(fast.crop_model(crops), slow.crop_model(crops)):
        assert a.num_people == b.num_people > 0
        np.testing.assert_allclose(a.keypoints, b.keypoints, atol=0.05)


def test_a_frame_s_crops_are_one_runtime_call_and_read_as_the_separate_calls(tmp_path, shipped_net):
    """All crops x turns of a frame go through ONNX Runtime as one batch in one call (``model.still_graph``: the
    backbone and the heatmap heads, the other heads only at the cells the decoder reads); each crop reads as
    through the separate backbone and dense heads calls, crop by crop, within a twentieth of a pixel (float32
    rounding of this random model's heads; the shipped fly13 pair's live poses moved 6e-5 px, studies/fly13.md)
    (issue #49)."""
    pytest.importorskip("onnxruntime")
    from posetracker.session import NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession

    centre = _centre_with_crop_model(tmp_path, shipped_net)
    session = TrackingSession(centre, SessionConfig(mode="live", network=NetworkSettings(runtime="auto"),
                                                    people=PeopleSettings(max_people=2),
                                                    refine=RefineSettings(refiners=())), tmp_path)
    model = session.crop_model
    assert model.still is not None
    runs = []
    real = model.still.session.run
    model.still.session = type("Counted", (), {"run": lambda self, *a: runs.append(a[1]["images"].shape) or real(*a)})()
    crops = np.random.default_rng(1).integers(0, 255, (4, INPUT_SIZE, INPUT_SIZE, 3), dtype=np.uint8)
    batched = model(crops)
    assert runs == [(4, 3, INPUT_SIZE, INPUT_SIZE)]  # 2 animals x 2 turns: one call
    model.still = None  # the separate calls (backbone, then every head dense), one crop at a time
    for i, got in enumerate(batched):
        (one,) = model(crops[i : i + 1])
        assert got.num_people == one.num_people > 0
        a, b = np.argsort(got.keypoints[:, FLY.root, 0]), np.argsort(one.keypoints[:, FLY.root, 0])  # near-equal
        np.testing.assert_allclose(got.keypoints[a], one.keypoints[b], atol=0.05)  # scores may swap the order
        np.testing.assert_allclose(got.confidence[a], one.confidence[b], atol=1e-4)


def test_resume_goes_on_from_a_trained_detector_with_the_same_body(shipped_net):
    import torch

    from posetracker.train.detector import new_detector
    from posetracker.train.detector_run import TrainingError, resume_detector

    human = shipped_net
    fresh, done = new_detector(FLY, human), new_detector(FLY, human)
    with torch.no_grad():
        done.heads.keypoints.out.bias.fill_(1.5)
        done.backbone.fpn.state_dict()[next(iter(done.backbone.fpn.state_dict()))].add_(0.25)
    got = resume_detector(fresh, done, "done")
    for k, v in done.state_dict().items():
        torch.testing.assert_close(got.state_dict()[k], v)
    with torch.no_grad():
        next(done.backbone.body.parameters()).add_(1.0)
    with pytest.raises(TrainingError, match="body"):
        resume_detector(new_detector(FLY, human), done, "done")


def test_train_detector_cli_overrides_batch_and_resume(monkeypatch):
    import argparse

    from posetracker.cli import train_detector as cli

    seen = {}
    monkeypatch.setattr(cli, "_setup", lambda args: (__import__("posetracker.train.detector", fromlist=["x"])
                                                     .DetectorConfig(skeleton="fly13", data="x.json"), FLY, [], [], None))

    def fake_train(cfg, *a, **k):
        seen["cfg"] = cfg
        raise SystemExit(0)

    monkeypatch.setattr("posetracker.train.detector_run.train_detector", fake_train)
    parser = argparse.ArgumentParser()
    cli.add_detector_parsers(parser.add_subparsers())
    args = parser.parse_args(["detector", "--config", "c.yaml", "--batch", "8", "--resume", "a.safetensors"])
    with pytest.raises(SystemExit):
        args.func(args)
    assert (seen["cfg"].batch, seen["cfg"].resume) == (8, "a.safetensors")
    args = parser.parse_args(["detector", "--config", "c.yaml"])
    with pytest.raises(SystemExit):
        args.func(args)
    assert (seen["cfg"].batch, seen["cfg"].resume) == (16, "")


def test_a_config_can_make_its_skeleton_top_down(tmp_path):
    from posetracker.train.detector import config_spec, load_detector_config

    path = tmp_path / "c.yaml"
    path.write_text("skeleton: fly13\ndata: x.json\nsamples: centred\n"
                    "top_down: {crop_px: 256, crop_weights: posenet-fly13-crops.safetensors}\n")
    spec = config_spec(load_detector_config(path))
    assert spec.name == "fly13" and spec.top_down == {"crop_px": 256.0, "crop_weights": "posenet-fly13-crops.safetensors"}
    path.write_text("skeleton: fly13\ndata: x.json\n")  # none in the config: the skeleton's own (the shipped split)
    assert config_spec(load_detector_config(path)).top_down == load_skeleton("fly13").top_down == {
        "crop_px": 256.0, "crop_weights": "posenet-fly13-crops.safetensors", "turns": 4, "rounds": 3, "align": True,
        "spread": 20.0, "mirror": True}
    path.write_text("skeleton: fly13\ndata: x.json\ntop_down: {crop_weights: a}\n")
    with pytest.raises(SkeletonError, match="top_down"):
        config_spec(load_detector_config(path))


# A fly of SLEAP's two-fly clip, source px relative to its thorax, head along +x: the median labelled shape
# (head, thorax, abdomen, wings, leg tips fore / mid / hind, eyes; fly13's joint order).
FLY_SHAPE = np.array([[36, 1], [0, 0], [-33, 1], [-51, -5], [-51, 1], [46, -9], [45, 12], [24, -34], [19, 34],
                      [-28, -28], [-34, 26], [28, -9], [27, 11]], float)


def test_two_readings_of_one_fly_are_one_animal_and_two_flies_touching_are_two():
    """A second reading of one fly, turned end to end or slid along its body by more than a tenth of the crop
    (its joints, and its centre, a mean > 25.6 px from the first's) is a repeat when the root is checked: its
    points, as a set, lie on the first's. Touching flies, side by side or nose to tail, are not."""
    rng = np.random.default_rng(2)
    root = FLY.root
    fly = FLY_SHAPE + 300 + rng.normal(0, 1, (K, 2))
    turned = 2 * fly[root] - fly + rng.normal(0, 2, (K, 2))  # the same fly read head to tail
    slid = fly + (30, 4)  # the same fly read again 30 px further on (where two flies touch)
    beside = fly + (0, 60)  # another fly touching it, side by side
    ahead = fly + (85, 0)  # another fly, its abdomen on this one's head
    people = _people(np.stack([fly, turned, slid, beside, ahead]), np.array([0.8, 0.5, 0.6, 0.7, 0.7]))
    np.testing.assert_array_equal(drop_repeats(people, np.ones(5, bool), 256), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(drop_repeats(people, np.ones(5, bool), 256, root=root), [0, 3, 4])
