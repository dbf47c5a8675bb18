"""Several live sources and a calibration as a set-up, before a live run: what ``posetracker process SRC1 SRC2 ...
--mode live --calibration FILE`` takes and the app's File > Open several cameras checks with Live on.

- :func:`cameras_for_sources`: each source's calibrated camera, the CLI's rule (a source naming one takes it,
  else the calibration's cameras in order).
- :func:`check_sources`: each source opened once (a connected camera: opened and one frame read), its size fitted
  to its camera as the run fits it (``live_run.fit_camera``), and the first thing that stops the set-up, in words,
  as :func:`.process.check_views` does for offline videos.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from posetracker.capture import CAMERA_PREFIX, FrameSource
from posetracker.multiview.calibration import (CalibrationError, CameraCalibration, camera_named, cameras_by_name,
                                               unit_note)
from posetracker.multiview.process import ViewInfo, ViewsCheck, read_or_say

Opener = Callable[[str], FrameSource]  # a source's text -> the opened source (posetracker.capture.open_source)


def is_camera(source: str) -> bool:
    """``camera:N`` (or ``camera:/dev/videoN``): a connected camera, which can only be tracked live."""
    return str(source).startswith(CAMERA_PREFIX)


def cameras_for_sources(cameras: Sequence[CameraCalibration], sources: Sequence[str],
                        names: Sequence[str] | None = None) -> list[CameraCalibration]:
    """Each source's camera: the one ``names`` names for it (``process ... --cameras cam03 cam01``: one per
    source, each a different camera of the calibration), else the one its name names (a file's stem, ``cam01``
    for ``cam01.mp4``; any other source's whole text, ``lavfi:movie=cam01.mp4``) when every source names a
    different one, else the calibration's cameras in order when there are as many; CalibrationError otherwise."""
    if names:
        return cameras_by_name(cameras, names, len(sources), "source")
    keys = [Path(s).stem if Path(s).is_file() else s for s in sources]
    try:
        chosen = [camera_named(list(cameras), k) for k in keys]
        if len({c.name for c in chosen}) == len(chosen):
            return chosen
    except CalibrationError:
        pass
    if len(cameras) != len(sources):
        raise CalibrationError(f"the calibration has {len(cameras)} cameras ({', '.join(c.name for c in cameras)}) "
                               f"for {len(sources)} sources: name each source's camera in it (cam01.mp4) or give a "
                               "calibration of as many cameras as sources (taken in order)")
    return list(cameras)


def check_sources(sources: Sequence[str], calibration: Sequence[str], opener: Opener | None = None,
                  known: Mapping[str, ViewInfo] | None = None, names: Sequence[str] | None = None) -> ViewsCheck:
    """The live set-up of ``sources`` (cameras ``camera:N``, video files, ``lavfi:GRAPH``) with the calibration
    files: each source opened by ``opener`` (default ``capture.open_source``; a camera reads its first frame) and
    closed again, its frames (None: live), rate and size, its camera (:func:`cameras_for_sources`), a ``note`` where
    its size is not its camera's but the same camera scaled (the run scales it), a ``problem`` where it cannot be
    opened or its frames have another aspect than its camera's; and the first thing that stops the set-up. A source
    in ``known`` (an earlier check's ViewInfo) is not opened again: its frames, rate and size are taken from it.
    ``names``: each source's camera (``--cameras``). Never raises."""
    from posetracker.capture import open_source
    from posetracker.multiview.live_run import fit_camera

    opener = opener or open_source
    cameras, problem = read_or_say(calibration)
    chosen: list[CameraCalibration | None] = [None] * len(sources)
    if cameras and len(sources) >= 2:
        try:
            chosen = list(cameras_for_sources(cameras, sources, names))
        except CalibrationError as exc:
            problem = problem or f"{str(exc)[:1].upper()}{str(exc)[1:]}."
    infos = []
    for source, cam in zip(sources, chosen):
        frames = fps = size = None
        trouble = note = ""
        if known is not None and source in known:
            frames, fps, size = known[source].frames, known[source].fps, known[source].size
        else:
            try:
                with opener(source) as opened:
                    frames, fps, size = opened.frame_count, float(opened.fps), tuple(opened.size)
            except Exception as exc:  # noqa: BLE001 - a camera's driver may raise anything: said, never raised
                trouble = f"cannot be {'opened' if is_camera(source) else 'read'}: {exc}"
        if cam is not None and size is not None:
            fitted, note = fit_camera(cam, size)
            if fitted.image_size != tuple(size):  # another aspect: not this camera's frames (the run refuses it)
                trouble, note = trouble or note, ""
        infos.append(ViewInfo(str(source), frames, fps, size, cam.name if cam else None, trouble, note))
    if len(sources) < 2:
        problem = "Add at least two sources (videos or connected cameras), one per calibrated camera."
    elif not calibration:
        problem = problem or "Choose the calibration file (.qca.txt, .toml, .yml or .xml) of these cameras."
    elif not problem:
        bad = next((i for i in infos if i.problem), None)
        if bad is not None:
            problem = f"{_label(bad.path)}: {bad.problem}."
    return ViewsCheck(infos, [c.name for c in cameras], problem, unit_note(cameras))


def _label(source: str) -> str:
    return source if is_camera(source) else Path(source).name


__all__ = ["Opener", "cameras_for_sources", "check_sources", "is_camera"]
