"""The still graph (``model/still_graph.py``) with an 8-bit MobileNetV2 body: a top-down crop model's batch of
crops read with the quantisation of the 8-bit live graph (``model/int8.py``).

The same machinery as the live graph's: the float :class:`still_graph.StillStep` is exported, then the body's
convolutions (``int8.BODY``, but ``int8.KEEP_FLOAT``: the stem and first block) are quantised with ONNX Runtime's
static QDQ quantisation (per-channel int8 weights, uint8 activations) in the ranges of a companion file
(``int8.read_companion``'s format) calibrated on crops of training frames
(``posetracker train int8-calibrate-crops``, ``train/int8_crops.py``). The FPN and the heatmap heads stay float.
The companion sits beside the crop weights: ``posenet-fly13-crops.safetensors`` ->
``posenet-fly13-crops.int8.safetensors`` (``int8.companion_path``); it fits only the float body and FPN it was
made for (``int8.companion_fits``).

    inputs   images          (N, 3, H, W)   RGB 0..255, H and W multiples of 32 (the crops: 256 x 256)
    outputs  heatmaps        (N, K, h, w)   as ``StillStep``'s, from the 8-bit body
             head_features   (N, C, h, w)

Exported and quantised at first use, cached like the other exports under a key of the weights, the ranges and
what is quantised.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from posetracker.model import int8
from posetracker.model.network import PoseNet
from posetracker.model.still_graph import export_still_step, still_key

PREFIXES = (int8.BODY,)  # a still graph has no recurrences: the body only


def calibrate_still(net: PoseNet, crops: list[np.ndarray], percentile: float, dst: Path,
                    keep_float: tuple[str, ...] = int8.KEEP_FLOAT) -> dict[str, list[float]]:
    """Ranges {tensor: [lowest, highest]} of the body's quantised nodes in ``net``'s float still graph over
    ``crops`` (each a batch (N, 3, S, S) float32 0..255), by ``int8.calibrate``; the float graph is written at
    ``dst``."""
    export_still_step(net, dst)
    feeds = [{"images": np.ascontiguousarray(c, np.float32)} for c in crops]
    return int8.calibrate(dst, feeds, percentile, keep_float, prefixes=PREFIXES)


def quantised_still_path(net: PoseNet, companion: Path) -> Path | None:
    """The 8-bit still graph of ``net`` with ``companion``'s ranges (exported and quantised at first use into the
    export cache), or None when the companion was made for other weights."""
    from posetracker.model.runtime import cache_dir

    if not int8.companion_fits(net, companion):
        return None
    tensors, meta = int8.read_companion(companion)
    tuned = int8.with_fpn(net, *int8.companion_parts(tensors))
    prefixes = tuple(json.loads(meta.get("quantise", json.dumps(PREFIXES))))
    keep = tuple(json.loads(meta["keep_float"]))
    key = hashlib.sha256((still_key(tuned) + meta["ranges"] + meta["keep_float"] + repr(prefixes)).encode()
                         ).hexdigest()[:16]
    path = cache_dir() / f"still-int8-{key}.onnx"
    if not path.exists():
        raw = cache_dir() / f"still-int8-{key}.float.onnx"
        try:
            export_still_step(tuned, raw)
            int8.quantise(raw, json.loads(meta["ranges"]), path, keep, prefixes)
        finally:
            raw.unlink(missing_ok=True)
    return path


def int8_still_session(net: PoseNet, companion: Path, threads: int = 1):
    """The ONNX Runtime session of :func:`quantised_still_path`, or None when the companion does not fit."""
    from posetracker.model.runtime import _session

    path = quantised_still_path(net, companion)
    return None if path is None else _session(path, threads)


__all__ = ["PREFIXES", "calibrate_still", "int8_still_session", "quantised_still_path"]
