"""The fastest step of each BVH file's root between consecutive frames (studies/floor-and-feet.md, people leaving the image).

    python studies/tools/root_speed.py FILE.bvh [FILE.bvh ...]

Per file: frames, the largest root (Hips) translation between two consecutive frames in cm, the frame it ends
on (the file's own numbering; its report's start_frame gives the clip's), and that step as a speed in m/s; then
the largest step over the take's first and over its last ``END_FRAMES`` frames in cm (where a person enters or
leaves the image). A walking person's root moves 1-2 cm a frame at 50 fps (~1.5 m/s); tens of cm a frame read
as a teleport.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

END_FRAMES = 10  # frames at each end of a file whose largest root step is listed


def root_path(path: Path) -> tuple[np.ndarray, float]:
    """A BVH file -> (root xyz (T, 3) in the file's units, frame time s); the root's first three channels."""
    lines = path.read_text().splitlines()
    m = lines.index("MOTION")
    frame_s = float(lines[m + 2].split(":")[1])
    rows = np.array([[float(v) for v in line.split()[:3]] for line in lines[m + 3:] if line.strip()])
    return rows, frame_s


def main(paths: list[str]) -> None:
    print(f"file | frames | max root step cm | at frame | m/s | first {END_FRAMES} cm | last {END_FRAMES} cm")
    for p in paths:
        xyz, frame_s = root_path(Path(p))
        if len(xyz) < 2:
            print(f"{Path(p).name} | {len(xyz)} | - | - | - | - | -")
            continue
        step = np.linalg.norm(np.diff(xyz, axis=0), axis=1)  # cm (the exporter writes centimetres)
        i = int(np.argmax(step))
        print(f"{Path(p).name} | {len(xyz)} | {step[i]:.1f} | {i + 1} | {step[i] / 100 / frame_s:.1f} | "
              f"{step[:END_FRAMES - 1].max():.1f} | {step[-(END_FRAMES - 1):].max():.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
