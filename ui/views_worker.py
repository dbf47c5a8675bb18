"""The worker thread of File > Open several cameras (:class:`ui.multicamera_dialog.MultiCameraDialog`): it runs the
CLI's library calls on the set-up, ``posetracker.multiview.process.process_views`` (offline, each video whole) or
``posetracker.multiview.live_run.run_live_sources`` (Live: connected cameras, or videos played as cameras, each
instant triangulated as it comes), and reports progress, status lines and the result or the failure in words.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal, Slot

from posetracker.capture import FrameSource
from posetracker.multiview.live_check import is_camera

from .packets import describe_error
from .worker_dialog import StoppableWorker

SessionMaker = Callable[[float], Any]  # fov_deg -> a tracking session (ui.services.with_camera)
SourceOpener = Callable[[str], FrameSource]  # a view's text (a video's path, camera:N) -> its source


class ViewsWorker(StoppableWorker):
    """Runs ``process_views`` on the set-up, or ``run_live_sources`` when ``live`` (each source opened by ``opener``,
    default ``capture.open_source``; the cameras matched as ``process SRC1 SRC2 --mode live`` matches them);
    ``progress(done, total)`` counts frames over every view (live: the first source's, total 0 for a camera)."""

    progress = Signal(int, int)
    status = Signal(str)
    done = Signal(object)  # posetracker.multiview.process.ViewsResult
    failed = Signal(str)

    def __init__(self, views: list[str], calibration: list[str], make_session: SessionMaker,
                 frames: list[int | None], live: bool = False, opener: SourceOpener | None = None,
                 names: list[str] | None = None, keep_frames: Path | None = None):
        super().__init__()
        self.keep_frames = keep_frames  # live: the folder each camera's frames are kept in (run_live_sources)
        self.views, self.calibration, self.make_session, self.live = views, calibration, make_session, live
        self.opener, self.names = opener, names  # names: each view's calibrated camera (live; None: the CLI's rule)
        self.frames = [max(int(f or 0), 0) for f in frames]
        self._view = -1
        self._last = 0.0
        self.seconds = 0.0  # how long the run took, when it is done

    @Slot()
    def run(self) -> None:
        from posetracker.multiview.calibration import CalibrationError, read_calibrations
        from posetracker.multiview.live_check import cameras_for_sources
        from posetracker.multiview.process import (
            ViewsError,
            cameras_for_views,
            process_views,
        )

        t0 = time.monotonic()
        try:
            calibrated = read_calibrations(self.calibration)
            if self.live:  # cameras, or the videos played as cameras: each instant triangulated as it comes
                from posetracker.multiview.live_run import run_live_sources

                cameras = cameras_for_sources(calibrated, self.views, self.names)  # as the CLI's --cameras
                self.cameras = [c.name for c in cameras]
                cams = sum(map(is_camera, self.views))
                self.status.emit(f"Tracking {cams} connected cameras live…" if cams == len(self.views) else
                                 f"Playing {len(self.views)} videos as cameras, live…" if not cams else
                                 f"Tracking {cams} cameras and {len(self.views) - cams} videos live…")
                result = run_live_sources(self.views, cameras, self.make_session,
                                          calibration_name=Path(self.calibration[0]).name, paced=True,
                                          cancel=self.stopping, progress=self._live_report, opener=self.opener,
                                          keep_frames=self.keep_frames)
            else:
                cameras = cameras_for_views(calibrated, self.views)
                self.cameras = [c.name for c in cameras]
                result = process_views(self.views, cameras, self.make_session,
                                       calibration_name=Path(self.calibration[0]).name, progress=self._report,
                                       cancel=self.stopping, say=self.status.emit)
            if result is None:  # offline cancelled; live gives the instants tracked so far (as Ctrl-C writes them)
                self.failed.emit("Cancelled: nothing was processed.")
            else:
                self.seconds = time.monotonic() - t0
                self.done.emit(result)
        except (CalibrationError, ViewsError) as exc:
            self.failed.emit(describe_error(exc)[:1].upper() + describe_error(exc)[1:])
        except Exception as exc:  # noqa: BLE001 - shown in the dialog, the app stays usable
            self.failed.emit(f"Processing the cameras failed: {describe_error(exc)}")
        finally:
            self.finished.emit()

    def _live_report(self, stats, seconds: float) -> None:
        """Live: the first source's frames read (``live_sources.PairStats``) and the instants tracked per second."""
        t = time.monotonic()
        if t - self._last >= 0.1:
            self._last = t
            self.progress.emit(stats.read[0], self.frames[0])
            self.status.emit(f"Live: {stats.instants} instants triangulated, {stats.instants / max(seconds, 1e-6):.1f}"
                             f" per s; frames dropped per camera {stats.dropped}")

    def _report(self, view: int, done: int, total: int | None) -> None:
        if view != self._view:
            self._view = view
            self.status.emit(f"Tracking {self.cameras[view]} (view {view + 1} of {len(self.views)})…")
        before = sum(self.frames[:view])
        t = time.monotonic()
        last = view == len(self.views) - 1 and total and done >= total
        if t - self._last >= 0.1 or last:
            self._last = t
            self.progress.emit(before + done, sum(self.frames))
        if last:
            self.status.emit("Matching the people across the views, triangulating, solving their motion…")
