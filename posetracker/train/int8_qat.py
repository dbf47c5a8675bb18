"""The 8-bit live graph's companion file, second step: fine-tune the MobileNetV2 body for 8 bits
(quantisation-aware; ``posetracker train int8-qat``; the file's format: ``posetracker.model.int8``).

The 8-bit body's features differ from the float body's by 5-27% of their variance on the held-out clips (ONNX
Runtime, ``studies/runtime-speed.md``), which shows as jitter. Here the body's arithmetic in the live
graph is simulated in torch: every convolution the companion quantises (all of the body but the nodes its
``keep_float`` names) gets per-channel symmetric int8 weights and its input in uint8 within the companion's
calibrated range (straight-through gradients). The body (its float weights; the FPN and heads frozen) is then
trained so that the simulated network's features match the float network's on ``frames_per_clip`` frames (every
``step``-th) of each training clip of the config, letterboxed square as the calibration was. The companion is
written again with the same ranges, float nodes and FPN, and the tuned body (``body.*``, float16); the graph
quantises that body instead of the float one.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from posetracker.model import int8
from posetracker.model.live_graph import export_live_step
from posetracker.model.preprocess import letterbox, to_tensor
from posetracker.model.weights import load_posenet
from posetracker.train.config import load_config
from posetracker.train.features import FrameSelection, iter_frames


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


def fine_tune_body(student: nn.Module, teacher: nn.Module, x: torch.Tensor, steps: int, lr: float, batch: int,
                   rng: random.Random, log: Callable[[str], None] = print) -> tuple[float, float]:
    """Train ``student``'s body (its convolutions simulated in 8 bits, :func:`simulate`; the rest frozen) so that
    its backbone's features on ``x`` (N, 3, S, S) float 0..255 match ``teacher``'s (mean squared error over
    their variance, Adam, batches of ``batch``); returns the mean error (before, after). Used for the live graph
    (:func:`train_int8_body`) and a crop model's still graph (``train/int8_crops.py``)."""
    with torch.no_grad():
        target = torch.cat([teacher.backbone(x[i:i + 16]) for i in range(0, len(x), 16)])  # (N, 24, S/4, S/4)
    scale = target.var()
    body = student.backbone.body

    def loss_of(idx: list[int]) -> torch.Tensor:
        """The features' mean squared error against the float network's, over their variance."""
        return F.mse_loss(student.backbone(x[idx]), target[idx]) / scale

    def mean_loss() -> float:
        with torch.no_grad():
            return float(torch.stack([loss_of(list(range(i, min(i + 16, len(x))))) for i in range(0, len(x), 16)]
                                     ).mean())

    for p in student.parameters():
        p.requires_grad_(False)
    for p in body.parameters():
        p.requires_grad_(True)
    before = mean_loss()
    log(f"simulated 8-bit feature error before: {before:.5f}")
    opt = torch.optim.Adam(body.parameters(), lr=lr)
    order = list(range(len(x)))
    per_epoch = len(order) // batch
    for k_step in range(steps):
        if k_step % per_epoch == 0:
            rng.shuffle(order)
        k = k_step % per_epoch
        loss = loss_of(order[k * batch:(k + 1) * batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if k_step % 25 == 0 or k_step == steps - 1:
            log(f"step {k_step}: {loss.item():.5f}")
    after = mean_loss()
    log(f"simulated 8-bit feature error after: {after:.5f}")
    return before, after


def train_int8_body(config: str | Path, companion: str | Path, out: str | Path, steps: int = 200, lr: float = 5e-6,
                    batch: int = 8, frames_per_clip: int = 24, step: int = 4, seed: int = 0,
                    log: Callable[[str], None] = print) -> dict:
    """Fine-tune the shipped weights' body for the ranges of ``companion`` (made for those weights; its own tuned
    body, if any, is not the start: the float body is) and write the companion with it at ``out``; returns the
    note's ``qat`` entry (settings, simulated feature error before and after)."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    net = load_posenet().eval()
    tensors, meta = int8.read_companion(Path(companion))
    if meta.get("body") != int8.part_hash(net, "body") or meta.get("fpn_from") != int8.part_hash(net, "fpn"):
        raise ValueError(f"{companion} was not made for the shipped weights")
    ranges = json.loads(meta["ranges"])
    fpn, _ = int8.companion_parts(tensors)  # start from the float body, whatever the companion holds
    student, teacher = int8.with_fpn(net, fpn), int8.with_fpn(net, fpn)
    with tempfile.TemporaryDirectory() as tmp:
        import onnx

        graph = onnx.load(str(export_live_step(student, int8.CALIBRATED_LOOKAHEAD, Path(tmp) / "f.onnx"))).graph
    conv_inputs = {n.name: n.input[0] for n in graph.node if n.op_type == "Conv" and n.name.startswith(int8.BODY)}
    body = student.backbone.body
    keep = tuple(json.loads(meta["keep_float"]))
    log(f"{simulate(body, conv_inputs, ranges, keep)} of {len(conv_inputs)} body convolutions simulated in 8 bits "
        f"(float: {', '.join(keep) or 'none'})")

    cfg = load_config(config)
    frames = [to_tensor(letterbox(f.image)[0]) for clip in cfg.train
              for f in iter_frames(Path(cfg.data_path) / clip, FrameSelection(step, frames_per_clip))]
    x = torch.stack(frames)  # (N, 3, 256, 256)
    log(f"{len(x)} frames of {len(cfg.train)} training clips")
    before, after = fine_tune_body(student, teacher, x, steps, lr, batch, rng, log)

    note = json.loads(meta.get("note") or "{}")
    note["qat"] = {"steps": steps, "lr": lr, "batch": batch, "frames": len(x), "step": step, "seed": seed,
                   "simulated_feature_error": {"before": before, "after": after}}
    int8.write_companion(Path(out), teacher.backbone.fpn, net, ranges, keep, json.dumps(note),
                         tuple(json.loads(meta.get("quantise", json.dumps(int8.OLD_QUANTISE)))),
                         int(meta.get("lookahead", int8.CALIBRATED_LOOKAHEAD)), body=plain_state(body))
    return note["qat"]
