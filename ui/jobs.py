"""One-shot jobs run on a QThreadPool (exports), plus source/session builders used by the window."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, Signal

from posetracker.capture import FrameSource
from posetracker.export import Exporter, write_reporting
from posetracker.motion.heights import Heights
from posetracker.recording import ReplaySession, replay_source
from posetracker.recording.replay import read_meta, read_poses
from posetracker.types import PoseSequence
from .packets import describe_error


class JobSignals(QObject):
    done = Signal(object)  # list[Path]
    failed = Signal(str)


def finish_live(seq: PoseSequence, heights: Heights | None = None, calibration=None) -> tuple[PoseSequence, list[str]]:
    """What the app writes of ``seq``: the live view's poses or a live recording finished as ``posetracker process
    --mode live [--calibration FILE]`` finishes its run (``motion.finish``) with the people's ``heights`` given (the
    Heights panel); anything else (a whole-file result, finished when it was made and scaled by the window) as it
    is. ``calibration``: the source's calibrated camera (``multiview.one_view.CalibratedView``), which the live
    session tracked with: its camera and floor (a live recording names its own, ``metadata["calibration"]``);
    None: the live session tracked with the default camera, so the file's tag, if any, re-lifts them. Returns
    (sequence, warnings to show)."""
    from posetracker.motion.finish import camera_before, finish_sequence, fov_to_track
    from posetracker.multiview.calibration import CalibrationError
    from posetracker.multiview.one_view import read_view

    if (seq.metadata or {}).get("mode") != "live":
        return seq, []
    notes, tracked = [], fov_to_track(None)
    kept = seq.metadata.get("calibration")
    if calibration is None and kept:  # a recording tracked with a calibration
        try:
            tracked = float(kept["fov_deg"])
            calibration = read_view(kept["files"], camera=kept["camera"])
        except (CalibrationError, KeyError, TypeError, ValueError) as exc:
            notes.append(f"the recording's calibration cannot be read ({exc}): finished without it (the field of "
                         "view from the file's tag or the people, no floor)")
    if calibration is not None:
        camera = calibration.camera_fov()
        return finish_sequence(calibration.with_floor(seq), camera, rigid_bones=True,
                               tracked_fov=camera.fov_deg, heights=heights)
    seq, warnings = finish_sequence(seq, camera_before(seq.metadata.get("source"), "auto"), rigid_bones=True,
                                    tracked_fov=tracked, heights=heights)
    return seq, notes + warnings


class ExportJob(QRunnable):
    """Write ``seq`` with ``exporter`` (and its write() keywords ``options``) off the GUI thread; results arrive as
    signals."""

    def __init__(self, exporter: Exporter, seq: PoseSequence, path: Path, options: dict | None = None,
                 heights: Heights | None = None, calibration=None):
        super().__init__()
        self.exporter, self.seq, self.path, self.options = exporter, seq, path, dict(options or {})
        self.heights = heights  # the people's statures given: a live sequence is finished with them
        self.calibration = calibration  # the source's calibrated camera: a live sequence is finished with it
        self.signals = JobSignals()

    def run(self) -> None:
        try:
            seq, notes = finish_live(self.seq, self.heights, self.calibration)
            files, warned = write_reporting(self.exporter, seq, self.path, force=True, **self.options)
            warned = [*notes, *warned]
        except Exception as exc:  # noqa: BLE001 - ExportError, OSError...: shown, never raised
            self.signals.failed.emit(f"Export to {self.path} failed: {describe_error(exc)}")
        else:
            if warned:  # written for everyone else; say who is missing
                self.signals.failed.emit("; ".join(warned))
            self.signals.done.emit(files)


def new_recording_folder(base: Path) -> Path:
    """A fresh ``session-YYYYmmdd-HHMMSS[-n]`` folder name under ``base`` (not created)."""
    stem = time.strftime("session-%Y%m%d-%H%M%S")
    folder, n = base / stem, 2
    while folder.exists():
        folder, n = base / f"{stem}-{n}", n + 1
    return folder


def recording_video(folder: str) -> FrameSource:
    """The recording's video, or blank frames if it was lost (runs in the capture thread)."""
    return replay_source(folder)[0]


def recording_session(folder: str) -> ReplaySession:
    """A session that replays the recording's poses (runs in the inference thread)."""
    path = Path(folder)
    meta = read_meta(path)
    cut = meta.get("status") == "recording"  # never finished: the app or the machine stopped while recording
    notice = "This recording was interrupted: it plays up to its last saved frame." if cut else ""
    return ReplaySession(read_poses(path, meta), notices=(notice,) if cut else ())
