"""MediaPipe Pose heavy's readings of each person tracked by PoseTracker in one view: a measuring tool.

Run by the interpreter of MediaPipe's own virtual environment (its protobuf clashes with the product's onnx;
the product never imports this file, and this file imports nothing of PoseTracker):

    /opt/mpvenv/bin/python studies/tools/mediapipe_world.py VIDEO RESULTS.json --out MP.json [--min-frames 30]

MediaPipe Pose finds one person an image, so each track of RESULTS.json (``posetracker process --out
X.json``) present in at least ``--min-frames`` frames gets its own ``mediapipe.solutions.pose.Pose``
(model_complexity=2 = pose_landmark_heavy, video mode, landmark smoothing on, as MediaPipe runs a clip) fed
with a crop of each frame around that person: the box of the track's joints (confidence >= 0.2) in the
frame, its centre and size smoothed over 5 frames, enlarged ``--enlarge`` times (default 1.4) and clipped
to the image. Frames where the track is absent are not fed.

The heavy model is downloaded by MediaPipe at run time, which this machine cannot do: copy
``shared/pretrained/blazepose/pose_landmark_heavy.tflite`` (the same release as the wheel's full model) to
``<venv>/lib/python3.11/site-packages/mediapipe/modules/pose_landmark/`` first; the script stops with that
advice when the file is missing.

Output JSON: {"format": "mediapipe-pose-readings", "model_complexity": 2, "video", "results", "enlarge",
"num_frames", "tracks": {id: {"frames": [i, ...], "box": [[x0, y0, x1, y1] px, ...],
"world": [33 x [x, y, z] m (hip-centred) | null, ...], "image": [33 x [x px, y px, z, visibility] | null, ...]}}}
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def track_boxes(results: dict, min_frames: int, min_confidence: float = 0.2) -> dict[int, dict[int, np.ndarray]]:
    """{track id: {frame position: (4,) x0, y0, x1, y1 px}} of the tracks present in >= min_frames frames."""
    boxes: dict[int, dict[int, np.ndarray]] = {}
    for pos, frame in enumerate(results["frames"]):
        for person in frame["people"]:
            if person["id"] < 0:
                continue
            kp = np.array([[np.nan if v is None else v for v in row[:2]] for row in person["keypoints"]], float)
            conf = np.array([0.0 if c is None else c for c in person["confidence"]], float)
            ok = np.isfinite(kp).all(1) & (conf >= min_confidence)
            if ok.sum() >= 3:
                boxes.setdefault(person["id"], {})[pos] = np.r_[kp[ok].min(0), kp[ok].max(0)]
    return {tid: b for tid, b in boxes.items() if len(b) >= min_frames}


def smoothed_crops(boxes: dict[int, np.ndarray], size: tuple[int, int], enlarge: float,
                   window: int = 5) -> dict[int, tuple[int, int, int, int]]:
    """{frame position: integer crop x0, y0, x1, y1}: box centre and size as moving medians over ``window``
    present frames, enlarged, clipped to the image (width, height)."""
    pos = sorted(boxes)
    arr = np.array([boxes[p] for p in pos])
    centre, extent = (arr[:, :2] + arr[:, 2:]) / 2, arr[:, 2:] - arr[:, :2]
    out = {}
    for i, p in enumerate(pos):
        lo, hi = max(0, i - window // 2), min(len(pos), i + window // 2 + 1)
        c, e = np.median(centre[lo:hi], 0), np.median(extent[lo:hi], 0) * enlarge
        x0, y0 = np.maximum(np.floor(c - e / 2), 0).astype(int)
        x1, y1 = np.minimum(np.ceil(c + e / 2), size).astype(int)
        if x1 - x0 >= 16 and y1 - y0 >= 16:
            out[p] = (int(x0), int(y0), int(x1), int(y1))
    return out


def _reading(result, crop: tuple[int, int, int, int]) -> tuple[list | None, list | None]:
    if result.pose_world_landmarks is None or result.pose_landmarks is None:
        return None, None
    x0, y0, x1, y1 = crop
    world = [[lm.x, lm.y, lm.z] for lm in result.pose_world_landmarks.landmark]
    image = [[x0 + lm.x * (x1 - x0), y0 + lm.y * (y1 - y0), lm.z * (x1 - x0), lm.visibility]
             for lm in result.pose_landmarks.landmark]
    return world, image


def _check_heavy_model(mp) -> None:
    model = Path(mp.__file__).parent / "modules" / "pose_landmark" / "pose_landmark_heavy.tflite"
    if not model.exists():
        sys.exit(f"missing {model}: copy shared/pretrained/blazepose/pose_landmark_heavy.tflite there "
                 "(MediaPipe would download it at run time)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("video")
    ap.add_argument("results", help="posetracker-sequence JSON of the same video")
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-frames", type=int, default=30)
    ap.add_argument("--enlarge", type=float, default=1.4)
    args = ap.parse_args(argv)
    import cv2
    import mediapipe as mp

    _check_heavy_model(mp)
    results = json.loads(Path(args.results).read_text())
    cap = cv2.VideoCapture(args.video)
    size = (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)))
    crops = {tid: smoothed_crops(b, size, args.enlarge) for tid, b in track_boxes(results, args.min_frames).items()}
    poses = {tid: mp.solutions.pose.Pose(static_image_mode=False, model_complexity=2, smooth_landmarks=True)
             for tid in crops}
    tracks = {tid: {"frames": [], "box": [], "world": [], "image": []} for tid in crops}
    for pos in range(len(results["frames"])):
        ok, bgr = cap.read()
        if not ok:
            break
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        for tid, by_frame in crops.items():
            if pos not in by_frame:
                continue
            x0, y0, x1, y1 = by_frame[pos]
            world, image = _reading(poses[tid].process(np.ascontiguousarray(rgb[y0:y1, x0:x1])), by_frame[pos])
            rec = tracks[tid]
            rec["frames"].append(pos), rec["box"].append([x0, y0, x1, y1])
            rec["world"].append(world), rec["image"].append(image)
    for pose in poses.values():
        pose.close()
    out = {"format": "mediapipe-pose-readings", "model_complexity": 2, "mediapipe": mp.__version__,
           "video": str(args.video), "results": str(args.results), "enlarge": args.enlarge,
           "num_frames": len(results["frames"]), "tracks": {str(t): r for t, r in tracks.items()}}
    Path(args.out).write_text(json.dumps(out))
    found = {t: sum(w is not None for w in r["world"]) for t, r in tracks.items()}
    print(json.dumps({"video": args.video, "read": found}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
