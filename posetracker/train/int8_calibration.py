"""The 8-bit live graph's companion file, first step: calibrate the quantised nodes' ranges
(``posetracker train int8-calibrate``; the file's format: ``posetracker.model.int8``).

1. The float live graph (look-ahead ``int8.CALIBRATED_LOOKAHEAD``) runs over ``calib`` frames (every ``step``-th)
   of each training clip of the config, letterboxed square; the percentiles (:data:`PERCENTILE`) of the
   activations of the nodes it quantises (``int8.QUANTISE``, but ``int8.KEEP_FLOAT``) are their ranges.
2. Fidelity: those nodes quantised with those ranges, the FPN's inputs from the 8-bit graph (its taps c2..c5)
   go through the float FPN and heads, against the float network, on ``frames`` frames of each training and
   held-out clip (aspect-fitted, as live mode runs): the mean errors are written in the companion's note.
3. The companion: the ranges, the float model's own FPN, no tuned body (``posetracker train int8-qat`` adds it).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

from posetracker.model import int8
from posetracker.model.fused import FusedStream
from posetracker.model.heads import PoseHeads
from posetracker.model.live_graph import export_live_step
from posetracker.model.preprocess import INPUT_SIZE, letterbox, to_tensor
from posetracker.model.runtime import _session, plain
from posetracker.session import NetworkSettings, SessionConfig, TrackingSession
from posetracker.train.config import load_config
from posetracker.train.features import iter_frames
from posetracker.types import Frame

FPN_INPUTS = {f"/backbone/fpn/lateral{i}/conv/Conv": f"c{i}" for i in (2, 3, 4, 5)}
TAPS = ("c2", "c3", "c4", "c5")
PERCENTILE = 99.99  # of each quantised node's activations on the calibration frames: its range
# one frame's 8-bit taps {c2..c5: (1, C, h, w) float16} and the float backbone's features (1, 24, H/4, W/4)
Pair = tuple[dict[str, torch.Tensor], torch.Tensor]


def frames_of(path: Path, n: int, step: int) -> Iterator[Frame]:
    """Every ``step``-th frame of the clip at ``path``, ``n`` of them at most."""
    for i, f in enumerate(iter_frames(path)):
        if i >= n * step:
            return
        if i % step == 0:
            yield f


def calibration_feeds(session: TrackingSession, clips: list[Path], n: int, step: int) -> list[dict]:
    """The float live graph's inputs on frames of ``clips``, letterboxed as ``session`` does."""
    stream = session.stream
    assert isinstance(stream, FusedStream)
    feeds, real = [], stream.session.run

    def record(names, feed):
        feeds.append({k: v.copy() for k, v in feed.items()})
        return real(names, feed)

    stream.session.run = record
    try:
        for clip in clips:
            session.reset()
            for f in frames_of(clip, n + 2, step):
                session.step(f)
    finally:
        stream.session.run = real
    return feeds


def with_tap_outputs(src: Path, dst: Path) -> None:
    """``src`` with the FPN laterals' inputs (the body's taps as the FPN reads them) as extra outputs c2..c5."""
    import onnx

    model = onnx.load(str(src))
    taps = {FPN_INPUTS[n.name]: n.input[0] for n in model.graph.node if n.name in FPN_INPUTS}
    assert len(taps) == 4, taps
    for name, tensor in sorted(taps.items()):
        ident = onnx.helper.make_node("Identity", [tensor], [name], name=f"tap_{name}")
        model.graph.node.append(ident)
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    onnx.save(model, str(dst))


