import numpy as np
import pytest
import torch

from posetracker.model.heads import regression_to_vectors_matrix
from posetracker.model.network import CausalStream, PoseNet
from posetracker.model.weights import load_posenet, save_posenet
from posetracker.skeletons import load_skeleton


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return PoseNet(load_skeleton("human18")).eval()


@pytest.fixture(scope="module")
def clip():
    return torch.rand(1, 3, 3, 64, 96, generator=torch.Generator().manual_seed(1)) * 255


def test_output_shapes(net, clip):
    with torch.no_grad():
        out = net(clip)
    k, e = 18, 17
    assert out["heatmaps"].shape == (1, 3, k, 16, 24)
    assert out["offsets"].shape == (1, 3, 2 * k, 16, 24)
    assert out["vectors"].shape == (1, 3, 2 * e, 16, 24)
    assert out["depth"].shape == (1, 3, 1 + e, 16, 24)
    assert torch.all(out["offsets"][:, :, 34:] == 0), "the root has no offset"


def test_untrained_temporal_block_is_an_exact_pass_through(net, clip):
    with torch.no_grad():
        full = net(clip)
        per_frame = net.decode_heads(net.features(clip))  # no temporal block at all
    for key in full:
        assert torch.equal(full[key], per_frame[key]), key


def test_trained_temporal_block_leaves_frames_without_context_unchanged():
    """A still image (T = 1) and a stream's first frame keep their own features; at look-ahead 0 the
    backward side adds nothing (the output is the forward recurrence)."""
    torch.manual_seed(0)
    net = PoseNet(load_skeleton("mouse4")).eval()
    for p in net.temporal.parameters():
        torch.nn.init.uniform_(p, 0.1, 0.9)
    frames = torch.rand(1, 3, 3, 64, 64, generator=torch.Generator().manual_seed(3)) * 255
    with torch.no_grad():
        feats = net.features(frames)
        still, _ = net.temporal(feats[:, :1])
        assert torch.equal(still, feats[:, :1])
        first, _ = net.temporal(feats[:, :1], None, emit=1)  # live, look-ahead 0, first frame
        assert torch.equal(first, feats[:, :1])
        window, _ = net.temporal(feats)  # with neighbours the block does change the features
        assert not torch.allclose(window[:, 1], feats[:, 1])
        _, state = net.temporal(feats[:, :1], None, emit=1)
        second, _ = net.temporal(feats[:, 1:2], state, emit=1)
        _, forward_only = net.temporal.forward_dir.step(feats[:, 1], *net.temporal.forward_dir.step(feats[:, 0], None, None))
        x = feats[:, 1]
        fused = x + net.temporal.fusion(torch.cat([forward_only - x, torch.zeros_like(x)], 1))  # W_bwd sees zero
        assert torch.allclose(second[:, 0], fused, atol=1e-5)


def test_a_still_skips_the_temporal_block_with_the_same_outputs(monkeypatch):
    """A still (T = 1, no gradients: the top-down crops, the tiles) does not run the temporal block, whose
    output there is its input (test above): the outputs equal those through the block bit for bit."""
    torch.manual_seed(0)
    net = PoseNet(load_skeleton("fly13")).eval()
    for p in net.temporal.parameters():
        torch.nn.init.uniform_(p, 0.1, 0.9)
    stills = torch.rand(3, 1, 3, 64, 64, generator=torch.Generator().manual_seed(4)) * 255
    with torch.no_grad():
        through, _ = net.temporal(net.features(stills))
        expected = net.decode_heads(through)
        monkeypatch.setattr(net.temporal, "forward", lambda *a, **k: pytest.fail("temporal block run for a still"))
        got = net(stills)
    for key in expected:
        assert torch.equal(got[key], expected[key]), key

