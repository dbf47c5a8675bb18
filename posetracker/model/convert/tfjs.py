"""Read a TF.js graph model (model.json + weight shards) with numpy only.

The weight shards are the weightsManifest entries concatenated in order;
entries whose ``quantization.dtype`` is float16 are stored as 2-byte halves
and widened to float32 here, the others are raw little-endian float32/int32.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_DTYPES = {"float32": np.float32, "int32": np.int32, "bool": np.bool_}
_QUANT = {"float16": np.float16, "uint8": np.uint8, "uint16": np.uint16}


@dataclass(frozen=True)
class GraphNode:
    """One node of the graph: op name, inputs (node names) and decoded attributes."""

    name: str
    op: str
    inputs: tuple[str, ...]
    attrs: dict


class TfjsGraph:
    """Nodes and weights of a TF.js graph model.

    ``weights[name]`` is the numpy array stored for a Const node, float16
    entries widened to float32.
    """

    def __init__(self, json_path: str | Path):
        json_path = Path(json_path)
        if not json_path.exists():
            raise FileNotFoundError(f"TF.js model not found: {json_path}")
        self.path = json_path
        model = json.loads(json_path.read_text())
        self.nodes: dict[str, GraphNode] = {}
        for n in model["modelTopology"]["node"]:
            attrs = {k: _decode_attr(v) for k, v in n.get("attr", {}).items()}
            self.nodes[n["name"]] = GraphNode(n["name"], n["op"], tuple(n.get("input", [])), attrs)
        self.weights: dict[str, np.ndarray] = {}
        for group in model["weightsManifest"]:
            blob = b"".join((json_path.parent / p).read_bytes() for p in group["paths"])
            offset = 0
            for entry in group["weights"]:
                arr, offset = _read_entry(entry, blob, offset)
                self.weights[entry["name"]] = arr
            if offset != len(blob):
                raise ValueError(f"{json_path}: weight shards hold {len(blob)} bytes, manifest describes {offset}")

    def weight(self, name: str) -> np.ndarray:
        try:
            return self.weights[name]
        except KeyError:
            raise KeyError(f"no weight {name!r} in the TF.js model") from None


def _read_entry(entry: dict, blob: bytes, offset: int) -> tuple[np.ndarray, int]:
    shape = tuple(entry["shape"])
    count = int(np.prod(shape)) if shape else 1
    quant = entry.get("quantization")
    if quant:
        qdtype = _QUANT[quant["dtype"]]
        raw = np.frombuffer(blob, qdtype, count, offset)
        offset += raw.nbytes
        if quant["dtype"] == "float16":
            arr = raw.astype(np.float32)
        else:  # affine-quantised integers
            arr = raw.astype(np.float32) * quant["scale"] + quant["min"]
    else:
        dtype = np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")
        arr = np.frombuffer(blob, dtype, count, offset).astype(_DTYPES[entry["dtype"]])
        offset += arr.nbytes
    return arr.reshape(shape), offset


def _decode_attr(v: dict):
    if "list" in v:
        lst = v["list"]
        if "i" in lst:
            return [int(x) for x in lst["i"]]
        if "s" in lst:
            return [base64.b64decode(x).decode() for x in lst["s"]]
        if "f" in lst:
            return [float(x) for x in lst["f"]]
        return []
    if "s" in v:
        return base64.b64decode(v["s"]).decode()
    if "i" in v:
        return int(v["i"])
    if "f" in v:
        return float(v["f"])
    if "b" in v:
        return bool(v["b"])
    return v
