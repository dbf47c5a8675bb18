"""Read a TFLite flatbuffer (.tflite) with numpy only: tensors, operators, options, weights.

Only what the BlazePose files need is decoded (the first subgraph; the
builtin options of CONV_2D, DEPTHWISE_CONV_2D, ADD, MAX_POOL_2D,
RESIZE_BILINEAR, DEPTH_TO_SPACE, CONCATENATION, RESHAPE), but the reader is
generic. Constant tensors are resolved through the DENSIFY (sparse CSR
weights) and DEQUANTIZE (float16 -> float32) ops that the converter puts in
front of them, so ``graph.constant(t)`` gives the float32 values the runtime
computes with.

Flatbuffer layout (see flatbuffers' internals doc): a table starts with an
int32 offset back to its vtable; the vtable holds uint16 byte offsets of the
fields; references (tables, vectors, strings) are uint32 offsets relative to
where they are stored; a vector is a uint32 length then its elements.
Field numbers below follow tensorflow/lite/schema/schema.fbs (a union takes
two slots: its type, then its value).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# BuiltinOperator codes (schema.fbs) of the ops the BlazePose graphs use.
OP_NAMES = {
    0: "ADD", 2: "CONCATENATION", 3: "CONV_2D", 4: "DEPTHWISE_CONV_2D", 5: "DEPTH_TO_SPACE",
    6: "DEQUANTIZE", 14: "LOGISTIC", 17: "MAX_POOL_2D", 22: "RESHAPE", 23: "RESIZE_BILINEAR",
    34: "PAD", 124: "DENSIFY",
}
# TensorType -> numpy dtype.
_DTYPES = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_, 7: np.int16, 9: np.int8}
ACTIVATIONS = {0: "none", 1: "relu", 2: "relu_n1_to_1", 3: "relu6"}
PADDINGS = {0: "SAME", 1: "VALID"}

# Option tables: (field index, name, struct format) in schema order.
_OPTIONS: dict[str, list[tuple[int, str, str]]] = {
    "CONV_2D": [(0, "padding", "b"), (1, "stride_w", "i"), (2, "stride_h", "i"), (3, "activation", "b"),
                (4, "dilation_w", "i"), (5, "dilation_h", "i")],
    "DEPTHWISE_CONV_2D": [(0, "padding", "b"), (1, "stride_w", "i"), (2, "stride_h", "i"),
                          (3, "depth_multiplier", "i"), (4, "activation", "b"), (5, "dilation_w", "i"),
                          (6, "dilation_h", "i")],
    "MAX_POOL_2D": [(0, "padding", "b"), (1, "stride_w", "i"), (2, "stride_h", "i"), (3, "filter_w", "i"),
                    (4, "filter_h", "i"), (5, "activation", "b")],
    "ADD": [(0, "activation", "b")],
    "CONCATENATION": [(0, "axis", "i"), (1, "activation", "b")],
    "RESIZE_BILINEAR": [(2, "align_corners", "?"), (3, "half_pixel_centers", "?")],
    "DEPTH_TO_SPACE": [(0, "block_size", "i")],
}
_DEFAULTS = {"dilation_w": 1, "dilation_h": 1, "depth_multiplier": 1}


class _Table:
    """A flatbuffer table at byte ``pos`` of ``buf``."""

    def __init__(self, buf: bytes, pos: int):
        self.buf, self.pos = buf, pos
        self.vt = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vt_size = struct.unpack_from("<H", buf, self.vt)[0]

    def _field(self, i: int) -> int:
        o = 4 + 2 * i
        if o >= self.vt_size:
            return 0
        return struct.unpack_from("<H", self.buf, self.vt + o)[0]

    def scalar(self, i: int, fmt: str, default=0):
        o = self._field(i)
        return struct.unpack_from("<" + fmt, self.buf, self.pos + o)[0] if o else default

    def _ref(self, i: int) -> int | None:
        o = self._field(i)
        if not o:
            return None
        p = self.pos + o
        return p + struct.unpack_from("<I", self.buf, p)[0]

    def table(self, i: int) -> _Table | None:
        p = self._ref(i)
        return None if p is None else _Table(self.buf, p)

    def vector(self, i: int, dtype) -> np.ndarray:
        p = self._ref(i)
        if p is None:
            return np.zeros(0, dtype)
        n = struct.unpack_from("<I", self.buf, p)[0]
        return np.frombuffer(self.buf, np.dtype(dtype).newbyteorder("<"), n, p + 4)

    def tables(self, i: int) -> list[_Table]:
        p = self._ref(i)
        if p is None:
            return []
        n = struct.unpack_from("<I", self.buf, p)[0]
        out = []
        for k in range(n):
            e = p + 4 + 4 * k
            out.append(_Table(self.buf, e + struct.unpack_from("<I", self.buf, e)[0]))
        return out

    def string(self, i: int) -> str:
        p = self._ref(i)
        if p is None:
            return ""
        n = struct.unpack_from("<I", self.buf, p)[0]
        return self.buf[p + 4 : p + 4 + n].decode("utf-8")


@dataclass
class TfliteTensor:
    """One tensor: ``shape`` as stored (NHWC activations, OHWI conv weights, 1HWC depthwise)."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: type
    buffer: int
    sparsity: _Table | None = None


