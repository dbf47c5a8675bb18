#!/usr/bin/env python3
"""Which way a tracked person faces: a contact sheet with their left side red and right side blue, and the
agreement with hand-marked spans (``posetracker.tracking.facing``).

    posetracker process ../shared/data/video/sleap_dance_human/dance.mp4 --out dance.json
    python studies/tools/facing_sheet.py ../shared/data/video/sleap_dance_human/dance.mp4 dance.json \\
        --frames 204:312:6 --front 0-210 312-449 --back 220-300 --out sheet.png

A person facing the camera has their left (red) on the image's right; seen from behind, on its left. The
agreement counts the frames of the track (``--track``, default the first) whose trunk (shoulders and hips, 3-D) faces as marked.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import av
import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from posetracker.export import read_sequence  # noqa: E402
from posetracker.tracking.facing import trunk_yaw  # noqa: E402
from posetracker.tracks import person_tracks  # noqa: E402
from side_swaps import spans  # noqa: E402  (frame spans "a-b", this folder's script)

LIMBS = [("shoulder", "hip"), ("hip", "knee"), ("knee", "ankle"), ("shoulder", "elbow"), ("elbow", "wrist")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("video")
    ap.add_argument("poses")
    ap.add_argument("--out", required=True, help="contact sheet .png")
    ap.add_argument("--frames", default="0:100:10", help="start:stop:step")
    ap.add_argument("--front", nargs="*", default=[], help="frame spans marked facing the camera (a-b)")
    ap.add_argument("--back", nargs="*", default=[], help="frame spans marked seen from behind (a-b)")
    ap.add_argument("--cols", type=int, default=9)
    ap.add_argument("--track", type=int, default=None, help="track id (default: the first)")
    args = ap.parse_args()
    seq = read_sequence(args.poses)
    spec = seq.skeleton
    tracks = person_tracks(seq)
    track = tracks[args.track] if args.track is not None else next(iter(tracks.values()))
    yaw, _ = trunk_yaw(track.world.astype(np.float64), track.confidence >= 0.3, spec)
    faces = np.abs(yaw) < 90  # nan (trunk not seen) counts as not facing the camera
    frames = track.frames.tolist()
    for name, marked, want in (("facing the camera", args.front, True), ("from behind", args.back, False)):
        if marked:
            m = spans(marked, max(frames) + 1)[frames] & track.present
            print(f"marked {name}: {int(m.sum())} frames, read so in {(faces[m] == want).mean():.3f}")
    start, stop, step = (int(v) for v in args.frames.split(":"))
    want_frames = set(range(start, stop, step))
    row_of = {f: i for i, f in enumerate(frames)}
    tiles = []
    with av.open(args.video) as c:
        for i, frame in enumerate(c.decode(video=0)):
            if i in want_frames:
                im = frame.to_ndarray(format="bgr24")
                thick = max(2, im.shape[0] // 300)
                r = row_of.get(i)
                if r is not None and track.present[r]:
                    kp = track.keypoints[r]
                    for side, colour in (("left", (0, 0, 255)), ("right", (255, 0, 0))):
                        for a, b in LIMBS:
                            p, q = kp[spec.index(f"{side}_{a}"), :2], kp[spec.index(f"{side}_{b}"), :2]
                            if np.isfinite(p).all() and np.isfinite(q).all():
                                cv2.line(im, tuple(int(v) for v in p), tuple(int(v) for v in q), colour, thick)
                    xy = kp[np.isfinite(kp[:, :2]).all(-1), :2]  # crop to the person (box 1.4x, at least 1/3 frame)
                    c, half = xy.mean(0), max(0.7 * float(np.ptp(xy, 0).max()), im.shape[0] / 6)
                    y0, x0 = (max(0, int(c[k] - half)) for k in (1, 0))
                    im = im[y0:int(c[1] + half), x0:int(c[0] + half)]
                cv2.putText(im, str(i), (5, 5 + im.shape[0] // 14), 0, im.shape[0] / 500, (0, 255, 255), thick)
                tiles.append(cv2.resize(im, (300, 400)))
            if i >= stop:
                break
    blank = np.zeros_like(tiles[0])
    tiles += [blank] * (-len(tiles) % args.cols)
    rows = [np.hstack(tiles[k:k + args.cols]) for k in range(0, len(tiles), args.cols)]
    cv2.imwrite(args.out, np.vstack(rows))
    print(f"sheet -> {args.out}")


if __name__ == "__main__":
    main()
