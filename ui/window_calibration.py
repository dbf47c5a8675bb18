"""The current source's camera calibration (a mixin of ``ui.main_window.MainWindow``; it uses the window's
``controller``, ``source_panel``, ``source_info``, ``state`` and its source and mode methods).

File > Camera calibration… (or the Source panel's Calibration… button) loads a calibration file for the video or
camera shown (``posetracker.multiview.one_view.read_view``: the camera named in the video's file name, the only
one, or the one the user picks). The whole-file run and live tracking then use it exactly as ``posetracker process
clip.mp4 --calibration FILE`` does: the session tracks with its focal length, the result carries its floor
(``CalibratedView.with_floor``) before the finishing step, and a live view's export is finished with both
(``ui.jobs.finish_live``). Clear returns to the default field of view. A calibration belongs to its source:
opening another source drops it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QInputDialog

from posetracker.multiview.calibration import CalibrationError, read_calibrations
from posetracker.multiview.one_view import CalibratedView, read_view
from .multicamera_dialog import CALIBRATION_FILTER
from .services import classify


class WindowCalibration:
    """The current source's calibrated camera in :class:`ui.main_window.MainWindow`."""

    calibration: CalibratedView | None = None  # the source's calibrated camera; None: the default field of view
    _calibrated_source: str | None = None  # the source spec it was loaded for

    def ask_calibration(self) -> None:
        """File > Camera calibration…: pick a calibration file (and a camera where it has several)."""
        path, _ = QFileDialog.getOpenFileName(self, "Camera calibration of this video or camera", "",
                                              CALIBRATION_FILTER)
        if path:
            self.load_calibration([path])

    def pick_camera(self, names: list[str], suggested: str | None) -> str | None:
        """Which camera of a calibration of several is this source's (None: cancelled)."""
        current = names.index(suggested) if suggested in names else 0
        name, ok = QInputDialog.getItem(self, "Camera calibration", "This calibration has several cameras. Which "
                                        "one filmed this source?", names, current, False)
        return name if ok else None

    def load_calibration(self, files: list[str], camera: str | None = None, source: str | None = None) -> bool:
        """Use the calibration ``files``' camera (``camera``; else the only one or the one named in the video's
        file name; else asked) for the current source, or for ``source`` about to be opened (``main.py
        --calibration``: its tracking starts with it); a file that cannot be read or a camera whose image size
        is not the source's is a message, and the previous calibration stays. True when it is used."""
        spec = self.state.source if source is None else source
        if source is None and self.views_result_kept():  # the cameras' result has its calibration
            return False
        if classify(spec) == "recording":
            self.show_error("A recording replays the poses it recorded: open its video or the camera to track it "
                            "with a calibration.")
            return False
        try:
            if camera is None:
                names = [c.name for c in read_calibrations(files)]
                if len(names) > 1:
                    stem = Path(spec).stem.lower()
                    named = [n for n in names if n.lower() in stem]
                    camera = named[0] if len(named) == 1 else self.pick_camera(names, None)
                    if camera is None:
                        return False
            view = read_view(files, camera=camera)
            opened = self.source_info is not None and spec == self.state.source
            note = view.check_size(self.source_info.size if opened else None)  # else once it opens
        except (CalibrationError, OSError) as exc:
            message = f"The calibration cannot be used: {exc}"
            if source is not None and source != self.state.source:  # kept when that source opens (it clears errors)
                self.banner.show_message(message, key="calibration")
                self.statusBar().showMessage(message, 10000)
            else:
                self.show_error(message)
            return False
        self.banner.withdraw("calibration")
        self.calibration, self._calibrated_source = view, spec
        self.source_panel.set_calibration(view.describe(), note)
        self.statusBar().showMessage(f"Calibrated: {view.describe()}" + (f" ({note})" if note else ""), 8000)
        if view.floor() is not None:
            self.heights_dock.raise_()  # the statures its floor gives ("1.71 m (floor)") are seen
        if spec == self.state.source:
            self._rerun_with_camera()
        return True

    def clear_calibration(self) -> None:
        """Back to the default field of view (the file's tag, else the people's estimate); reruns the source."""
        if self.calibration is None:
            return
        self.calibration, self._calibrated_source = None, None
        self.source_panel.set_calibration(None)
        self._rerun_with_camera()

    def calibration_fov(self) -> float | None:
        """Degrees the live session tracks with: the calibration's, None for the default."""
        return None if self.calibration is None else self.calibration.camera_fov().fov_deg

    def keep_calibration_for(self, spec: str) -> None:
        """A source is being opened: the calibration stays only for the same source."""
        if self.calibration is not None and spec != self._calibrated_source:
            self.calibration, self._calibrated_source = None, None
            self.source_panel.set_calibration(None)

    def check_calibration_size(self, size: tuple[int, int]) -> None:
        """The source opened (a camera's size is known only now): a calibration of another image size is
        dropped, in words, and live tracking restarts with the default camera."""
        if self.calibration is None:
            return
        try:
            note = self.calibration.check_size(size)
        except CalibrationError as exc:
            self.show_error(f"The calibration is not used: {exc}")
            self.calibration, self._calibrated_source = None, None
            self.source_panel.set_calibration(None)
            if not self.pending_offline:
                self.restart_live()
            return
        self.source_panel.set_calibration(self.calibration.describe(), note)

    def _rerun_with_camera(self) -> None:
        """What used the camera runs again with the new one: a whole-file result is processed again, live
        tracking restarts (a source still opening starts its tracking again)."""
        if self.pending_offline:
            return  # the whole-file run starts once the file opens, with this calibration
        if self.state.mode == "offline" and self.source_info is not None:
            self.process_whole_file()
        elif self.source_info is not None:
            self.restart_live()
        elif self.controller.capture is not None:  # still opening: its live session is made again
            self.controller.start_inference(self.live_factory())
