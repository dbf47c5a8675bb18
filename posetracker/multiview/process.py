"""Several synchronised calibrated cameras, end to end: what ``posetracker process cam1.mp4 cam2.mp4 ...
--calibration FILE`` and the app's File > Open several cameras run.

- :func:`check_views`: the videos and the calibration as a set-up (each video's frames, rate and size, the
  calibration's camera named in its file name, and what stops the set-up, in words): the app's dialog.
- :func:`cameras_for_views`: each video's camera (``cam01`` for ``cam01.mp4``), or why not.
- :func:`process_views`: each view tracked as a single view is (a session made by the caller for the view's
  calibrated field of view), views not started together aligned by the people's motion (:mod:`.sync`), the
  people matched and triangulated (:mod:`.fuse`), and the fused sequence finished (``motion.finish``: bones,
  heights, encounters) in the first camera's frame, like a single view's result; the calibration's floor
  (``calibration.calibration_floor``) in ``metadata["floor"]``, where the exports and the feet stand people.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from posetracker.multiview.calibration import (CalibrationError, CameraCalibration, calibration_floor, camera_named,
                                               camera_of_video, cameras_by_name, read_calibrations, unit_note)
from posetracker.multiview.one_view import fit_camera
from posetracker.types import PoseSequence

NO_PEOPLE = ("no person was matched across the views and triangulated: no one in view, a clip too short (a person is "
             "matched on 10 frames seen by two views), views that do not see the same people at the same time, or a "
             "calibration that is not these cameras'")
# progress(view index, frames done in that view, its frame count or None)
ViewProgress = Callable[[int, int, "int | None"], None]


class ViewsError(Exception):
    """The views cannot be processed together; ``code``: the CLI's exit status (2: the input, 1: a view's video
    stopped part-way)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ViewInfo:
    """One video of a set-up: ``frames`` (None: unknown), ``fps``, ``size`` (W, H) px, ``camera`` the
    calibration's camera named in its file name (None: none), ``problem`` why it cannot be used ("": it can) and
    ``note`` what may be wrong without stopping it (its size differs from the camera's)."""

    path: str
    frames: int | None = None
    fps: float | None = None
    size: tuple[int, int] | None = None
    camera: str | None = None
    problem: str = ""
    note: str = ""


@dataclass(frozen=True)
class ViewsCheck:
    """A set-up as :func:`check_views` reads it: the views, the calibration's camera names and what stops it
    ("" when it can run)."""

    views: list[ViewInfo]
    cameras: list[str] = field(default_factory=list)
    problem: str = ""
    note: str = ""  # what may be wrong without stopping it (the calibration read as millimetres)

    @property
    def ready(self) -> bool:
        return not self.problem


@dataclass
class ViewsResult:
    """:func:`process_views`'s answer: the ``views`` (video paths, the first the reference), the finished
    ``sequence`` (first camera's frame, metres), the warnings to show, the cameras (one per view; a pose fitted to
    the people where it disagreed: ``fuse.adjusted_cameras``), each view's frame ``offsets`` against the first,
    and console ``lines`` (the poses fitted; per person: joints triangulated, median reprojection px per view).
    ``kept``: per view, the video its frames were kept in by a live run (``live_videos.ViewVideos``; a connected
    camera's, else None: a video file is its own)."""

    views: list[str]
    sequence: PoseSequence
    warnings: list[str]
    cameras: list[CameraCalibration]
    offsets: list[int]
    lines: list[str]
    kept: list[str | None] | None = None


def _names(cameras: Sequence[CameraCalibration]) -> str:
    return ", ".join(c.name for c in cameras)


def cameras_for_views(cameras: Sequence[CameraCalibration], views: Sequence[str],
                      names: Sequence[str] | None = None) -> list[CameraCalibration]:
    """Each view's camera: the one ``names`` names for it (``process ... --cameras cam03 cam01``, one per video:
    files whose names carry no camera's, e.g. a GoPro's GX010123.MP4), else the one named in its file name
    (``cam01`` in ``cam01.mp4``); CalibrationError when the calibration has fewer cameras than videos, a video
    names none, or two videos name the same one."""
    if len(cameras) < len(views):
        raise CalibrationError(f"the calibration has {len(cameras)} camera{'s' * (len(cameras) != 1)} "
                               f"({_names(cameras)}) for {len(views)} videos: each video needs its own camera")
    chosen = cameras_by_name(cameras, names, len(views), "video") if names else \
        [camera_of_video(list(cameras), view) for view in views]
    for i, cam in enumerate(chosen):
        for j in range(i):
            if Path(views[i]).resolve() == Path(views[j]).resolve():
                raise CalibrationError(f"{Path(views[i]).name} is given twice: give each camera's video once")
            if chosen[j] is cam:
                raise CalibrationError(f"{Path(views[i]).name} and {Path(views[j]).name} both name camera "
                                       f"{cam.name}: each video needs its own camera")
    return chosen


