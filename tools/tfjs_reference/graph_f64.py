#!/usr/bin/env python3
"""Float64 numpy interpreter for the network part of the MoveNet MultiPose
TF.js graph (input -> FPN -> heads); it also runs MoveNet SinglePose Thunder's
network part (``THUNDER_HEAD_NODES``; its input path adds Unpack, ExpandDims and
Squeeze). Used only to measure how far the float32
runtimes (TF.js wasm / cpu, our PyTorch rebuild) are from the exact result,
i.e. what parity tolerance is physically meaningful.

    python3 tools/tfjs_reference/graph_f64.py [--shared ../shared] [--npz tests/data/movenet_parity.npz]

Prints, per stored input and head, max |TF.js(float32) - float64| next to the
head's magnitude. Real images are re-read from the shared folder and checked
against sha256_{i}; the fixture's `preprocess` function is imported from
tools/make_parity_fixture.py.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

HEAD_NODES = {
    "centre": "StatefulPartitionedCall/center_0/conv2d_4/BiasAdd",
    "heatmap": "StatefulPartitionedCall/kpt_heatmap_0/conv2d_7/BiasAdd",
    "regress": "StatefulPartitionedCall/kpt_regress_0/conv2d_8/BiasAdd",
    "offset": "StatefulPartitionedCall/kpt_offset_0/conv2d_9/BiasAdd",
    "box_scale": "StatefulPartitionedCall/box_scale_0/conv2d_5/BiasAdd",
    "box_offset": "StatefulPartitionedCall/box_offset_0/conv2d_6/BiasAdd",
    "fpn": "StatefulPartitionedCall/center_net_mobile_net_v2fpn_feature_extractor/model_1/re_lu_2/Relu",
}

# MoveNet SinglePose Thunder (movenet-thunder.json): four heads, numbered differently.
THUNDER_HEAD_NODES = {
    "centre": "StatefulPartitionedCall/center_0/conv2d_4/BiasAdd",
    "heatmap": "StatefulPartitionedCall/kpt_heatmap_0/conv2d_5/BiasAdd",
    "regress": "StatefulPartitionedCall/kpt_regress_0/conv2d_6/BiasAdd",
    "offset": "StatefulPartitionedCall/kpt_offset_0/conv2d_7/BiasAdd",
    "fpn": "StatefulPartitionedCall/center_net_mobile_net_v2fpn_feature_extractor/model_1/re_lu_2/Relu",
}


def load_weights(model_json: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """Decode the .bin: manifest entries concatenated in order; fp16 where quantization says so."""
    m = json.loads(model_json.read_text())
    blob = b"".join((model_json.parent / p).read_bytes() for g in m["weightsManifest"] for p in g["paths"])
    weights, off = {}, 0
    for g in m["weightsManifest"]:
        for w in g["weights"]:
            n = int(np.prod(w["shape"])) if w["shape"] else 1
            q = w.get("quantization")
            if q:
                assert q["dtype"] == "float16", q
                a = np.frombuffer(blob, "<f2", n, off).astype(np.float32)
                off += 2 * n
            else:
                dt = {"float32": "<f4", "int32": "<i4"}[w["dtype"]]
                a = np.frombuffer(blob, dt, n, off)
                off += 4 * n
            weights[w["name"]] = a.reshape(w["shape"])
    assert off == len(blob), (off, len(blob))
    return m, weights


def _same_pad(x: np.ndarray, k: int, s: int) -> np.ndarray:
    h, w = x.shape[1:3]
    ph = max((-(-h // s) - 1) * s + k - h, 0)
    pw = max((-(-w // s) - 1) * s + k - w, 0)
    return np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))


def conv2d(x, w, s):  # x NHWC, w [kh,kw,cin,cout]
    kh = w.shape[0]
    xp = _same_pad(x, kh, s)
    win = sliding_window_view(xp, (kh, kh), axis=(1, 2))[:, ::s, ::s]  # N,H,W,C,kh,kw
    return np.einsum("nhwcij,ijco->nhwo", win, w, optimize=True)


def depthwise(x, w, s):  # w [kh,kw,cin,mult]
    kh = w.shape[0]
    assert w.shape[3] == 1
    xp = _same_pad(x, kh, s)
    win = sliding_window_view(xp, (kh, kh), axis=(1, 2))[:, ::s, ::s]
    return np.einsum("nhwcij,ijc->nhwc", win, w[..., 0], optimize=True)


def resize_bilinear_half_pixel(x, oh, ow):
    def axis(insz, outsz):
        src = (np.arange(outsz) + 0.5) * (insz / outsz) - 0.5
        f = np.floor(src)
        lo = np.clip(f, 0, insz - 1).astype(int)
        hi = np.clip(np.ceil(src), 0, insz - 1).astype(int)
        return lo, hi, src - f

    y0, y1, ly = axis(x.shape[1], oh)
    x0, x1, lx = axis(x.shape[2], ow)
    top = x[:, y0][:, :, x0] * (1 - lx)[None, None, :, None] + x[:, y0][:, :, x1] * lx[None, None, :, None]
    bot = x[:, y1][:, :, x0] * (1 - lx)[None, None, :, None] + x[:, y1][:, :, x1] * lx[None, None, :, None]
    return top * (1 - ly)[None, :, None, None] + bot * ly[None, :, None, None]


def run_graph(model: dict, weights: dict, rgb_u8: np.ndarray, wanted: list[str]) -> dict[str, np.ndarray]:
    nodes = {n["name"]: n for n in model["modelTopology"]["node"]}
    cache: dict[str, np.ndarray] = {"input": rgb_u8[None].astype(np.float64)}

    def val(ref: str):
        name, _, idx = ref.partition(":")
        r = node_value(name)
        return r[int(idx or 0)] if isinstance(r, tuple) else r  # tuple: a multi-output op (Unpack)

    def node_value(name: str):
        if name in cache:
            return cache[name]
        n = nodes[name]
        op, ins, attr = n["op"], n.get("input", []), n.get("attr", {})
        if op == "Const":
            r = weights[name].astype(np.float64) if weights[name].dtype.kind == "f" else weights[name]
        elif op == "Cast":
            r = val(ins[0]).astype(np.float64)
        elif op in ("Sub",):
            r = val(ins[0]) - val(ins[1])
        elif op in ("Mul",):
            r = val(ins[0]) * val(ins[1])
        elif op == "AddV2":
            r = val(ins[0]) + val(ins[1])
        elif op == "Unpack":
            r = tuple(np.moveaxis(val(ins[0]), int(attr.get("axis", {}).get("i", 0)), 0))
        elif op == "ExpandDims":
            r = np.expand_dims(val(ins[0]), int(val(ins[1])))
        elif op == "Squeeze":
            r = np.squeeze(val(ins[0]), axis=tuple(int(d) for d in attr["squeeze_dims"]["list"]["i"]))
        elif op == "Shape":
            r = np.array(val(ins[0]).shape, np.int32)
        elif op == "StridedSlice":
            b, e = val(ins[1]), val(ins[2])
            assert int(attr["begin_mask"]["i"]) == 0 and int(attr["end_mask"]["i"]) == 0
            r = val(ins[0])[int(b[0]):int(e[0])]
        elif op == "ResizeBilinear":
            assert attr["half_pixel_centers"]["b"] and not attr["align_corners"]["b"]
            oh, ow = (int(v) for v in val(ins[1]))
            r = resize_bilinear_half_pixel(val(ins[0]), oh, ow)
        elif op in ("_FusedConv2D", "FusedDepthwiseConv2dNative", "DepthwiseConv2dNative"):
            s = int(attr["strides"]["list"]["i"][1])
            pad = base64.b64decode(attr["padding"]["s"]).decode()
            w = val(ins[1])
            assert pad == "SAME" or (pad == "VALID" and w.shape[0] == 1), pad
            f = conv2d if op == "_FusedConv2D" else depthwise
            r = f(val(ins[0]), w, s)
            fused = [base64.b64decode(v).decode() for v in attr.get("fused_ops", {}).get("list", {}).get("s", [])]
            for fo in fused:
                if fo == "BiasAdd":
                    r = r + val(ins[2])
                elif fo == "Relu":
                    r = np.maximum(r, 0)
                elif fo == "Relu6":
                    r = np.clip(r, 0, 6)
                else:
                    raise ValueError(f"graph_f64 does not interpret fused op {fo!r}")
        else:
            raise ValueError(f"graph_f64 does not interpret op {op!r} (node {name})")
        cache[name] = r
        return r

    sys.setrecursionlimit(10000)
    return {w: val(w) for w in wanted}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2].parent / "shared")
    ap.add_argument("--npz", type=Path, default=HERE.parent.parent / "tests" / "data" / "movenet_parity.npz")
    args = ap.parse_args()
    from make_parity_fixture import letterbox_256, load_image  # noqa: E402

    model, weights = load_weights(args.shared / "pretrained/movenet/movenet-multipose.json")
    fx = np.load(args.npz)
    for i in range(int(fx["n_inputs"])):
        if f"input_{i}" in fx:
            img = fx[f"input_{i}"]
        else:
            img = letterbox_256(load_image(args.shared, str(fx[f"path_{i}"])))
            assert hashlib.sha256(img.tobytes()).hexdigest() == str(fx[f"sha256_{i}"]), "input hash mismatch"
        out = run_graph(model, weights, img, list(HEAD_NODES.values()))
        parts = []
        for k, node in HEAD_NODES.items():
            d = np.abs(fx[f"{k}_{i}"].astype(np.float64) - out[node]).max()
            parts.append(f"{k} {d:.1e} (|x|max {np.abs(out[node]).max():.1f})")
        print(f"input {i}: max|tfjs - f64|: " + ", ".join(parts))


if __name__ == "__main__":
    main()
