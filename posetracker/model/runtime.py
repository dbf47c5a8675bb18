"""Faster inference: the backbone, the heads and the temporal steps in ONNX Runtime when available, else torch.

The backbone (method A step 1) and the heads (step 3) are most of the
per-frame cost. For inference each is exported once to ONNX (cached under
``~/.cache/posetracker/onnx/v<EXPORT_VERSION>/``, keyed by a hash of its
weights) and run by ONNX Runtime: on one CPU thread here it runs the
MobileNetV2 ~2.5x (its SAME pads folded into the convolutions,
``onnx_pads``) and the heads ~6x faster than torch eager (``posetracker
bench`` shows the numbers). The temporal block's loop over frames stays in
torch, but each direction's step (step 2) runs in ONNX Runtime: 1.7 against 3.8 ms a step
here, which matters most with look-ahead (three steps a frame at look-ahead 1).
Training stays in torch: the wrappers fall back to their torch module
whenever gradients are needed. ``accelerate`` swaps ``net.backbone``,
``net.heads`` and the temporal directions in place and returns which runtime
the network now uses; without onnxruntime it leaves torch.
"""

from __future__ import annotations

import os
import warnings
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
from torch import nn

from posetracker.model.backbone import MoveNetBackbone
from posetracker.model.heads import PoseHeads
from posetracker.model.network import PoseNet
from posetracker.model.onnx_checks import identity, mark_checked, was_checked
from posetracker.model.onnx_pads import fold_pads
from posetracker.model.preprocess import FIT_MULTIPLE
from posetracker.model.temporal import Direction
from posetracker.model.weights import weights_key

INPUT_SIZE = 256
EXPORT_VERSION = 3  # bump when an export changes, so that cached files are made again
#: the exports take any input whose sides are multiples of this (aspect-fitted frames, ``preprocess.letterbox``)
SIDE_MULTIPLE = FIT_MULTIPLE
_SESSIONS: OrderedDict = OrderedDict()  # (file, threads) -> onnxruntime.InferenceSession, see ``_session``