def read_or_say(calibration: Sequence[str]) -> tuple[list[CameraCalibration], str]:
    """The cameras of the calibration files (none given: none) and, where they cannot be read, why in words."""
    if not calibration:
        return [], ""
    try:
        return read_calibrations(list(calibration)), ""
    except (CalibrationError, OSError, ValueError) as exc:
        return [], f"The calibration cannot be read: {exc}"


def check_views(views: Sequence[str], calibration: Sequence[str]) -> ViewsCheck:
    """What the app's set-up shows before a run: each video opened (frames, rate, size) and matched to its
    camera, and the first thing that stops the set-up in words (fewer than two videos, no calibration, one that
    cannot be read or has fewer cameras than videos, a video with no camera, not readable or of another aspect
    than its camera; a video of its camera's size scaled is a ``note``). Never raises."""
    from posetracker.capture import CaptureError, open_source

    cameras, problem = read_or_say(calibration)
    infos = []
    for view in views:
        frames = fps = size = None
        trouble = ""
        try:
            with open_source(view) as source:
                frames, fps, size = source.frame_count, float(source.fps), tuple(source.size)
        except (CaptureError, OSError, ValueError) as exc:
            trouble = f"cannot be read: {exc}"
        camera, note = None, ""
        if cameras:
            try:
                cam = camera_named(cameras, Path(view).stem)
                camera = cam.name
                if size is not None:
                    fitted, note = fit_camera(cam, size)
                    if fitted.image_size != size:  # another aspect: not this video's camera
                        trouble, note = trouble or note, ""
            except CalibrationError:
                trouble = trouble or f"no camera of the calibration is named in its file name ({_names(cameras)})"
        infos.append(ViewInfo(str(view), frames, fps, size, camera, trouble, note))
    seen: set[str | None] = set()
    for i, info in enumerate(infos):  # two videos naming one camera: the later one is the problem
        if info.camera is not None and info.camera in seen:
            infos[i] = ViewInfo(info.path, info.frames, info.fps, info.size, info.camera,
                                info.problem or f"camera {info.camera} is another video's already", info.note)
        seen.add(info.camera)
    if len(views) < 2:
        problem = "Add at least two videos, one per calibrated camera."
    elif not calibration:
        problem = problem or "Choose the calibration file (.qca.txt, .toml, .yml or .xml) of these cameras."
    elif not problem and len(cameras) < len(views):
        problem = (f"The calibration has {len(cameras)} camera{'s' * (len(cameras) != 1)} ({_names(cameras)}) "
                   f"for {len(views)} videos: each video needs its own calibrated camera.")
    elif not problem:
        bad = next((i for i in infos if i.problem), None)
        if bad is not None:
            problem = f"{Path(bad.path).name}: {bad.problem}."
    return ViewsCheck(infos, [c.name for c in cameras], problem, unit_note(cameras))


