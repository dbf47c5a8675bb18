"""MediaPipe Pose (full) timed on a clip: a measuring tool for ``posetracker bench --versus-mediapipe PYTHON``.

Run by *another* interpreter, one whose environment has ``mediapipe`` (its protobuf clashes with the
product's onnx, so it lives in its own virtual environment); this file imports nothing of PoseTracker
and the product never imports it:

    PYTHON posetracker/peers/mediapipe_pose.py CLIP FRAMES [--prefetch]

Reads the first FRAMES frames of CLIP with OpenCV and runs ``mediapipe.solutions.pose`` (model
complexity 1 = pose_landmark_full, smoothing on, video mode) on each, after a warm-up frame; prints one
JSON line: {"fps": frames per second including reading and decoding, "frames": n, "found": frames with
a pose}. ``--prefetch``: a second thread reads and converts the next frames (two ahead) while MediaPipe
runs (OpenCV and MediaPipe's graph release the GIL), for a comparison on more than one core.
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    import cv2
    import mediapipe as mp

    clip, frames = argv[0], int(argv[1])
    prefetch = "--prefetch" in argv[2:]
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
        for rgb in (_prefetched if prefetch else _read)(cap, frames, cv2):
            result = pose.process(rgb)
            found += result.pose_landmarks is not None
            n += 1
        elapsed = time.perf_counter() - t0
    print(json.dumps({"fps": n / elapsed if elapsed > 0 else 0.0, "frames": n, "found": found}))
    return 0


def _read(cap, frames: int, cv2):
    """The first ``frames`` frames of ``cap``, RGB, read when asked for."""
    for _ in range(frames):
        ok, bgr = cap.read()
        if not ok:
            return
        yield cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _prefetched(cap, frames: int, cv2):
    """:func:`_read` on a thread of its own, up to two frames ahead."""
    import queue
    import threading

    box: queue.Queue = queue.Queue(maxsize=2)
    thread = threading.Thread(target=lambda: [*map(box.put, _read(cap, frames, cv2)), box.put(None)], daemon=True)
    thread.start()
    while (rgb := box.get()) is not None:
        yield rgb
    thread.join()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
