"""Training: losses against encode_targets, a training step, causal windows, checkpoint resume."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posetracker.model.network import CausalStream, PoseNet
from posetracker.skeletons import load_skeleton
from posetracker.train.clip_labels import ClipLabels
from posetracker.train.config import DistillConfig, StageConfig
from posetracker.train.dataset import ClipEntry, WindowDataset, run_temporal
from posetracker.train.features import ClipFeatures
from posetracker.train.losses import distill_loss

SPEC = load_skeleton("human18")
K, E = SPEC.num_joints, SPEC.num_edges


@pytest.fixture(autouse=True)
def _setup(tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    torch.manual_seed(0)
    torch.set_num_threads(1)


def _entry(t_len=6, h=16, seed=0) -> ClipEntry:
    """A tiny clip: random (T, 24, h, h) features, one walking person labelled in source px."""
    rng = np.random.default_rng(seed)
    base = np.array([[30, 20], [32, 18], [28, 18], [34, 19], [26, 19], [36, 28], [24, 28], [38, 36], [22, 36],
                     [39, 44], [21, 44], [34, 44], [26, 44], [35, 52], [25, 52], [35, 60], [25, 60], [np.nan, np.nan]])
    xy = np.stack([base + [i, 0] for i in range(t_len)])[:, None].astype(np.float32)  # (T, 1, K, 2)
    depth = np.tile(np.linspace(2.8, 3.2, K), (t_len, 1, 1)).astype(np.float32)
    labels = ClipLabels(xy, xy.copy(), np.isfinite(xy).all(-1), np.ones((t_len, 1, K), np.float32), depth,
                        np.full((t_len, 1, K, 3), np.nan, np.float32), np.arange(t_len) / 30.0, np.arange(t_len), (64, 64))
    feats = ClipFeatures(rng.normal(0, 1, (t_len, 24, h, h)).astype(np.float16), np.ones(t_len), np.arange(t_len),
                         np.arange(t_len) / 30.0, (64, 64), "k")
    return ClipEntry("tiny", feats, labels)


def _batch(entry, window=4) -> dict[str, torch.Tensor]:
    ds = WindowDataset([entry], SPEC, window=window, hop=2)
    return {k: torch.stack([ds[i][k] for i in range(len(ds))]) for k in ds[0]}


def test_loss_is_zero_for_the_perfect_prediction_and_positive_otherwise():
    batch = _batch(_entry())
    hm = batch["heatmaps"].clamp(1e-6, 1 - 1e-6)
    perfect = {"heatmap_logits": torch.log(hm / (1 - hm)), "offsets": batch["offsets"], "vectors": batch["vectors"],
               "depth": batch["depth"]}
    total, parts = distill_loss(perfect, batch)
    assert float(total) < 1e-6 and set(parts) == {"heatmaps", "offsets", "vectors", "depth", "temporal"}
    assert batch["depth_weight"].sum() > 0 and batch["vectors_weight"].sum() > 0
    for key in perfect:
        worse = dict(perfect)
        worse[key] = perfect[key] + 0.5 * torch.randn_like(perfect[key])
        _, p = distill_loss(worse, batch)
        name = "heatmaps" if key == "heatmap_logits" else key
        assert p[name] > 1e-3, key
    jitter = dict(perfect)
    jitter["depth"] = perfect["depth"] + torch.tensor([0.0, 0.3, 0.0, 0.3]).view(1, 4, 1, 1, 1)
    assert distill_loss(jitter, batch)[1]["temporal"] > 0


def test_causal_training_windows_match_the_live_stream():
    net = PoseNet(SPEC).eval()
    for p in net.temporal.parameters():  # non-zero memory so the recurrences matter
        torch.nn.init.uniform_(p, 0.1, 0.9)
    feats = torch.randn(1, 5, 24, 16, 16)
    with torch.no_grad():
        ours = run_temporal(net.temporal, feats, lookahead=1)
        stream = CausalStream(net, lookahead=1)
        stream.net = type("Stub", (), {"features": lambda self, f: f, "temporal": net.temporal,
                                       "decode_heads": lambda self, t: t})()
        live = [o for o in (stream.push(feats[:, i]) for i in range(5)) if o is not None] + stream.flush()
    assert torch.allclose(ours, torch.cat(live, 1), atol=1e-5)


def _cfg(**stage) -> DistillConfig:
    sc = StageConfig(epochs=1, window=4, hop=2, batch=2, lr=3e-3, warmup_steps=1,
                     val_windows=2, **stage)
    return DistillConfig(run="test", stages={"depth": StageConfig(epochs=1, window=1, hop=1, batch=4, lr=1e-2,
                                                                     warmup_steps=1), "temporal": sc},
                         checkpoint_every=1)


def test_one_training_step_reduces_the_loss():
    from posetracker.train.loop import Trainer, forward_stage, stage_parameters

    net = PoseNet(SPEC)
    entry = _entry()
    tr = Trainer(net, _cfg(), [entry], [entry], progress=False)
    sc = tr.cfg.stages["temporal"]
    batch = _batch(entry)
    tr.optimizer = torch.optim.Adam(stage_parameters(net, "temporal", sc))
    tr._total_steps = 10

    def loss() -> float:
        with torch.no_grad():
            return float(distill_loss(forward_stage(net, "temporal", batch["feats"], None), batch)[0])

    before = loss()
    for _ in range(3):
        tr.train_step("temporal", StageConfig(**{**sc.__dict__, "p_bidirectional": 1.0}), batch)
    assert loss() < before
    assert not any(p.requires_grad for m in (net.heads, net.backbone) for p in m.parameters())  # only the GRUs train


def test_checkpoint_resume_restores_step_and_optimizer():
    from posetracker.train.loop import Trainer, stage_parameters

    entry = _entry(t_len=8)
    a = Trainer(PoseNet(SPEC), _cfg(), [entry], [entry], progress=False)
    a.run(("depth", "temporal"))
    assert a.state.done == ["depth", "temporal"] and a.checkpoint_path.exists()
    from safetensors import safe_open

    with safe_open(str(a.checkpoint_path), "pt") as f:  # tensors + JSON: loading never unpickles
        assert "checkpoint" in f.metadata() and "torch_rng" in f.keys()
    b = Trainer(PoseNet(SPEC), _cfg(), [entry], [entry], progress=False)
    assert b.load_checkpoint()
    assert b.state.step == a.state.step > 0 and b.state.done == a.state.done
    for (ka, va), (kb, vb) in zip(a.net.state_dict().items(), b.net.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)
    opt = torch.optim.AdamW(stage_parameters(b.net, "temporal", b.cfg.stages["temporal"]))
    opt.load_state_dict(b._pending_optimizer)
    saved = a.optimizer.state_dict()["state"]
    assert set(opt.state_dict()["state"]) == set(saved)
    k0 = next(iter(saved))
    assert torch.equal(opt.state_dict()["state"][k0]["exp_avg"], saved[k0]["exp_avg"])
    log = (a.dir / "losses.csv").read_text().splitlines()
    assert log[0].startswith("time,stage") and any(",val," in line for line in log)


def test_crops_keep_the_person_and_the_pooling_grid():
    entry = _entry(h=16)
    full = WindowDataset([entry], SPEC, window=4, hop=2)[0]
    ds = WindowDataset([entry], SPEC, window=4, hop=2, crop=8, jitter=False)
    s = ds[0]
    assert s["feats"].shape == (4, 24, 8, 8) and s["heatmaps"].shape == (4, K, 8, 8)
    assert float(s["heatmaps"].sum()) > 0.5 * float(full["heatmaps"].sum())  # the person is inside
    hits = [(y, x) for y in range(0, 9, 2) for x in range(0, 9, 2)
            if torch.equal(full["feats"][..., y:y + 8, x:x + 8], s["feats"])]
    assert hits  # an even-aligned window of the full maps


def test_targets_follow_the_pretrained_cell_convention():
    """MoveNet's heads peak in cell floor(u) with offset u - floor(u); the targets must too."""
    from posetracker.train.dataset import EncodeOptions, encode_frame

    entry = _entry(t_len=1, h=16)
    entry.labels.xy[0, 0, 0] = (30.8, 21.2)  # off the cell grid
    nose = entry.labels.xy[0, 0, 0].astype(np.float64) / 4.0  # cells (scale 1, stride 4)
    for origin, peak in (("corner", np.floor(nose)), ("centre", np.round(nose))):
        out = encode_frame(entry.labels, 0, 1.0, SPEC, (16, 16), EncodeOptions(cell_origin=origin))
        iy, ix = np.unravel_index(out["heatmaps"][0].argmax(), (16, 16))
        assert (ix, iy) == tuple(peak.astype(int)), origin
        decoded = np.array([ix + out["offsets"][0, iy, ix], iy + out["offsets"][1, iy, ix]])
        assert decoded == pytest.approx(nose, abs=1e-5)  # both decode to the label


