"""The window's several-camera results (a mixin of ``ui.main_window.MainWindow``; it uses the window's
``controller``, ``services``, ``state``, ``banner`` and its source and result methods).

File > Open several cameras opens :class:`ui.multicamera_dialog.MultiCameraDialog`; its result (a
``posetracker.multiview.process.ViewsResult``) is shown as a whole-file result is: the first view's video plays
with the fused people reprojected into it, the 3-D view and the plots read the triangulated people (the first
camera's frame, the calibration's metres), the Heights panel lists them and Export writes them. The toolbar's
Camera picker shows another view's video with the same people reprojected into it
(``posetracker.multiview.fuse.seen_from``); the result, the 3-D view and Export stay the first camera's. A
connected camera's frames are kept by a live run in a new folder under the recordings folder
(``posetracker.multiview.live_videos``) and its view plays them; where they could not be kept it plays grey frames
of its size (``posetracker.capture.blank.BlankSource``) with the people drawn where the camera saw them.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from PySide6.QtWidgets import QComboBox, QLabel, QToolBar

from posetracker.capture.blank import BlankSource
from posetracker.multiview.fuse import seen_from
from posetracker.multiview.live_check import is_camera
from posetracker.multiview.live_videos import KeptFrames
from posetracker.recording import ReplaySession
from .jobs import new_recording_folder
from .services import ModelChoice, camera_index, classify, with_camera


def view_replay(seq) -> ReplaySession:
    """A replay of ``seq`` as another camera sees it: it plays the poses, but is not the window's result (its
    ``seq`` is None, so the model-ready slot keeps the first camera's result for the 3-D view and Export)."""
    session = ReplaySession(seq)
    session.seq = None
    return session


