"""Refiner plug-ins: the registry, method B (heatmap) and method C (graph), their weights files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from posetracker.decoding.people import DecodedPeople
from posetracker.refiners import (
    Refiner, RefinerChain, RefinerError, build_refiner, load_chain, load_refiner, refiner_path,
    register_refiner, registered_refiners, save_refiner, unregister_refiner,
)
from posetracker.refiners.graph import GraphRefiner, SkeletonGNN, gather_patches, skeleton_adjacency
from posetracker.refiners.heatmap import PARAM_BUDGET, HeatmapRefiner, merge_heatmaps
from posetracker.skeletons import load_skeleton


@pytest.fixture(scope="module")
def mouse():
    return load_skeleton("mouse4")


def test_registry_builtins_duplicates_and_unknown(mouse):
    assert {"heatmap", "graph"} <= set(registered_refiners())
    with pytest.raises(ValueError, match="already registered"):
        register_refiner("graph")(GraphRefiner)
    with pytest.raises(RefinerError, match="unknown refiner 'nope'.*heatmap"):
        build_refiner("nope", mouse)

    @register_refiner("tiny-test")
    class Tiny(Refiner):
        kind = "tiny-test"
        param_budget = 3

        def __init__(self, spec, n=10):
            super().__init__(spec)
            self.w = torch.nn.Parameter(torch.zeros(n))

    try:
        assert build_refiner("tiny-test", mouse, n=3).num_parameters() == 3
        with pytest.raises(RefinerError, match="over its budget"):  # method B step 5: the budget is enforced
            build_refiner("tiny-test", mouse, n=4)
    finally:
        unregister_refiner("tiny-test")
    assert "tiny-test" not in registered_refiners()


@pytest.mark.parametrize("name", ["human18", "mouse4", "fly13"])
def test_builtins_fit_their_budget(name):
    spec = load_skeleton(name)
    for kind in ("heatmap", "graph"):
        assert 0 < build_refiner(kind, spec).num_parameters() <= PARAM_BUDGET


def test_method_b_detector_and_refiner_fit_one_budget(mouse, monkeypatch):
    """Method B step 5: both models are small: the shipped mouse4 detector with its heatmap refiner is under
    MODEL_BUDGET, and a session refuses a pair over it."""
    from posetracker.model.weights import load_posenet
    from posetracker.refiners import load_refiner
    from posetracker.refiners.heatmap import MODEL_BUDGET
    from posetracker.session import RefineSettings, SessionConfig, TrackingSession

    net = load_posenet(Path(__file__).resolve().parents[2] / "models" / "posenet-mouse4.safetensors", mouse)
    refiner = load_refiner(refiner_path("heatmap", "mouse4"), mouse)
    total = refiner.num_parameters() + sum(p.numel() for p in net.parameters())
    assert total <= MODEL_BUDGET
    refiner.check_budget(net)
    TrackingSession(net, SessionConfig(refine=RefineSettings(refiners=("heatmap",))))  # loads
    monkeypatch.setattr(HeatmapRefiner, "model_budget", total - 1)
    with pytest.raises(RefinerError, match="together, over their budget"):
        TrackingSession(net, SessionConfig(refine=RefineSettings(refiners=("heatmap",))))


def test_merge_keeps_every_keypoint_peak(mouse):
    """Method B step 2: one multi-point heatmap with as many peaks as keypoint heatmaps (the centre left out)."""
    heat = torch.zeros(1, mouse.num_joints, 16, 16)
    spots = [(2, 3), (7, 9), (12, 4), (5, 14), (8, 8)]
    for k, (x, y) in enumerate(spots):
        heat[0, k, y, x] = 0.5 + 0.1 * k
    merged = merge_heatmaps(heat, mouse.root)
    assert merged.shape == (1, 1, 16, 16)
    for k, (x, y) in enumerate(spots):
        assert merged[0, 0, y, x] == pytest.approx(0.0 if k == mouse.root else 0.5 + 0.1 * k)
    assert int((merged > 0).sum()) == mouse.num_joints - 1


def test_heatmap_refiner_reads_image_and_merged_map(mouse):
    """Method B step 3: untrained = identity; a trained output depends on the image and on the merged map."""
    ref = HeatmapRefiner(mouse).eval()
    logits = torch.randn(1, mouse.num_joints, 16, 16)
    image = torch.rand(1, 3, 64, 64) * 255
    assert torch.equal(ref.corrected_logits(logits, image), logits)
    torch.nn.init.normal_(ref.net.out.weight, std=0.5)
    a = ref.corrected_logits(logits, image)
    b = ref.corrected_logits(logits, image.flip(-1))
    c = ref.corrected_logits(logits * 0 - 9, image)
    assert not torch.allclose(a, b) and not torch.allclose(a[:, :4], c[:, :4] + 9 + logits[:, :4])
    assert torch.equal(a[:, mouse.root], logits[:, mouse.root])  # the centre heatmap is not touched


def test_adjacency_follows_the_skeleton(mouse):
    a = skeleton_adjacency(mouse)
    names = mouse.joint_names
    i, j = names.index("leftear"), names.index("snout")  # an extra (drawn) edge
    assert a[i, j] > 0 and a[j, i] > 0 and torch.allclose(a.sum(1), torch.ones(mouse.num_joints))
    fly = load_skeleton("fly13")
    af = skeleton_adjacency(fly)
    assert int((af > 0).sum()) == 2 * fly.num_edges  # tree only
    assert af[fly.joint_names.index("eyeL"), fly.joint_names.index("thorax")] == 0


def test_gnn_passes_messages_only_along_edges():
    fly = load_skeleton("fly13")
    gnn = SkeletonGNN(fly, patch=9, hidden=16, layers=1)
    torch.nn.init.normal_(gnn.out.weight)
    patch, rel = torch.randn(1, 13, 9), torch.zeros(1, 13, 2)
    base = gnn(patch, rel)
    moved = patch.clone()
    eye = fly.joint_names.index("eyeL")
    moved[0, eye] += 3.0
    diff = (gnn(moved, rel) - base).abs().sum(-1)[0]
    head, thorax = fly.joint_names.index("head"), fly.joint_names.index("thorax")
    assert diff[head] > 0 and diff[eye] > 0  # the eye itself and its neighbour
    assert diff[thorax] == 0  # two edges away: one layer does not reach it


def test_gather_patches_matches_indexing():
    maps = torch.arange(2 * 3 * 10 * 12, dtype=torch.float32).reshape(2, 3, 10, 12)
    centres = torch.tensor([[[[4, 5], [0, 0], [11, 9]]], [[[6, 2], [3, 3], [1, 8]]]])  # (N=2, P=1, K=3, 2)
    vals, cells = gather_patches(maps, centres, radius=1)
    assert vals.shape == (2, 1, 3, 9) and cells.shape == (2, 1, 3, 9, 2)
    for n in range(2):
        for k in range(3):
            for v, (x, y) in zip(vals[n, 0, k], cells[n, 0, k]):
                assert v == maps[n, k, y, x]
    assert cells[0, 0, 1].min() == 0 and cells[0, 0, 2, :, 0].max() == 11  # clamped to the map


def _people(k: int) -> DecodedPeople:
    rng = np.random.default_rng(0)
    kp = rng.uniform(10, 50, (2, k, 2)).astype(np.float32)
    z = np.zeros((2, k), np.float32)
    return DecodedPeople(kp, z + 0.9, np.array([0.9, 0.8], np.float32), z, kp.copy())


def test_graph_refiner_untrained_is_identity_trained_moves_joints_not_centre(mouse):
    ref = GraphRefiner(mouse).eval()
    maps = {"heatmap_logits": torch.randn(1, mouse.num_joints, 16, 16),
            "offsets": torch.rand(1, 2 * mouse.num_joints, 16, 16)}
    people = _people(mouse.num_joints)
    same = ref.refine_people(people, maps, stride=4)
    np.testing.assert_allclose(same.keypoints, people.keypoints, atol=1e-4)
    torch.nn.init.normal_(ref.gnn.out.weight)
    moved = ref.refine_people(people, maps, stride=4)
    assert np.abs(moved.keypoints - people.keypoints).max() > 0.1
    np.testing.assert_array_equal(moved.keypoints[:, mouse.root], people.keypoints[:, mouse.root])
    assert np.abs(moved.keypoints - people.keypoints).max() <= 4 * 3 * 2 + 1e-3  # stays inside its patch


def test_weights_round_trip_and_errors(tmp_path, mouse):
    ref = GraphRefiner(mouse, hidden=32, layers=2)
    torch.nn.init.normal_(ref.gnn.out.weight)
    path = refiner_path("graph", "mouse4", tmp_path)
    save_refiner(ref, path, {"hidden": 32, "layers": 2}, detector="posenet-mouse4.safetensors")
    back = load_refiner(path)
    assert isinstance(back, GraphRefiner) and not back.training
    for k, v in ref.state_dict().items():
        assert torch.equal(v, back.state_dict()[k])
    chain = load_chain(["graph"], mouse, tmp_path)
    assert chain.names == ["graph"] and not chain.needs_image
    with pytest.raises(RefinerError, match="mouse4 refiner"):
        load_refiner(path, load_skeleton("fly13"))
    with pytest.raises(RefinerError, match="not found"):
        load_chain(["heatmap"], mouse, tmp_path)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(RefinerError, match="cannot read"):
        load_refiner(bad)


def test_chain_runs_maps_stage_before_people_stage(tmp_path, mouse):
    save_refiner(GraphRefiner(mouse), refiner_path("graph", "mouse4", tmp_path), {})
    save_refiner(HeatmapRefiner(mouse), refiner_path("heatmap", "mouse4", tmp_path), {})
    chain = load_chain(["graph", "heatmap"], mouse, tmp_path)
    assert chain.names == ["heatmap", "graph"] and chain.needs_image
    assert not RefinerChain([])


def test_session_runs_refiners_between_heads_and_decoder(tmp_path, shipped_net):
    """Untrained refiners leave the product's output as it is; changed ones reach it (both stages, live + offline)."""
    from dataclasses import replace

    from posetracker.capture import open_source
    from posetracker.session import PeopleSettings, RefineSettings, SessionConfig, TrackingSession

    net = shipped_net
    with open_source(str(Path(__file__).resolve().parents[2] / "assets" / "sample_dance.mp4")) as src:
        frames = [f for _, f in zip(range(4), src)]
    heat, graph = HeatmapRefiner(net.spec).eval(), GraphRefiner(net.spec).eval()
    for refiner in (heat, graph):
        save_refiner(refiner, refiner_path(refiner.kind, net.spec.name, tmp_path), {})
    for mode in ("live", "offline"):
        cfg = SessionConfig(mode=mode, people=PeopleSettings(score_threshold=0.0, track=False),
                            refine=RefineSettings(refiners=()))
        plain = TrackingSession(net, cfg).run(frames, 30)
        same = TrackingSession(net, replace(cfg, refine=RefineSettings(refiners=("heatmap", "graph"))), tmp_path).run(frames, 30)
        for a, b in zip(plain.frames, same.frames):  # live: the one-graph step and the separate calls a maps-stage
            np.testing.assert_allclose(a.keypoints, b.keypoints, atol=5e-3)  # refiner needs agree to ~1e-5 relative
    with torch.no_grad():  # a refiner that erases every keypoint heatmap: nothing is found in them any more
        heat.net.out.bias.fill_(-30.0)
    save_refiner(heat, refiner_path("heatmap", net.spec.name, tmp_path), {})
    session = TrackingSession(net, SessionConfig(mode="offline",
                                                 people=PeopleSettings(score_threshold=0.0, track=False),
                                                 refine=RefineSettings(refiners=("heatmap",))),
                              tmp_path)
    assert session.refiners.needs_image
    moved = session.run(frames, 30)
    assert all(a.num_people for a in plain.frames)
    keypoints = [k for k in range(net.spec.num_joints) if k != net.spec.root]
    assert all((a.confidence[:, keypoints] >= 0.1).any() for a in plain.frames)
    assert all(b.num_people == 0 or (b.confidence[:, keypoints] < 0.1).all() for b in moved.frames)


def test_a_refiner_trained_on_other_edges_is_refused(tmp_path, mouse):
    """The GNN's adjacency comes from the skeleton file; weights trained on other edges must not load silently."""
    from safetensors.torch import load_file, save_file

    path = refiner_path("graph", "mouse4", tmp_path)
    save_refiner(GraphRefiner(mouse), path, {})
    state = load_file(str(path))
    state["gnn.adjacency"] = torch.eye(mouse.num_joints)
    with safe_meta(path) as meta:
        save_file(state, str(path), metadata=meta)
    with pytest.raises(RefinerError, match="another structure"):
        load_refiner(path)


class safe_meta:
    def __init__(self, path):
        from safetensors import safe_open

        with safe_open(str(path), "pt") as f:
            self.meta = dict(f.metadata())

    def __enter__(self):
        return self.meta

    def __exit__(self, *exc):
        return False
