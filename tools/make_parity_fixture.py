#!/usr/bin/env python3
"""Build tests/data/movenet_parity.npz: reference outputs of the ORIGINAL
MoveNet MultiPose TF.js graph (run with Node + tfjs 4.22.0, see
tools/tfjs_reference/README.md), so a test can check the PyTorch rebuild
without Node in CI.

Usage (from the repository root, after `cd tools/tfjs_reference && npm ci`):

    python3 tools/make_parity_fixture.py [--shared ../shared] [--out tests/data/movenet_parity.npz]

Fixture keys, per input i (all arrays float32, NHWC exactly as TF.js returns them):
    input_{i}       (256,256,3) uint8 RGB -- only for synthetic inputs
    path_{i}        str, image path relative to the shared folder -- real images
    sha256_{i}      str, sha256 of letterbox_256(rgb).tobytes() -- real images
    centre_{i}      (1,64,64,1)   centre heatmap logits  (center_0/conv2d_4/BiasAdd)
    heatmap_{i}     (1,64,64,17)  keypoint heatmap logits (kpt_heatmap_0/conv2d_7/BiasAdd)
    regress_{i}     (1,64,64,34)  centre->keypoint regression (kpt_regress_0/conv2d_8/BiasAdd)
    offset_{i}      (1,64,64,34)  keypoint sub-cell offsets (kpt_offset_0/conv2d_9/BiasAdd)
    box_scale_{i}   (1,64,64,2)   box height/width (box_scale_0/conv2d_5/BiasAdd)
    box_offset_{i}  (1,64,64,2)   box centre offset (box_offset_0/conv2d_6/BiasAdd)
    fpn_{i}         (1,64,64,24)  FPN output (model_1/re_lu_2/Relu)
    final_{i}       (1,6,56)      graph output `Identity`
Global keys: n_inputs, kind_{i} ('synthetic'|'image'), backend, tfjs_version,
preprocess, nodes (JSON: short name -> graph node), cpu_vs_<backend>_maxabs (JSON,
max |tfjs cpu - tfjs <backend>| per output over all inputs), f64_vs_<backend>_maxabs
(JSON, max |float64 numpy network (graph_f64.py) - tfjs <backend>| per head).

Real images are never stored (licence rule): only their path and the sha256
of the preprocessed 256x256x3 uint8 input.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parent.parent
TFJS_DIR = REPO / "tools" / "tfjs_reference"
MODEL_REL = "pretrained/movenet/movenet-multipose.json"

# Multi-person COCO val2014 photos (paths relative to the shared folder).
REAL_IMAGES = [
    "data/video/images_openpose_coco_val2014_unlabeled/COCO_val2014_000000000241.jpg",  # portrait, 3 people
    "data/video/images_openpose_coco_val2014_unlabeled/COCO_val2014_000000000395.jpg",  # crowd, 5-6 people
    "data/video/images_openpose_coco_val2014_unlabeled/COCO_val2014_000000000544.jpg",  # 4 people
]

HEADS = ["centre", "heatmap", "regress", "offset", "box_scale", "box_offset", "fpn", "final"]

PREPROCESS = (
    "letterbox top-left, INTER_AREA shrink / INTER_LINEAR enlarge, zero pad: "
    "s = 256/max(h,w); new (w,h) = (floor(w*s+0.5), floor(h*s+0.5)) clamped to [1,256] "
    "(the longer side is exactly 256); cv2.resize(rgb, (nw,nh)) with INTER_AREA if s<1, "
    "INTER_LINEAR if s>1, no resize if s==1; pasted at [0:nh,0:nw] of a zero 256x256x3 "
    "uint8 canvas. Images read with cv2.imread (BGR) then cv2.cvtColor BGR2RGB."
)


def letterbox_256(rgb: np.ndarray) -> np.ndarray:
    """Scale the longer side to 256 keeping aspect, paste at top-left of a black 256x256x3 uint8 canvas."""
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"expected HxWx3 uint8, got {rgb.shape} {rgb.dtype}")
    h, w = rgb.shape[:2]
    s = 256.0 / max(h, w)
    nw = min(256, max(1, int(np.floor(w * s + 0.5))))
    nh = min(256, max(1, int(np.floor(h * s + 0.5))))
    if (nw, nh) == (w, h):
        resized = rgb
    else:
        interp = cv2.INTER_AREA if s < 1.0 else cv2.INTER_LINEAR
        resized = cv2.resize(rgb, (nw, nh), interpolation=interp)
    out = np.zeros((256, 256, 3), np.uint8)
    out[:nh, :nw] = resized
    return out


def synthetic_input() -> np.ndarray:
    """Deterministic 256x256x3 uint8 RGB: smooth colour gradients + filled shapes."""
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:256, 0:256].astype(np.float64) / 255.0
    img = np.stack(
        [
            255 * (0.5 + 0.5 * np.sin(2 * np.pi * (0.7 * xx + 0.2 * yy))),
            255 * yy,
            255 * (1.0 - xx) * (0.5 + 0.5 * np.cos(3 * np.pi * yy)),
        ],
        axis=-1,
    )
    img = np.clip(np.round(img), 0, 255).astype(np.uint8)
    img = np.ascontiguousarray(img)
    for _ in range(6):
        c = tuple(int(v) for v in rng.integers(0, 256, 3))
        center = (int(rng.integers(20, 236)), int(rng.integers(20, 236)))
        axes = (int(rng.integers(8, 60)), int(rng.integers(8, 60)))
        angle = float(rng.integers(0, 180))
        cv2.ellipse(img, center, axes, angle, 0, 360, c, thickness=-1, lineType=cv2.LINE_8)
    for _ in range(4):
        c = tuple(int(v) for v in rng.integers(0, 256, 3))
        x0, y0 = (int(v) for v in rng.integers(0, 200, 2))
        x1, y1 = x0 + int(rng.integers(10, 56)), y0 + int(rng.integers(10, 56))
        cv2.rectangle(img, (x0, y0), (x1, y1), c, thickness=-1)
    return img


def load_image(shared: Path, rel: str) -> np.ndarray:
    bgr = cv2.imread(str(shared / rel), cv2.IMREAD_COLOR)
    if bgr is None:
        raise FileNotFoundError(shared / rel)
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def run_node(model_json: Path, in_dir: Path, out_dir: Path, backend: str) -> None:
    if not (TFJS_DIR / "node_modules").is_dir():
        sys.exit(f"missing {TFJS_DIR}/node_modules: run `cd tools/tfjs_reference && npm ci` first")
    cmd = ["node", str(TFJS_DIR / "run_movenet.mjs"), str(model_json), str(in_dir), str(out_dir), f"--backend={backend}"]
    subprocess.run(cmd, check=True, cwd=TFJS_DIR)


def read_outputs(out_dir: Path, name: str) -> tuple[dict[str, np.ndarray], dict]:
    meta = json.loads((out_dir / f"{name}.json").read_text())
    arrs = {}
    for k in HEADS:
        a = np.fromfile(out_dir / f"{name}.{k}.f32", dtype="<f4")
        arrs[k] = a.reshape(meta["shapes"][k]).astype(np.float32)
    return arrs, meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("POSETRACKER_SHARED", Path(__file__).resolve().parents[1].parent / "shared")))
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "movenet_parity.npz")
    ap.add_argument("--backend", default="wasm", choices=["wasm", "cpu"])
    ap.add_argument("--no-cross-check", action="store_true", help="skip the second run on the other backend")
    ap.add_argument("--no-f64", action="store_true", help="skip the float64 numpy reference (graph_f64.py)")
    args = ap.parse_args()

    model_json = args.shared / MODEL_REL
    inputs: list[tuple[str, np.ndarray, str | None]] = [("synthetic", synthetic_input(), None)]
    for rel in REAL_IMAGES:
        inputs.append(("image", letterbox_256(load_image(args.shared, rel)), rel))

    fixture: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        in_dir, out_dir, out2_dir = tmp / "in", tmp / "out", tmp / "out2"
        in_dir.mkdir()
        for i, (_, img, _) in enumerate(inputs):
            assert img.shape == (256, 256, 3) and img.dtype == np.uint8
            np.ascontiguousarray(img).tofile(in_dir / f"in{i}.u8")
        run_node(model_json, in_dir, out_dir, args.backend)
        other = "cpu" if args.backend == "wasm" else "wasm"
        cross = {}
        if not args.no_cross_check:
            run_node(model_json, in_dir, out2_dir, other)

        meta0 = None
        for i, (kind, img, rel) in enumerate(inputs):
            arrs, meta = read_outputs(out_dir, f"in{i}")
            meta0 = meta0 or meta
            assert meta["backend"] == args.backend, meta["backend"]
            fixture[f"kind_{i}"] = np.array(kind)
            if kind == "synthetic":
                fixture[f"input_{i}"] = img
            else:
                fixture[f"path_{i}"] = np.array(rel)
                fixture[f"sha256_{i}"] = np.array(hashlib.sha256(np.ascontiguousarray(img).tobytes()).hexdigest())
            for k, a in arrs.items():
                fixture[f"{k}_{i}"] = a
            if not args.no_cross_check:
                arrs2, _ = read_outputs(out2_dir, f"in{i}")
                for k in HEADS:
                    cross[k] = max(cross.get(k, 0.0), float(np.abs(arrs[k] - arrs2[k]).max()))

    fixture["n_inputs"] = np.array(len(inputs))
    fixture["backend"] = np.array(meta0["backend"])
    fixture["tfjs_version"] = np.array(meta0["tfjs_version"])
    fixture["preprocess"] = np.array(PREPROCESS)
    fixture["nodes"] = np.array(json.dumps(meta0["nodes"]))
    if cross:
        fixture[f"{other}_vs_{args.backend}_maxabs"] = np.array(json.dumps(cross))
        print(f"max |{other} - {args.backend}| per output:", json.dumps(cross))

    if not args.no_f64:
        # Distance of the float32 TF.js result from the exact (float64) network: the
        # floor for any float32 re-implementation's parity tolerance.
        sys.path.insert(0, str(TFJS_DIR))
        import graph_f64

        model, weights = graph_f64.load_weights(model_json)
        f64 = {}
        for i, (_, img, _) in enumerate(inputs):
            ref = graph_f64.run_graph(model, weights, img, list(graph_f64.HEAD_NODES.values()))
            for k, node in graph_f64.HEAD_NODES.items():
                f64[k] = max(f64.get(k, 0.0), float(np.abs(fixture[f"{k}_{i}"] - ref[node]).max()))
        fixture[f"f64_vs_{args.backend}_maxabs"] = np.array(json.dumps(f64))
        print(f"max |float64 numpy - {args.backend}| per head:", json.dumps(f64))

    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **fixture)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB), backend={meta0['backend']}, "
          f"tfjs {meta0['tfjs_version']}, {len(inputs)} inputs")
    for i in range(len(inputs)):
        print(f"  input {i} ({inputs[i][0]}): person scores", np.round(fixture[f"final_{i}"][0, :, 55], 3).tolist())


if __name__ == "__main__":
    main()
