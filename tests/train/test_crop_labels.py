"""The precision stage's own network: teacher agreement, label rows, head training, the verbs (issue #47)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from posetracker.model.thunder import FLIP, ThunderNet, decode_thunder, to_source
from posetracker.train.crop_head import HeadSettings, label_error, train_crop_heads
from posetracker.train.crop_labels import (
    CropEntry,
    LabelSettings,
    agree,
    crop_rows,
    facing,
    flip_x,
    joint_weights,
)

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "pretrained"


def test_agree_keeps_joints_the_teachers_share():
    s = LabelSettings(tol=0.05, min_agree=3)
    base = np.tile(np.array([[50.0, 50.0]]), (17, 1))
    readings = np.repeat(base[None], 5, axis=0) + np.random.default_rng(0).normal(0, 0.5, (5, 17, 2))
    seen = np.ones((5, 17), bool)
    readings[4, 1] += 30  # BlazePose (the last row) elsewhere: joint 1 dropped
    seen[0, 2] = False  # one Thunder reading misses joint 2: kept, counted as missed
    readings[3, 3] += 30  # one scale elsewhere: kept from the other four, missed
    seen[:3, 4] = False  # two readings left: too few
    label, kept, missed = agree(readings, seen, side=100.0, s=s)
    assert kept.tolist() == [True, False, True, True, False] + [True] * 12
    assert missed.tolist()[:5] == [False, False, True, True, False]
    assert np.allclose(label[3], readings[[0, 1, 2, 4], 3].mean(0))
    assert np.isnan(label[1]).all()


def test_facing_from_the_torso():
    label = np.zeros((17, 2))
    kept = np.ones(17, bool)
    label[[5, 6, 11, 12]] = [[60, 40], [40, 40], [58, 90], [42, 90]]  # left shoulder on the image's right: front
    assert facing(label, kept) == 1
    label[[5, 6, 11, 12]] = label[[6, 5, 12, 11]]
    assert facing(label, kept) == 3
    label[[5, 6, 11, 12]] = [[51, 40], [49, 40], [51, 90], [49, 90]]  # shoulders 2 px apart: side view
    assert facing(label, kept) == 2
    kept[11] = False
    assert facing(label, kept) == 0


def test_weights_favour_back_views_misses_and_small_people():
    s = LabelSettings()
    kept, missed = np.ones(17, bool), np.zeros(17, bool)
    kept[0], missed[1] = False, True
    w = joint_weights(kept, missed, 3, 300.0, s)
    assert w[0] == 0 and w[2] == s.back and w[1] == s.back * s.missed
    assert joint_weights(kept, missed, 1, 50.0, s)[2] == s.small


def test_flipped_rows_mirror_the_labels():
    label = np.random.default_rng(1).uniform(20, 80, (17, 2))
    rec = {"label_px": label, "weights": np.arange(17.0), "centre": np.array([[30, 31], [30, 32]]),
           "window": (10, 20, 100), "facing": 1}
    rows = crop_rows([rec], 256)
    assert rows["labels"].shape == (2, 17, 2)
    assert np.allclose(rows["labels"][0], np.stack([(label[:, 1] - 20) / 100, (label[:, 0] - 10) / 100], 1), atol=1e-6)
    # the flipped row, read back through the mirrored decode's mapping, is the label again
    kp = np.concatenate([rows["labels"][1], np.ones((17, 1))], 1)
    back = to_source(kp, (10, 20, 100), 256, mirrored=True)
    assert np.allclose(back[:, :2], label, atol=1e-4)
    assert rows["weights"][1].tolist() == np.arange(17.0)[FLIP].tolist()
    assert np.allclose(flip_x(flip_x(rows["labels"][0][:, 1], 256), 256), rows["labels"][0][:, 1])


def _entry(net, weight, n=4, shift=2.0, seed=0):
    """Random features on a small grid (the heads are convolutions); labels = the heads' own decode shifted by
    ``shift`` cells down and right (a correction to learn)."""
    g = weight.shape[0]
    feats = torch.randn(n, 24, g, g, generator=torch.Generator().manual_seed(seed)) * 2
    with torch.no_grad():
        heads = {k: h(feats).permute(0, 2, 3, 1).numpy() for k, h in net.heads.items()}
    labels, centre = np.zeros((n, 17, 2), np.float32), np.zeros((n, 2), np.int64)
    for i in range(n):
        kp = decode_thunder(heads["centre"][i], heads["heatmap"][i], heads["regress"][i], heads["offset"][i], weight)
        labels[i] = np.clip(kp[:, :2] + shift / g, 0.1, 0.9)
        c = 1 / (1 + np.exp(-heads["centre"][i][..., 0])) * weight
        centre[i] = divmod(int(np.argmax(c)), g)
    return CropEntry("synthetic", feats.numpy().astype(np.float16), labels, np.ones((n, 17), np.float32), centre,
                     np.full(n, 200.0, np.float32), np.ones(n, np.int64))


def test_head_training_moves_the_readings_to_the_labels_and_nothing_else():
    torch.manual_seed(0)
    net = ThunderNet().eval()
    grid = np.arange(24) - 12
    weight = (1 / (np.hypot(grid[:, None], grid[None, :]) + 1.8)).astype(np.float32)
    entry = _entry(net, weight)
    frozen = {k: v.clone() for k, v in net.state_dict().items() if not k.startswith(("heads.heatmap", "heads.offset",
                                                                                      "heads.regress"))}
    before = label_error(net, weight, [entry])
    history = train_crop_heads(net, weight, [entry], [entry], HeadSettings(epochs=6, lr=3e-3, batch=4), log=lambda m: None)
    after = label_error(net, weight, [entry])
    assert after["px"] < 0.7 * before["px"], (before, after)
    assert len(history) == 7
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in frozen.items())  # backbone and centre head as they were


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "blazepose" / "pose_landmark_heavy.tflite").exists(), reason="needs ../shared")
def test_verbs_label_a_clip_and_write_crop_weights(tmp_path):
    env = {"POSETRACKER_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    clip = str(ROOT / "assets" / "sample_dance.mp4")
    args = [clip, "--every", "40", "--max-frames", "1"]
    run = lambda *a: subprocess.run([sys.executable, "-m", "posetracker", "train", *a], env=env, cwd=tmp_path,
                                    capture_output=True, text=True, timeout=300, check=False)
    out = run("crop-labels", *args, "--out", "summary.json")
    assert out.returncode == 0, out.stderr
    assert '"crops": 1' in (tmp_path / "summary.json").read_text()
    w = tmp_path / "crop.safetensors"
    out = run("crop-head", *args, "--val", *args, "--epochs", "1", "--out", str(w))
    assert out.returncode == 0, out.stderr
    from posetracker.refiners import load_refiner, refiner_path
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("human18")
    new, old = load_refiner(w, spec), load_refiner(refiner_path("crop", "human18"), spec)
    assert w.stat().st_size == refiner_path("crop", "human18").stat().st_size
    ours, shipped = new.net.backbone.state_dict(), old.net.backbone.state_dict()
    assert all(torch.equal(ours[k], shipped[k]) for k in shipped)  # the backbone is Thunder's


def test_crop_weights_override_the_shipped_file(tmp_path):
    from posetracker.model.weights import load_posenet
    from posetracker.refiners import (
        load_chain,
        load_refiner,
        refiner_path,
        save_refiner,
    )
    from posetracker.session import (
        NetworkSettings,
        RefineSettings,
        SessionConfig,
        TrackingSession,
    )
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("human18")
    refiner = load_refiner(refiner_path("crop", "human18"), spec)
    with torch.no_grad():
        refiner.net.heads["heatmap"].out.bias.add_(1.0)
    path = tmp_path / "mine.safetensors"
    save_refiner(refiner, path, {}, half=True)
    want = refiner.net.heads["heatmap"].out.bias
    bias = lambda chain: chain.refiners[0].net.heads["heatmap"].out.bias
    assert torch.allclose(bias(load_chain(["crop"], spec, files={"crop": path})), want, atol=1e-2)  # stored as fp16
    assert not torch.allclose(bias(load_chain(["crop"], spec)), want, atol=0.5)
    config = SessionConfig(network=NetworkSettings(runtime="torch"),
                           refine=RefineSettings(refiners=("crop",), crop_weights=str(path)))
    session = TrackingSession(load_posenet(None), config)
    assert torch.allclose(bias(session.refiners), want, atol=1e-2)
