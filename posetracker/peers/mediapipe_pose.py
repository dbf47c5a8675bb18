"""MediaPipe Pose (full) timed on a clip: a measuring tool for ``posetracker bench --versus-mediapipe PYTHON``.

Run by *another* interpreter, one whose environment has ``mediapipe`` (its protobuf clashes with the
product's onnx, so it lives in its own virtual environment); this file imports nothing of PoseTracker
and the product never imports it:

    PYTHON posetracker/peers/mediapipe_pose.py CLIP FRAMES

Reads the first FRAMES frames of CLIP with OpenCV and runs ``mediapipe.solutions.pose`` (model
complexity 1 = pose_landmark_full, smoothing on, video mode) on each, after a warm-up frame; prints one
JSON line: {"fps": frames per second including reading and decoding, "frames": n, "found": frames with
a pose}.
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    import cv2
    import mediapipe as mp

    clip, frames = argv[0], int(argv[1])
    cap = cv2.VideoCapture(clip)
    ok, first = cap.read()
    if not ok:
        print(json.dumps({"error": f"cannot read {clip}"}))
        return 2
    with mp.solutions.pose.Pose(static_image_mode=False, model_complexity=1, smooth_landmarks=True) as pose:
        pose.process(cv2.cvtColor(first, cv2.COLOR_BGR2RGB))  # warm-up (graph start, model load)
        cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
        n = found = 0
        t0 = time.perf_counter()
        while n < frames:
            ok, bgr = cap.read()
            if not ok:
                break
            result = pose.process(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
            found += result.pose_landmarks is not None
            n += 1
        elapsed = time.perf_counter() - t0
    print(json.dumps({"fps": n / elapsed if elapsed > 0 else 0.0, "frames": n, "found": found}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
