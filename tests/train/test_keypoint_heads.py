"""The keypoint heads' fine-tuning on pseudo-labels: only the keypoint heatmap and offset heads move, the fit to
the labels improves, and the keep term holds the heads to their start (zero there, and it grows as they move)."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch

from posetracker.model.network import PoseNet
from posetracker.skeletons import load_skeleton
from posetracker.train.config import StageConfig
from posetracker.train.dataset import EncodeOptions, WindowDataset
from posetracker.train.keypoint_heads import keypoint_losses, train_keypoint_heads

SPEC = load_skeleton("human18")


@pytest.fixture(autouse=True)
def _setup(tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    torch.manual_seed(0)
    torch.set_num_threads(1)


def _entry(t_len, seed):
    from test_train_loop import _entry as tiny

    e = tiny(t_len=t_len, seed=seed)
    return replace(e, feats=replace(e.feats, key=f"tiny{seed}"))  # its own features cache key


def test_training_the_keypoint_heads_moves_only_them_and_fits_the_labels():
    net = PoseNet(SPEC).eval()
    frozen = {k: v.clone() for k, v in net.state_dict().items()}
    sc = StageConfig(epochs=3, window=1, hop=1, batch=4, lr=5e-3, warmup_steps=1, val_windows=8, keep=1.0)
    history = train_keypoint_heads(net, [_entry(8, 0)], [_entry(4, 1)], sc, EncodeOptions(), log=lambda s: None)
    moved = {k for k, v in net.state_dict().items() if not torch.equal(v, frozen[k])}
    assert moved and all(k.startswith(("heads.keypoints.", "heads.offsets.")) for k in moved), moved
    assert any(k.startswith("heads.offsets.") for k in moved)
    assert history[-1]["train"] < history[1]["train"]
    assert history[-1]["val"] < history[0]["val"]


def test_the_keep_term_is_zero_at_the_start_and_grows_as_the_heads_move():
    net = PoseNet(SPEC).eval()
    start = copy.deepcopy(net.heads)
    ds = WindowDataset([_entry(4, 0)], SPEC, window=1, hop=1, opts=EncodeOptions(), crop=None, jitter=False)
    batch = {k: torch.stack([ds[i][k] for i in range(len(ds))]) for k in ds[0]}
    with torch.no_grad():
        assert float(keypoint_losses(net.heads, start, batch)[2]) == 0.0
        net.heads.keypoints.out.bias += 1.0
        keep = float(keypoint_losses(net.heads, start, batch)[2])
    assert keep > 0.0
    with torch.no_grad():
        net.heads.keypoints.out.bias += 1.0
        assert float(keypoint_losses(net.heads, start, batch)[2]) > keep
