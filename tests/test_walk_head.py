"""The tree walk's own vector head: the decoder walks from the *located* parent (method A step 7), falls back to
the centre read for an unsure parent, the head leaves every other output bit-identical, and its training moves
nothing else."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posetracker.decoding import TreeDecoder, encode_targets
from posetracker.decoding.synthetic import ideal_outputs, make_person
from posetracker.model.network import PoseNet
from posetracker.model.weights import load_posenet, save_posenet
from posetracker.session import default_vector_read
from posetracker.skeletons import load_skeleton
from posetracker.train.config import StageConfig
from posetracker.train.dataset import EncodeOptions
from posetracker.train.walk_head import train_walk_head

SPEC = load_skeleton("human18")
ELBOW, WRIST = SPEC.index("left_elbow"), SPEC.index("left_wrist")


@pytest.fixture(autouse=True)
def _setup(tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    torch.manual_seed(0)
    torch.set_num_threads(1)


def _gauss(xy: tuple[float, float], h: int = 64, w: int = 64) -> np.ndarray:
    yy, xx = np.mgrid[:h, :w]
    return np.exp(-((xx - xy[0]) ** 2 + (yy - xy[1]) ** 2) / 2.0).astype(np.float32)


def _scene():
    """One person: centre-read vectors (what the shipped head gives) and a walk head whose correction to the
    elbow -> wrist vector is (5, -3) cells everywhere, 0 elsewhere; no offsets (peaks refined from the
    Gaussians' shape)."""
    people = make_person(SPEC, (128.0, 128.0), 170.0)[None]
    out = ideal_outputs(people, SPEC, vector_write="centre")
    del out["offsets"]
    walk = np.zeros_like(out["vectors"])
    e = SPEC.edge_of_child[WRIST]
    walk[2 * e], walk[2 * e + 1] = 5.0, -3.0
    out["walk_vectors"] = walk
    return out


def _centre_edge(out) -> np.ndarray:
    """The centre read's elbow -> wrist vector (cells)."""
    centre_read = TreeDecoder(SPEC, vector_read="centre").decode(out)
    return (centre_read.predicted[0, WRIST] - centre_read.predicted[0, ELBOW]) / 4.0


@pytest.mark.parametrize("shift", [(0.0, 0.0), (2.0, 1.0), (-1.5, 2.5)])
def test_the_walk_predicts_a_child_from_its_located_parent(shift):
    out = _scene()
    centre_read = TreeDecoder(SPEC, vector_read="centre").decode(out)
    edge = _centre_edge(out)
    elbow = centre_read.keypoints[0, ELBOW] / 4.0 + np.asarray(shift)  # cells
    out["heatmaps"][ELBOW] = _gauss(tuple(elbow))  # the elbow is found there
    walked = TreeDecoder(SPEC, vector_read="parent").decode(out)
    np.testing.assert_allclose(walked.keypoints[0, ELBOW] / 4.0, elbow, atol=1e-3)
    # located parent + the centre's edge vector + the head's correction read at the parent
    np.testing.assert_allclose(walked.predicted[0, WRIST] / 4.0, elbow + edge + [5.0, -3.0], atol=1e-3)
    # the centre read's wrist prediction ignores where the elbow was found
    centred = TreeDecoder(SPEC, vector_read="centre").decode(out)
    np.testing.assert_allclose(centred.predicted[0, WRIST], centre_read.predicted[0, WRIST], atol=1e-3)


def test_the_anchored_read_moves_a_child_with_its_located_parent_by_the_centre_vector():
    """vector_read "anchored": the walk without a head of its own, child = located parent + the centre read's
    edge vector (MoveNet's r(child) - r(parent)); the walk head is not used."""
    out = _scene()
    centre_read = TreeDecoder(SPEC, vector_read="centre").decode(out)
    edge = _centre_edge(out)
    elbow = centre_read.keypoints[0, ELBOW] / 4.0 + np.asarray([2.0, 1.0])
    out["heatmaps"][ELBOW] = _gauss(tuple(elbow))
    anchored = TreeDecoder(SPEC, vector_read="anchored").decode(out)
    np.testing.assert_allclose(anchored.keypoints[0, ELBOW] / 4.0, elbow, atol=1e-3)
    np.testing.assert_allclose(anchored.predicted[0, WRIST] / 4.0, elbow + edge, atol=1e-3)


def test_an_unsure_parent_hands_its_child_to_the_centre_read():
    out = _scene()
    out["heatmaps"][ELBOW] = 0.0  # the elbow is not found: the walk would start from a guess
    centre = TreeDecoder(SPEC, vector_read="centre").decode(out)
    guarded = TreeDecoder(SPEC, vector_read="parent").decode(out)
    assert guarded.confidence[0, ELBOW] < 0.1
    np.testing.assert_allclose(guarded.predicted[0, WRIST], centre.predicted[0, WRIST], atol=1e-3)
    raw = TreeDecoder(SPEC, vector_read="parent", walk_fallback=False).decode(out)
    np.testing.assert_allclose(raw.predicted[0, WRIST] / 4.0,
                               raw.keypoints[0, ELBOW] / 4.0 + _centre_edge(out) + [5.0, -3.0], atol=1e-3)


def test_the_walk_head_leaves_every_other_output_bit_identical(tmp_path):
    net = PoseNet(SPEC).eval()
    x = torch.rand(1, 2, 3, 64, 64) * 255
    with torch.no_grad():
        before = net(x)
        net.add_walk_head()
        assert not net.walk(torch.rand(1, 24, 8, 8)).any()  # starts as the anchored walk: no correction
        torch.nn.init.normal_(net.walk.out.weight)
        after = net(x)
    assert set(after) == set(before) | {"walk_vectors"}
    assert after["walk_vectors"].shape == before["vectors"].shape
    for k, v in before.items():
        assert torch.equal(v, after[k]), k
    save_posenet(net, tmp_path / "w.safetensors", source="test", trained="depth,walk")
    back = load_posenet(tmp_path / "w.safetensors")
    assert back.walk is not None and torch.equal(back.walk.out.weight, net.walk.out.weight)
    assert default_vector_read(back) == "parent"


def test_training_the_walk_head_moves_only_the_walk_head():
    from dataclasses import replace

    from test_train_loop import _entry

    def entry(t_len, seed):  # its own features cache key (the tiny entries all say "k")
        e = _entry(t_len=t_len, seed=seed)
        return replace(e, feats=replace(e.feats, key=f"tiny{seed}"))

    net = PoseNet(SPEC).eval()
    frozen = {k: v.clone() for k, v in net.state_dict().items()}
    sc = StageConfig(epochs=3, window=1, hop=1, batch=4, lr=5e-3, warmup_steps=1, val_windows=8)
    history = train_walk_head(net, [entry(8, 0)], [entry(4, 1)], sc, EncodeOptions(), log=lambda s: None)
    for k, v in net.state_dict().items():
        if not k.startswith("walk."):
            assert torch.equal(v, frozen[k]), k
    assert net.walk.out.weight.abs().sum() > 0
    assert history[-1]["train"] < history[1]["train"]


def test_the_walk_head_is_taught_the_residual_of_the_centre_read():
    """The loss target is the true vector minus the centre read's edge vector read at the person's centre cell:
    a head giving exactly that residual has zero loss, one giving none has the centre read's error."""
    from posetracker.train.walk_head import centre_read, walk_loss

    people = make_person(SPEC, (128.0, 120.0), 170.0)[None]
    tgt = encode_targets(people, SPEC, vector_write="parent")
    net = PoseNet(SPEC).eval()
    net.add_walk_head()
    x = torch.rand(1, 24, 64, 64)
    with torch.no_grad():
        vectors = net.heads.vectors(x)
        anchor, inside = centre_read(vectors, torch.from_numpy(tgt["vectors_centre"])[None])
    w = tgt["vectors_weight"] > 0
    cx, cy = tgt["vectors_centre"][0][w[0]], tgt["vectors_centre"][1][w[0]]
    assert inside.all() and np.ptp(cx) == 0 and np.ptp(cy) == 0  # one person: one centre cell
    np.testing.assert_allclose(vectors[0, :, int(cy[0]), int(cx[0])].numpy()[:, None, None] * w,
                               anchor[0].numpy() * w, rtol=1e-6)  # every disc cell reads the centre cell
    batch = {"feats": x[None], **{k: torch.from_numpy(v)[None, None] for k, v in tgt.items()}}
    residual = (torch.from_numpy(tgt["vectors"]) - anchor[0]) * torch.from_numpy(w)
    with torch.no_grad():
        before = float(walk_loss(net, batch))
        net.walk = _Const(residual)
        assert float(walk_loss(net, batch)) < 1e-5 < before


def test_a_frame_without_people_has_the_walk_heads_targets_too():
    """Batches stack every frame's maps: an empty frame must give the same keys (all zero weight)."""
    empty = encode_targets(np.zeros((0, SPEC.num_joints, 2)), SPEC, vector_write="parent")
    person = encode_targets(make_person(SPEC, (128.0, 120.0), 170.0)[None], SPEC, vector_write="parent")
    assert set(empty) == set(person) and not empty["vectors_weight"].any()


class _Const(torch.nn.Module):
    def __init__(self, value: torch.Tensor):
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.value[None].expand(len(x), -1, -1, -1)