def cache_dir() -> Path:
    root = os.environ.get("POSETRACKER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "posetracker")
    return Path(root) / "onnx" / f"v{EXPORT_VERSION}"


def _fits(x: torch.Tensor, multiple: int) -> bool:
    """Both spatial sides of (..., H, W) are positive multiples of ``multiple``."""
    h, w = x.shape[-2:]
    return h > 0 and w > 0 and h % multiple == 0 and w % multiple == 0


class OnnxBackbone(nn.Module):
    """Drop-in for MoveNetBackbone: (N, 3, H, W) RGB 0..255 -> (N, 24, H/4, W/4), via ONNX Runtime.

    H and W: multiples of 32 (256 x 256, or an aspect-fitted 256 x 160, ...). Other
    sizes, and any call with gradients enabled (training), use the torch module it
    was exported from.
    """

    out_channels = MoveNetBackbone.out_channels
    stride = MoveNetBackbone.stride

    def __init__(self, torch_backbone: MoveNetBackbone, onnx_path: Path, threads: int = 1):
        super().__init__()
        self.session = _session(onnx_path, threads)
        self.fallback = torch_backbone
        self.onnx_path = onnx_path

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if not _fits(images, SIDE_MULTIPLE) or torch.is_grad_enabled():
            return self.fallback(images)
        x = images.detach().float().contiguous().numpy()
        (out,) = self.session.run(None, {"images": x})
        return torch.from_numpy(out)


HEAD_KEYS = ("heatmap_logits", "offsets", "vectors", "depth")


class _AsTuple(nn.Module):
    """A module with a dict output, with a tuple output (``keys`` in order), for export."""

    def __init__(self, module: nn.Module, keys: tuple[str, ...]):
        super().__init__()
        self.module, self.keys = module, keys

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.module(x)
        return tuple(out[k] for k in self.keys)


class _OnnxDict(nn.Module):
    """Drop-in for a module with one (N, C, H, W) input and a dict of outputs, via ONNX Runtime: H = W =
    ``side``, or (``side`` 0) any H and W that are multiples of ``multiple``. Other sizes, and any call
    with gradients enabled, use the torch module it was exported from."""

    keys: tuple[str, ...] = ()
    input_name = ""
    side = 0
    multiple = 1

    def __init__(self, torch_module: nn.Module, onnx_path: Path, threads: int = 1):
        super().__init__()
        self.session = _session(onnx_path, threads)
        self.fallback = torch_module

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        fits = x.shape[-2:] == (self.side, self.side) if self.side else _fits(x, self.multiple)
        if not fits or torch.is_grad_enabled():
            return self.fallback(x)
        outs = self.session.run(None, {self.input_name: x.detach().float().contiguous().numpy()})
        return {k: torch.from_numpy(v) for k, v in zip(self.keys, outs)}


class OnnxHeads(_OnnxDict):
    """Drop-in for PoseHeads: (N, 24, h, w) -> dict of head outputs, via ONNX Runtime (h, w multiples of 8)."""

    keys, input_name, multiple = HEAD_KEYS, "features", SIDE_MULTIPLE // 4

    def __init__(self, torch_heads: PoseHeads, onnx_path: Path, threads: int = 1):
        super().__init__(torch_heads, onnx_path, threads)
        self.spec = torch_heads.spec


class _DirectionStep(nn.Module):
    """A direction's full step (x, ctx, s) -> (ctx, s), for export."""

    def __init__(self, direction: Direction):
        super().__init__()
        self.direction = direction

    def forward(self, x: torch.Tensor, ctx: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.direction.step(x, ctx, s)


class _DirectionFirst(nn.Module):
    """A direction's first step with a later one to follow: x -> ctx (the state is x itself), for export."""

    def __init__(self, direction: Direction):
        super().__init__()
        self.direction = direction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctx, _ = self.direction.step(x, None, None)
        return ctx


class OnnxDirection(nn.Module):
    """Drop-in for one temporal direction (``model.temporal.Direction``): its ``step`` via ONNX Runtime.

    x, s: (N, 24, h, w); ctx: (N, hidden, h/2, w/2), h and w multiples of 8. Other sizes, other state
    combinations and calls with gradients enabled use the torch module.
    """

    def __init__(self, torch_direction: Direction, paths: tuple[Path, Path], threads: int = 1):
        super().__init__()
        self.full, self.first = _session(paths[0], threads), _session(paths[1], threads)
        self.fallback = torch_direction

    def step(self, x: torch.Tensor, ctx: torch.Tensor | None, s: torch.Tensor | None, last: bool = False
             ) -> tuple[torch.Tensor | None, torch.Tensor]:
        if s is None and last:
            return None, x
        if torch.is_grad_enabled() or not _fits(x, SIDE_MULTIPLE // 4) or (ctx is None) != (s is None):
            return self.fallback.step(x, ctx, s, last)
        xa = x.detach().float().contiguous().numpy()
        if s is None:
            (c,) = self.first.run(None, {"x": xa})
            return torch.from_numpy(c), x
        c, s_new = self.full.run(None, {"x": xa, "ctx": ctx.detach().float().contiguous().numpy(),
                                        "s": s.detach().float().contiguous().numpy()})
        return torch.from_numpy(c), torch.from_numpy(s_new)


def _session(onnx_path: Path, threads: int):
    """An ONNX Runtime session for the file, shared with the sessions already made for the same file and thread
    count in this process (a run is stateless and may be called from several threads; the last few are kept)."""
    key = (identity([Path(onnx_path)]), threads)
    if key in _SESSIONS:
        _SESSIONS.move_to_end(key)
        return _SESSIONS[key]
    _SESSIONS[key] = made = _new_session(onnx_path, threads)
    while len(_SESSIONS) > 12:
        _SESSIONS.popitem(last=False)
    return made


def _new_session(onnx_path: Path, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, threads)
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    # Worker threads that spin between runs starve torch, the decoder and the other sessions on a
    # small CPU: with 2 threads live mode ran at 5.7 instead of 19 fps here. Let them sleep instead.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])


def _export(module: nn.Module, dummies: tuple[torch.Tensor, ...], path: Path, inputs: list[str], outs: list[str],
            spatial: bool = True) -> Path:
    """Export to ONNX with a dynamic batch axis (and, ``spatial``, dynamic H and W of every 4-D tensor);
    written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")  # two processes exporting at once do not share a file
    axes = {name: ({0: "n", 2: "h", 3: "w"} if spatial else {0: "n"}) for name in [*inputs, *outs]}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), dummies, str(tmp), input_names=inputs, output_names=outs,
                          dynamic_axes=axes, opset_version=17, dynamo=False)
    tmp.replace(path)
    return path


def export_backbone(backbone: MoveNetBackbone, path: Path) -> Path:
    """Export the backbone to ONNX (dynamic batch and size, multiples of 32), its SAME pads folded into the
    convolutions (the same pads for every even size)."""
    raw = path.with_suffix(f".{os.getpid()}.raw.onnx")  # the cached file only ever appears folded
    try:
        _export(backbone, (torch.zeros(1, 3, INPUT_SIZE, INPUT_SIZE),), raw, ["images"], ["features"])
        fold_pads(raw, path)
    finally:
        raw.unlink(missing_ok=True)
    return path


def export_heads(heads: PoseHeads, path: Path) -> Path:
    """Export the heads to ONNX (dynamic batch and size, 24-channel features)."""
    dummy = torch.zeros(1, MoveNetBackbone.out_channels, INPUT_SIZE // 4, INPUT_SIZE // 4)
    return _export(_AsTuple(heads, HEAD_KEYS), (dummy,), path, ["features"], list(HEAD_KEYS))


def export_direction(direction: Direction, paths: tuple[Path, Path]) -> tuple[Path, Path]:
    """Export a temporal direction's full step and first step to ONNX (dynamic batch and size, 24-channel features)."""
    side = INPUT_SIZE // 4
    x = torch.zeros(1, MoveNetBackbone.out_channels, side, side)
    ctx = torch.zeros(1, direction.gru.hidden, side // 2, side // 2)
    _export(_DirectionStep(direction), (x, ctx, x.clone()), paths[0], ["x", "ctx", "s"], ["ctx_out", "s_out"])
    _export(_DirectionFirst(direction), (x,), paths[1], ["x"], ["ctx_out"])
    return paths


def accelerate(net: PoseNet, threads: int = 1, check: bool = True) -> str:
    """Run ``net``'s backbone, heads and temporal steps with ONNX Runtime if possible; returns "onnxruntime" or "torch"."""
    if isinstance(net.backbone, OnnxBackbone) and isinstance(net.heads, OnnxHeads):
        return "onnxruntime"
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "torch"
    backbone, heads, temporal = net.backbone, net.heads, net.temporal
    dirs = (temporal.forward_dir, temporal.backward_dir)
    paths = [cache_dir() / f"backbone-{weights_key(backbone)}.onnx", cache_dir() / f"heads-{weights_key(heads)}.onnx"]
    dir_paths = [(cache_dir() / f"direction-{key}.onnx", cache_dir() / f"direction-{key}-first.onnx")
                 for key in map(weights_key, dirs)]
    try:
        if not paths[0].exists():
            export_backbone(backbone, paths[0])
        if not paths[1].exists():
            export_heads(heads, paths[1])
        for d, dp in zip(dirs, dir_paths):
            if not all(p.exists() for p in dp):
                export_direction(d, dp)
        fast_backbone, fast_heads = OnnxBackbone(backbone, paths[0], threads), OnnxHeads(heads, paths[1], threads)
        fast_dirs = [OnnxDirection(d, dp, threads) for d, dp in zip(dirs, dir_paths)]
        files = identity([*paths, *(p for dp in dir_paths for p in dp)])
        if check and not was_checked(files, cache_dir()):
            _check(fast_backbone, backbone, fast_heads, heads, list(zip(fast_dirs, dirs)))
            mark_checked(files, cache_dir())
    except Exception as exc:  # any export/runtime problem: keep torch, say why
        warnings.warn(f"ONNX Runtime not used ({exc}); running the network in torch", RuntimeWarning, stacklevel=2)
        for p in [*paths, *(p for dp in dir_paths for p in dp)]:
            p.unlink(missing_ok=True)
        return "torch"
    net.backbone, net.heads = fast_backbone, fast_heads
    temporal.forward_dir, temporal.backward_dir = fast_dirs
    return "onnxruntime"


def _check(fast_backbone, backbone, fast_heads, heads, directions: list[tuple[OnnxDirection, Direction]]) -> None:
    """ONNX against torch, square and aspect-fitted (256 x 160)."""
    for shape in ((INPUT_SIZE, INPUT_SIZE), (INPUT_SIZE * 5 // 8, INPUT_SIZE)):
        _check_shape(fast_backbone, backbone, fast_heads, heads, directions, shape)


def _check_shape(fast_backbone, backbone, fast_heads, heads, directions, shape: tuple[int, int]) -> None:
    def err(fast: torch.Tensor, ref: torch.Tensor) -> float:  # relative to the output's scale (at least 1)
        return float((fast - ref).abs().max()) / max(1.0, float(ref.abs().max()))

    x = torch.rand(1, 3, *shape, generator=torch.Generator().manual_seed(0)) * 255
    with torch.no_grad():
        f = backbone(x)
        errs = [err(fast_backbone(x), f)]
        ref, fast = heads(f), fast_heads(f)
        errs += [err(fast[k], ref[k]) for k in HEAD_KEYS]
        f2 = f.flip(-1)  # a second, different frame
        for fast_dir, torch_dir in directions:
            ctx, s = torch_dir.step(f, None, None)
            ctx_fast, _ = fast_dir.step(f, None, None)
            errs.append(err(ctx_fast, ctx))
            pairs = zip(torch_dir.step(f2, ctx, s), fast_dir.step(f2, ctx, s))
            errs += [err(b, a) for a, b in pairs]
    worst = max(errs)
    if not np.isfinite(worst) or worst > 1e-3:
        raise RuntimeError(f"ONNX network differs from torch by {worst:.2e} of its outputs' scale")


def plain(net: PoseNet) -> PoseNet:
    """Undo ``accelerate``: put the torch modules back (e.g. before training or saving)."""
    if isinstance(net.backbone, OnnxBackbone):
        net.backbone = net.backbone.fallback
    if isinstance(net.heads, OnnxHeads):
        net.heads = net.heads.fallback
    for name in ("forward_dir", "backward_dir"):
        d = getattr(net.temporal, name)
        if isinstance(d, OnnxDirection):
            setattr(net.temporal, name, d.fallback)
    return net


THUNDER_KEYS = ("centre", "heatmap", "regress", "offset")


class OnnxThunder(_OnnxDict):
    """Drop-in for ``model.thunder.ThunderNet``: (N, 3, S, S) RGB 0..255 -> raw heads, via ONNX Runtime
    (S = the net's ``input_size``: Thunder 256, Lightning 192)."""

    keys, input_name = THUNDER_KEYS, "images"

    def __init__(self, torch_module: nn.Module, onnx_path: Path, threads: int = 1):
        super().__init__(torch_module, onnx_path, threads)
        self.side = torch_module.input_size


def accelerate_thunder(net: nn.Module, threads: int = 1) -> nn.Module:
    """``net`` (a ThunderNet, either variant) in ONNX Runtime (cached like the backbone, SAME pads folded),
    checked against torch; ``net`` itself when onnxruntime is missing or the export fails."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return net
    side = net.input_size
    path = cache_dir() / f"thunder-{weights_key(net)}.onnx"
    try:
        if not path.exists():
            raw = path.with_suffix(".raw.onnx")
            try:
                _export(_AsTuple(net, THUNDER_KEYS), (torch.zeros(1, 3, side, side),), raw, ["images"],
                        list(THUNDER_KEYS), spatial=False)
                fold_pads(raw, path)
            finally:
                raw.unlink(missing_ok=True)
        fast = OnnxThunder(net, path, threads)
        files = identity([path])
        if not was_checked(files, cache_dir()):
            x = torch.rand(2, 3, side, side, generator=torch.Generator().manual_seed(0)) * 255
            with torch.no_grad():
                ref, got = net(x), fast(x)
            worst = max(float((got[k] - ref[k]).abs().max()) for k in THUNDER_KEYS)
            if not np.isfinite(worst) or worst > 1e-3:
                raise RuntimeError(f"ONNX Thunder differs from torch by {worst:.2e}")
            mark_checked(files, cache_dir())
    except Exception as exc:  # any export/runtime problem: keep torch, say why
        warnings.warn(f"ONNX Runtime not used for the crop stage ({exc}); running it in torch", RuntimeWarning, stacklevel=2)
        path.unlink(missing_ok=True)
        return net
    return fast
