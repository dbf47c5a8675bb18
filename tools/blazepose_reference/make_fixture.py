"""Make tests/data/blazepose_parity.npz: BlazePose outputs of the reference runtime (LiteRT).

Needs PyPI ``ai-edge-litert`` (``pip install ai-edge-litert``; not a project
dependency) and ../shared. Runs the original .tflite files through LiteRT
(default CPU kernels, XNNPACK, as MediaPipe runs them) on

- one synthetic deterministic image (stored in the fixture: a 256x256 landmark
  crop and a 224x224 detector input, uint8);
- frames of shared/data/video clips, referenced by path + sha256 + frame index
  (the pixels are never stored; the test decodes the frame again and checks
  the sha256 of the crop it rebuilds).

For the frames, the whole MediaPipe pipeline (letterbox -> detector -> NMS ->
ROI -> crop -> landmarks -> heatmap refinement -> image coordinates) runs
with LiteRT as the model runtime, via BlazePoseTeacher with its two model
calls replaced, so the stored crop matrices come from the reference outputs.

    python tools/blazepose_reference/make_fixture.py [--out tests/data/blazepose_parity.npz]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import av
import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from posetracker.train.teachers import blazepose_geometry as geo  # noqa: E402
from posetracker.train.teachers.blazepose import BlazePoseTeacher  # noqa: E402

SHARED = REPO.parent / "shared"
FRAMES = [  # (name, path under shared/, frame index)
    ("pose1_f0", "data/video/more/tfjs_pose_test_data/pose_1.mp4", 0),
    ("pose1_f45", "data/video/more/tfjs_pose_test_data/pose_1.mp4", 45),
    ("squats_f10", "data/video/more/tfjs_pose_test_data/pose_squats.mp4", 10),
]
VARIANTS = ("full", "heavy")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_video_frame(path: Path, index: int) -> np.ndarray:
    """Frame ``index`` of a video as (H, W, 3) uint8 RGB (PyAV, rgb24)."""
    with av.open(str(path)) as c:
        for i, frame in enumerate(c.decode(video=0)):
            if i == index:
                return frame.to_ndarray(format="rgb24")
    raise IndexError(f"{path} has no frame {index}")


def synthetic_image(size: int, seed: int, figure_scale: float) -> np.ndarray:
    """A deterministic (size, size, 3) uint8 image: a drawn stick-figure person (head, torso,
    limbs) standing on a smooth coloured background with mild noise. A person-like input keeps
    the networks in their well-conditioned regime (on pure noise, LiteRT's own CPU kernel sets
    disagree with each other by up to 5e-3 px)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) / size
    img = 90 + 60 * xx[..., None] * rng.random(3) + 50 * yy[..., None] * rng.random(3)
    img += rng.normal(0, 4, img.shape)
    img = np.clip(img, 0, 255).astype(np.uint8)
    s = size * figure_scale / 256.0
    c = size / 2.0

    def p(x: float, y: float) -> tuple[int, int]:
        return int(round(c + (x - 128) * s)), int(round(c + (y - 128) * s))

    skin, shirt, pants = (224, 172, 140), (40, 90, 200), (50, 50, 60)
    t = max(2, int(round(14 * s)))
    limbs = [((104, 84), (84, 130), shirt), ((84, 130), (78, 170), skin), ((152, 84), (172, 130), shirt),
             ((172, 130), (178, 170), skin), ((114, 160), (108, 205), pants), ((108, 205), (104, 245), pants),
             ((142, 160), (148, 205), pants), ((148, 205), (152, 245), pants)]
    cv2.fillConvexPoly(img, np.array([p(102, 80), p(154, 80), p(146, 162), p(110, 162)], np.int32), shirt)
    for a, b, col in limbs:
        cv2.line(img, p(*a), p(*b), col, t)
    cv2.circle(img, p(128, 56), max(3, int(round(20 * s))), skin, -1)
    cv2.line(img, p(128, 72), p(128, 80), skin, max(2, int(round(10 * s))))
    return img