def process_views(views: Sequence[str], cameras: Sequence[CameraCalibration], make_session: Callable[[float], Any],
                  *, calibration_name: str, solve: bool = True, rigid_bones: bool = True, heights=None,
                  repair_swaps: bool = False, progress: ViewProgress | None = None,
                  cancel: Callable[[], bool] | None = None, say: Callable[[str], None] | None = None,
                  ) -> ViewsResult | None:
    """Track each of ``views`` (one video per camera of ``cameras``, in the same order; the first is the
    reference) with ``make_session(fov_deg)`` (a session for that camera's calibrated field of view), align,
    match, triangulate and finish (module docstring). ``solve``: the motion solve of the fused people (False: the
    triangulated points as they are); ``rigid_bones``, ``heights``, ``repair_swaps``: the finishing step's.
    ``progress`` is called per frame of each view, ``say`` with a line when the views were aligned; ``cancel()``
    True stops it (None is returned). Each camera is first fitted to its video's frame size (:func:`fit_views`: a
    scaled video scales its camera). Raises ViewsError (a session or a video that cannot be opened, or stops
    part-way; a video whose frames have another aspect than its camera's; views with no frame in common)."""
    from posetracker.capture import CaptureError, open_source
    from posetracker.depth.camera_meta import CameraFov
    from posetracker.motion.finish import finish_sequence, source_metadata
    from posetracker.multiview.fuse import adjusted_cameras, calibrated_fov, fuse_views
    from posetracker.multiview.sync import align, frame_offsets
    from posetracker.refiners import RefinerError

    stopped = cancel or (lambda: False)
    cameras = fit_views(views, cameras, say)
    sequences = []
    for n, (view, camera) in enumerate(zip(views, cameras)):
        try:
            session = make_session(calibrated_fov(camera))
            source = open_source(view)
        except (RefinerError, CaptureError) as exc:
            raise ViewsError(str(exc)) from None
        update = (lambda done, total, n=n: progress(n, done, total)) if progress else None
        with source:
            seq = session.run(source, fps=source.fps, total=source.frame_count, progress=update, cancel=stopped,
                              metadata=source_metadata(view, source.size, session))
        if stopped():
            return None
        if "incomplete" in seq.metadata:
            raise ViewsError(f"{view}: {seq.metadata['incomplete']}", code=1)
        sequences.append(seq)
    offsets = frame_offsets(cameras, sequences)  # views not started together: aligned by the people's motion
    try:
        aligned = align(sequences, offsets)
    except ValueError as exc:
        raise ViewsError(str(exc)) from None
    if say is not None and (any(offsets) or len({len(s) for s in sequences}) > 1):
        say(f"views aligned: frame offsets against {cameras[0].name}: "
            + ", ".join(f"{c.name} {o:+d}" for c, o in zip(cameras[1:], offsets[1:]))
            + f"; {len(aligned[0])} frames every view saw")
    fused = fuse_views(cameras, aligned, solve=solve)
    fused.metadata["multiview"]["frame_offsets"] = dict(zip([c.name for c in cameras], offsets))
    floor = calibration_floor(list(cameras), f"calibration {calibration_name}", people_on_it=True)
    if floor is not None:  # the people are in the calibration's metres: its floor is theirs
        fused.metadata["floor"] = floor
    camera = CameraFov(calibrated_fov(cameras[0]), "user", f"calibration {calibration_name}, camera {cameras[0].name}")
    seq, warnings = finish_sequence(fused, camera, rigid_bones=rigid_bones, heights=heights,
                                    repair_swaps=repair_swaps)
    if not seq.track_ids():  # written as asked, but said: an empty result is no answer
        warnings = [NO_PEOPLE, *warnings]
    return ViewsResult([str(v) for v in views], seq, warnings, adjusted_cameras(cameras, seq), list(offsets),
                       describe(seq.metadata["multiview"]))


def fit_views(views: Sequence[str], cameras: Sequence[CameraCalibration],
              say: Callable[[str], None] | None = None) -> list[CameraCalibration]:
    """Each view's camera fitted to its video's frames before any is tracked (``one_view.fit_camera``): the same
    camera scaled (calibrated at 1088x1920, the video 544x960) has K scaled, and ``say`` is told; a video of
    another aspect (another camera, a crop, a rotated video) is a ViewsError, as ``process clip.mp4
    --calibration`` refuses one view's."""
    from posetracker.capture import CaptureError, open_source

    fitted = []
    for view, camera in zip(views, cameras):
        try:
            with open_source(view) as source:
                size = tuple(int(v) for v in source.size)
        except CaptureError as exc:
            raise ViewsError(str(exc)) from None
        cam, note = fit_camera(camera, size)
        if cam.image_size != size:
            (w, h), (cw, ch) = size, camera.image_size
            raise ViewsError(f"{Path(view).name} is {w}x{h} but camera {camera.name} was calibrated at {cw}x{ch}: "
                             "not this camera's video (another camera, a crop or a rotated video)")
        if note and say is not None:
            say(f"{Path(view).name}: {note}")
        fitted.append(cam)
    return fitted


def describe(report: dict) -> list[str]:
    """Lines for the console: the camera poses fitted to the people, then per person the median reprojection error
    per view and the joints triangulated."""
    lines = [f"camera {a['camera']}'s pose fitted to the people: median reprojection {a['before_px']:.1f} -> "
             f"{a['after_px']:.1f} px, moved {100 * a['moved_m']:.1f} cm, turned {a['turned_deg']:.2f} deg"
             + ("" if a["kept"] else " (not kept)") for a in report.get("pose_adjustments", [])]
    for n, person in enumerate(report["people"]):
        errors = ", ".join(f"{v} {e:.1f}" for v, e in person["reprojection_px"].items() if not math.isnan(e))
        lines.append(f"person {n}: {person['triangulated']:.0%} of joints triangulated; median reprojection px: "
                     f"{errors}")
    return lines


__all__ = ["ViewInfo", "ViewsCheck", "ViewsError", "ViewsResult", "cameras_for_views", "check_views", "describe",
           "fit_views", "process_views"]
