"""The floor every export stands people on, drawn into the video frames (issue #46, the crowd's moving camera).

    python studies/tools/floor_overlay.py VIDEO OUT.png RESULT.json [RESULT.json ...] --frames 30,90,175 [--width 480]

One row per result, one column per frame (the sequence's positions = the video's frames here). Per panel: the
floor of the result (``analysis.held_ground.held_ground``: the finishing step's, each frame turned by its
``turn`` where the camera tilts; the level-camera fallback where none was fitted) as a 1 m grid projected with
the result's camera (``metadata.camera.fov_deg`` across the long side, principal point at the centre), and per
person their lower ankle (world coordinates, projected) joined to the floor point straight below it, with its
height above the floor less the person's ankle height in cm (green within 5 cm, red beyond). The row's title
names the result and whether its floor was fitted and turned.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def _camera_points(frame, i: int, q: np.ndarray) -> np.ndarray:
    """(N, 3) floor-frame points -> (N, 3) camera space of sequence frame ``i``."""
    p = (q - frame.translation) @ frame.rotation  # the camera the floor was fitted in
    turn = getattr(frame, "turn", None)
    return p if turn is None else p @ turn[i]  # C_i^T p, row vectors


def _project(p: np.ndarray, focal: float, size: tuple[int, int]) -> np.ndarray:
    w, h = size
    return np.stack([w / 2 + focal * p[:, 0] / p[:, 2], h / 2 + focal * p[:, 1] / p[:, 2]], 1)


def _grid(img: np.ndarray, frame, i: int, focal: float) -> None:
    size = (img.shape[1], img.shape[0])
    lines = [np.stack([np.full(200, x), np.zeros(200), np.linspace(-30, -0.5, 200)], 1) for x in range(-8, 9)]
    lines += [np.stack([np.linspace(-8, 8, 200), np.zeros(200), np.full(200, z)], 1) for z in range(-30, 0)]
    for q in lines:
        p = _camera_points(frame, i, q)
        uv = _project(p, focal, size)
        ok = p[:, 2] > 0.3
        for a, b, good in zip(uv[:-1], uv[1:], ok[:-1] & ok[1:]):
            if good and np.abs(np.concatenate([a, b])).max() < 1e5:
                cv2.line(img, tuple(int(v) for v in a), tuple(int(v) for v in b), (255, 255, 0), 1, cv2.LINE_AA)


def panel(video: cv2.VideoCapture, seq, ground, i: int) -> np.ndarray:
    from posetracker.analysis.foot_contact import FEET

    video.set(cv2.CAP_PROP_POS_FRAMES, int(seq.frames[i].index))
    ok, img = video.read()
    if not ok:
        raise SystemExit(f"cannot read frame {seq.frames[i].index}")
    frame = ground.frame
    focal = max(img.shape[1], img.shape[0]) / 2 / np.tan(np.radians(seq.metadata["camera"]["fov_deg"]) / 2)
    _grid(img, frame, i, focal)
    f = seq.frames[i]
    idx = [seq.skeleton.index(f"{s}_ankle") for s in FEET]
    size = (img.shape[1], img.shape[0])
    for p, tid in enumerate(f.track_ids.tolist()):
        if f.world is None:
            continue
        ankles = f.world[p, idx].astype(np.float64)
        if not np.isfinite(ankles).all():
            continue
        turn = getattr(frame, "turn", None)
        ref = ankles if turn is None else ankles @ turn[i].T
        floor_q = ref @ frame.rotation.T + frame.translation  # (2, 3) shared floor frame
        low = int(np.argmin(floor_q[:, 1]))
        height = floor_q[low, 1] - frame.ankle_height.get(int(tid), 0.0)
        below = floor_q[low].copy()
        below[1] = 0.0
        a_uv = _project(ankles[low:low + 1], focal, size)[0]
        b_uv = _project(_camera_points(frame, i, below[None]), focal, size)[0]
        colour = (0, 200, 0) if abs(height) <= 0.05 else (0, 0, 255)
        cv2.line(img, tuple(int(v) for v in a_uv), tuple(int(v) for v in b_uv), colour, 3, cv2.LINE_AA)
        cv2.circle(img, tuple(int(v) for v in a_uv), 5, colour, -1)
        cv2.putText(img, f"{tid}: {100 * height:+.0f}", (int(a_uv[0]) + 6, int(a_uv[1]) + 18),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.7, colour, 2, cv2.LINE_AA)
    cv2.putText(img, f"frame {f.index}", (10, 30), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (255, 255, 255), 2, cv2.LINE_AA)
    return img


def main(argv: list[str] | None = None) -> int:
    from posetracker.analysis.held_ground import held_ground
    from posetracker.export import read_sequence

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("video")
    p.add_argument("out", type=Path)
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--frames", required=True)
    p.add_argument("--width", type=int, default=480)
    args = p.parse_args(argv)
    frames = [int(v) for v in args.frames.split(",")]
    video = cv2.VideoCapture(args.video)
    rows = []
    for path in args.results:
        seq = read_sequence(path)
        ground = held_ground(seq)
        turned = getattr(ground.frame, "turn", None) is not None
        title = f"{path.parent.name}/{path.name}: floor {'fitted' if ground.frame.fitted else 'not fitted'}" \
                + (", turned per frame" if turned else "")
        cells = []
        for i in frames:
            img = panel(video, seq, ground, i)
            cells.append(cv2.resize(img, (args.width, int(img.shape[0] * args.width / img.shape[1]))))
        row = np.concatenate(cells, axis=1)
        bar = np.zeros((34, row.shape[1], 3), np.uint8)
        cv2.putText(bar, title, (8, 24), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (255, 255, 255), 2, cv2.LINE_AA)
        rows.append(np.concatenate([bar, row], axis=0))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(args.out), np.concatenate(rows, axis=0))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
