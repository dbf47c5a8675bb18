"""posetracker calibrate's accuracy on synthetic board clips of known cameras (studies/metres.md).

    python studies/tools/board_calibration_check.py [--frames 40] [--still 6]

Renders tests/helpers/board_clips.py's clips (3 cameras 960 x 720, focal 700 / 780 / 860 px, radial distortion --k1; the board
waved, then lying on the floor) for a ChArUco 7x5 board and a 7x6 checkerboard (the third camera upside down),
calibrates them (posetracker.calibration.calibrate_board) and prints, per camera, the focal length's error, the
principal point's, the camera centre's (the world's origin at the floor board's corner) and the rotation's,
and the reprojection rms after bundle adjustment.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))


def main() -> None:
    from board_clips import FLOOR_AT, rig, write_clips

    from posetracker.calibration import Board, calibrate_board

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--still", type=int, default=6)
    ap.add_argument("--k1", type=float, default=0.0, help="radial distortion of every lens (k2 = -k1 / 4)")
    args = ap.parse_args()
    boards = [(Board("charuco", (7, 5), 0.08, 0.06), rig(3, k1=args.k1)),
              (Board("checkerboard", (7, 6), 0.08), rig(3, 2, k1=args.k1))]
    print("board | camera | focal error % | k1 | principal point px | centre mm | rotation deg | rms px | seconds")
    for board, cams in boards:
        with tempfile.TemporaryDirectory() as tmp:
            paths = write_clips(Path(tmp), cams, board, frames=args.frames, still=args.still)
            t0 = time.perf_counter()
            result = calibrate_board(paths, board, step=1)
            seconds = time.perf_counter() - t0
        for got, truth in zip(result.cameras, cams):
            focal = 100 * (got.K[0, 0] / truth.K[0, 0] - 1)
            pp = np.abs(got.K[:2, 2] - truth.K[:2, 2]).max()
            centre = 1000 * np.linalg.norm(got.center - (truth.center - FLOOR_AT))
            angle = np.degrees(np.arccos(np.clip((np.trace(got.R.T @ truth.R) - 1) / 2, -1, 1)))
            rms = result.report["cameras"][got.name]["poses_rms_px"]
            print(f"{board.kind} | {got.name} | {focal:+.2f} | {got.dist[0]:.3f} | {pp:.1f} | {centre:.1f} | {angle:.2f} | "
                  f"{rms:.2f} | "
                  f"{seconds:.1f}")
        print(f"{board.kind} floor: {result.floor}")


if __name__ == "__main__":
    main()
