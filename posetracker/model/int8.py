"""The live graph with an 8-bit MobileNetV2 body and temporal recurrences (ONNX Runtime static quantization, QDQ).

The fused live graph (``model/fused.py``) is exported in float, then the convolutions under the
companion's prefixes are quantised: per-channel int8 weights, uint8 activations whose ranges were
calibrated once on frames of the training clips (``posetracker train int8-calibrate``). By default (``QUANTISE``)
these are the backbone's MobileNetV2 body but its stem and first block (``KEEP_FLOAT``), and the
convolutions of both temporal directions (ConvGRUs, memory gates). The FPN, the fusion and the heads stay float: quantising the heads measured 3 % faster and twice the offsets' error.

What ships, beside the weights (``posenet-<skeleton>.int8.safetensors``, the *companion*):

- tensors ``fpn.*``: the FPN the graph uses (shapes as ``MoveNetBackbone.fpn``; the shipped file holds
  the float model's own FPN);
- tensors ``body.*`` (optional, float16): the MobileNetV2 body the graph quantises, fine-tuned for 8 bits
  (``posetracker train int8-qat``: simulated 8-bit arithmetic, distilled towards the float network's features);
  without them the graph quantises the float body;
- metadata ``ranges``: JSON {tensor name: [lowest, highest]} of the quantised nodes' activations;
  ``body`` / ``fpn_from``: hashes of the float body and FPN it was made for (other weights: not used);
  ``quantise``: name prefixes of the quantised nodes (absent in older files: the body only);
  ``keep_float``: name fragments of nodes under those prefixes left in float;
  ``lookahead``: the look-ahead of the graph the ranges were calibrated on (absent: 1). A graph of another
  look-ahead names its recurrences' tensors otherwise, so there only the body is quantised.

At first use the graph is exported and quantised with those ranges, and cached like the other
exports. Shapes are those of ``live_graph.LiveStep``: (N, 3, H, W) frames, H and W multiples of 32. The
quantiser's INFO / WARNING log lines and Python warnings stay off the console (:func:`quiet_quantiser`), for the
command line and the app alike, and the logging configuration is left as it was.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from posetracker.model.live_graph import export_live_step, fused_key, torch_parts
from posetracker.model.network import PoseNet

BODY = "/backbone/body/"
QUANTISE = (BODY, "Conv:/gru", "Conv:/gate")  # what new companions quantise: every node under a prefix, or only
# the convolutions under an "Conv:" entry (here the ConvGRUs and memory gates of both temporal directions in
# live_graph.LiveStep; their elementwise gating stays float: measured faster and closer to float than all of it)
OLD_QUANTISE = (BODY,)  # companions without a "quantise" entry
CALIBRATED_LOOKAHEAD = 1  # the look-ahead of the graph whose ranges a companion without a "lookahead" entry holds
# name fragments of nodes under QUANTISE left in float: the body's stem and first block (stride 2), where 8 bits
# added jitter on the webcam clip for +0.2-0.3 ms of float (studies/runtime-speed.md)
KEEP_FLOAT: tuple[str, ...] = ("/body/stem/", "/body/blocks.0/")
FORMAT = "posetracker-int8-1"
QUIET_PACKAGES = ("onnxruntime",)  # the quantiser's INFO / WARNING lines stay off the console (errors still show)


def _from_quiet_package(record: logging.LogRecord) -> bool:
    path = record.pathname.replace("\\", "/")
    return any(record.name == p or record.name.startswith(p + ".") or f"/{p}/" in path for p in QUIET_PACKAGES)


class _QuietQuantiser(logging.Filter):
    """Drops records under ERROR from ``QUIET_PACKAGES``: onnxruntime's quantiser logs through the root logger
    itself (``logging.warning(...)``), so its records are told by the file they come from."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or not _from_quiet_package(record)


class _AsWithoutHandlers(logging.Handler):
    """The root logger's stand-in handler while it has none: records go where they would have gone without it
    (``logging.lastResort``), and its presence keeps ``logging.warning(...)`` from calling ``basicConfig``."""

    def emit(self, record: logging.LogRecord) -> None:
        last = logging.lastResort
        if last is not None and record.levelno >= last.level:
            last.handle(record)


@contextmanager
def quiet_quantiser() -> Iterator[None]:
    """For the duration: ONNX Runtime's INFO / WARNING log records and its Python warnings are dropped (its
    quantiser logs "Please consider to run pre-processing before quantization...", "Created a copy of bias
    input..." through the root logger), and its module-level ``logging.warning`` cannot install a console
    handler on an unconfigured root logger (``logging.basicConfig``); afterwards the logging configuration
    (root filters and handlers, the package loggers' levels) and the warning filters are as before."""
    root = logging.getLogger()
    quiet = _QuietQuantiser()
    stand_in = _AsWithoutHandlers() if not root.handlers else None
    named = [logging.getLogger(name) for name in QUIET_PACKAGES]
    levels = [logger.level for logger in named]
    root.addFilter(quiet)
    if stand_in is not None:
        root.addHandler(stand_in)
    for logger in named:  # their named loggers (records that propagate to root)
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            for name in QUIET_PACKAGES:
                warnings.filterwarnings("ignore", module=rf"{name}(\..*)?$")
            yield
    finally:
        for logger, level in zip(named, levels):
            logger.setLevel(level)
        if stand_in is not None:
            root.removeHandler(stand_in)
        root.removeFilter(quiet)


