#!/usr/bin/env python3
"""Draw tracked people (colour and label per track id) on a video's frames.

    python3 tools/render_tracks.py VIDEO POSES.json --out sheet.png [--frames 0:100:9] [--cols 4]
    python3 tools/render_tracks.py VIDEO POSES.json --out tracks.mp4 [--frames 0:100]

POSES.json comes from ``posetracker process VIDEO --out POSES.json``. A .png
output is a contact sheet of the chosen frames; a .mp4 output is a clip.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import av
import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from posetracker.capture import VideoFileSource  # noqa: E402
from posetracker.export import read_sequence  # noqa: E402

PALETTE = [(230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
           (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212), (0, 128, 128), (170, 110, 40)]


def draw(rgb: np.ndarray, pose, spec, min_conf: float = 0.2) -> np.ndarray:
    out = rgb.copy()
    scale = max(1, out.shape[0] // 360)
    for p in range(pose.num_people):
        tid = int(pose.track_ids[p])
        colour = (128, 128, 128) if tid < 0 else PALETTE[tid % len(PALETTE)]
        xy, conf = pose.keypoints[p, :, :2], pose.confidence[p]
        for a, b in map(tuple, spec.edges):
            if spec.root in (a, b) or min(conf[a], conf[b]) < min_conf:
                continue
            cv2.line(out, tuple(map(int, xy[a])), tuple(map(int, xy[b])), colour, 2 * scale, cv2.LINE_AA)
        head = xy[0] if conf[0] >= min_conf else xy[spec.root]
        cv2.putText(out, str(tid) if tid >= 0 else "?", (int(head[0]) - 6, int(head[1]) - 10),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.6 * scale, colour, 2 * scale, cv2.LINE_AA)
    cv2.putText(out, f"frame {pose.index}", (8, 24 * scale), cv2.FONT_HERSHEY_SIMPLEX, 0.7 * scale, (255, 255, 255), 2 * scale)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("video")
    ap.add_argument("poses")
    ap.add_argument("--out", required=True)
    ap.add_argument("--frames", default="0:100:9", help="start:stop[:step]")
    ap.add_argument("--cols", type=int, default=4)
    ap.add_argument("--width", type=int, default=480, help="width of each sheet tile")
    args = ap.parse_args()
    seq = read_sequence(args.poses)
    by_index = {f.index: f for f in seq.frames}
    parts = [int(v) for v in args.frames.split(":")]
    wanted = list(range(*parts))
    tiles = []
    with VideoFileSource(args.video) as src:
        for frame in iter(src.read, None):
            if frame.index > wanted[-1]:
                break
            if frame.index in wanted and frame.index in by_index:
                tiles.append(draw(frame.image, by_index[frame.index], seq.skeleton))
    out = Path(args.out)
    if out.suffix == ".mp4":
        with av.open(str(out), "w") as c:
            s = c.add_stream("mpeg4", rate=round(seq.fps))
            s.height, s.width = tiles[0].shape[:2]
            s.pix_fmt = "yuv420p"
            for t in tiles:
                for pkt in s.encode(av.VideoFrame.from_ndarray(t, format="rgb24")):
                    c.mux(pkt)
            for pkt in s.encode():
                c.mux(pkt)
    else:
        h = int(tiles[0].shape[0] * args.width / tiles[0].shape[1])
        tiles = [cv2.resize(t, (args.width, h), interpolation=cv2.INTER_AREA) for t in tiles]
        while len(tiles) % args.cols:
            tiles.append(np.zeros_like(tiles[0]))
        rows = [np.hstack(tiles[i : i + args.cols]) for i in range(0, len(tiles), args.cols)]
        cv2.imwrite(str(out), cv2.cvtColor(np.vstack(rows), cv2.COLOR_RGB2BGR))
    print(f"wrote {out} ({len(tiles)} frames)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
