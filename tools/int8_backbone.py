"""Make the 8-bit live graph's companion file (``model/int8.py``): calibrate, then (optionally) fine-tune the FPN.

    python tools/int8_backbone.py --config configs/distill_quick.yaml --out models/posenet-human18.int8.safetensors

1. Calibration: the float live graph (look-ahead 1) runs over ``--calib`` frames of each training clip
   (letterboxed square, or ``--fitted`` to their aspect); the percentiles of the activations of the nodes
   under ``--quantise`` (``int8.calibrate``) are their ranges.
2. Those nodes are quantised with those ranges; the tensors the FPN reads from it (the dequantised taps
   c2..c5, exactly what the FPN sees at run time) and the float backbone's features are cached for
   ``--frames`` frames of each training clip (every ``--step``-th, aspect-fitted as live mode runs).
3. Distillation, no labels: the FPN (float, from the shipped one) is trained so that the frozen heads on
   its features from the 8-bit taps reproduce the heads on the float features (MSE per output, each
   scaled by its variance; heatmaps weighted towards the peaks) plus the features themselves.
4. Fidelity on the held-out clips' frames (the config's val clips) before / after, then the companion.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from posetracker.model import int8
from posetracker.model.fused import FusedStream, export_live_step
from posetracker.model.preprocess import INPUT_SIZE, letterbox, to_tensor
from posetracker.model.runtime import _session, plain
from posetracker.session import SessionConfig, TrackingSession
from posetracker.train.config import load_config
from posetracker.train.features import iter_frames

FPN_INPUTS = {f"/backbone/fpn/lateral{i}/conv/Conv": f"c{i}" for i in (2, 3, 4, 5)}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def frames_of(path: Path, n: int, step: int):
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


def cache_pairs(q_session, float_backbone, clips: list[Path], n: int, step: int) -> list[tuple[dict, torch.Tensor]]:
    """[(8-bit taps {c2..c5: (1, C, h, w) float16}, float features (1, 24, H/4, W/4))] per frame."""
    names = [o.name for o in q_session.get_outputs()]
    out = []
    for clip in clips:
        for f in frames_of(clip, n, step):
            img, _ = letterbox(f.image, INPUT_SIZE, fit=True)
            x = to_tensor(img)[None]
            h, w = x.shape[-2:]
            feeds = {"images": x.numpy(), "window": np.zeros((1, 1, 24, h // 4, w // 4), np.float32),
                     "ctx": np.zeros((1, 32, h // 8, w // 8), np.float32), "s": np.zeros((1, 24, h // 4, w // 4), np.float32)}
            got = dict(zip(names, q_session.run(None, feeds)))
            with torch.no_grad():
                target = float_backbone(x)
            out.append(({k: torch.from_numpy(got[k]).half() for k in ("c2", "c3", "c4", "c5")}, target))
    return out


def heads_loss(heads, feats: torch.Tensor, target: torch.Tensor, scales: dict[str, float]) -> torch.Tensor:
    """Distillation loss of features against the float features, through the frozen heads."""
    got, ref = heads(feats), heads(target)
    loss = ((feats - target) ** 2).mean() / scales["features"]
    peaks = torch.sigmoid(ref["heatmap_logits"])
    w = 1.0 + 10.0 * peaks
    loss = loss + (w * (torch.sigmoid(got["heatmap_logits"]) - peaks) ** 2).mean() / scales["heatmaps"]
    for k in ("offsets", "vectors", "depth"):
        loss = loss + ((got[k] - ref[k]) ** 2).mean() / scales[k]
    return loss


def fidelity(fpn, heads, pairs) -> dict[str, float]:
    """Mean abs error against the float model: features, heatmaps (sigmoid), offsets/vectors (cells, near
    the peaks: heatmap > 0.3), depth."""
    errs = {k: [] for k in ("features", "heatmaps", "offsets_peak", "vectors_peak", "depth")}
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/distill_quick.yaml")
    ap.add_argument("--out", required=True)
    ap.add_argument("--calib", type=int, default=8, help="calibration frames per training clip")
    ap.add_argument("--frames", type=int, default=30, help="distillation frames per clip")
    ap.add_argument("--step", type=int, default=4, help="take every STEP-th frame")
    ap.add_argument("--epochs", type=int, default=0, help="FPN distillation epochs (0: none, the shipped file)")
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--percentile", type=float, default=99.99)
    ap.add_argument("--quantise", nargs="*", default=list(int8.QUANTISE),
                    help="name prefixes of the live graph's nodes to quantise (default: body and temporal recurrences)")
    ap.add_argument("--keep-float", nargs="*", default=list(int8.KEEP_FLOAT),
                    help="name fragments of nodes under those prefixes kept in float")
    ap.add_argument("--fitted", action="store_true",
                    help="calibrate on aspect-fitted frames, as live mode runs (default: square letterboxed)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save-pairs", help="also save the cached taps and targets here (torch.save)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    cfg = load_config(args.config)
    train = [cfg.data_path / c for c in cfg.train]
    val = [cfg.data_path / c for c in cfg.val]
    keep, prefixes = tuple(args.keep_float), tuple(args.quantise)

    session = TrackingSession.open(config=SessionConfig(mode="live", lookahead=1, fit_input=args.fitted, int8=False))
    net = session.net
    log("calibrating")
    feeds = calibration_feeds(session, train, args.calib, args.step)
    tmp = Path(tempfile.mkdtemp(prefix="int8-"))
    float_path, q_path, tap_path = tmp / "float.onnx", tmp / "q.onnx", tmp / "q_taps.onnx"
    export_live_step(net, 1, float_path)
    ranges = int8.calibrate(float_path, feeds, args.percentile, keep, prefixes=prefixes)
    log(f"{len(feeds)} calibration feeds, {len(ranges)} ranges")
    int8.quantise(float_path, ranges, q_path, keep, prefixes)
    with_tap_outputs(q_path, tap_path)
    q_session = _session(tap_path, 1)
    log("caching taps")
    train_pairs = cache_pairs(q_session, net.backbone, train, args.frames, args.step)
    val_pairs = cache_pairs(q_session, net.backbone, val, args.frames, args.step)
    log(f"{len(train_pairs)} training frames, {len(val_pairs)} held-out frames")
    if args.save_pairs:
        torch.save({"train": train_pairs, "val": val_pairs}, args.save_pairs)

    torch_net = plain(net)
    fpn, heads = copy.deepcopy(torch_net.backbone.fpn), torch_net.heads  # the net keeps its float FPN (hashed)
    for p in heads.parameters():
        p.requires_grad_(False)
    with torch.no_grad():
        outs = [heads(t) for _, t in train_pairs[:: max(1, len(train_pairs) // 40)]]
        targets = [t for _, t in train_pairs[:: max(1, len(train_pairs) // 40)]]
        scales = {"features": float(torch.cat([t.flatten() for t in targets]).var()),
                  "heatmaps": float(torch.cat([torch.sigmoid(o["heatmap_logits"]).flatten() for o in outs]).var())}
        scales.update({k: float(torch.cat([o[k].flatten() for o in outs]).var()) for k in ("offsets", "vectors", "depth")})
    before = {"train": fidelity(fpn, heads, train_pairs), "val": fidelity(fpn, heads, val_pairs)}
    with torch.no_grad():
        start = np.mean([float(heads_loss(heads, fpn({k: v.float() for k, v in t.items()}), g, scales)) for t, g in train_pairs])
    log(f"before: loss {start:.4f}, {json.dumps(before)}")
    opt = torch.optim.Adam(fpn.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        random.shuffle(train_pairs)
        total = 0.0
        for taps, target in train_pairs:
            with torch.enable_grad():
                loss = heads_loss(heads, fpn({k: v.float() for k, v in taps.items()}), target, scales)
                opt.zero_grad()
                loss.backward()
                opt.step()
            total += float(loss.detach())
        log(f"epoch {epoch + 1}: loss {total / len(train_pairs):.4f}, val {json.dumps(fidelity(fpn, heads, val_pairs))}")
    after = {"train": fidelity(fpn, heads, train_pairs), "val": fidelity(fpn, heads, val_pairs)}
    log(f"after: {json.dumps(after)}")
    note = json.dumps({"calibration_feeds": len(feeds), "train_frames": len(train_pairs), "epochs": args.epochs,
                       "lr": args.lr, "percentile": args.percentile, "before": before, "after": after})
    int8.write_companion(Path(args.out), fpn, net, ranges, keep, note, prefixes)
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