def part_hash(net: PoseNet, part: str = "body") -> str:
    """16 hex digits naming the float weights of the backbone's ``part`` ("body" or "fpn"), independent of
    the torch version."""
    module = getattr(getattr(net.backbone, "fallback", net.backbone), part)
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().float().numpy().tobytes())
    return h.hexdigest()[:16]


def companion_for(net: PoseNet) -> Path | None:
    """The shipped companion made for ``net``'s float body and FPN, or None (other weights: no 8-bit graph)."""
    from posetracker.model.weights import default_weights_path

    path = companion_path(default_weights_path(net.spec.name))
    return path if companion_fits(net, path) else None


def companion_fits(net: PoseNet, path: Path) -> bool:
    """Whether ``path`` is a readable companion made for ``net``'s float body and FPN (the live graph's or a crop
    model's still graph's, ``model/still_int8.py``)."""
    if not path.is_file():
        return False
    try:
        _, meta = read_companion(path)
    except Exception:  # unreadable: the float graph
        return False
    return meta.get("body") == part_hash(net, "body") and meta.get("fpn_from") == part_hash(net, "fpn")


def companion_path(weights: str | Path) -> Path:
    weights = Path(weights)
    return weights.with_name(weights.name.replace(".safetensors", ".int8.safetensors"))


def quantised_nodes(model, keep_float: tuple[str, ...] = KEEP_FLOAT, prefixes: tuple[str, ...] = QUANTISE) -> list[str]:
    """Names of the nodes to quantise in ``model`` (an onnx ModelProto): those under ``prefixes`` (an entry
    "Conv:PREFIX": only the Conv nodes under PREFIX) whose names hold none of ``keep_float``."""
    every = tuple(p for p in prefixes if not p.startswith("Conv:"))
    convs = tuple(p[len("Conv:"):] for p in prefixes if p.startswith("Conv:"))
    return [n.name for n in model.graph.node
            if (n.name.startswith(every) or (n.op_type == "Conv" and n.name.startswith(convs)))
            and not any(k in n.name for k in keep_float)]


def calibrate(float_path: Path, feeds: list[dict[str, np.ndarray]], percentile: float = 99.99,
              keep_float: tuple[str, ...] = KEEP_FLOAT, samples: int = 4096, seed: int = 0,
              prefixes: tuple[str, ...] = QUANTISE) -> dict[str, list[float]]:
    """Activation ranges {tensor: [lowest, highest]} of the quantised nodes' tensors in the float live graph at
    ``float_path``, over ``feeds`` (the graph's inputs): the ``100 - percentile`` and ``percentile``
    percentiles of ``samples`` values drawn per tensor and feed (with 0 inside the range). Memory grows
    with samples x feeds, not with the tensors' sizes (ORT's own calibrator keeps every value)."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(float_path))
    nodes = set(quantised_nodes(model, keep_float, prefixes))
    consts = {i.name for i in model.graph.initializer}
    wanted = sorted({t for n in model.graph.node if n.name in nodes for t in (*n.input, *n.output)
                     if t and t not in consts})
    have = {o.name for o in model.graph.output}
    for name in wanted:
        if name not in have:
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # keep every tensor
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    drawn: dict[str, list[np.ndarray]] = {k: [] for k in wanted}
    names = [o.name for o in sess.get_outputs()]
    for feed in feeds:
        for name, value in zip(names, sess.run(None, feed)):
            if name in drawn:
                flat = value.ravel()
                pick = rng.integers(0, flat.size, min(samples, flat.size))
                drawn[name].append(np.concatenate([flat[pick], [flat.min(), flat.max()]]))
    out = {}
    for name, parts in drawn.items():
        x = np.concatenate(parts)
        out[name] = [float(min(0.0, np.percentile(x, 100 - percentile))), float(max(0.0, np.percentile(x, percentile)))]
    return out


def quantise(float_path: Path, ranges: dict[str, list[float]], dst: Path,
             keep_float: tuple[str, ...] = KEEP_FLOAT, prefixes: tuple[str, ...] = QUANTISE) -> Path:
    """Write ``float_path`` with the nodes under ``prefixes`` quantised (per-channel int8 weights, uint8 activations in
    ``ranges``) to ``dst``, atomically; the quantiser quiet (:func:`quiet_quantiser`)."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.calibrate import (
        CalibrationMethod,
        TensorData,
        TensorsData,
    )

    nodes = quantised_nodes(onnx.load(str(float_path)), keep_float, prefixes)
    data = TensorsData(CalibrationMethod.Percentile, {
        k: TensorData(lowest=np.float32(lo), highest=np.float32(hi)) for k, (lo, hi) in ranges.items()})
    with tempfile.TemporaryDirectory() as tmp:
        from onnxruntime.quantization.calibrate import save_tensors_data

        cache = Path(tmp) / "ranges.json"
        save_tensors_data(data, cache)
        out = Path(tmp) / "q.onnx"
        with quiet_quantiser():
            quantize_static(str(float_path), str(out), None, quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, nodes_to_quantize=nodes,
                            calibrate_method=CalibrationMethod.Percentile, calibration_cache_path=str(cache))
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp_dst = dst.with_suffix(f".{os.getpid()}.tmp")  # two processes quantising at once do not share a file
        onnx.save(onnx.load(str(out)), str(tmp_dst))
        tmp_dst.replace(dst)
    return dst


