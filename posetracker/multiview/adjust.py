"""Camera poses adjusted to the people the cameras see, where one camera's calibration disagrees with the others.

A calibration can be right for the cameras among themselves where its wand or board was and still place one
camera a little wrong for the people elsewhere in the room (on the Pose2Sim trial cam03's pose puts both people
13-34 px away from where the other three cameras see them; a time offset, the lens model or left / right mix-ups
do not explain it). Each person's joints triangulated from the other views are then a set of 3-D points with
their 2-D readings in that view, from which its pose (rotation, position; the intrinsics are kept) is fitted
again, robustly (``scipy.optimize.least_squares``, soft-L1 of the reprojection error).

:func:`adjust_poses` takes the view that disagrees most first (the median error of its confident points against
the others' triangulation, above ``max_error_px``), fits its pose and keeps the new one only where its median
error falls by ``MIN_GAIN`` and the camera moves less than ``MAX_MOVE_M`` and turns less than ``MAX_TURN_DEG``;
then the next view, each at most once. The first view, whose frame the fused people are written in, is never
moved; nor is anything with fewer than 3 views (the others must triangulate without the view).

Shapes: V views, N frames (the people's frames one after another), K joints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from posetracker.multiview.calibration import CameraCalibration
from posetracker.multiview.triangulate import triangulate

MIN_GAIN = 0.3  # the view's median error must fall by 30 % for its new pose to be kept
MAX_MOVE_M = 0.5
MAX_TURN_DEG = 10.0
MIN_POINTS = 100  # confident points of the view with a triangulated joint, at least


@dataclass(frozen=True)
class PoseAdjustment:
    """One view's pose fitted to the people: its median reprojection error (px) of the ``points`` it was fitted
    on before / after, how far the camera moved (m) and turned (degrees), and whether the new pose was kept."""

    camera: str
    before_px: float
    after_px: float
    moved_m: float
    turned_deg: float
    points: int
    kept: bool

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in dataclasses.asdict(self).items()}


def _with_pose(cam: CameraCalibration, q: np.ndarray) -> CameraCalibration:
    """``cam`` with the pose q (6,): Rodrigues rotation world -> camera, translation m."""
    return dataclasses.replace(cam, R=cv2.Rodrigues(np.asarray(q[:3], np.float64).reshape(3, 1))[0], t=q[3:].copy())


def fit_pose(cam: CameraCalibration, xyz: np.ndarray, xy: np.ndarray, scale_px: float = 10.0) -> CameraCalibration:
    """The pose of ``cam`` (intrinsics kept) that best projects xyz (M, 3) world m onto xy (M, 2) px, robust to
    outliers (soft-L1 with ``scale_px``), starting from its own."""
    from scipy.optimize import least_squares

    q0 = np.concatenate([cv2.Rodrigues(cam.R)[0].ravel(), cam.t])
    fit = least_squares(lambda q: (_with_pose(cam, q).project(xyz) - xy).ravel(), q0, loss="soft_l1",
                        f_scale=scale_px)
    return _with_pose(cam, fit.x)


def _points_of(cameras: Sequence[CameraCalibration], view: int, xy: np.ndarray, confidence: np.ndarray,
               max_error_px: float, min_confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The others' triangulation of the joints ``view`` reads confidently: xyz (M, 3) m and its xy (M, 2) px."""
    others = np.array(xy, np.float64, copy=True)
    others[view] = np.nan
    tri = triangulate(cameras, others, confidence, max_error_px=max_error_px, soft_px=None)
    ok = tri.found & (confidence[view] >= min_confidence) & np.isfinite(xy[view]).all(-1)
    return tri.xyz[ok], xy[view][ok]


def adjust_poses(cameras: Sequence[CameraCalibration], xy: np.ndarray, confidence: np.ndarray,
                 max_error_px: float = 15.0, min_confidence: float = 0.5
                 ) -> tuple[list[CameraCalibration], list[PoseAdjustment]]:
    """Views whose pose disagrees with the others', fitted to the people (module docstring).

    xy:         (V, N, K, 2) px, every matched person's joints in each view (nan where unseen)
    confidence: (V, N, K)
    Returns the cameras (the adjusted ones replaced) and one PoseAdjustment per view fitted, in that order.
    """
    cams = list(cameras)
    v = len(cams)
    if v < 3:
        return cams, []
    tried: set[int] = {0}
    out: list[PoseAdjustment] = []
    while len(tried) < v:
        errors = {}
        points = {}
        for i in set(range(v)) - tried:
            xyz, seen = _points_of(cams, i, xy, confidence, max_error_px, min_confidence)
            if len(xyz) >= MIN_POINTS:
                points[i] = (xyz, seen)
                errors[i] = float(np.median(np.linalg.norm(cams[i].project(xyz) - seen, axis=-1)))
        if not errors or max(errors.values()) <= max_error_px:
            break
        i = max(errors, key=errors.get)
        tried.add(i)
        xyz, seen = points[i]
        new = fit_pose(cams[i], xyz, seen)
        after = float(np.median(np.linalg.norm(new.project(xyz) - seen, axis=-1)))
        moved = float(np.linalg.norm(new.center - cams[i].center))
        turned = float(np.degrees(np.arccos(np.clip((np.trace(new.R @ cams[i].R.T) - 1) / 2, -1.0, 1.0))))
        kept = after <= (1 - MIN_GAIN) * errors[i] and moved < MAX_MOVE_M and turned < MAX_TURN_DEG
        out.append(PoseAdjustment(cams[i].name, errors[i], after, moved, turned, len(xyz), kept))
        if kept:
            cams[i] = new
    return cams, out


__all__ = ["PoseAdjustment", "adjust_poses", "fit_pose"]