def cache_pairs(q_session, float_backbone, clips: list[Path], n: int, step: int) -> list[Pair]:
    """One :data:`Pair` per frame of ``clips`` (``n`` frames each, every ``step``-th), aspect-fitted."""
    names = [o.name for o in q_session.get_outputs()]
    out = []
    for clip in clips:
        for f in frames_of(clip, n, step):
            img, _ = letterbox(f.image, INPUT_SIZE, fit=True)
            x = to_tensor(img)[None]
            h, w = x.shape[-2:]
            feeds = {"images": x.numpy(), "window": np.zeros((1, 1, 24, h // 4, w // 4), np.float32),
                     "ctx": np.zeros((1, 32, h // 8, w // 8), np.float32),
                     "s": np.zeros((1, 24, h // 4, w // 4), np.float32)}
            got = dict(zip(names, q_session.run(None, feeds)))
            with torch.no_grad():
                target = float_backbone(x)
            out.append(({k: torch.from_numpy(got[k]).half() for k in TAPS}, target))
    return out


def fidelity(fpn: torch.nn.Module, heads: PoseHeads, pairs: list[Pair]) -> dict[str, float]:
    """Mean abs error against the float model: features, heatmaps (sigmoid), offsets/vectors (cells, near
    the peaks: heatmap > 0.3), depth."""
    errs: dict[str, list[float]] = {k: [] for k in ("features", "heatmaps", "offsets_peak", "vectors_peak", "depth")}
    with torch.no_grad():
        for taps, target in pairs:
            f = fpn({k: v.float() for k, v in taps.items()})
            got, ref = heads(f), heads(target)
            hm_g, hm_r = torch.sigmoid(got["heatmap_logits"]), torch.sigmoid(ref["heatmap_logits"])
            errs["features"].append(float((f - target).abs().mean()))
            errs["heatmaps"].append(float((hm_g - hm_r).abs().mean()))
            errs["depth"].append(float((got["depth"] - ref["depth"]).abs().mean()))
            peak = (hm_r.amax(1, keepdim=True) > 0.3).float()
            for k in ("offsets", "vectors"):
                e = ((got[k] - ref[k]).abs() * peak).sum() / (peak.sum() * got[k].shape[1]).clamp(min=1)
                errs[f"{k}_peak"].append(float(e))
    return {k: float(np.mean(v)) for k, v in errs.items()}


def make_companion(config: str | Path, out: str | Path, calib: int = 24, frames: int = 30, step: int = 4,
                   log: Callable[[str], None] = print) -> dict:
    """Calibrate the shipped weights' live graph on the training clips of ``config`` and write the companion at
    ``out``; returns its note (calibration feeds, fidelity frames and errors on the training / held-out clips)."""
    cfg = load_config(config)
    train = [cfg.data_path / c for c in cfg.train]
    val = [cfg.data_path / c for c in cfg.val]
    keep, prefixes = int8.KEEP_FLOAT, int8.QUANTISE
    network = NetworkSettings(lookahead=int8.CALIBRATED_LOOKAHEAD, fit_input=False, int8=False)
    session = TrackingSession.open(config=SessionConfig(mode="live", network=network))
    net = session.net
    log("calibrating")
    feeds = calibration_feeds(session, train, calib, step)
    with tempfile.TemporaryDirectory(prefix="int8-") as tmp:
        float_path, q_path, tap_path = Path(tmp) / "float.onnx", Path(tmp) / "q.onnx", Path(tmp) / "q_taps.onnx"
        export_live_step(net, int8.CALIBRATED_LOOKAHEAD, float_path)
        ranges = int8.calibrate(float_path, feeds, PERCENTILE, keep, prefixes=prefixes)
        log(f"{len(feeds)} calibration feeds, {len(ranges)} ranges")
        int8.quantise(float_path, ranges, q_path, keep, prefixes)
        with_tap_outputs(q_path, tap_path)
        q_session = _session(tap_path, 1)
        log("fidelity frames")
        train_pairs = cache_pairs(q_session, net.backbone, train, frames, step)
        val_pairs = cache_pairs(q_session, net.backbone, val, frames, step)
    torch_net = plain(net)
    fpn = torch_net.backbone.fpn
    errors = {"train": fidelity(fpn, torch_net.heads, train_pairs), "val": fidelity(fpn, torch_net.heads, val_pairs)}
    note = {"calibration_feeds": len(feeds), "train_frames": len(train_pairs), "percentile": PERCENTILE,
            "fidelity": errors}
    log(f"{len(train_pairs)} training frames, {len(val_pairs)} held-out frames: {json.dumps(errors)}")
    int8.write_companion(Path(out), fpn, net, ranges, keep, json.dumps(note), prefixes)
    return note