class WindowViews:
    """Several calibrated cameras in :class:`ui.main_window.MainWindow`."""

    views_dialog = None  # File > Open several cameras (ui.multicamera_dialog.MultiCameraDialog), made when first opened
    views_result = None  # the several-camera result shown (ViewsResult), None for any other source
    view_picker: QComboBox | None = None  # the toolbar's Camera picker, made with the first result
    _picker_actions: tuple = ()  # its label's and its own toolbar actions (hidden without a result)
    _view_shown = 0  # the camera whose video plays (an index into views_result.views)
    _views_heights = None  # heights for the next several-camera result (main.py --views --height), or None

    def ask_open_views(self, views: list[str] | None = None, calibration: str | list[str] | None = None,
                       start: bool = False, live: bool | None = None, cameras: list[str] | None = None,
                       heights=None) -> None:
        """The (non-modal) several-camera dialog, one instance; ``views`` / ``calibration`` fill it (``main.py
        --views``), ``live`` ticks or clears its Live (None: as it is), ``cameras`` picks each view's calibrated
        camera (``--cameras``), ``start`` processes them at once; ``heights`` (``--height``) are given to the
        result when it is shown (a new result starts with none)."""
        self._views_heights = heights or None
        from .multicamera_dialog import MultiCameraDialog

        if self.views_dialog is None:
            self.views_dialog = MultiCameraDialog(self.views_sessions, self, partial(self.views_sessions, live=True),
                                                  cameras=lambda: self.services.list_cameras(), opener=self.open_view,
                                                  free=self.free_cameras,
                                                  keep_folder=lambda: new_recording_folder(
                                                      Path(self.state.recordings_dir)))
            self.views_dialog.result_ready.connect(self.show_views_result)
        if views is not None or calibration is not None:
            self.views_dialog.set_inputs(views, calibration)
        if cameras:
            self.views_dialog.pick_cameras(cameras)
        if live is not None:
            self.views_dialog.live.setChecked(live)
        self.views_dialog.show()
        self.views_dialog.raise_()
        self.views_dialog.activateWindow()
        if start:
            self.views_dialog.start_run()

    def open_view(self, spec: str):
        """A view's source for the several-camera dialog's checks and live run: ``camera:N`` through the services'
        camera (as the Cameras list opens it; fake in tests), anything else as a file."""
        if is_camera(spec):
            return self.services.open_camera(camera_index(spec))
        return self.services.open_file(spec)

    def free_cameras(self, cameras: list[str]) -> None:
        """The several-camera dialog is about to open ``cameras`` (``camera:N``): the one this window shows live, if
        any, is closed here first (a camera is opened by one program at a time), and the banner says so."""
        spec = self.state.source
        if self.views_result is None and spec in cameras and classify(spec) == "camera":
            self.controller.stop()
            self._reset_source()
            self.state.source = ""
            self.banner.show_message(f"{spec} was closed here: File > Open several cameras tracks it.", key="source",
                                     error=False)

    def views_sessions(self, live: bool = False):
        """fov_deg -> a whole-file session of the human model as ``posetracker process`` makes one for each view
        (its offline refiners, no others), with the window's most people; ``live``: a live session (the default
        look-ahead, the live mode's default refiners, its 2-D not smoothed: the fused people are, in 3-D) as
        ``process --mode live`` makes one for each source."""
        if live:
            choice = ModelChoice("human18", "live", max_people=self.state.max_people, refiners=None, smoothing=False)
            return partial(with_camera, self.services.make_session, choice)
        choice = ModelChoice("human18", "offline", 0, max_people=self.state.max_people)
        return partial(with_camera, self.services.make_session, choice)

    def show_views_result(self, result) -> None:
        """Open the first view's video and play the fused result over it (module docstring)."""
        self._reset_source()
        self.pending_offline = False
        self.show_mode("live" if result.sequence.metadata.get("mode") == "live" else "offline")  # how it was tracked
        self.model_panel.show_replay(False)
        self.set_result(result.sequence)  # scaled to the heights given (Heights panel)
        self.views_result = result
        picker = self._picker()
        picker.blockSignals(True)
        picker.clear()
        picker.addItems([c.name for c in result.cameras])
        picker.blockSignals(False)
        for action in self._picker_actions:
            action.setVisible(True)
        self._play_view(0, 0)
        if self._views_heights:  # main.py --views --height: given to this result, as --source --height is
            heights, self._views_heights = self._views_heights, None
            self.set_heights(heights)
        self._show_warnings(result.warnings)
        self.statusBar().showMessage(f"Processed {len(result.sequence)} frames from {len(result.views)} cameras; "
                                     "playing the result", 8000)

    def show_view(self, view: int) -> None:
        """The Camera picker: play camera ``view``'s video with the result's people reprojected into it, from the
        instant shown."""
        result = self.views_result
        if result is None or not 0 <= view < len(result.views):
            return
        shown = self.controller.snapshot().position  # -1: nothing open
        self._play_view(view, shown - result.offsets[self._view_shown] if shown >= 0 else 0)

    def _play_view(self, view: int, at: int) -> None:
        """Open camera ``view``'s video and play the result over it from the first view's frame ``at``."""
        result = self.views_result
        self.view_picker.blockSignals(True)
        self.view_picker.setCurrentIndex(view)
        self.view_picker.blockSignals(False)
        self._view_shown = view
        self.state.source = result.views[view]
        seq, kept = result.sequence, (result.kept or [None] * len(result.views))[view]
        camera = is_camera(result.views[view]) and not kept
        if camera:  # its frames were not kept: grey frames of its size, as many as the first source read
            opener = partial(BlankSource, result.cameras[view].image_size, seq.index_rate(),
                             max((f.index for f in seq.frames), default=-1) + 1, result.views[view])
        elif kept:  # a camera's frames kept by the live run: frame i = the result's frame i
            opener = partial(KeptFrames, kept, seq.metadata["multiview"]["kept_frames"]["rate"])
        else:
            opener = partial(self.services.open_file, result.views[view])
        self.controller.start(opener, self.replay_of(self.sequence))
        self.source_panel.set_calibration(f"{result.cameras[view].name}, one of {len(result.cameras)} cameras",
                                          "the several-camera result's calibration", clearable=False)
        if at + result.offsets[view] > 0:
            self.controller.seek(at + result.offsets[view])
        names = ", ".join(c.name for c in result.cameras)
        people = len(result.sequence.track_ids())
        shown = (f"drawn where {result.views[view]} saw them, over grey frames (its frames were not kept)" if camera
                 else f"the video is {result.views[view]}'s frames kept in {Path(kept).parent}, with the people "
                 "reprojected into it" if kept else
                 f"The video is {Path(result.views[view]).name} with the people reprojected into it")
        self.banner.show_message(
            f"{len(result.views)} calibrated cameras ({names}): {people} {'person' if people == 1 else 'people'} "
            f"triangulated. {shown[:1].upper()}{shown[1:]} (Camera picks another); the 3-D view, plots and Export "
            f"are in the calibration's metres ({result.cameras[0].name}'s frame).", key="source", error=False)

    def replay_of(self, seq):
        """The session factory playing ``seq`` (the result, scaled to the heights given) over the video shown:
        as the camera picked sees it where a several-camera result is shown."""
        result = self.views_result
        if result is None or self._view_shown == 0:
            return partial(ReplaySession, seq)
        return partial(view_replay, seen_from(seq, result.cameras, self._view_shown, result.offsets))

    def views_result_kept(self) -> bool:
        """True, with a message, where a several-camera result is shown: tracking its first video again (Process
        whole file, the Mode, a calibration) replaced it with that one video's, silently, under the banner that
        still said the cameras' result was shown."""
        result = self.views_result
        if result is None:
            return False
        self.show_error(f"This is the result of {len(result.views)} calibrated cameras, kept: File > Open several "
                        "cameras… tracks them again; File > Open video tracks one video alone (Export the result "
                        "first to keep it).")
        self.show_mode("live" if result.sequence.metadata.get("mode") == "live" else "offline")  # as it was tracked
        return True

    def forget_views(self) -> None:
        """Another source or result: no several-camera result, the Camera picker hidden, the Source panel's
        camera line the source's own again."""
        if self.views_result is not None and self.calibration is None:
            self.source_panel.set_calibration(None)
        self.views_result = None
        self._view_shown = 0
        for action in self._picker_actions:
            action.setVisible(False)

    def _picker(self) -> QComboBox:
        if self.view_picker is None:
            bar = self.findChild(QToolBar, "main_toolbar")
            bar.addSeparator()
            label = QLabel(" Camera ")
            self.view_picker = QComboBox()
            self.view_picker.setObjectName("viewPicker")
            self.view_picker.setToolTip("The camera whose video is shown, with the people reprojected into it")
            self._picker_actions = (bar.addWidget(label), bar.addWidget(self.view_picker))
            self.view_picker.currentIndexChanged.connect(self.show_view)
        return self.view_picker