def read_companion(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(path), "pt") as f:
        meta = f.metadata() or {}
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path} is not an int8 companion (format {meta.get('format')!r})")
    return load_file(str(path)), meta


def write_companion(path: Path, fpn: torch.nn.Module, net: PoseNet, ranges: dict[str, list[float]],
                    keep_float: tuple[str, ...] = KEEP_FLOAT, note: str = "",
                    prefixes: tuple[str, ...] = QUANTISE, lookahead: int = CALIBRATED_LOOKAHEAD,
                    body: dict[str, torch.Tensor] | None = None) -> None:
    """Write the companion at ``path``: ``ranges`` were calibrated on the live graph of ``lookahead``. ``body``:
    a state dict of the MobileNetV2 body fine-tuned for 8 bits (``posetracker train int8-qat``), stored in float16
    (the graph quantises it to 8 bits per channel anyway); None: the graph quantises the float body."""
    from safetensors.torch import save_file

    state = {f"fpn.{k}": v.detach().cpu().contiguous() for k, v in fpn.state_dict().items()}
    state.update({f"body.{k}": v.detach().cpu().half().contiguous() for k, v in (body or {}).items()})
    meta = {"format": FORMAT, "body": part_hash(net, "body"), "fpn_from": part_hash(net, "fpn"), "ranges": json.dumps(ranges), "keep_float": json.dumps(keep_float),
            "quantise": json.dumps(prefixes), "lookahead": str(lookahead),
            "note": note}
    save_file(state, str(path), meta)


def companion_parts(tensors: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None]:
    """A companion's tensors -> (the FPN's state dict, the 8-bit-tuned body's state dict in float32 or None)."""
    fpn = {k[len("fpn."):]: v for k, v in tensors.items() if k.startswith("fpn.")}
    body = {k[len("body."):]: v.float() for k, v in tensors.items() if k.startswith("body.")}
    return fpn, body or None


def with_fpn(net: PoseNet, fpn_state: dict[str, torch.Tensor], body_state: dict[str, torch.Tensor] | None = None
             ) -> PoseNet:
    """A torch copy of ``net`` (ONNX drop-ins unwrapped; ``net`` untouched) whose FPN has ``fpn_state`` (and
    whose body has ``body_state``, when given)."""
    backbone, fwd, bwd, heads, fusion = torch_parts(net)
    new = PoseNet(net.spec)
    for dst, src in ((new.backbone, backbone), (new.temporal.forward_dir, fwd), (new.temporal.backward_dir, bwd),
                     (new.heads, heads), (new.temporal.fusion, fusion)):
        dst.load_state_dict(src.state_dict())
    new.backbone.fpn.load_state_dict(fpn_state)
    if body_state is not None:
        new.backbone.body.load_state_dict(body_state)
    return new.eval()


def int8_session(net: PoseNet, lookahead: int, companion: Path, threads: int = 1, sparse: bool = False):
    """The ONNX Runtime session of the 8-bit live graph for ``net`` (built and cached at first use; ``sparse``:
    the graph of ``live_graph.LiveStep(sparse=True)``), or None when the companion does not fit ``net``'s body."""
    from posetracker.model.runtime import _session, cache_dir

    tensors, meta = read_companion(companion)
    if meta.get("body") != part_hash(net, "body") or meta.get("fpn_from") != part_hash(net, "fpn"):
        return None
    tuned = with_fpn(net, *companion_parts(tensors))
    prefixes = tuple(json.loads(meta.get("quantise", json.dumps(OLD_QUANTISE))))
    if lookahead != int(meta.get("lookahead", CALIBRATED_LOOKAHEAD)):
        # the recurrences' tensors are named by their place in the graph of the calibrated look-ahead (another
        # look-ahead unrolls other steps under other names): there, only the body (the same per frame) in 8 bits
        prefixes = tuple(p for p in prefixes if p in OLD_QUANTISE)
    key = hashlib.sha256((fused_key(tuned, lookahead, sparse) + meta["ranges"] + meta["keep_float"] + repr(prefixes)
                          ).encode()).hexdigest()[:16]
    path = cache_dir() / f"live-int8-{key}.onnx"
    if not path.exists():
        raw = cache_dir() / f"live-int8-{key}.float.onnx"
        try:
            export_live_step(tuned, lookahead, raw, sparse=sparse)
            quantise(raw, json.loads(meta["ranges"]), path, tuple(json.loads(meta["keep_float"])), prefixes)
        finally:
            raw.unlink(missing_ok=True)
    return _session(path, threads)