@dataclass
class TfliteOp:
    """One operator: ``inputs``/``outputs`` are tensor indices (-1 = absent), ``options`` decoded."""

    index: int
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: dict = field(default_factory=dict)


class TfliteGraph:
    """Operators, tensors and constant data of the first subgraph of a .tflite file."""

    def __init__(self, path: str | Path):
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"TFLite model not found: {path}")
        self.path = path
        buf = path.read_bytes()
        model = _Table(buf, struct.unpack_from("<I", buf, 0)[0])
        codes = []
        for oc in model.tables(1):
            codes.append(max(oc.scalar(0, "b", 0), oc.scalar(3, "i", 0)))
        self._buffers = model.tables(4)
        self._buf = buf
        sub = model.tables(2)[0]
        self.tensors: list[TfliteTensor] = []
        for i, t in enumerate(sub.tables(0)):
            dtype = _DTYPES.get(t.scalar(1, "b", 0))
            if dtype is None:
                raise ValueError(f"{path}: tensor {i} has unsupported type {t.scalar(1, 'b', 0)}")
            self.tensors.append(TfliteTensor(i, t.string(3), tuple(int(s) for s in t.vector(0, np.int32)),
                                             dtype, t.scalar(2, "I", 0), t.table(6)))
        self.inputs = tuple(int(i) for i in sub.vector(1, np.int32))
        self.outputs = tuple(int(i) for i in sub.vector(2, np.int32))
        self.ops: list[TfliteOp] = []
        for k, op in enumerate(sub.tables(3)):
            code = codes[op.scalar(0, "I", 0)]
            name = OP_NAMES.get(code, f"BUILTIN_{code}")
            opts: dict = {}
            table = op.table(4)
            if table is not None:
                for fi, key, fmt in _OPTIONS.get(name, []):
                    opts[key] = table.scalar(fi, fmt, _DEFAULTS.get(key, 0))
            if "activation" in opts:
                opts["activation"] = ACTIVATIONS[opts["activation"]]
            if "padding" in opts:
                opts["padding"] = PADDINGS[opts["padding"]]
            self.ops.append(TfliteOp(k, name, tuple(int(i) for i in op.vector(1, np.int32)),
                                     tuple(int(i) for i in op.vector(2, np.int32)), opts))
        self.producer: dict[int, TfliteOp] = {t: op for op in self.ops for t in op.outputs}
        self.consumers: dict[int, list[TfliteOp]] = {}
        for op in self.ops:
            for t in op.inputs:
                if t >= 0:
                    self.consumers.setdefault(t, []).append(op)

    # -- data -------------------------------------------------------------------------------
    def raw(self, t: int) -> np.ndarray | None:
        """The bytes stored for tensor ``t`` as its dtype (flat), or None for computed tensors."""
        tensor = self.tensors[t]
        if tensor.buffer == 0 or tensor.buffer >= len(self._buffers):
            return None
        b = self._buffers[tensor.buffer]
        data = b.vector(0, np.uint8)
        if data.size == 0:
            off, size = b.scalar(1, "Q", 0), b.scalar(2, "Q", 0)
            if size <= 1:
                return None
            data = np.frombuffer(self._buf, np.uint8, size, off)
        return data.view(np.dtype(tensor.dtype).newbyteorder("<"))

    def constant(self, t: int) -> np.ndarray:
        """Float32 (or int) values of a constant tensor, following DEQUANTIZE/DENSIFY producers."""
        raw = self.raw(t)
        tensor = self.tensors[t]
        if raw is not None:
            if tensor.sparsity is not None:
                return densify(raw, tensor.shape, tensor.sparsity)
            return raw.reshape(tensor.shape).copy()
        op = self.producer.get(t)
        if op is None or op.name not in ("DEQUANTIZE", "DENSIFY"):
            raise ValueError(f"tensor {t} ({tensor.name}) is not a constant")
        src = self.constant(op.inputs[0])
        return src.astype(np.float32) if op.name == "DEQUANTIZE" else src

    def is_constant(self, t: int) -> bool:
        if self.raw(t) is not None:
            return True
        op = self.producer.get(t)
        return op is not None and op.name in ("DEQUANTIZE", "DENSIFY")

    def compute_ops(self) -> list[TfliteOp]:
        """The ops that work on activations (not the weight DEQUANTIZE/DENSIFY ones)."""
        return [op for op in self.ops if op.name not in ("DEQUANTIZE", "DENSIFY")]

    def activation_inputs(self, op: TfliteOp) -> list[int]:
        return [t for t in op.inputs if t >= 0 and not self.is_constant(t)]


