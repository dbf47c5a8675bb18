"""A two-animal clip from a one-animal video of a fixed camera, at the video's own scale.

Issue #23 asks for each animal mode's live speed with two animals, and the shared mouse videos hold one
mouse each. Placing two clips side by side halves the animals' size in the network's input (mouse4 then
finds none), so this composes instead: the background is the per-pixel median of frames spread over the
video; frame t of the output is that background with the animal of frame t and the animal of frame
t + N/2 pasted in (a pixel belongs to an animal where it differs from the background by more than
``--threshold`` grey levels, grown by a few pixels). Both animals keep their real size, look and motion;
where they overlap the later one is drawn on top.

    python studies/tools/two_animal_clip.py ../shared/data/animal/dlc_openfield_mouse/videos/m3v1mp4.mp4 out.mp4 --frames 600

Shapes: frames (H, W, 3) uint8 RGB; masks (H, W) bool.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import av
import cv2
import numpy as np


def read_frames(path: Path) -> tuple[list[np.ndarray], float]:
    """All frames of ``path`` as (H, W, 3) uint8 RGB, and its frame rate."""
    with av.open(str(path)) as box:
        stream = box.streams.video[0]
        fps = float(stream.average_rate or 30)
        frames = [f.to_ndarray(format="rgb24") for f in box.decode(stream)]
    return frames, fps


def background(frames: list[np.ndarray], samples: int = 60) -> np.ndarray:
    """Per-pixel median of ``samples`` frames spread over the video -> (H, W, 3) uint8."""
    pick = np.linspace(0, len(frames) - 1, min(samples, len(frames))).astype(int)
    return np.median(np.stack([frames[i] for i in pick]), axis=0).astype(np.uint8)


def animal_mask(frame: np.ndarray, bg: np.ndarray, threshold: int, grow: int) -> np.ndarray:
    """(H, W) bool: where ``frame`` differs from ``bg`` by more than ``threshold`` (max over channels),
    small specks removed and the rest grown by ``grow`` px."""
    diff = np.abs(frame.astype(np.int16) - bg.astype(np.int16)).max(axis=2)
    mask = (diff > threshold).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    if grow > 0:
        mask = cv2.dilate(mask, np.ones((2 * grow + 1, 2 * grow + 1), np.uint8))
    return mask.astype(bool)


def compose(a: np.ndarray, b: np.ndarray, bg: np.ndarray, threshold: int, grow: int) -> np.ndarray:
    """Background with the animals of frames ``a`` and ``b`` -> (H, W, 3) uint8 (``b`` drawn on top)."""
    out = bg.copy()
    for frame in (a, b):
        m = animal_mask(frame, bg, threshold, grow)
        out[m] = frame[m]
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("video", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--frames", type=int, default=600, help="frames to write (from the start)")
    ap.add_argument("--threshold", type=int, default=40, help="grey levels from the background")
    ap.add_argument("--grow", type=int, default=3, help="pixels added around each animal")
    args = ap.parse_args(argv)

    frames, fps = read_frames(args.video)
    bg = background(frames)
    n, half = len(frames), len(frames) // 2
    with av.open(str(args.out), "w") as box:
        stream = box.add_stream("libx264", rate=round(fps))
        stream.height, stream.width = frames[0].shape[:2]
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "18"}
        for t in range(min(args.frames, n)):
            img = compose(frames[t], frames[(t + half) % n], bg, args.threshold, args.grow)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                box.mux(packet)
        for packet in stream.encode():
            box.mux(packet)
    print(f"wrote {args.out}: {min(args.frames, n)} frames at {fps:.1f} fps, two animals each")


if __name__ == "__main__":
    main()
