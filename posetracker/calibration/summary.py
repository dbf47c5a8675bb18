"""A board calibration's result in words and on disk: what ``posetracker calibrate`` prints and writes, and the
app's Tools > Calibrate cameras from a board shows and saves (the same functions)."""

from __future__ import annotations

import math
from pathlib import Path

from posetracker.calibration.solve import BoardCalibration
from posetracker.multiview.calibration import write_toml

NO_FLOOR = ("no frame of the board lying still: the world is the first camera's frame, with no floor (lay the board "
            "on the floor for a second at the end of the clips)")


def camera_lines(result: BoardCalibration) -> list[str]:
    """One line per camera: frames with the board, focal length (and degrees across the long side),
    reprojection rms of its intrinsics and of the poses after bundle adjustment, its centre in the world."""
    lines = []
    for cam in result.cameras:
        info = result.report["cameras"][cam.name]
        w, h = cam.image_size
        fov = math.degrees(2 * math.atan(max(w, h) / (2 * (cam.K[0, 0] if w >= h else cam.K[1, 1]))))
        poses = f", poses {info['poses_rms_px']:.2f} px" if "poses_rms_px" in info else ""
        own = info["intrinsics_rms_px"]
        own = f"{own:.2f} px" if isinstance(own, float) else own
        lines.append(f"{cam.name}: board in {info['frames_with_board']} frames; focal {cam.K[0, 0]:.1f} px ({fov:.1f} "
                     f"deg across the long side); reprojection rms: intrinsics {own}{poses}; "
                     f"centre {', '.join(f'{v:.3f}' for v in cam.center)} m")
    return lines


def worst_error_px(result: BoardCalibration) -> float:
    """The largest reprojection rms over the cameras (poses after bundle adjustment where there are several), px;
    0 where every camera's intrinsics were given."""
    errors = [c.get("poses_rms_px", c["intrinsics_rms_px"]) for c in result.report["cameras"].values()]
    return max([e for e in errors if isinstance(e, float)] or [0.0])


def save_calibration(result: BoardCalibration, path: str | Path, made_by: str = "posetracker calibrate") -> Path:
    """Write ``result`` as a Pose2Sim / anipose TOML (``multiview.calibration.write_toml``) with its board, floor,
    units and worst reprojection error in ``[metadata]``; returns the path."""
    meta = {"board": result.report["board"], "floor": result.report["floor"], "units": "m",
            "up": "+z (the floor is z = 0)" if result.floor else "none", "error": worst_error_px(result),
            "made_by": made_by}
    return write_toml(result.cameras, path, meta)


__all__ = ["NO_FLOOR", "camera_lines", "save_calibration", "worst_error_px"]