def test_unsure_joints_are_left_out_of_the_heatmap_loss():
    from posetracker.train.dataset import EncodeOptions, encode_frame

    entry = _entry(t_len=1, h=16)
    entry.labels.visible[0, 0, 9] = False  # a wrist the teacher is unsure of
    out = encode_frame(entry.labels, 0, 1.0, SPEC, (16, 16), EncodeOptions())
    assert out["heatmaps"][9].max() == 0 and out["heatmaps_weight"][9].min() == 0
    assert out["heatmaps_weight"][10].min() == 1


def test_single_frame_mode_is_the_still_image_path():
    from posetracker.train.dataset import SINGLE

    net = PoseNet(SPEC).eval()
    for p in net.temporal.parameters():  # non-zero memory so the recurrences matter
        torch.nn.init.uniform_(p, 0.1, 0.9)
    feats = torch.randn(1, 3, 24, 16, 16)
    with torch.no_grad():
        ours = run_temporal(net.temporal, feats, SINGLE)
        alone = torch.cat([net.temporal(feats[:, i:i + 1])[0] for i in range(3)], 1)
    assert torch.allclose(ours, alone, atol=1e-6)


def test_a_resumed_epoch_continues_in_the_same_order():
    from posetracker.train.loop import Trainer

    entry = _entry(t_len=12)
    tr = Trainer(PoseNet(SPEC), _cfg(), [entry], [entry], progress=False)
    tr.state.stage = "temporal"
    sc = tr.cfg.stages["temporal"]
    full = [b["feats"] for b in tr._loader([entry], sc, train=True)]
    rest = [b["feats"] for b in tr._loader([entry], sc, train=True, skip_batches=1)]
    assert len(full) >= 2 and len(rest) == len(full) - 1
    assert all(torch.equal(a, b) for a, b in zip(full[1:], rest))


