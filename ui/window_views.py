"""The window's several-camera results (a mixin of ``ui.main_window.MainWindow``; it uses the window's
``controller``, ``services``, ``state``, ``banner`` and its source and result methods).

File > Open several cameras opens :class:`ui.multicamera_dialog.MultiCameraDialog`; its result (a
``posetracker.multiview.process.ViewsResult``) is shown as a whole-file result is: the first view's video plays
with the fused people reprojected into it, the 3-D view and the plots read the triangulated people (the first
camera's frame, the calibration's metres), the Heights panel lists them and Export writes them.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from posetracker.recording import ReplaySession
from .services import ModelChoice, with_camera


class WindowViews:
    """Several calibrated cameras in :class:`ui.main_window.MainWindow`."""

    views_dialog = None  # File > Open several cameras (ui.multicamera_dialog.MultiCameraDialog), made when first opened
    views_result = None  # the several-camera result shown (ViewsResult), None for any other source

    def ask_open_views(self, views: list[str] | None = None, calibration: str | None = None,
                       start: bool = False) -> None:
        """The (non-modal) several-camera dialog, one instance; ``views`` / ``calibration`` fill it (``main.py
        --views``), ``start`` processes them at once."""
        from .multicamera_dialog import MultiCameraDialog

        if self.views_dialog is None:
            self.views_dialog = MultiCameraDialog(self.views_sessions, self)
            self.views_dialog.result_ready.connect(self.show_views_result)
        if views is not None or calibration is not None:
            self.views_dialog.set_inputs(views, calibration)
        self.views_dialog.show()
        self.views_dialog.raise_()
        self.views_dialog.activateWindow()
        if start:
            self.views_dialog.start_run()

    def views_sessions(self):
        """fov_deg -> a whole-file session of the human model as ``posetracker process`` makes one for each view
        (its offline refiners, no others), with the window's most people."""
        choice = ModelChoice("human18", "offline", 0, max_people=self.state.max_people)
        return partial(with_camera, self.services.make_session, choice)

    def show_views_result(self, result) -> None:
        """Open the first view's video and play the fused result over it (module docstring)."""
        first = result.views[0]
        self._reset_source()
        self.views_result = result
        self.pending_offline = False
        self.state.source = first
        self.show_mode("offline")
        self.model_panel.show_replay(False)
        self.set_result(result.sequence)  # scaled to the heights given (Heights panel)
        self.controller.start(partial(self.services.open_file, first), partial(ReplaySession, self.sequence))
        names = ", ".join(c.name for c in result.cameras)
        people = len(result.sequence.track_ids())
        self.banner.show_message(
            f"{len(result.views)} calibrated cameras ({names}): {people} {'person' if people == 1 else 'people'} "
            f"triangulated. The video is {Path(first).name} with the people reprojected into it; the 3-D view, "
            f"plots and Export are in the calibration's metres ({result.cameras[0].name}'s frame).",
            key="source", error=False)
        self._show_warnings(result.warnings)
        self.statusBar().showMessage(f"Processed {len(result.sequence)} frames from {len(result.views)} cameras; "
                                     "playing the result", 8000)