def test_fusion_starts_as_the_fixed_two_sided_smoother_and_old_weights_load_with_it(tmp_path):
    """The learnt fusion starts at s_fwd + s_bwd - x; a weights file without it loads with that form."""
    from posetracker.model.temporal import fixed_fusion_weight
    from posetracker.model.weights import load_posenet, save_posenet

    torch.manual_seed(0)
    net = PoseNet(load_skeleton("mouse4")).eval()
    for d in (net.temporal.forward_dir, net.temporal.backward_dir):
        for p in d.parameters():
            torch.nn.init.uniform_(p, 0.1, 0.9)
    feats = net.features(torch.rand(1, 4, 3, 64, 64, generator=torch.Generator().manual_seed(5)) * 255).detach()
    with torch.no_grad():
        out, _ = net.temporal(feats)
        fwd, bwd, c, s = [], [None] * 4, None, None
        for t in range(4):
            c, s = net.temporal.forward_dir.step(feats[:, t], c, s)
            fwd.append(s)
        c, s = None, None
        for t in range(3, -1, -1):
            c, s = net.temporal.backward_dir.step(feats[:, t], c, s, last=t == 0)
            bwd[t] = s
        expected = torch.stack(fwd, 1) + torch.stack(bwd, 1) - feats
    assert torch.allclose(out, expected, atol=1e-5)
    save_posenet(net, tmp_path / "w.safetensors", source="test")
    from safetensors.torch import load_file, save_file
    state = load_file(tmp_path / "w.safetensors")
    meta = {"skeleton": "mouse4", "format": "posenet-v1", "source": "old", "trained": ""}
    save_file({k: v for k, v in state.items() if k != "temporal.fusion.weight"}, tmp_path / "old.safetensors", meta)
    old = load_posenet(tmp_path / "old.safetensors")
    assert torch.equal(old.temporal.fusion.weight, fixed_fusion_weight(24))
    net.temporal.fusion.weight.data.mul_(0.5)
    save_posenet(net, tmp_path / "w.safetensors", source="test")
    assert torch.equal(load_posenet(tmp_path / "w.safetensors").temporal.fusion.weight, net.temporal.fusion.weight)


def test_untrained_depth_is_flat(net, clip):
    with torch.no_grad():
        d = net(clip)["depth"]
    assert torch.all(d[:, :, 0] == 3.0) and torch.all(d[:, :, 1:] == 0)


def test_causal_stream_matches_bidirectional_window():
    torch.manual_seed(0)
    net = PoseNet(load_skeleton("mouse4")).eval()
    for p in net.temporal.parameters():  # non-zero memory so the recurrences matter
        torch.nn.init.uniform_(p, 0.1, 0.9)
    frames = torch.rand(1, 3, 3, 64, 64, generator=torch.Generator().manual_seed(2)) * 255
    with torch.no_grad():
        ref = net(frames)
        per_frame = net.decode_heads(net.features(frames))
    assert not torch.allclose(ref["heatmaps"], per_frame["heatmaps"])
    stream = CausalStream(net, lookahead=2)
    outs = [stream.push(frames[:, i]) for i in range(3)]
    assert outs[0] is None and outs[1] is None and outs[2] is not None
    outs = [outs[2]] + stream.flush()
    for t, o in enumerate(outs):
        for key in ref:
            torch.testing.assert_close(o[key][:, 0], ref[key][:, t], rtol=0, atol=1e-5)


def test_causal_lookahead_zero_is_immediate(net, clip):
    stream = CausalStream(net, lookahead=0)
    out = stream.push(clip[:, 0])
    assert out is not None and out["heatmaps"].shape[1] == 1
    with pytest.raises(ValueError):
        CausalStream(net, lookahead=-1)


def test_regression_to_vectors_is_exact_and_telescopes(human18):
    rng = np.random.default_rng(0)
    r = rng.normal(size=34)  # (dy, dx) per COCO joint, MoveNet order
    v = regression_to_vectors_matrix(human18) @ r
    # Walking the tree from the centre and adding vectors gives back r(k) as (dx, dy).
    pos = {human18.root: np.zeros(2)}
    for e, (p, c) in enumerate(human18.edges):
        pos[c] = pos[p] + v[2 * e : 2 * e + 2]
    for k in range(17):
        np.testing.assert_allclose(pos[k], [r[2 * k + 1], r[2 * k]], atol=1e-12)


def test_weights_round_trip(tmp_path, net, clip):
    path = tmp_path / "w.safetensors"
    save_posenet(net, path, source="test")
    again = load_posenet(path)
    with torch.no_grad():
        a, b = net(clip), again(clip)
    for key in a:
        assert torch.equal(a[key], b[key])


def test_bad_weights_give_clear_errors(tmp_path):
    from posetracker.model.weights import WeightsError

    with pytest.raises(WeightsError, match="not found"):
        load_posenet(tmp_path / "missing.safetensors")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x00" * 100)
    with pytest.raises(WeightsError, match="cannot read"):
        load_posenet(junk)


def test_weights_full_of_nan_are_refused_on_load(tmp_path, net):
    """A diverged or damaged file must not load and then find nobody (issue: exit 0, 0 people)."""
    from posetracker.model.weights import WeightsError

    path = tmp_path / "nan.safetensors"
    with torch.no_grad():
        broken = load_posenet(None)
        next(broken.heads.parameters()).fill_(float("nan"))
    save_posenet(broken, path, source="test")
    with pytest.raises(WeightsError, match="NaN or infinite"):
        load_posenet(path)
