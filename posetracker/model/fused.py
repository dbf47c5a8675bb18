"""One ONNX Runtime call per live frame: backbone, temporal step and heads as one graph.

``CausalStream.push`` at look-ahead L runs, per frame, the backbone (one runtime call), the
forward direction's step, the backward direction's 1 + L steps (L + 1 calls, the look-ahead
ones first), the fusion and the heads (torch and one call): five calls at L = 1, with the
tensors converted between ONNX Runtime's blocked layout and torch around each. Here the whole
steady-state step is one exported graph, the temporal state its input and output (``LiveStep``, its
inputs and outputs: ``model/live_graph.py``). The first frames of a stream run the same graph with a zero
window and state (``FusedStream.push``); the flush at its end and the first frame at L = 0 keep the
separate calls of ``CausalStream``. Its outputs equal the separate calls' to ~1e-5 (tests/model/test_fused_step.py).
``live_stream`` chooses the stream: this float graph, the 8-bit one (``model/int8.py``) or the separate calls.
"""

from __future__ import annotations

import warnings

import torch

from posetracker.model import int8 as eight_bit
from posetracker.model.live_graph import (  # noqa: F401 (LiveStep, export_live_step: re-exported)
    LiveStep, export_live_step, fused_key, io_names, output_keys, torch_parts)
from posetracker.model.network import CausalStream, PoseNet


class FusedStream(CausalStream):
    """``CausalStream`` whose steady-state push is one ONNX Runtime call (:class:`LiveStep`); the same
    outputs (T = 1) and the same state, so it can hand over to the separate calls at any frame. ``sparse``:
    the graph's pushes give ``head_features`` instead of the offset, vector and depth maps
    (``output_keys(True)``; the separate calls, the flush and the first push at L = 0, give the maps)."""

    int8 = False  # the graph's body is 8-bit (model/int8.py)

    def __init__(self, net: PoseNet, lookahead: int, session, sparse: bool = False):
        super().__init__(net, lookahead)
        self.session = session
        self.sparse = sparse
        self.inputs, self.outputs = io_names(net, lookahead, sparse)
        self.hidden = torch_parts(net)[1].gru.hidden  # context channels G

    @torch.no_grad()
    def push(self, frame: torch.Tensor) -> dict[str, torch.Tensor] | None:
        """frame: (N, 3, H, W) RGB 0..255 -> the output dict of the frame ``lookahead`` pushes ago (T = 1).

        At look-ahead L > 0 the first pushes of a stream run the graph too: while the look-ahead fills, with
        a zero window and state (only the new frame's features are kept); then, with no forward state yet,
        with context 0 and smoothed features equal to the frame's own, which is the forward direction's first
        step exactly (``temporal.Direction.step``: a zero context is the GRU's start, a state equal to the
        frame keeps the frame). At L = 0 the first frame takes the separate calls."""
        n, _, h, w = frame.shape
        if h % 32 or w % 32 or torch.is_grad_enabled() or (self._h_fwd is None and not self.lookahead):
            return super().push(frame)
        filling = len(self._feats) < self.lookahead
        if self._h_fwd is None:
            c, hh, ww = self.net.temporal.channels, h // 4, w // 4
            window = torch.zeros(n, self.lookahead, c, hh, ww) if filling else torch.stack(list(self._feats), 1)
            ctx, s = torch.zeros(n, self.hidden, hh // 2, ww // 2), window[:, 0]
        else:
            window = torch.stack(list(self._feats), 1) if self.lookahead else None
            ctx, s = self._h_fwd
        feeds = {"images": frame.detach().float().contiguous().numpy(), "ctx": ctx.contiguous().numpy(),
                 "s": s.contiguous().numpy()}
        if self.lookahead:
            feeds["window"] = window.contiguous().numpy()
        got = dict(zip(self.outputs, map(torch.from_numpy, self.session.run(None, feeds))))
        if self.lookahead:
            new = got["window_out"].unbind(1)
            if filling:
                self._feats.append(new[-1])
                return None
            self._feats = type(self._feats)(new)
        self._h_fwd = (got["ctx_out"], got["s_out"])
        return {k: got[k][:, None] for k in output_keys(self.sparse)}


def live_stream(net: PoseNet, lookahead: int, threads: int = 1, int8: bool = False,
                sparse: bool = False) -> CausalStream:
    """The live stream for ``net``: a :class:`FusedStream` when ONNX Runtime runs the network (its graph
    exported once and cached beside the other exports), else the plain ``CausalStream``. ``int8``: the
    graph with the 8-bit body (``model/int8.py``) where a companion made for these weights ships; the
    first push and the flush then still run the float separate calls. ``sparse``: the graph leaves the
    offset, vector and depth heads to ``heads_at_cells`` (see :class:`FusedStream`)."""
    from posetracker.model.runtime import OnnxBackbone, _session, cache_dir

    if not isinstance(net.backbone, OnnxBackbone):
        return CausalStream(net, lookahead)
    if int8:
        try:
            companion = eight_bit.companion_for(net)
            session = companion and eight_bit.int8_session(net, lookahead, companion, threads, sparse)
            if session is not None:
                stream = FusedStream(net, lookahead, session, sparse)
                stream.int8 = True
                return stream
        except Exception as exc:  # the float graph then, say why
            warnings.warn(f"8-bit live graph not used ({exc}); float", RuntimeWarning, stacklevel=2)
    path = cache_dir() / f"live-{fused_key(net, lookahead, sparse)}.onnx"
    try:
        if not path.exists():
            export_live_step(net, lookahead, path, sparse=sparse)
        return FusedStream(net, lookahead, _session(path, threads), sparse)
    except Exception as exc:  # any export/runtime problem: the separate calls, say why
        warnings.warn(f"fused live graph not used ({exc}); separate runtime calls", RuntimeWarning, stacklevel=2)
        path.unlink(missing_ok=True)
        return CausalStream(net, lookahead)
