"""One calibrated camera for one video or a live camera: what ``posetracker process clip.mp4 --calibration FILE``
and the app's File > Camera calibration use.

A :class:`CalibratedView` is a camera of a calibration file (any reader of :mod:`.calibration`): the session tracks
with its focal length (:meth:`CalibratedView.camera_fov`, degrees across the long side), and the tracked sequence
carries its floor (:meth:`CalibratedView.with_floor`: ``metadata["floor"]``, each person on their own floor along
its normal, :func:`.calibration.calibration_floor`) before ``motion.finish.finish_sequence``, which stands people
on it and sizes them by it. :meth:`CalibratedView.check_size` refuses a video whose frames are not the
calibrated camera's (another aspect ratio); the same camera scaled keeps its field of view and is accepted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from posetracker.depth.camera_meta import CameraFov
from posetracker.multiview.calibration import (CalibrationError, CameraCalibration, calibration_floor, camera_named,
                                               camera_of_video, read_calibrations)
from posetracker.types import PoseSequence

SCALE_TOLERANCE = 0.01  # relative difference of the two sides' scales still taken as the same camera scaled


@dataclass(frozen=True)
class CalibratedView:
    """One camera of a calibration, as a single view is tracked with it.

    camera: the calibrated camera (intrinsics, distortion, pose in the calibration's world)
    files:  the calibration file(s) it was read from
    names:  every camera of those files, in file order (a picker for a calibration of several)
    """

    camera: CameraCalibration
    files: tuple[str, ...]
    names: tuple[str, ...] = ()

    @property
    def detail(self) -> str:
        """Where the camera comes from, as ``metadata["camera"]["detail"]`` names it."""
        return f"calibration {Path(self.files[0]).name}, camera {self.camera.name}"

    @property
    def focal_px(self) -> float:
        """The focal length along the image's long side, px (what the field of view is computed from)."""
        w, h = self.camera.image_size
        return float(self.camera.K[0, 0] if w >= h else self.camera.K[1, 1])

    def camera_fov(self) -> CameraFov:
        """The field of view to track with (degrees across the long side), given by the user's calibration."""
        from posetracker.multiview.fuse import calibrated_fov

        return CameraFov(calibrated_fov(self.camera), "user", self.detail)

    def floor(self) -> dict | None:
        """The calibration's floor as a single view's sequence carries it (None: the calibration has none)."""
        return calibration_floor([self.camera], self.detail, people_on_it=False)

    def with_floor(self, seq: PoseSequence) -> PoseSequence:
        """``seq`` (tracked from this camera) carrying the calibration's floor in ``metadata["floor"]``, for
        ``finish_sequence`` and the exports; as it is where the calibration has no floor."""
        floor = self.floor()
        if floor is None:
            return seq
        return dataclasses.replace(seq, metadata={**(seq.metadata or {}), "floor": floor})

    def check_size(self, size: tuple[int, int] | None) -> str:
        """Whether frames of ``size`` (W, H) px are this camera's: "" when they are its calibrated size (or
        unknown), a note when they are that size scaled (the field of view holds); CalibrationError (what to do)
        when the aspect differs (another camera, a crop, a rotated video)."""
        if size is None:
            return ""
        (w, h), (cw, ch) = (int(v) for v in size), self.camera.image_size
        if (w, h) == (cw, ch):
            return ""
        if w > 0 and h > 0 and abs((w / cw) / (h / ch) - 1.0) <= SCALE_TOLERANCE:
            return (f"the video is {w}x{h}, camera {self.camera.name} was calibrated at {cw}x{ch}: the same "
                    "camera scaled, its field of view is used")
        raise CalibrationError(f"the video is {w}x{h} but camera {self.camera.name} of {Path(self.files[0]).name} "
                               f"was calibrated at {cw}x{ch}: choose this video's camera (or its calibration)")

    def as_dict(self) -> dict:
        """What a recording keeps to find the camera again (``read_view(d["files"], camera=d["camera"])``) and
        the degrees it was tracked with."""
        return {"files": [str(Path(f).resolve()) for f in self.files], "camera": self.camera.name,
                "fov_deg": round(self.camera_fov().fov_deg, 6)}

    def describe(self) -> str:
        """One line for the user, e.g. ``cam01, f = 1681 px (59.5 deg), floor``."""
        floor = "floor" if self.floor() is not None else "no floor"
        unit = ", positions read as mm" if self.camera.unit == "mm" else ""  # calibration.in_metres
        return f"{self.camera.name}, f = {self.focal_px:.0f} px ({self.camera_fov().fov_deg:.1f} deg), {floor}{unit}"


def read_view(files: str | Path | Sequence[str | Path], video: str | None = None,
              camera: str | None = None) -> CalibratedView:
    """The camera a single view is tracked with, from calibration ``files``: the one called ``camera`` when
    given, else the only one, else the one named in ``video``'s file name (``cam01`` in ``cam01.mp4``).
    Raises CalibrationError (a file that cannot be read, no such camera; the message lists the cameras)."""
    paths = [str(files)] if isinstance(files, (str, Path)) else [str(f) for f in files]
    if not paths:
        raise CalibrationError("no calibration file given")
    try:
        cameras = read_calibrations(paths)
    except OSError as exc:
        raise CalibrationError(f"cannot read {', '.join(paths)}: {exc}") from None
    names = tuple(c.name for c in cameras)
    if camera is not None:
        chosen = camera_named(cameras, camera)
    elif len(cameras) == 1:
        chosen = cameras[0]
    elif video is None:
        raise CalibrationError(f"{', '.join(Path(p).name for p in paths)} has {len(cameras)} cameras "
                               f"({', '.join(names)}): choose one")
    else:
        chosen = camera_of_video(cameras, video)
    return CalibratedView(chosen, tuple(paths), names)


def fit_camera(camera: CameraCalibration, size: tuple[int, int]) -> tuple[CameraCalibration, str]:
    """``camera`` for frames of ``size`` (W, H) px, and a note ("" when it is its calibrated size): the same
    camera scaled (a webcam calibrated at 1920x1080 run at 960x540: the aspect within ``one_view.SCALE_TOLERANCE``)
    has its focal lengths and principal point scaled; another aspect keeps the camera, with a warning."""
    (w, h), (cw, ch) = (int(v) for v in size), camera.image_size
    if (w, h) == (cw, ch):
        return camera, ""
    sx, sy = w / cw, h / ch
    if w > 0 and h > 0 and abs(sx / sy - 1.0) <= SCALE_TOLERANCE:
        k = camera.K.copy()
        k[0] *= sx
        k[1] *= sy
        return (dataclasses.replace(camera, K=k, image_size=(w, h)),
                f"the frames are {w}x{h}, camera {camera.name} was calibrated at {cw}x{ch}: the same camera scaled")
    return camera, (f"the frames are {w}x{h} but camera {camera.name} was calibrated at {cw}x{ch} (another aspect): "
                    "its calibration does not fit them")


__all__ = ["CalibratedView", "fit_camera", "read_view"]
