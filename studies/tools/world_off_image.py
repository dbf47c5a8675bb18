"""How far each person's world joints (NAME.json ``world``, camera frame, metres) project from their tracked 2-D joints.

    python studies/tools/world_off_image.py RESULT.json [RESULT.json ...] [--every N]

The camera is the file's own (``metadata.camera.fov_deg`` across the long side, principal point at the image
centre). Per frame and person with at least 6 joints of confidence >= 0.3: the median distance of those joints'
projections from their 2-D readings, in % of the person's 2-D height, and the median offset dx, dy (px). Prints
per person the median, 90th percentile and maximum over the frames; ``--every N`` also lists every N-th frame.
(studies/renders-and-gait.md: the world the BVH is made from drifting off the person along the walk.)
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def frame_offsets(path: str) -> np.ndarray:
    """(M, 5) rows of frame, person id, median dx px, median dy px, median distance in % of 2-D height."""
    with open(path) as fh:
        data = json.load(fh)
    fov = data["metadata"]["camera"]["fov_deg"]
    rows = []
    for frame in data["frames"]:
        w, h = frame["image_size"]
        focal = max(w, h) / 2 / np.tan(np.radians(fov) / 2)
        for person in frame["people"]:
            if person.get("world") is None:
                continue
            world = np.asarray(person["world"], float)  # (J, 3) camera frame, x right, y down, z forward
            xy = np.asarray(person["keypoints"], float)[:, :2]  # (J, 2) px
            seen = np.asarray(person["confidence"], float) >= 0.3  # (J,)
            if seen.sum() < 6:
                continue
            uv = np.stack([w / 2 + focal * world[:, 0] / world[:, 2], h / 2 + focal * world[:, 1] / world[:, 2]], 1)
            d = (uv - xy)[seen]
            height = max(np.ptp(xy[seen][:, 1]), 1.0)
            rows.append((frame["index"], person["id"], np.median(d[:, 0]), np.median(d[:, 1]),
                         100 * np.median(np.linalg.norm(d, axis=1)) / height))
    return np.asarray(rows, float).reshape(-1, 5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--every", type=int, default=0, help="also list every N-th frame")
    args = ap.parse_args()
    for path in args.results:
        rows = frame_offsets(path)
        for pid in np.unique(rows[:, 1]):
            q = rows[rows[:, 1] == pid]
            worst = q[q[:, 4].argmax()]
            print(f"{path} person {int(pid)}: {len(q)} frames, off the 2-D median {np.median(q[:, 4]):.1f} %, "
                  f"p90 {np.percentile(q[:, 4], 90):.1f} %, max {worst[4]:.1f} % at frame {int(worst[0])}")
            if args.every:
                for r in q[:: args.every]:
                    print(f"  frame {int(r[0]):4d}  dx {r[2]:6.0f}  dy {r[3]:5.0f} px  {r[4]:5.1f} %")


if __name__ == "__main__":
    main()
