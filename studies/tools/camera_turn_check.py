"""The floor's turn per frame against the camera's own motion seen in the background (issue #46, the crowd clip).

    python studies/tools/camera_turn_check.py VIDEO RESULT.json [--rows 240]

The background (the top ``--rows`` rows of each frame: buildings, above the people) is followed from frame to
frame in two ways, each summed over the clip: the vertical shift by phase correlation (``cv2.phaseCorrelate``),
and a similarity transform (``cv2.estimateAffinePartial2D``, RANSAC) of corners tracked by Lucas-Kanade, whose
angle is the image's rotation. With f the focal length in px (``metadata.camera.fov_deg``), a camera that tilts
by d degrees moves the background by about f tan(d) px up or down, and one that rolls turns the image by the
same angle. RESULT.json's floor (``analysis.held_ground.held_ground``; ``turn`` per frame where the camera
tilts) gives the camera's pitch and roll per frame (``analysis.floor_plane.camera_angles`` of the floor's normal
in that frame's camera). Prints their ranges and, per angle, the correlation with the background's measure and
the slope of a straight-line fit (1: the same size).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def background_motion(video: str, rows: int) -> np.ndarray:
    """(T, 2) per frame: summed vertical shift (px, phase correlation) and image rotation (deg, LK similarity)."""
    cap = cv2.VideoCapture(video)
    prev = None
    out = [[0.0, 0.0]]
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        if prev is not None:
            (_, dy), _ = cv2.phaseCorrelate(prev[:rows].astype(np.float32), grey[:rows].astype(np.float32))
            mask = np.zeros_like(prev)
            mask[:rows] = 255
            p0 = cv2.goodFeaturesToTrack(prev, 400, 0.01, 8, mask=mask)
            p1, status, _ = cv2.calcOpticalFlowPyrLK(prev, grey, p0, None)
            good = status.ravel() == 1
            m, _ = cv2.estimateAffinePartial2D(p0[good], p1[good], method=cv2.RANSAC, ransacReprojThreshold=1.0)
            out.append([out[-1][0] + dy, out[-1][1] + float(np.degrees(np.arctan2(m[1, 0], m[0, 0])))])
        prev = grey
    return np.array(out)


def main(argv: list[str] | None = None) -> int:
    from posetracker.analysis.floor_plane import camera_angles
    from posetracker.analysis.held_ground import held_ground
    from posetracker.export import read_sequence

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("video")
    p.add_argument("result", type=Path)
    p.add_argument("--rows", type=int, default=240)
    args = p.parse_args(argv)
    seq = read_sequence(args.result)
    frame = held_ground(seq).frame
    turn = getattr(frame, "turn", None)
    normals = np.tile(frame.rotation[1], (len(seq.frames), 1)) if turn is None \
        else np.einsum("tji,j->ti", turn, frame.rotation[1])
    angles = np.array([camera_angles(n) for n in normals])  # (T, 2) pitch, roll degrees
    bg = background_motion(args.video, args.rows)[[f.index for f in seq.frames]]
    size = seq.frames[0].image_size
    focal = max(size) / 2 / np.tan(np.radians(seq.metadata["camera"]["fov_deg"]) / 2)
    tilt = np.degrees(np.arctan(bg[:, 0] / focal))
    print(f"{args.result}: floor fitted {frame.fitted}, turned {turn is not None}")
    print(f"background: vertical shift {np.ptp(bg[:, 0]):.0f} px ({np.ptp(tilt):.2f} deg), rotation "
          f"{np.ptp(bg[:, 1]):.2f} deg")
    for name, est, ref in (("pitch", angles[:, 0], tilt), ("roll", angles[:, 1], bg[:, 1])):
        if np.ptp(est) < 1e-9:
            print(f"{name}: constant {est[0]:.2f} deg")
            continue
        r = float(np.corrcoef(est, ref)[0, 1])
        slope = float(np.polyfit(ref, est, 1)[0])
        print(f"{name}: range {np.ptp(est):.2f} deg, correlation with the background {r:+.3f}, slope {slope:+.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
