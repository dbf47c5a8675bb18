"""How often a one-animal video has its animal, and a contact sheet to check that those readings are on it.

    posetracker process VIDEO --skeleton mouse4 --max-people 1 --out poses.csv [--refiners heatmap graph]
    python studies/tools/found_sheet.py poses.csv VIDEO sheet.png [--sample 48] [--seed 0]

Prints the frames with a reading (of all the video's frames) and the runs of frames without one; draws
``--sample`` frames with a reading, drawn at random, each a crop around the reading with its points (snout
red, ears green and blue, tail base yellow for mouse4; other joints white) and the frame number, so a person
can count the readings that are on the animal. The CSV is PoseTracker's tidy CSV (frame, person_id, joint,
x_px, y_px, confidence).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import av
import cv2
import numpy as np
import pandas as pd

from posetracker.tracking.encounters import frame_runs

COLOURS = {"snout": (0, 0, 255), "leftear": (0, 200, 0), "rightear": (255, 80, 0), "tailbase": (0, 220, 255)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument("video", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--sample", type=int, default=48, help="frames drawn on the sheet (8 a row)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tile", type=int, default=200, help="crop side in source pixels")
    args = ap.parse_args(argv)

    poses = pd.read_csv(args.csv)
    with av.open(str(args.video)) as box:
        total = box.streams.video[0].frames
    found = np.sort(poses.frame.unique())
    missing = np.setdiff1d(np.arange(total), found)
    print(f"frames with a reading: {len(found)} of {total} ({len(found) / total:.1%})")
    print("runs without one:", ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in frame_runs(missing.tolist())) or "none")

    rng = np.random.default_rng(args.seed)
    pick = np.sort(rng.choice(found, size=min(args.sample, len(found)), replace=False))
    wanted, tiles, s = set(int(i) for i in pick), {}, args.tile
    with av.open(str(args.video)) as box:
        for i, frame in enumerate(box.decode(video=0)):
            if i in wanted:
                img = frame.to_ndarray(format="bgr24")
                rows = poses[(poses.frame == i) & (poses.joint != "centre")]
                pts = rows[["x_px", "y_px"]].to_numpy(float)
                cx, cy = np.nanmean(pts, axis=0)
                x0 = int(np.clip(cx - s / 2, 0, img.shape[1] - s))
                y0 = int(np.clip(cy - s / 2, 0, img.shape[0] - s))
                for (x, y), name in zip(pts, rows.joint):
                    if np.isfinite(x):
                        cv2.circle(img, (int(round(x)), int(round(y))), 3, COLOURS.get(name, (255, 255, 255)), -1)
                tile = cv2.resize(img[y0:y0 + s, x0:x0 + s], (160, 160))
                cv2.putText(tile, str(i), (4, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 255, 0), 1)
                tiles[i] = tile
            if i >= pick[-1]:
                break
    row = 8
    cells = [tiles[i] for i in pick] + [np.zeros((160, 160, 3), np.uint8)] * (-len(pick) % row)
    sheet = np.vstack([np.hstack(cells[r:r + row]) for r in range(0, len(cells), row)])
    cv2.imwrite(str(args.out), sheet)
    print(f"sheet of {len(pick)} frames: {args.out}; frames {', '.join(map(str, pick))}")


if __name__ == "__main__":
    main()