def _index_vector(dim: _Table, type_field: int, value_field: int) -> np.ndarray:
    """A SparseIndexVector union (Int32Vector=1, Uint16Vector=2, Uint8Vector=3) as int64."""
    kind = dim.scalar(type_field, "B", 0)
    table = dim.table(value_field)
    if table is None or kind == 0:
        return np.zeros(0, np.int64)
    dtype = {1: np.int32, 2: np.uint16, 3: np.uint8}[kind]
    return table.vector(0, dtype).astype(np.int64)


def densify(values: np.ndarray, shape: tuple[int, ...], sparsity: _Table) -> np.ndarray:
    """Dense array of ``shape`` from TFLite sparse storage (traversal order, DENSE/CSR levels).

    ``values`` are the stored non-zeros in traversal order. Block sparsity
    (``block_map``) is not used by these models and is rejected.
    """
    order = sparsity.vector(0, np.int32)
    if sparsity.vector(1, np.int32).size:
        raise ValueError("block-sparse tensors are not supported by this reader (the BlazePose files use none)")
    dims = sparsity.tables(2)
    # pos: index of each partial path into the next level's segments; coords: per level.
    pos = np.zeros(1, np.int64)
    coords: list[np.ndarray] = []
    for level, dim in enumerate(dims):
        if dim.scalar(0, "b", 0) == 0:  # DENSE
            n = dim.scalar(1, "i", 0)
            coords = [np.repeat(c, n) for c in coords]
            coords.append(np.tile(np.arange(n), pos.size))
            pos = (pos[:, None] * n + np.arange(n)[None, :]).ravel()
        else:  # SPARSE_CSR
            seg = _index_vector(dim, 2, 3)
            idx = _index_vector(dim, 4, 5)
            counts = seg[pos + 1] - seg[pos]
            starts = np.repeat(seg[pos], counts)
            within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            new_pos = starts + within
            coords = [np.repeat(c, counts) for c in coords]
            coords.append(idx[new_pos])
            pos = new_pos
    if pos.size != values.size:
        raise ValueError(f"sparse tensor: {values.size} values for {pos.size} positions")
    dense = np.zeros(shape, values.dtype)
    full = [None] * len(shape)
    for level, d in enumerate(order):
        full[int(d)] = coords[level]
    dense[tuple(full)] = values
    return dense
