"""Live mode's offset, vector and depth heads evaluated at the decoder's cells (model/heads_at_cells.py)."""

import numpy as np
import pytest
import torch
from test_runtime import busy_net

from posetracker.decoding.tree import TreeDecoder
from posetracker.model.fused import FusedStream, live_stream, output_keys, torch_parts
from posetracker.model.heads import PoseHeads
from posetracker.model.heads_at_cells import SPARSE_KEYS, CellHeads, dense_maps
from posetracker.model.network import CausalStream
from posetracker.model.runtime import accelerate


def _random_heads(spec, seed: int = 0) -> PoseHeads:
    torch.manual_seed(seed)
    heads = PoseHeads(spec).eval()
    with torch.no_grad():
        for p in heads.parameters():
            p.normal_(0, 0.3)
    return heads


def test_cell_maps_read_what_the_dense_heads_give(human18):
    heads = _random_heads(human18)
    feats = torch.randn(1, 24, 12, 17, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        dense = heads(feats)
    maps = CellHeads(heads).maps(feats[0].numpy())
    rng = np.random.default_rng(0)
    ys, xs = rng.integers(0, 12, 40), rng.integers(0, 17, 40)
    ys[:4], xs[:4] = [0, 11, 0, 11], [0, 16, 16, 0]  # the corners: the 3x3 pad
    for key in SPARSE_KEYS:
        ref, m = dense[key][0].numpy(), maps[key]
        assert m.shape == ref.shape
        np.testing.assert_allclose(m[:, ys, xs], ref[:, ys, xs], atol=1e-5)  # read_cells
        ch = rng.integers(0, ref.shape[0], 40)
        np.testing.assert_allclose(m[ch, ys, xs], ref[ch, ys, xs], atol=1e-5)  # one channel per cell
        np.testing.assert_allclose(m[3, ys, xs], ref[3, ys, xs], atol=1e-5)
        pair = np.stack([ch, ch // 2])  # (2, M) channels, the cells broadcast: one head run per cell
        np.testing.assert_allclose(m[pair, ys[None], xs[None]], ref[pair, ys[None], xs[None]], atol=1e-5)
        flat, ref_flat = m.reshape(ref.shape[0], 12 * 17), ref.reshape(ref.shape[0], -1)
        idx = rng.integers(0, 12 * 17, (5, 3, 4))
        chans = rng.integers(0, ref.shape[0], 5)
        np.testing.assert_allclose(flat[chans[:, None, None], idx], ref_flat[chans[:, None, None], idx], atol=1e-5)
        np.testing.assert_allclose(flat[:, idx[0]], ref_flat[:, idx[0]], atol=1e-5)
        np.testing.assert_allclose(np.asarray(m), ref, atol=1e-5)  # anything else: the whole map
        np.testing.assert_allclose(m[:, 2:5, :], ref[:, 2:5, :], atol=1e-5)
    root = human18.root
    assert not np.asarray(maps["offsets"])[[2 * root, 2 * root + 1]].any()  # the root has no offset
    with pytest.raises(IndexError):
        maps["vectors"][:, np.array([12]), np.array([0])]
    with torch.inference_mode():  # the live graph's outputs are inference tensors; the refiners' stage runs outside
        live_feats = feats[:, None].clone()
    for key, value in dense_maps(heads, live_feats).items():  # (N, T, C, h, w) for the maps refiners
        torch.testing.assert_close(value[:, 0], dense[key])


def test_the_decoder_finds_the_same_people_from_cell_maps(human18, shipped_net):
    """The shipped network on the sample clip's dancer, twice side by side: decoding the dense maps and the
    cell maps gives the same people."""
    from posetracker.capture import open_source
    from posetracker.model.preprocess import letterbox, to_tensor
    from posetracker.resources import sample_clip

    with open_source(str(sample_clip())) as src:
        image = src.read().image
    x = to_tensor(letterbox(np.concatenate([image, image[:, ::-1]], 1), fit=True)[0])[None, None]
    heads = torch_parts(shipped_net)[3]
    with torch.no_grad():
        feats = shipped_net.features(x)[:, 0]  # a still: the temporal block leaves it as it is
        out = heads(feats)
    dense = {"heatmaps": torch.sigmoid(out["heatmap_logits"])[0].numpy(), **{k: out[k][0].numpy() for k in SPARSE_KEYS}}
    cells = {**dense, **CellHeads(heads).maps(feats[0].numpy())}
    decoder = TreeDecoder(human18)
    a, b = decoder.decode(dense), decoder.decode(cells)
    assert a.num_people == 2
    for name in ("keypoints", "confidence", "scores", "depth_reads", "predicted"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name), atol=1e-4, err_msg=name)


def test_the_sparse_live_graph_gives_the_heads_input(human18, tmp_path, monkeypatch):
    """The sparse graph's features through the dense heads are the separate calls' maps; the flush gives maps."""
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    net = busy_net(human18, seed=7)
    clip = torch.rand(5, 1, 3, 64, 96, generator=torch.Generator().manual_seed(8)) * 255
    accelerate(net)
    stream = live_stream(net, 1, sparse=True)
    assert isinstance(stream, FusedStream) and stream.sparse
    separate = CausalStream(net, 1)
    heads = torch_parts(net)[3]
    pushed = 0
    for x in clip:
        got, ref = stream.push(x), separate.push(x)
        if ref is None:
            assert got is None
            continue
        pushed += 1
        assert set(got) == set(output_keys(True)) == {"heatmap_logits", "heatmaps", "head_features"}
        with torch.no_grad():
            maps = dense_maps(heads, got["head_features"])
        for k in SPARSE_KEYS:
            torch.testing.assert_close(maps[k], ref[k], rtol=0, atol=1e-4)
        torch.testing.assert_close(got["heatmaps"], ref["heatmaps"], rtol=0, atol=1e-5)
    assert pushed == len(clip) - 1
    for got, ref in zip(stream.flush(), separate.flush()):  # the flush takes the separate calls: whole maps
        assert set(SPARSE_KEYS) <= set(got)
        torch.testing.assert_close(got["offsets"], ref["offsets"], rtol=0, atol=1e-4)
