"""Per-call latency of the BlazePose rebuild (torch) and of LiteRT on the .tflite files.

Median of N calls after a warm-up, batch 1, one thread each. LiteRT is optional
(``pip install ai-edge-litert``).

    python studies/tools/blazepose_benchmark.py [--n 10] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from posetracker.train.teachers.blazepose import default_model_dir  # noqa: E402
from posetracker.train.teachers.blazepose_nets import PoseDetectorNet, PoseLandmarkNet  # noqa: E402


def median_ms(fn, n: int) -> float:
    fn()
    fn()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts) * 1000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    d = default_model_dir()
    rng = np.random.default_rng(0)
    res: dict[str, float] = {}
    models = {"detector": ("pose_detection.tflite", 224), "full": ("pose_landmark_full.tflite", 256),
              "heavy": ("pose_landmark_heavy.tflite", 256)}
    for name, (fname, size) in models.items():
        x = rng.random((1, size, size, 3), dtype=np.float32)
        net = (PoseDetectorNet if name == "detector" else PoseLandmarkNet)(d / fname).eval()
        xt = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()
        with torch.inference_mode():
            res[f"torch_{name}"] = median_ms(lambda: net(xt), args.n)
            if name != "detector":
                res[f"torch_{name}_with_heatmap"] = median_ms(lambda: net(xt, heatmap=True), args.n)
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError:
            continue
        it = Interpreter(model_path=str(d / fname), num_threads=args.threads)
        it.allocate_tensors()
        idx = it.get_input_details()[0]["index"]

        def run() -> None:
            it.set_tensor(idx, x)
            it.invoke()

        res[f"litert_{name}"] = median_ms(run, args.n)
    print(json.dumps({k: round(v, 2) for k, v in res.items()}, indent=1))


if __name__ == "__main__":
    main()
