"""Statures on the pose2sim two-person clip: the network's distances against the calibrated camera's.

The Pose2Sim demo's camera 2 is calibrated (Pose2Sim ``Demo_MultiPerson/calibration/Calib.qca.txt``,
BSD-3-Clause, https://github.com/perfanalytics/pose2sim; the numbers below are copied from it) and its
``Config.toml`` gives the two participants' heights, 1.72 m and 1.40 m. With the camera's height and
pitch, the image row of a person's lower ankle fixes that ankle's distance (its ray meets the plane one
ankle height above the floor); the person's joints keep the network's depths relative to their root.
This prints, per track of a ``posetracker process ... --out X.json`` run on ``multi_cam02.mp4``, the
stature (:mod:`posetracker.analysis.stature`) at the network's distance and at the calibrated one.

    posetracker process ../shared/data/video/more/pose2sim_demo/multi_cam02.mp4 --out multi.json
    python studies/tools/pose2sim_statures.py multi.json
"""

from __future__ import annotations

import sys

import numpy as np

from posetracker.analysis.stature import stature_per_frame
from posetracker.depth.lift import Camera
from posetracker.export.json_io import read_sequence
from posetracker.tracks import person_tracks

# cam_02 of Calib.qca.txt: rotation rows (Qualisys: the camera looks along -row 3, image up along row 2),
# position in mm (Z up, floor at 0), focal length and principal point in sensor units (64 per pixel)
ROTATION = np.array([[-0.1966832217091926, 0.979523227309506, -0.043011131806342306],
                     [-0.31478107085300017, -0.02153908797812718, 0.9489198834051846],
                     [0.9285626460991909, 0.20017570994064315, 0.3125717476340885]])
POSITION_M = np.array([2582.0136248568124, 706.5662881637625, 1690.9818366061595]) / 1000.0
FOCAL_PX = 107118.695313 / 64.0
CENTRE_PX = (35359.652344 / 64.0, 62158.457031 / 64.0)
ANKLE_M = 0.07  # ankle joint above the floor (0.039 of a 1.4-1.8 m stature)


def ankle_distance(xy: np.ndarray) -> np.ndarray:
    """xy (T, 2) px of a standing ankle -> (T,) its depth along the optical axis (m) from the calibration."""
    right, down, forward = ROTATION[0], -ROTATION[1], -ROTATION[2]
    rays = (right[None] * ((xy[:, 0] - CENTRE_PX[0]) / FOCAL_PX)[:, None]
            + down[None] * ((xy[:, 1] - CENTRE_PX[1]) / FOCAL_PX)[:, None] + forward[None])
    return (ANKLE_M - POSITION_M[2]) / rays[:, 2]


def main(path: str) -> None:
    seq = read_sequence(path)
    spec = seq.skeleton
    w, h = seq.frames[0].image_size
    left, right, root = spec.index("left_ankle"), spec.index("right_ankle"), spec.root
    print(f"camera: {100 * POSITION_M[2]:.0f} cm above the floor, pitched "
          f"{np.degrees(np.arcsin(ROTATION[2, 2])):.1f} deg down, focal {FOCAL_PX:.0f} px")
    for tid, tr in person_tracks(seq).items():
        kp = tr.keypoints[tr.present]  # (T, K, 3)
        xy, z = kp[..., :2], kp[..., 2]
        lower = np.where(xy[:, left, 1] > xy[:, right, 1], left, right)  # the standing foot is lower in the image
        dist = ankle_distance(xy[np.arange(len(kp)), lower])
        ok = np.isfinite(kp).all(-1)
        net = stature_per_frame(Camera(w, h, fov_deg=seq.metadata.get("camera", {}).get("fov_deg", 60.0))
                                .to_camera(xy, z), ok, spec)
        calibrated = stature_per_frame(Camera(w, h, fx=FOCAL_PX).to_camera(xy, z - z[:, [root]] + dist[:, None]),
                                       ok, spec)
        x = np.nanmedian(xy[:, :17, 0])
        print(f"track {tid} ({len(kp)} frames, x {x:.0f} px): distance {np.median(z[:, root]):.2f} m network, "
              f"{np.median(dist):.2f} m calibrated; stature {np.nanmedian(net):.3f} m network, "
              f"{np.nanmedian(calibrated):.3f} m at the calibrated distance")


if __name__ == "__main__":
    main(sys.argv[1])
