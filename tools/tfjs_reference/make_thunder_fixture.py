#!/usr/bin/env python3
"""Build tests/data/thunder_parity.npz: reference outputs of the ORIGINAL MoveNet
SinglePose Thunder TF.js graph (Node + tfjs 4.22.0, `run_movenet.mjs --model=thunder`),
so tests/train/test_teacher_thunder.py can check the PyTorch teacher without Node.

Usage (from the repository root, after `cd tools/tfjs_reference && npm ci`):

    python3 tools/tfjs_reference/make_thunder_fixture.py [--shared ../shared] [--out tests/data/thunder_parity.npz]

Inputs: 0 = the synthetic image of tools/make_parity_fixture.py (stored); 1 = a
person crop of a real photo, made by `crop_around_box` of
posetracker/train/teachers/movenet_thunder.py from `path_{i}` + `box_{i}`. Only the
path, the box and the sha256 of the 256x256x3 uint8 crop are stored, never the pixels.
The fixture must stay under 3 MB: each input's heads take about 1.3 MB compressed,
so it holds two inputs (the synthetic one and one real crop).

Keys per input i (arrays float32, NHWC exactly as TF.js returns them):
    input_{i}    (256,256,3) uint8 RGB -- synthetic input only
    path_{i}     str, image path relative to the shared folder -- real crops
    box_{i}      (4,) float64 person box x1, y1, x2, y2 px -- real crops
    sha256_{i}   str, sha256 of the crop's bytes (C order) -- real crops
    centre_{i}   (1,64,64,1)  center_0/conv2d_4/BiasAdd (logits)
    heatmap_{i}  (1,64,64,17) kpt_heatmap_0/conv2d_5/BiasAdd (logits)
    regress_{i}  (1,64,64,34) kpt_regress_0/conv2d_6/BiasAdd ((dy, dx) per keypoint, cells)
    offset_{i}   (1,64,64,34) kpt_offset_0/conv2d_7/BiasAdd ((dy, dx) per keypoint, cells)
    final_{i}    (1,1,17,3)   graph output `Identity`: (y, x, score), normalised
Global: n_inputs, kind_{i}, backend, tfjs_version, model, nodes (JSON), crop (text),
centre_weight (64,64) float32 (the graph's centre prior Const, so the decode test runs
without the model files),
cpu_vs_<backend>_maxabs and f64_vs_<backend>_maxabs (JSON, max abs per output over
all inputs; f64 = graph_f64.py's float64 run of the network part). The FPN output is
run and cross-checked but not stored (size).
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

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tools"), str(HERE)]

import graph_f64  # noqa: E402
from make_parity_fixture import load_image, synthetic_input  # noqa: E402

from posetracker.model.thunder import centre_weight, crop_around_box  # noqa: E402

MODEL_REL = "pretrained/movenet/movenet-thunder.json"
HEADS = ["centre", "heatmap", "regress", "offset", "fpn", "final"]
STORED = ["centre", "heatmap", "regress", "offset", "final"]
# (image relative to the shared folder, person box x1, y1, x2, y2 in px from its normalized.json)
REAL_CROPS = [
    # the middle woman (AIC instance 0): window 680 px, 13 px of zero padding at the top, INTER_AREA
    ("data/human/mmpose_aic/054d9ce9201beffc76e5ff2169d2af2f027002ca.jpg", (279.0, 55.0, 492.0, 599.0)),
]
CROP = ("crop_around_box (posetracker/train/teachers/movenet_thunder.py): square window of side "
        "S = round(1.25 * longer box side) centred on the box, zero padding, cv2.resize to 256 "
        "(INTER_AREA if S > 256, INTER_LINEAR if S < 256); image read with cv2.imread + BGR2RGB")


def run_node_model(model_json: Path, in_dir: Path, out_dir: Path, backend: str) -> None:
    """run_movenet.mjs with --model=thunder on every IN_DIR/<name>.u8."""
    if not (HERE / "node_modules").is_dir():
        sys.exit(f"missing {HERE}/node_modules: run `cd tools/tfjs_reference && npm ci` first")
    cmd = ["node", str(HERE / "run_movenet.mjs"), str(model_json), str(in_dir), str(out_dir),
           f"--backend={backend}", "--model=thunder"]
    subprocess.run(cmd, check=True, cwd=HERE)


def _read(out_dir: Path, name: str) -> tuple[dict[str, np.ndarray], dict]:
    meta = json.loads((out_dir / f"{name}.json").read_text())
    arrs = {k: np.fromfile(out_dir / f"{name}.{k}.f32", dtype="<f4").reshape(meta["shapes"][k]).astype(np.float32)
            for k in HEADS}
    return arrs, meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("POSETRACKER_SHARED", Path(__file__).resolve().parents[2].parent / "shared")))
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "thunder_parity.npz")
    ap.add_argument("--backend", default="wasm", choices=["wasm", "cpu"])
    args = ap.parse_args()

    model_json = args.shared / MODEL_REL
    inputs: list[tuple[str, np.ndarray, str | None, tuple | None]] = [("synthetic", synthetic_input(), None, None)]
    for rel, box in REAL_CROPS:
        crop, _ = crop_around_box(load_image(args.shared, rel), box)
        inputs.append(("image", crop, rel, box))

    other = "cpu" if args.backend == "wasm" else "wasm"
    fixture: dict[str, np.ndarray] = {}
    cross: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        in_dir, out_dir, out2_dir = tmp / "in", tmp / "out", tmp / "out2"
        in_dir.mkdir()
        for i, (_, img, _, _) in enumerate(inputs):
            assert img.shape == (256, 256, 3) and img.dtype == np.uint8
            np.ascontiguousarray(img).tofile(in_dir / f"in{i}.u8")
        run_node_model(model_json, in_dir, out_dir, args.backend)
        run_node_model(model_json, in_dir, out2_dir, other)
        meta0 = None
        for i, (kind, img, rel, box) in enumerate(inputs):
            arrs, meta = _read(out_dir, f"in{i}")
            arrs2, _ = _read(out2_dir, f"in{i}")
            meta0 = meta0 or meta
            assert meta["backend"] == args.backend and meta["model"] == "thunder", meta
            fixture[f"kind_{i}"] = np.array(kind)
            if kind == "synthetic":
                fixture[f"input_{i}"] = img
            else:
                fixture[f"path_{i}"] = np.array(rel)
                fixture[f"box_{i}"] = np.array(box, np.float64)
                fixture[f"sha256_{i}"] = np.array(hashlib.sha256(np.ascontiguousarray(img).tobytes()).hexdigest())
            for k in STORED:
                fixture[f"{k}_{i}"] = arrs[k]
            for k in HEADS:
                cross[k] = max(cross.get(k, 0.0), float(np.abs(arrs[k] - arrs2[k]).max()))
            if i == 0:
                fpn0 = arrs["fpn"]

    # Distance of the float32 TF.js result from the exact (float64) network part.
    model, weights = graph_f64.load_weights(model_json)
    f64: dict[str, float] = {}
    for i, (_, img, _, _) in enumerate(inputs):
        ref = graph_f64.run_graph(model, weights, img, list(graph_f64.THUNDER_HEAD_NODES.values()))
        for k, node in graph_f64.THUNDER_HEAD_NODES.items():
            got = fpn0 if k == "fpn" else fixture[f"{k}_{i}"]
            if k == "fpn" and i > 0:
                continue
            f64[k] = max(f64.get(k, 0.0), float(np.abs(got - ref[node]).max()))

    fixture["n_inputs"] = np.array(len(inputs))
    fixture["backend"] = np.array(meta0["backend"])
    fixture["tfjs_version"] = np.array(meta0["tfjs_version"])
    fixture["model"] = np.array(MODEL_REL)
    fixture["nodes"] = np.array(json.dumps(meta0["nodes"]))
    fixture["crop"] = np.array(CROP)
    fixture["centre_weight"] = centre_weight(model_json)
    fixture[f"{other}_vs_{args.backend}_maxabs"] = np.array(json.dumps(cross))
    fixture[f"f64_vs_{args.backend}_maxabs"] = np.array(json.dumps(f64))
    print(f"max |{other} - {args.backend}| per output:", json.dumps(cross))
    print(f"max |float64 numpy - {args.backend}| per head (fpn: input 0 only):", json.dumps(f64))

    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **fixture)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB), backend={meta0['backend']}, "
          f"tfjs {meta0['tfjs_version']}, {len(inputs)} inputs")
    for i in range(len(inputs)):
        print(f"  input {i} ({inputs[i][0]}): mean score {fixture[f'final_{i}'][0, 0, :, 2].mean():.3f}")


if __name__ == "__main__":
    main()