class LiteRTTeacher(BlazePoseTeacher):
    """BlazePoseTeacher whose model calls run the .tflite files in LiteRT (1 thread)."""

    def _build(self) -> None:
        from ai_edge_litert.interpreter import Interpreter

        def load(name: str) -> Interpreter:
            it = Interpreter(model_path=str(self.model_dir / name), num_threads=1)
            it.allocate_tensors()
            return it

        self.det_it = load("pose_detection.tflite")
        self.lm_it = load(f"pose_landmark_{self.variant}.tflite")

    @staticmethod
    def _invoke(it, x: np.ndarray) -> dict[str, np.ndarray]:
        it.set_tensor(it.get_input_details()[0]["index"], np.ascontiguousarray(x, np.float32))
        it.invoke()
        return {d["name"]: it.get_tensor(d["index"]).copy() for d in it.get_output_details()}

    def run_detector(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        outs = [self._invoke(self.det_it, xi[None]) for xi in x]
        return np.concatenate([o["Identity"] for o in outs]), np.concatenate([o["Identity_1"] for o in outs])

    def run_landmarks(self, x: np.ndarray) -> dict[str, np.ndarray]:
        outs = [self._invoke(self.lm_it, xi[None]) for xi in x]
        keys = {"landmarks": "Identity", "flag": "Identity_1", "heatmap": "Identity_3", "world": "Identity_4"}
        return {k: np.concatenate([o[v] for o in outs]) for k, v in keys.items()}


def latency_ms(fn, x: np.ndarray, n: int = 10) -> float:
    fn(x)
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(x)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts) * 1000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "blazepose_parity.npz")
    args = ap.parse_args()
    import ai_edge_litert

    model_dir = SHARED / "pretrained" / "blazepose"
    teachers = {v: LiteRTTeacher(v, model_dir=model_dir) for v in VARIANTS}
    data: dict[str, np.ndarray] = {}
    meta: dict = {"runtime": f"ai-edge-litert {getattr(ai_edge_litert, '__version__', '?')}, 1 thread",
                  "models": {}, "frames": [], "latency_ms": {}}
    for name in ["pose_detection"] + [f"pose_landmark_{v}" for v in VARIANTS]:
        meta["models"][name] = sha256_bytes((model_dir / f"{name}.tflite").read_bytes())

    # Synthetic inputs: stored, raw outputs of both models.
    syn_crop, syn_det = synthetic_image(geo.LANDMARK_SIZE, 1, 0.8), synthetic_image(geo.DETECTOR_SIZE, 2, 0.6)
    data["syn/crop"], data["syn/det_input"] = syn_crop, syn_det
    x_det = syn_det.astype(np.float32)[None] * np.float32(2 / 255) - np.float32(1)
    data["syn/det_boxes"], data["syn/det_scores"] = (a[0] for a in teachers["full"].run_detector(x_det))
    x_lm = syn_crop.astype(np.float32)[None] * np.float32(1 / 255)
    for v, t in teachers.items():
        raw = t.run_landmarks(x_lm)
        for k in ("landmarks", "world", "flag"):
            data[f"syn/{v}/{k}"] = raw[k][0]
        meta["latency_ms"][f"landmark_{v}"] = latency_ms(t.run_landmarks, x_lm)
    meta["latency_ms"]["detector"] = latency_ms(teachers["full"].run_detector, x_det)

    # Real frames: references only; the whole pipeline with LiteRT as the runtime.
    for name, rel, index in FRAMES:
        path = SHARED / rel
        rgb = read_video_frame(path, index)
        x, letterbox = geo.detector_input(rgb)
        boxes, scores = teachers["full"].run_detector(x[None])
        data[f"{name}/det_boxes"], data[f"{name}/det_scores"] = boxes[0], scores[0]
        det_u8 = geo.warp(rgb, geo.crop_matrix(letterbox, geo.DETECTOR_SIZE), geo.DETECTOR_SIZE, cv2.BORDER_CONSTANT)
        entry = {"name": name, "path": rel, "file_sha256": sha256_bytes(path.read_bytes()), "frame": index,
                 "frame_shape": list(rgb.shape), "det_input_sha256": sha256_bytes(det_u8.tobytes())}
        for v, t in teachers.items():
            people = t.predict(rgb)
            if len(people) != 1:
                raise RuntimeError(f"{name}: expected one person from the reference pipeline, got {len(people)}")
            p = people[0]
            crop, m = geo.landmark_input(rgb, p.roi)
            raw = t.run_landmarks(crop.astype(np.float32)[None] * np.float32(1 / 255))
            for k in ("landmarks", "world", "flag"):
                data[f"{name}/{v}/{k}"] = raw[k][0]
            if v == "full" and name == FRAMES[0][0]:
                data[f"{name}/{v}/heatmap"] = raw["heatmap"][0]
            data[f"{name}/{v}/e2e_landmarks"], data[f"{name}/{v}/e2e_world"] = p.landmarks, p.world
            data[f"{name}/roi"], data[f"{name}/crop_matrix"] = p.roi.as_array(), m
            entry["crop_sha256"] = sha256_bytes(crop.tobytes())
        meta["frames"].append(entry)
    data["meta"] = np.array(json.dumps(meta, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **data)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
    print(json.dumps(meta["latency_ms"], indent=1))


if __name__ == "__main__":
    main()