def test_coordinate_losses_read_positions_and_penalise_jitter():
    from posetracker.train.losses import coordinate_losses

    batch = _batch(_entry(t_len=6, h=16), window=6)
    assert batch["joints_ok"].sum() > 0
    hm = batch["heatmaps"].clamp(1e-6, 1 - 1e-6)
    sharp = {"heatmap_logits": 10 * torch.log(hm / (1 - hm)), "offsets": batch["offsets"]}
    l1, acc = coordinate_losses(sharp, batch)
    assert float(l1) < 1e-3 and float(acc) < 1e-3
    shaky = dict(sharp)
    shaky["offsets"] = batch["offsets"] + 0.3 * torch.tensor([1.0, -1.0] * 3).view(1, 6, 1, 1, 1)
    l1, acc = coordinate_losses(shaky, batch)
    assert float(l1) > 0.1 and float(acc) > 0.5


def test_temporal_stage_can_start_from_a_mild_smoother():
    from posetracker.train.loop import Trainer

    entry = _entry(t_len=8)
    tr = Trainer(PoseNet(SPEC), _cfg(init_gain=0.6), [entry], [entry], name="test-gain", progress=False)
    tr.run(("temporal",))
    for direction in (tr.net.temporal.forward_dir, tr.net.temporal.backward_dir):
        assert torch.all((direction.gain > 0.5) & (direction.gain <= 0.7)), direction.gain
    untouched = PoseNet(SPEC).temporal.forward_dir.gain
    assert torch.all(untouched == 0), "without init_gain the block starts as an exact pass-through"
