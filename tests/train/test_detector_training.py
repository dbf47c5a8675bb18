"""Training a skeleton's heads with its refiners from labelled images (methods B and C, step 6)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posetracker.evaluation.held_out import evaluate_items, match_instances
from posetracker.model.network import PoseNet
from posetracker.refiners.graph import GraphRefiner
from posetracker.refiners.heatmap import HeatmapRefiner
from posetracker.skeletons import load_skeleton
from posetracker.train.detector import (DetectorConfig, batch_targets, detector_loss, heatmap_refiner_loss, lr_schedule,
                                        new_detector)
from posetracker.train.detector_samples import (AugmentConfig, LabelledSamples, defocus, split_items, warp_matrix,
                                                warp_sample)
from posetracker.types import PoseFrame


@pytest.fixture(scope="module")
def mouse():
    return load_skeleton("mouse4")


def _samples(spec, n=4, seed=0) -> LabelledSamples:
    rng = np.random.default_rng(seed)
    pts = np.full((n, 2, spec.num_joints, 2), np.nan, np.float32)
    pts[:, 0] = rng.uniform(60, 200, (n, spec.num_joints, 2))
    pts[:, 0, spec.root] = np.nan  # virtual centre: computed from the others
    taps = {"c2": rng.normal(size=(n, 40, 64, 64)), "c3": rng.normal(size=(n, 48, 32, 32)),
            "c4": rng.normal(size=(n, 96, 16, 16)), "c5": rng.normal(size=(n, 1280, 8, 8))}
    taps = {k: v.astype(np.float16) for k, v in taps.items()}
    return LabelledSamples(taps, rng.integers(0, 255, (n, 256, 256, 3), dtype=np.uint8), pts)


def _feats(data: LabelledSamples, net: PoseNet, train: bool = False) -> torch.Tensor:
    from posetracker.train.detector import first_features

    return first_features(net, {k: torch.from_numpy(v.astype(np.float32)) for k, v in data.taps.items()}, train)


def test_split_holds_out_the_last_items():
    train, val = split_items(list(range(10)), 0.2)
    assert train == list(range(8)) and val == [8, 9]


def test_warp_moves_points_with_the_pixels_and_flip_swaps_sides(mouse):
    img = np.zeros((240, 320, 3), np.uint8)
    pts = np.array([[[100, 60], [150, 90], [200, 120], [250, 180], [np.nan, np.nan]]], float)
    for x, y in pts[0, :4].astype(int):
        img[y - 1 : y + 2, x - 1 : x + 2] = 255
    rng = np.random.default_rng(3)
    aug = AugmentConfig(rotate_deg=90, flip=True, colour=0.0)
    seen_flip = False
    for _ in range(8):
        m, flipped = warp_matrix((320, 240), rng, aug)
        out, p = warp_sample(img, pts, m, flipped, mouse, rng, 0.0)
        seen_flip |= flipped
        for k in range(4):
            src = mouse.mirror_index[k] if flipped else k  # channel k now holds the mirrored joint
            x, y = np.round(p[0, k]).astype(int)
            assert out[y, x].max() > 100, "the warped point must land on its warped dot"
            if flipped and src != k:
                assert not np.allclose(p[0, k], (m[:, :2] @ pts[0, k] + m[:, 2]))
    assert seen_flip


def test_defocus_blurs_and_brightens_one_animal_only():
    """The out-of-focus term changes the picture around one labelled instance and nowhere far from it."""
    rng = np.random.default_rng(0)
    img = np.zeros((256, 256, 3), np.uint8)
    img[::4] = 120  # stripes: blur changes them
    pts = np.full((2, 3, 2), np.nan)
    pts[0] = [[40, 40], [50, 45], [45, 55]]
    pts[1] = [[200, 200], [210, 205], [205, 215]]
    changed_near = set()
    for _ in range(6):
        out = defocus(img, pts, rng)
        diff = np.abs(out.astype(int) - img).max(-1)
        assert diff[128, 128] == 0 and diff[0, 255] == 0, "far from both animals nothing moves"
        near = [diff[35:60, 35:60].max() > 0, diff[195:220, 195:220].max() > 0]
        assert sum(near) == 1, "exactly one animal is drawn out of focus"
        changed_near.add(near.index(True))
    assert changed_near == {0, 1}
    assert defocus(img, np.full((1, 3, 2), np.nan), rng) is img  # nothing labelled: untouched


def test_defocus_leaves_old_cache_keys_alone():
    assert AugmentConfig().key() == [8, 180.0, [0.75, 1.25], True, 0.2]
    assert AugmentConfig(defocus=0.5).key() != AugmentConfig().key()


def test_batch_targets_shapes(mouse):
    data = _samples(mouse)
    tgt = batch_targets(data.points, mouse, 1.0, (64, 64))
    assert tgt["heatmaps"].shape == (4, 1, mouse.num_joints, 64, 64)
    assert tgt["joints"].shape == (4, 1, 2, mouse.num_joints, 2)
    ok = tgt["joints_ok"][:, 0]
    assert ok[:, 0].all() and not ok[:, 1].any()  # the centre is filled in; the absent instance is not


def test_step6_one_loss_trains_detector_heads_and_gnn_together(mouse):
    """Method C step 6: the first- and second-prediction losses reach both the heads and the GNN."""
    torch.manual_seed(0)
    net, graph = new_detector(mouse, PoseNet(load_skeleton("human18"))), GraphRefiner(mouse)
    data = _samples(mouse)
    tgt = batch_targets(data.points, mouse, 1.0, (64, 64))
    tgt["root"] = mouse.root
    cfg = DetectorConfig(skeleton="mouse4", data="x.json", jitter=0.0)
    params = list(net.heads.parameters()) + list(graph.parameters()) + list(net.backbone.fpn.parameters())
    opt = torch.optim.Adam(params, lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    first_losses = []
    for step in range(40):
        loss, parts = detector_loss(net, graph, _feats(data, net, train=True), tgt, cfg, gen)
        opt.zero_grad()
        loss.backward()
        if step == 0:
            assert net.heads.keypoints.out.weight.grad.abs().sum() > 0
            assert graph.gnn.out.weight.grad.abs().sum() > 0 and set(parts) >= {"first", "second", "heatmaps"}
            assert net.backbone.fpn.lateral2.conv.weight.grad.abs().sum() > 0  # the FPN learns too
            assert all(p.grad is None for p in net.backbone.body.parameters())  # frozen (cached outputs)
        opt.step()
        first_losses.append(loss.item())
    assert first_losses[-1] < 0.8 * first_losses[0], first_losses


def test_train_body_runs_the_later_blocks_again_and_trains_only_those(mouse):
    """``train_body: c3``: the body's taps past c3 are computed again from the cached c3 (as the whole body
    gives them), and the loss reaches those blocks and the top conv, not the blocks up to c3."""
    from posetracker.train.detector import first_features

    torch.manual_seed(0)
    net, graph = new_detector(mouse, PoseNet(load_skeleton("human18"))), GraphRefiner(mouse)
    body = net.backbone.body
    images = torch.rand(2, 3, 256, 256) * 2 - 1
    with torch.no_grad():
        whole = body(images)
        again = body.after("c3", whole["c3"])
    assert set(again) == {"c4", "c5"}
    for k in again:
        torch.testing.assert_close(again[k], whole[k])
    data = _samples(mouse, n=2)
    tgt = batch_targets(data.points, mouse, 1.0, (64, 64))
    tgt["root"] = mouse.root
    cfg = DetectorConfig(skeleton="mouse4", data="x.json", train_body="c3")
    taps = {k: torch.from_numpy(v.astype(np.float32)) for k, v in data.taps.items()}
    loss, _ = detector_loss(net, graph, first_features(net, taps, True, cfg.train_body), tgt, cfg,
                            torch.Generator().manual_seed(0))
    loss.backward()
    later = {id(p) for p in body.parameters_after("c3")}
    assert later and all(p.grad is not None and p.grad.abs().sum() > 0 for p in body.parameters_after("c3"))
    assert all(p.grad is None for p in body.parameters() if id(p) not in later)  # stem .. c3: cached
    assert body.top.conv.weight.grad is not None


def test_train_body_must_name_a_tap(tmp_path):
    from posetracker.train.detector import load_detector_config

    path = tmp_path / "bad.yaml"
    path.write_text("skeleton: mouse4\ndata: x.json\ntrain_body: c5\n")
    with pytest.raises(ValueError, match="train_body"):
        load_detector_config(path)


def test_method_b_training_leaves_the_detector_frozen(mouse):
    net, ref = PoseNet(mouse), HeatmapRefiner(mouse)
    torch.nn.init.normal_(ref.net.out.weight, std=0.01)
    data = _samples(mouse)
    tgt = batch_targets(data.points, mouse, 1.0, (64, 64))
    cfg = DetectorConfig(skeleton="mouse4", data="x.json")
    feats = _feats(data, net)
    images = torch.from_numpy(data.images).permute(0, 3, 1, 2).float()
    loss, parts = heatmap_refiner_loss(net, ref, feats, images, tgt, cfg, torch.Generator().manual_seed(0))
    loss.backward()
    assert set(parts) == {"coords", "heatmaps"}
    assert all(p.grad is None for p in net.parameters())
    assert ref.net.stem[0].weight.grad.abs().sum() > 0  # the image reaches the loss


class _Item:
    def __init__(self, pts):
        from posetracker.evaluation.datasets import Instance

        self.instances = [Instance(np.c_[p, np.full(len(p), 2.0)], None) for p in pts]


def test_held_out_scores(monkeypatch, mouse):
    gt = np.array([[[10, 10], [20, 10], [10, 20], [60, 60], [0, 0]]], float)  # one mouse, 4 labelled + centre
    cols = np.array([0, 1, 2, 3, -1])
    items = [_Item(gt[:, :4])]
    monkeypatch.setattr("posetracker.evaluation.held_out.read_image", lambda item, cache: np.zeros((80, 80, 3), np.uint8))

    def predict(shift):
        def f(rgb):
            kp = np.concatenate([gt + shift, np.zeros((1, 5, 1))], -1).astype(np.float32)
            return PoseFrame(0, 0.0, kp, np.ones((1, 5), np.float32), np.ones(1, np.float32), np.zeros(1, np.int64), (80, 80))
        return f

    perfect = evaluate_items(predict(np.zeros(2)), items, cols, mouse)
    assert perfect["pck@0.1"] == 1.0 and perfect["rmse_px"] == 0.0 and perfect["joints"] == 4
    off = evaluate_items(predict(np.array([6.0, 0.0])), items, cols, mouse)  # 6 px > 0.1 x 50 px box side
    assert off["pck@0.1"] == 0.0 and off["pck@0.2"] == 1.0 and off["median_px"] == pytest.approx(6.0)
    assert off["per_joint_mean_px"] == pytest.approx({n: 6.0 for n in mouse.joint_names[:4]})
    assert off["per_instance"] == [{"frame": 0, "side": 50.0, "errors": [pytest.approx(6.0)] * 4 + [None],
                                    "offsets": [[6.0, 0.0]] * 4 + [None],  # reading - label, px
                                    "labelled": gt[0, :4].tolist() + [None]}]
    assert match_instances(np.zeros((0, 5, 2)), gt) == []


def test_lr_warms_up_then_decays():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([{"params": [p], "lr": 5e-3}])
    sched = lr_schedule(opt, steps=100, warmup=10)
    lrs = []
    for _ in range(100):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == pytest.approx(5e-5)
    assert all(a < b for a, b in zip(lrs[:10], lrs[1:11]))  # rising over the warm-up
    assert lrs[10] == pytest.approx(5e-3)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:])) and lrs[-1] < 1e-4  # then decaying
    assert DetectorConfig(skeleton="mouse4", data="x.json").warmup_steps > 0
