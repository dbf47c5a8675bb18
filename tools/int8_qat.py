"""Fine-tune the MobileNetV2 body for the 8-bit live graph (quantisation-aware), into the companion file.

    python tools/int8_qat.py --config configs/distill_quick.yaml --companion models/posenet-human18.int8.safetensors \
        --keep-float /body/stem/ /body/blocks.0/ --out models/posenet-human18.int8.safetensors

(the shipped recipe: 200 steps, ~10 min on 2 cores). The 8-bit body's features differ from the float body's by
5-27% of their variance on the held-out clips (ONNX Runtime, `docs/experiments/runtime-speed.md`), which shows
as jitter. Here the body's arithmetic in the live graph is simulated in torch: every convolution the companion
quantises (all of the body but the nodes named by ``--keep-float``, which the graph then leaves in float) gets
per-channel symmetric int8 weights and its input in uint8 within the companion's calibrated range
(straight-through gradients). The body (its float weights; the FPN and heads frozen) is then trained so that the
simulated network's features match the float network's on ``--frames-per-clip`` frames (every ``--step``-th) of
each training clip of the config, letterboxed square as the calibration was; ``--head-weight`` adds the heads'
outputs to the loss (measured: no better, see the study). The companion is written again with the same ranges,
the float nodes and the tuned body (``body.*``, float16); the graph quantises that body instead of the float one
(``model/int8.py``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from torch import nn

from posetracker.model import int8
from posetracker.model.fused import export_live_step
from posetracker.model.preprocess import letterbox, to_tensor
from posetracker.model.weights import load_posenet
from posetracker.train.config import load_config
from posetracker.train.features import FrameSelection, iter_frames


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class SimulatedInt8Conv(nn.Module):
    """A convolution as the 8-bit graph runs it: input (N, C, H, W) fake-quantised to uint8 in ``in_range``
    (None: left as it is), weights to int8 per output channel (symmetric, -127..127)."""

    def __init__(self, conv: nn.Conv2d, in_range: tuple[float, float] | None):
        super().__init__()
        self.conv, self.in_range = conv, in_range

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.conv
        if self.in_range is not None:
            lo, hi = self.in_range
            scale = max(hi - lo, 1e-8) / 255.0
            x = torch.fake_quantize_per_tensor_affine(x, scale, int(round(-lo / scale)), 0, 255)
        scales = c.weight.detach().abs().amax(dim=(1, 2, 3)).clamp_min(1e-12) / 127.0
        w = torch.fake_quantize_per_channel_affine(c.weight, scales, torch.zeros_like(scales, dtype=torch.int32), 0,
                                                   -127, 127)
        return F.conv2d(x, w, c.bias, c.stride, c.padding, c.dilation, c.groups)


def onnx_node(module_name: str) -> str:
    """``blocks.3.expand.conv`` -> the live graph's node ``/backbone/body/blocks.3/expand/conv/Conv``."""
    parts: list[str] = []
    for piece in module_name.split("."):
        if piece.isdigit():
            parts[-1] += "." + piece
        else:
            parts.append(piece)
    return int8.BODY + "/".join(parts) + "/Conv"


def simulate(body: nn.Module, conv_inputs: dict[str, str], ranges: dict[str, list[float]],
             keep_float: tuple[str, ...] = ()) -> int:
    """Swap every quantised nn.Conv2d of ``body`` (those whose graph node names hold none of ``keep_float``) for a
    :class:`SimulatedInt8Conv`; returns how many. The stem's input is left as it is: normalised pixels, 256
    levels in [-1, 1], which its 8-bit range holds."""
    count = 0
    for name, module in list(body.named_modules()):
        if not isinstance(module, nn.Conv2d) or onnx_node(name) not in conv_inputs:
            continue
        if any(k in onnx_node(name) for k in keep_float):
            continue
        parent_name, attr = name.rsplit(".", 1)
        rng = None if name.startswith("stem.") else ranges.get(conv_inputs[onnx_node(name)])
        setattr(body.get_submodule(parent_name), attr, SimulatedInt8Conv(module, None if rng is None else tuple(rng)))
        count += 1
    return count


