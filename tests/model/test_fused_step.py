"""The fused live graph (model/fused.py): one runtime call per frame, the same outputs as the separate calls."""

import numpy as np
import pytest
import torch
from test_runtime import busy_net

from posetracker.model.fused import FusedStream, LiveStep, live_stream
from posetracker.model.network import CausalStream
from posetracker.model.runtime import accelerate
from posetracker.session import NetworkSettings, PeopleSettings, SessionConfig, TrackingSession
from posetracker.types import Frame

pytest.importorskip("onnxruntime")


def _clip(n: int, h: int = 64, w: int = 96, seed: int = 5) -> torch.Tensor:
    return torch.rand(n, 1, 3, h, w, generator=torch.Generator().manual_seed(seed)) * 255


def _run(stream: CausalStream, clip: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    outs = [o for x in clip if (o := stream.push(x)) is not None]
    return outs + stream.flush()


@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_fused_stream_matches_the_separate_calls(human18, tmp_path, monkeypatch, lookahead):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    net = busy_net(human18, seed=2)
    clip = _clip(7)
    with torch.no_grad():
        reference = _run(CausalStream(net, lookahead), clip)  # torch
    assert accelerate(net) == "onnxruntime"
    stream = live_stream(net, lookahead)
    assert isinstance(stream, FusedStream)
    calls = []
    real_run = stream.session.run
    monkeypatch.setattr(stream.session, "run", lambda *a, **k: calls.append(1) or real_run(*a, **k))
    separate, fused = _run(CausalStream(net, lookahead), clip), _run(stream, clip)
    # every push is one graph call, the first ones too (zero window and state), but the first at look-ahead 0
    assert len(calls) == len(clip) - (lookahead == 0)
    assert len(fused) == len(separate) == len(reference) == len(clip)
    assert not torch.equal(reference[3]["offsets"], reference[4]["offsets"])
    for r, s, f in zip(reference, separate, fused):
        assert set(f) == set(s) == {"heatmap_logits", "heatmaps", "offsets", "vectors", "depth"}
        for k in f:
            assert f[k].shape == s[k].shape == (1, 1, *s[k].shape[2:])
            torch.testing.assert_close(f[k], s[k], rtol=0, atol=1e-5)
            torch.testing.assert_close(f[k], r[k], rtol=0, atol=1e-4)


def test_the_torch_live_step_is_the_stream_step(human18):
    """LiveStep (what is exported) against CausalStream in torch, from a carried state."""
    net = busy_net(human18, seed=3)
    clip = _clip(4, 64, 64, seed=6)
    stream = CausalStream(net, 1)
    with torch.no_grad():
        stream.push(clip[0])
        stream.push(clip[1])  # the forward state now exists; the window holds frame 1
        window, (ctx, s) = torch.stack(list(stream._feats), 1), stream._h_fwd
        out = LiveStep(net, 1)(clip[2], window, ctx, s)
        ref = stream.push(clip[2])
    torch.testing.assert_close(out[0][:, 0], stream._feats[0], rtol=0, atol=0)  # the new frame's features
    torch.testing.assert_close(out[1], stream._h_fwd[0], rtol=0, atol=0)
    for got, key in zip(out[3:], ("heatmap_logits", "heatmaps", "offsets", "vectors", "depth")):
        torch.testing.assert_close(got, ref[key][:, 0], rtol=0, atol=0)


def test_fused_lookahead_zero_never_sees_the_future(human18, tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    net = busy_net(human18, seed=4)
    accelerate(net)
    stream = live_stream(net, 0)
    assert isinstance(stream, FusedStream)
    a, b = _clip(5), _clip(5)
    b[-1] = 255 - b[-1]
    out_a, out_b = _run(stream, a), (stream.reset(), _run(stream, b))[1]
    for t in range(len(a) - 1):
        for k in out_a[t]:
            assert torch.equal(out_a[t][k], out_b[t][k]), f"frame {t} changed with a later frame"
    assert not torch.equal(out_a[-1]["heatmaps"], out_b[-1]["heatmaps"])


def test_a_live_session_runs_one_call_a_frame(human18, tmp_path, monkeypatch):
    """The product path: the live session's stream is fused; torch runtime keeps the plain stream."""
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path))
    session = TrackingSession(busy_net(human18, seed=5), SessionConfig(mode="live",
                                                                       network=NetworkSettings(lookahead=1),
                                                                       people=PeopleSettings(score_threshold=0.0)))
    assert isinstance(session.stream, FusedStream)
    stream = session.stream
    session.reset()
    assert session.stream is stream and stream._h_fwd is None and not stream._feats
    rng = np.random.default_rng(0)
    poses = [session.step(Frame(i, i / 30, rng.integers(0, 256, (72, 128, 3), dtype=np.uint8))) for i in range(4)]
    assert poses[0] is None and all(p is not None for p in poses[1:])
    plain = TrackingSession(busy_net(human18, seed=5), SessionConfig(mode="live",
                                                                     network=NetworkSettings(runtime="torch")))
    assert type(plain.stream) is CausalStream
