"""MainWindow: video view in the centre; source, model, 3-D and plot docks; a 30 Hz display timer.

It only wires widgets to the PipelineController and the library; sessions come from
``Services.make_session``; the state is one AppState persisted with QSettings.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QThreadPool, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QDoubleSpinBox, QMainWindow, QScrollArea, QToolBar, QVBoxLayout, QWidget

from posetracker.motion.heights import Heights
from posetracker.recording import PoseSpill
from posetracker.skeletons import SkeletonError, SkeletonSpec, load_skeleton
from posetracker.types import PoseSequence
from .menus import MenuActions, build_menus
from .jobs import ExportJob, recording_session, recording_video
from .packets import PoseResult, RecordingSummary, SourceInfo
from .gait_plots import GaitPlot
from .heights import HeightsPanel
from .panels import ModelPanel, SourcePanel
from .pipeline import PipelineController
from .plots import AnglePlot
from .services import ModelChoice, Services, camera_index, classify, model_options, with_camera
from .skeleton_view import SkeletonView
from .state import AppState, load_layout, load_state, open_settings
from .video_view import VideoView
from .widgets import MessageBanner, PipelineStatusBar
from .window_events import WindowEvents
from .window_results import WindowResults
from .window_calibration import WindowCalibration
from .window_tools import WindowTools
from .window_views import WindowViews

DISPLAY_HZ = 30


class MainWindow(WindowEvents, WindowResults, WindowViews, WindowCalibration, WindowTools, QMainWindow):
    """The application window; event handlers and slots live in :class:`ui.window_events.WindowEvents`, the
    heights, recording and export of results in :class:`ui.window_results.WindowResults`, several calibrated
    cameras in :class:`ui.window_views.WindowViews`, the source's calibration in
    :class:`ui.window_calibration.WindowCalibration`, the Tools menu in :class:`ui.window_tools.WindowTools`."""

    def __init__(self, services: Services | None = None, settings: QSettings | None = None):
        super().__init__()
        self.setWindowTitle("PoseTracker")
        self.setObjectName("mainWindow")
        self.setAcceptDrops(True)
        self.services = services or Services()
        self.settings = settings or open_settings()
        self.state: AppState = load_state(self.settings)
        self.controller = PipelineController(self)
        self.pool = QThreadPool(self)
        self._jobs: set[ExportJob] = set()
        self.spec: SkeletonSpec = self._load_spec(self.state.skeleton)
        self.source_info: SourceInfo | None = None
        self.model_ok = False
        self.latest: PoseResult | None = None
        self.history = PoseSpill()  # every pose received, for Export (on disk: memory stays flat)
        self.sequence: PoseSequence | None = None  # offline result or replayed recording (scaled to the heights)
        self.processed: PoseSequence | None = None  # that result as it came, before the heights given (issue #48)
        self.heights = Heights()  # the people's statures the user gave (Heights panel, --height)
        self.last_recording: RecordingSummary | None = None
        self.poses_received = 0
        self.first_pose_at: float | None = None  # time.monotonic() of the first pose (the mean rate since)
        self.pending_offline = False  # offline mode chosen: process the file once it has opened
        self.train_dialog = None  # Tools > Train animal mode (ui.train_dialog.TrainDialog), made when first opened
        self.batch_dialog = None  # Tools > Batch process videos (ui.batch_dialog.BatchDialog), made when first opened
        self._build()
        self._connect()
        self._apply_state()
        self.timer = QTimer(self)
        self.timer.setInterval(1000 // DISPLAY_HZ)
        self.timer.timeout.connect(self.on_timer_tick)
        self.timer.start()

    # ------------------------------------------------------------------ construction

    def _build(self) -> None:
        self.banner = MessageBanner()
        self.video = VideoView()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.banner)
        layout.addWidget(self.video, 1)
        self.setCentralWidget(central)
        self.source_panel = SourcePanel()
        self.model_panel = ModelPanel(model_options(self.services.weights_path))
        self.skeleton_view = SkeletonView()
        self.plots = AnglePlot()
        self.source_dock = self._dock("Source", self.source_panel, Qt.DockWidgetArea.LeftDockWidgetArea, scroll=True)
        self.view3d_dock = self._dock("3-D view", self.skeleton_view, Qt.DockWidgetArea.RightDockWidgetArea)
        self.model_dock = self._dock("Mode and model", self.model_panel, Qt.DockWidgetArea.RightDockWidgetArea, scroll=True)
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.plots_dock = self._dock("Joint angles", self.plots, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.gait_plots = GaitPlot()  # foot contact and heel strikes, a tab beside the joint angles
        self.gait_dock = self._dock("Gait", self.gait_plots, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.plots_dock, self.gait_dock)
        self.heights_panel = HeightsPanel()  # each person's height: scales the result and the exports (#48)
        self.heights_dock = self._dock("Heights", self.heights_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.gait_dock, self.heights_dock)
        self.gait_dock.visibilityChanged.connect(self.gait_plots.set_in_front)  # no analysis behind its tab
        self.plots_dock.raise_()
        self.status = PipelineStatusBar()
        self.setStatusBar(self.status)
        self._build_toolbar()
        docks = (self.source_dock, self.model_dock, self.view3d_dock, self.plots_dock, self.gait_dock,
                 self.heights_dock)
        self.export_menu = build_menus(self, MenuActions(self.ask_open_file, self.ask_open_folder, self.ask_open_recording,
                                                         self.ask_export,
                                                         self.toggle_play, self.controller.step, self.record_action, docks,
                                                         train_mode=self.ask_train_mode, batch=self.ask_batch,
                                                         open_views=self.ask_open_views,
                                                         calibration=self.ask_calibration,
                                                         calibrate_board=self.ask_calibrate_board))
        self.source_panel.set_cameras(self.services.list_cameras())

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea, scroll: bool = False) -> QDockWidget:
        """A dock; ``scroll`` wraps forms in a scroll area so a small window can still shrink."""
        dock = QDockWidget(title, self)
        dock.setObjectName(title.replace(" ", "_").lower() + "_dock")
        if scroll:
            area_widget = QScrollArea()
            area_widget.setWidgetResizable(True)
            area_widget.setFrameShape(QScrollArea.Shape.NoFrame)
            area_widget.setWidget(widget)
            widget = area_widget
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_toolbar(self) -> None:
        bar = QToolBar("Main")
        bar.setObjectName("main_toolbar")
        self.addToolBar(bar)
        self.record_action = QAction("● Record", self, checkable=True)
        self.record_action.setToolTip("Record the source video, poses and metadata into a session folder")
        bar.addAction(self.record_action)
        bar.addSeparator()
        self.labels_action = QAction("Labels", self, checkable=True)
        self.low_conf_action = QAction("Low-confidence joints", self, checkable=True)
        self.boxes_action = QAction("Boxes", self, checkable=True)
        self.sides_action = QAction("Sides", self, checkable=True)
        self.sides_action.setToolTip("Draw the joints of each body's right side white (left in the track's colour)")
        for action in (self.labels_action, self.low_conf_action, self.boxes_action, self.sides_action):
            bar.addAction(action)
        self.threshold = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, prefix="joint conf ≥ ")
        bar.addWidget(self.threshold)

    def _connect(self) -> None:
        c, sp, mp = self.controller, self.source_panel, self.model_panel
        c.source_opened.connect(self.on_source_opened)
        c.source_ended.connect(self.on_source_ended)
        c.model_ready.connect(self.on_model_ready)
        c.pose_ready.connect(self.on_pose_ready)
        c.failed.connect(self.show_error)
        c.model_failed.connect(self.on_model_failed)
        c.recording_stopped.connect(self.on_recording_stopped)
        c.processing_progress.connect(sp.set_progress)
        c.processing_done.connect(self.on_processing_done)
        c.processing_finished.connect(self.on_processing_finished)
        sp.camera_chosen.connect(lambda i: self.open_source(f"camera:{i}"))
        sp.refresh_cameras.connect(lambda: sp.set_cameras(self.services.list_cameras()))
        sp.open_file_clicked.connect(self.ask_open_file)
        sp.open_recording_clicked.connect(self.ask_open_recording)
        sp.recent_chosen.connect(self.open_source)
        sp.play_toggled.connect(self.toggle_play)
        sp.step_requested.connect(c.step)
        sp.seek_requested.connect(c.seek)
        sp.speed_changed.connect(self.on_speed_changed)
        sp.loop_toggled.connect(self.on_loop_toggled)
        sp.process_clicked.connect(self.process_whole_file)
        sp.cancel_clicked.connect(c.cancel_processing)
        sp.calibration_clicked.connect(self.ask_calibration)
        sp.calibration_cleared.connect(self.clear_calibration)
        mp.skeleton_chosen.connect(self.on_skeleton_chosen)
        mp.mode_chosen.connect(self.set_mode)
        mp.lookahead_changed.connect(self.on_lookahead_changed)
        mp.max_people_changed.connect(self.on_max_people_changed)
        mp.exact_count_toggled.connect(self.on_exact_count_toggled)
        mp.sync_toggled.connect(self.on_sync_toggled)
        mp.refiners_changed.connect(self.on_refiners_changed)
        self.plots.person_changed.connect(self.on_person_changed)
        self.video.person_clicked.connect(self.on_person_clicked)
        self.plots.angles_changed.connect(self.on_angles_changed)
        self.plots.window_spin.valueChanged.connect(self.on_plot_window_changed)
        self.skeleton_view.follow.toggled.connect(self.on_follow_toggled)
        self.heights_panel.heights_changed.connect(self.on_heights_changed)
        self.heights_panel.invalid.connect(self.show_error)
        self.record_action.toggled.connect(self.on_record_toggled)
        for action in (self.labels_action, self.low_conf_action, self.boxes_action, self.sides_action):
            action.toggled.connect(self.on_overlay_changed)
        self.threshold.valueChanged.connect(self.on_overlay_changed)

    def _apply_state(self) -> None:
        s = replace(self.state)  # widgets echo changes back into self.state while being set
        geometry, window_state = load_layout(self.settings)
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1280, 800)
        if window_state is None or not self.restoreState(window_state):
            self.resizeDocks([self.source_dock, self.view3d_dock], [270, 400], Qt.Orientation.Horizontal)
            self.resizeDocks([self.plots_dock, self.view3d_dock], [210, 430], Qt.Orientation.Vertical)
            # the Mode and model panel whole, refiners included (an animal mode lists three); the 3-D view gives way
            self.resizeDocks([self.view3d_dock, self.model_dock], [300, 440], Qt.Orientation.Vertical)
        self.labels_action.setChecked(s.show_labels)
        self.low_conf_action.setChecked(s.show_low_confidence)
        self.boxes_action.setChecked(s.show_boxes)
        self.sides_action.setChecked(s.show_sides)
        self.threshold.setValue(s.confidence_threshold)
        self.skeleton_view.follow.setChecked(s.follow_person)
        self.model_panel.set_values(s.skeleton, s.mode, s.lookahead, s.sync_overlay, s.max_people, s.exact_count)
        self.model_panel.show_cost(s.lookahead, 30.0)
        self.source_panel.set_recent(s.recent_files)
        self.source_panel.loop.setChecked(s.loop)
        self.source_panel.speed.setCurrentIndex(max(0, self.source_panel.speed.findData(s.speed)))
        self.plots.set_person(s.person)
        self.video.selected = self.plots.chosen_person()
        self.plots.set_window(s.plot_seconds)
        self.gait_plots.set_window(s.plot_seconds)
        self.state = s
        self.set_spec(self.spec)
        self._refresh_refiners()
        self.on_overlay_changed()

    def _load_spec(self, name: str) -> SkeletonSpec:
        try:
            return load_skeleton(name)
        except SkeletonError:
            self.state.skeleton = "human18"
            return load_skeleton("human18")

    def _refresh_refiners(self) -> None:
        """List the refiners trained for the current skeleton; drop chosen kinds it lacks."""
        names, note = self.services.refiner_names(self.state.skeleton)
        self.state.refiners = tuple(k for k in self.state.refiners if k in names)
        self.model_panel.set_refiners(names, note, self.state.refiners)

    def select_model(self, skeleton: str, refiners: tuple[str, ...] = ()) -> None:
        """Choose the skeleton and the refiners before a source is opened (command line)."""
        self.state.refiners = tuple(refiners)
        self.set_skeleton(skeleton)
        self.model_panel.set_values(skeleton, self.state.mode, self.state.lookahead, self.state.sync_overlay)

    def set_skeleton(self, name: str) -> None:
        """Switch the drawing, plots and refiner list to skeleton ``name`` (human18 if it cannot be read)."""
        self.state.skeleton = name
        self.set_spec(self._load_spec(name))
        self._refresh_refiners()

    def refresh_model_options(self) -> None:
        """Re-read the skeletons and user-trained modes into the Mode and model panel (a mode was just trained)."""
        self.model_panel.set_options(model_options(self.services.weights_path))
        self.model_panel.set_values(self.state.skeleton, self.state.mode, self.state.lookahead, self.state.sync_overlay)

    def set_spec(self, spec: SkeletonSpec) -> None:
        self.spec = spec
        self.video.set_spec(spec)
        self.skeleton_view.set_spec(spec)
        self.plots.set_spec(spec, self.state.plot_angles)
        self.gait_plots.set_spec(spec)

    # ------------------------------------------------------------------ sources

    def open_source(self, spec: str, mode: str | None = None) -> None:
        """Open ``camera:N``, a video file, a folder of images or a recording folder; stops the previous source first."""
        spec = str(spec)
        if spec.strip().isdigit() and not Path(spec).exists():
            self.show_error(f"No file called {spec!r}. To open a camera, use camera:{spec.strip()} (or the Cameras list).")
            return
        kind = classify(spec)
        self.keep_calibration_for(spec)  # a calibration belongs to its source (ui.window_calibration)
        try:
            opener, factory = self._source_builders(spec, kind)
        except ValueError as exc:
            self.show_error(str(exc))
            return
        self._reset_source()
        self.state.source = spec
        if kind != "camera":
            self.state.add_recent(spec)
            self.source_panel.set_recent(self.state.recent_files)
        mode = (mode or self.state.mode) if kind == "file" else "live"
        self.pending_offline = mode == "offline"
        self.model_panel.show_replay(kind == "recording")
        if kind != "recording":  # a recording replays its poses: the chosen mode stays for the next source
            self.show_mode(mode)
        self.controller.start(opener, factory)

    def _source_builders(self, spec: str, kind: str):
        if kind == "camera":
            return partial(self.services.open_camera, camera_index(spec)), self.live_factory()
        if kind == "recording":
            return partial(recording_video, spec), partial(recording_session, spec)
        return partial(self.services.open_file, spec), self.live_factory()

    def live_factory(self):
        choice = ModelChoice(self.state.skeleton, "live", self.state.lookahead, refiners=self.state.refiners,
                             max_people=self.state.max_people, exact_count=self.state.exact_count)
        fov = self.calibration_fov()  # the source's calibrated camera, else the default
        return partial(self.services.make_session, choice if fov is None else replace(choice, fov_deg=fov))

    def _reset_source(self) -> None:
        self.source_info = None
        self.model_ok = False
        self.clear_display()
        self.sequence = None
        self.forget_result()
        self.heights = Heights()
        self.heights_panel.set_heights(self.heights)
        self.history.clear()
        self.plots.clear()
        self.gait_plots.clear()
        self.video.clear()
        self.source_panel.set_source(None)
        self.source_panel.set_processing(False)
        self.uncheck_record()
        self.banner.withdraw("source")
        self.banner.withdraw_unkeyed()  # the previous source's errors
        self.setWindowTitle("PoseTracker")  # until the new source opens

    def toggle_play(self) -> None:
        if self.controller.snapshot().playing:
            self.controller.pause()
        else:
            self.controller.play()

    # ------------------------------------------------------------------ mode, model

    def set_mode(self, mode: str) -> None:
        if self.views_result_kept():
            return
        if mode == "offline":
            self.process_whole_file()
        elif self.state.mode != "live" or self.sequence is not None:
            self.show_mode("live")
            self.restart_live()

    def show_mode(self, mode: str) -> None:
        self.state.mode = mode
        self.model_panel.set_values(self.state.skeleton, mode, self.state.lookahead, self.state.sync_overlay)

    def rebuild_live_session(self) -> bool:
        """A live-session setting changed (look-ahead, refiners): rebuild the live session, if one runs (True)."""
        if self.state.mode == "live" and self.sequence is None:
            self.restart_live()
            return True
        return False

    def restart_live(self) -> None:
        if self.source_info is None or classify(self.state.source) == "recording":
            return
        self.sequence = None
        self.forget_result()
        self.model_ok = False
        self.history.clear()
        self.plots.clear()
        self.gait_plots.clear()
        self.controller.start_inference(self.live_factory())

    def process_whole_file(self) -> None:
        """Offline mode: bidirectional pass over the whole file, then play the result."""
        if self.views_result_kept():
            return
        if classify(self.state.source) != "file" or self.source_info is None or self.source_info.is_live:
            self.show_error("Offline processing needs a video file: open one first.")
            self.show_mode("live")
            return
        self.show_mode("offline")
        self.model_panel.model_label.setText("Model: processing the whole file (bidirectional)…")
        self.controller.pause()
        self.controller.stop_inference()
        self.model_ok = False
        self.source_panel.set_processing(True)
        choice = ModelChoice(self.state.skeleton, "offline", 0, refiners=self.state.refiners,
                             max_people=self.state.max_people, exact_count=self.state.exact_count)
        self.controller.process_file(partial(self.services.open_file, self.state.source),
                                     partial(with_camera, self.services.make_session, choice), self.calibration)

    def show_error(self, message: str) -> None:
        """Non-modal: a dismissable banner above the video; the app stays usable."""
        self.banner.show_message(message)
        self.statusBar().showMessage(message, 10000)