def plain_state(body: nn.Module) -> dict[str, torch.Tensor]:
    """The body's state dict with the simulated convolutions' own names (as the float body names them)."""
    return {k.replace(".conv.conv.", ".conv."): v.detach().clone() for k, v in body.state_dict().items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/distill_quick.yaml")
    ap.add_argument("--companion", default="models/posenet-human18.int8.safetensors")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=5e-6)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--frames-per-clip", type=int, default=24)
    ap.add_argument("--step", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep-float", nargs="*", default=None,
                    help="graph name fragments of body nodes left in float (e.g. /body/stem/ /body/blocks.0/), "
                         "written into the companion; default: the companion's own")
    ap.add_argument("--head-weight", type=float, default=0.0,
                    help="weight of the heads' outputs in the loss (heatmaps, and offsets and vectors near peaks), "
                         "each term over its value before tuning; 0: features only")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    net = load_posenet().eval()
    tensors, meta = int8.read_companion(Path(args.companion))
    if meta.get("body") != int8.part_hash(net, "body") or meta.get("fpn_from") != int8.part_hash(net, "fpn"):
        raise SystemExit(f"{args.companion} was not made for the shipped weights")
    ranges = json.loads(meta["ranges"])
    fpn, _ = int8.companion_parts(tensors)  # start from the float body, whatever the companion holds
    student, teacher = int8.with_fpn(net, fpn), int8.with_fpn(net, fpn)
    with tempfile.TemporaryDirectory() as tmp:
        graph = onnx.load(str(export_live_step(student, int8.CALIBRATED_LOOKAHEAD, Path(tmp) / "f.onnx"))).graph
    conv_inputs = {n.name: n.input[0] for n in graph.node if n.op_type == "Conv" and n.name.startswith(int8.BODY)}
    body = student.backbone.body
    keep = tuple(json.loads(meta["keep_float"])) if args.keep_float is None else tuple(args.keep_float)
    log(f"{simulate(body, conv_inputs, ranges, keep)} of {len(conv_inputs)} body convolutions simulated in 8 bits "
        f"(float: {', '.join(keep) or 'none'})")

    cfg = load_config(args.config)
    frames = [to_tensor(letterbox(f.image)[0]) for clip in cfg.train
              for f in iter_frames(Path(cfg.data_path) / clip, FrameSelection(args.step, args.frames_per_clip))]
    x = torch.stack(frames)  # (N, 3, 256, 256)
    with torch.no_grad():
        target = torch.cat([teacher.backbone(x[i:i + 16]) for i in range(0, len(x), 16)])  # (N, 24, 64, 64)
    scale = target.var()
    log(f"{len(x)} frames of {len(cfg.train)} training clips")
    heads = teacher.heads  # frozen; read straight off the features (a still frame's temporal stage is the identity)
    root = heads.spec.root

    def head_terms(feat: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        """(3,): squared errors of the student's heads (on ``feat``) against the float network's (on ``ref``),
        both (B, 24, 64, 64): sigmoid heatmaps weighted by the float heatmap (+0.01 everywhere); offsets (cells)
        weighted by their joint's float heatmap; tree vectors (cells) weighted by the float centre heatmap."""
        s, t = heads(feat), heads(ref)
        hs, ht = torch.sigmoid(s["heatmap_logits"]), torch.sigmoid(t["heatmap_logits"]).detach()  # (B, K, h, w)
        wh = ht + 0.01
        heat = ((hs - ht) ** 2 * wh).sum() / wh.sum()
        wo = ht.repeat_interleave(2, 1)  # (B, 2K, h, w): each joint's weight on its dy, dx
        off = ((s["offsets"] - t["offsets"].detach()) ** 2 * wo).sum() / wo.sum()
        wv = ht[:, root:root + 1]  # (B, 1, h, w)
        vec = ((s["vectors"] - t["vectors"].detach()) ** 2 * wv).sum() / (wv.sum() * s["vectors"].shape[1])
        return torch.stack([heat, off, vec])

    def terms_of(idx: list[int]) -> torch.Tensor:
        """(4,): features' mean squared error against the float network's over their variance, then
        :func:`head_terms` (zeros when ``--head-weight`` is 0)."""
        feat = student.backbone(x[idx])
        fe = F.mse_loss(feat, target[idx]) / scale
        hd = head_terms(feat, target[idx]) if args.head_weight > 0 else fe.new_zeros(3)
        return torch.cat([fe[None], hd])

    def mean_terms() -> torch.Tensor:
        with torch.no_grad():
            return torch.stack([terms_of(list(range(i, min(i + 16, len(x))))) for i in range(0, len(x), 16)]).mean(0)

    norm = torch.ones(4)

    def loss_of(idx: list[int]) -> torch.Tensor:
        """Features' error, plus ``--head-weight`` x the mean of the heads' terms, each over its value before."""
        t = terms_of(idx) / norm
        return t[0] + args.head_weight * t[1:].mean()

    def mean_loss() -> float:
        t = mean_terms()
        log("terms (features, heatmaps, offsets, vectors): " + ", ".join(f"{v:.5f}" for v in t.tolist()))
        return float(t[0])

    for p in student.parameters():
        p.requires_grad_(False)
    for p in body.parameters():
        p.requires_grad_(True)
    before_terms = mean_terms()
    before = mean_loss()
    if args.head_weight > 0:
        norm = torch.cat([torch.ones(1), before_terms[1:].clamp_min(1e-12)])
    log(f"simulated 8-bit feature error before: {before:.5f}")
    opt = torch.optim.Adam(body.parameters(), lr=args.lr)
    order = list(range(len(x)))
    per_epoch = len(order) // args.batch
    for step in range(args.steps):
        if step % per_epoch == 0:
            rng.shuffle(order)
        k = step % per_epoch
        loss = loss_of(order[k * args.batch:(k + 1) * args.batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 or step == args.steps - 1:
            log(f"step {step}: {loss.item():.5f}")
    after = mean_loss()
    log(f"simulated 8-bit feature error after: {after:.5f}")

    note = json.loads(meta.get("note") or "{}")
    note["qat"] = {"steps": args.steps, "lr": args.lr, "batch": args.batch, "frames": len(x), "step": args.step,
                   "seed": args.seed, "head_weight": args.head_weight,
                   "simulated_feature_error": {"before": before, "after": after}}
    int8.write_companion(Path(args.out), teacher.backbone.fpn, net, ranges, keep, json.dumps(note),
                         tuple(json.loads(meta.get("quantise", json.dumps(int8.OLD_QUANTISE)))),
                         int(meta.get("lookahead", int8.CALIBRATED_LOOKAHEAD)), body=plain_state(body))
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
