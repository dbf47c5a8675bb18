"""MainWindow's slots, file dialogs and Qt event handlers (a mixin, to keep each module short)."""

from __future__ import annotations

import time
from pathlib import Path
from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QPainter, QResizeEvent
from PySide6.QtWidgets import QFileDialog

from posetracker.export import exporters
from posetracker.recording import ReplaySession
from posetracker.skeletons import SkeletonError, load_skeleton
from .first_start import PREPARING_TEXT, preparing_model
from .heights import describe_heights, people_of
from .overlay import OverlayOptions
from posetracker.types import PoseFrame
from .packets import ModelInfo, PoseResult, RecordingSummary, SourceInfo
from .state import save_layout, save_state

TOO_SMALL = (520, 360)
SLOW_EVERY = 3  # display ticks per 3-D view / panel refresh
# while inference lags the source (it infers under LAG_RATIO of the source's frames), the 3-D view and the plots
# are drawn every LAGGING_EVERY ticks instead: the GUI thread leaves more of the CPU to inference (#21)
LAGGING_EVERY = 6
LAG_RATIO = 0.9


class WindowEvents:
    """Mixed into MainWindow (first base): reacts to the controller, panels and Qt events.

    Uses the window's widgets, ``state``, ``controller`` and public methods; owns the display-timer state below.
    """

    _ticks = 0
    _pose_3d: PoseFrame | None = None  # newest pose not yet drawn in the 3-D view
    _plots_stale = False  # poses arrived since the plots were last refreshed
    _lagging = False  # inference infers fewer frames than the source plays (status bar's rates)
    _preparing_said = False  # the model line says the fast model is being prepared (until the model is ready)

    # ------------------------------------------------------------------ controller

    def on_source_opened(self, info: SourceInfo) -> None:
        self.source_info = info
        self.setWindowTitle(f"PoseTracker - {info.name}")
        self.source_panel.set_source(info)
        self.model_panel.show_cost(self.state.lookahead, info.fps)
        self.controller.set_speed(self.state.speed)
        self.controller.set_loop(self.state.loop)
        self.statusBar().showMessage(f"Opened {info.name}: {info.size[0]}x{info.size[1]} at {info.fps:g} fps", 5000)
        self.check_calibration_size(info.size)  # a camera's size is known only now (ui.window_calibration)
        if self.pending_offline:
            self.pending_offline = False
            self.process_whole_file()

    def on_source_ended(self) -> None:
        if self.source_info is not None and self.source_info.is_live:
            self.show_error(f"{self.source_info.name} ended.")

    def on_model_ready(self, info: ModelInfo) -> None:
        self.model_ok = True
        self._preparing_said = False
        if info.skeleton != self.spec.name:
            try:
                self.set_spec(load_skeleton(info.skeleton))
            except SkeletonError as exc:
                self.show_error(str(exc))
        if info.sequence is not None and self.processed is None:
            self.set_result(info.sequence)  # a recording replayed (a whole-file result is set when it is done)
        elif info.sequence is not None:
            self.sequence = info.sequence  # the result replayed, scaled to the heights given
        refiners = f", refiners: {', '.join(info.refiners)}" if info.refiners else ""
        self.model_panel.model_label.setText(
            f"Model: {info.description} ({info.skeleton}){refiners}, ready in {info.load_s:.1f} s")
        for i, notice in enumerate(info.notices):
            self.banner.show_message(notice, key=f"model-notice-{i}", error=False)

    def on_model_failed(self, _message: str) -> None:
        self._preparing_said = False
        self.model_panel.model_label.setText("Model: not running (see the message above the video)")

    def on_pose_ready(self, result: PoseResult) -> None:
        pose = result.pose
        self.poses_received += 1
        if self.first_pose_at is None:
            self.first_pose_at = time.monotonic()
        self.history.put(pose)
        self.plots.add_pose(pose)
        self.gait_plots.add_pose(pose)
        self._plots_stale = True

    def on_processing_done(self, seq) -> None:
        self.set_result(seq)  # scaled to the heights given (Heights panel)
        seq = self.sequence
        self.history.clear()
        self.plots.clear()
        self.gait_plots.clear()
        self.controller.start_inference(lambda: ReplaySession(seq))
        self.controller.seek(0)
        self.controller.play()
        self.statusBar().showMessage(f"Processed {len(seq)} frames (offline, bidirectional); playing the result", 8000)

    def on_processing_finished(self) -> None:
        self.source_panel.set_processing(False)
        if self.sequence is None and self.controller.inference is None and self.source_info is not None:
            self.show_mode("live")  # cancelled or failed: back to live tracking, playing as before
            self.restart_live()
            self.controller.play()

    def on_recording_stopped(self, summary: RecordingSummary) -> None:
        self.last_recording = summary
        self.uncheck_record()
        note = f" ({summary.dropped} frames dropped)" if summary.dropped else ""
        self.statusBar().showMessage(
            f"Recording saved in {summary.folder}: {summary.frames} frames, {summary.poses} poses{note}", 10000)

    # ------------------------------------------------------------------ panels

    def on_record_toggled(self, checked: bool) -> None:
        if checked:
            self.start_recording()
        else:
            self.stop_recording()

    def on_skeleton_chosen(self, name: str) -> None:
        if name != self.state.skeleton:
            from .services import mode_refiners

            # the chosen kinds it has, plus the refiners the skeleton runs by default (mouse4: heatmap and graph; a
            # user-trained mode: what beat none on its held-out frames)
            own = tuple(k for k in mode_refiners(name, "live") if k not in self.state.refiners)
            self.state.refiners = tuple(self.state.refiners) + own
            self.set_skeleton(name)
            self.restart_live()

    def on_lookahead_changed(self, value: int) -> None:
        self.state.lookahead = int(value)
        fps = self.source_info.fps if self.source_info else 30.0
        self.model_panel.show_cost(self.state.lookahead, fps)
        self.rebuild_live_session()

    def on_max_people_changed(self, value: int) -> None:
        self.state.max_people = int(value)
        if not self.rebuild_live_session() and self.state.mode == "offline":
            self.statusBar().showMessage("The new maximum applies the next time the whole file is processed", 5000)

    def on_exact_count_toggled(self, checked: bool) -> None:
        self.state.exact_count = bool(checked)
        if not self.rebuild_live_session() and self.state.mode == "offline":
            self.statusBar().showMessage("The exact count applies the next time the whole file is processed", 5000)

    def on_refiners_changed(self, kinds: tuple) -> None:
        self.state.refiners = tuple(kinds)
        if not self.rebuild_live_session() and self.state.mode == "offline":
            self.statusBar().showMessage("Refiners apply the next time the whole file is processed", 5000)

    def on_sync_toggled(self, checked: bool) -> None:
        self.state.sync_overlay = checked

    def on_speed_changed(self, speed: float) -> None:
        self.state.speed = speed
        self.controller.set_speed(speed)

    def on_loop_toggled(self, loop: bool) -> None:
        self.state.loop = loop
        self.controller.set_loop(loop)

    def on_person_changed(self, track_id: int) -> None:
        """A person picked in the Person list or the video (-1: automatic): plotted, their label bordered, the
        others faded in the 3-D view, which follows them."""
        self.state.person = track_id
        self._plots_stale = True
        if track_id >= 0:  # picking someone switches the 3-D view's Follow on (unticking it keeps the fading)
            self.skeleton_view.follow.setChecked(True)
        self.video.selected = self.plots.chosen_person()
        if self.latest is not None:
            self.video.draw_pose(self.latest.pose)
            self._pose_3d = self.latest.pose  # redrawn at the next slow tick, paused or not

    def on_person_clicked(self, track_id: int) -> None:
        """A click in the video: that person (or, beside everyone, automatic again)."""
        if track_id == self.state.person:
            return
        self.plots.select_person(track_id)
        self.on_person_changed(track_id)

    def on_angles_changed(self, names: list) -> None:
        self.state.plot_angles = list(names)

    def on_plot_window_changed(self, seconds: float) -> None:
        self.state.plot_seconds = float(seconds)
        self.gait_plots.set_window(seconds)
        self._plots_stale = True

    def on_follow_toggled(self, checked: bool) -> None:
        self.state.follow_person = checked

    def on_overlay_changed(self, *_: object) -> None:
        s = self.state
        s.show_labels, s.show_low_confidence = self.labels_action.isChecked(), self.low_conf_action.isChecked()
        s.show_boxes, s.confidence_threshold = self.boxes_action.isChecked(), float(self.threshold.value())
        s.show_sides = self.sides_action.isChecked()
        self.video.options = OverlayOptions(s.show_labels, s.show_low_confidence, s.show_boxes, s.confidence_threshold,
                                            s.show_sides)
        if self.latest is not None:
            self.video.draw_pose(self.latest.pose)

    # ------------------------------------------------------------------ display timer

    def clear_display(self) -> None:
        """Forget the newest result (a new source is opening)."""
        self.latest = None
        self._pose_3d = None

    def on_timer_tick(self) -> None:
        """~30 Hz: paint the newest result (or preview frame) if one arrived since the last tick;
        the 3-D view and the panels every third tick (10 Hz, staggered; the 3-D view and the plots every sixth
        while inference lags the source), and only if data changed."""
        result = self.controller.display.take()
        if result is not None:
            self.latest = result
            self._pose_3d = result.pose
        if self.state.sync_overlay and self.model_ok:
            if result is not None:
                self.video.show_frame(result.frame.image, result.pose)
        else:
            preview = self.controller.preview.take()
            if preview is not None or result is not None:
                pose = self.latest.pose if self.latest is not None else None
                self.video.show_frame(preview.frame.image if preview is not None else None, pose)
        self._ticks += 1
        slow = LAGGING_EVERY if self._lagging else SLOW_EVERY
        if self._ticks % slow == 1 and self._pose_3d is not None:
            pose, self._pose_3d = self._pose_3d, None
            self.skeleton_view.set_pose(pose, self.plots.current_person(), self.plots.chosen_person())
        if self._ticks % SLOW_EVERY == 0:
            self._refresh_panels(plots=self._ticks % slow == 0)

    def _say_if_preparing(self) -> None:
        """While the model loads: "preparing the fast model" once its one-off export shows in the cache."""
        worker = self.controller.inference
        if self.model_ok or worker is None or worker.ready_flag or self._preparing_said:
            return
        if preparing_model():
            self._preparing_said = True
            self.model_panel.model_label.setText(PREPARING_TEXT)

    def _refresh_panels(self, plots: bool = True) -> None:
        stats = self.controller.snapshot()
        self._say_if_preparing()
        self._lagging = stats.playing and stats.inference_fps < LAG_RATIO * stats.source_fps
        people = 0
        if self.latest is not None:
            people = int((self.latest.pose.track_ids >= 0).sum())
        self.status.update_stats(stats, people)
        self.source_panel.set_position(stats.position, stats.playing)
        if self.processed is None and self.plots.history is not None:  # live: the ids seen (heights for exports)
            self.heights_panel.set_people(people_of(None, self.plots.history.track_ids()))
        if plots and self._plots_stale:
            self._plots_stale = False
            self.plots.refresh()
            self.gait_plots.refresh(self.plots.current_person())

    # ------------------------------------------------------------------ dialogs

    def ask_open_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open video", "", "Videos (*.mp4 *.avi *.mov *.mkv *.webm *.m4v *.mpg *.ts *.gif);;All files (*)")
        if path:
            self.open_source(path)

    def ask_open_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open image folder (its images in name order, as a video)")
        if folder:
            self.open_source(folder)

    def ask_open_recording(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open recording", self.state.recordings_dir)
        if folder:
            self.open_source(folder)

    def ask_export(self, name: str) -> None:
        exporter = exporters()[name]
        pattern = " ".join(f"*{s}" for s in exporter.suffixes)
        path, _ = QFileDialog.getSaveFileName(self, f"Export {name.upper()}", "", f"{exporter.description} ({pattern})")
        if not path:
            return
        options = self.ask_export_options(name, path)
        if options is not None:
            self.export_to(path, name, options)

    def ask_export_options(self, name: str, path: str) -> dict | None:
        """The format's choices (floor, foot lock, ... : ``posetracker.export.choices``) in a dialog; {} for a format
        without any, None when cancelled."""
        from posetracker.export.choices import export_choices
        from posetracker.tracks import describe_contents

        from .export_dialog import ExportOptionsDialog

        if not export_choices(name):
            return {}
        seq = self.current_sequence()
        contents = "\n".join(filter(None, [describe_contents(seq) if seq is not None else "",
                                           describe_heights(self.heights)]))
        dialog = ExportOptionsDialog(name, path, self, contents)
        return dialog.options() if dialog.exec() == ExportOptionsDialog.DialogCode.Accepted else None

    # ------------------------------------------------------------------ Qt events

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        size = event.size()
        if size.width() < TOO_SMALL[0] or size.height() < TOO_SMALL[1]:
            self.banner.show_message("The window is too small to show the video and panels: please enlarge it.",
                                     key="size", error=False)
        else:
            self.banner.withdraw("size")

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_source(paths[0])

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        """Save settings, then stop every thread (2 s budget) before the window goes."""
        self.timer.stop()
        save_state(self.settings, self.state)
        save_layout(self.settings, self.saveGeometry(), self.saveState())
        self.settings.sync()
        if not self.controller.stop():  # a weights load cannot be interrupted: never leave a thread behind
            self.controller.wait_all(5.0)
        self.pool.waitForDone(2000)
        super().closeEvent(event)

    def save_screenshots(self, path: str | Path) -> list[Path]:
        """``path`` (whole window), ``<stem>-3d.png`` (3-D scene) and ``<stem>-plots.png``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        scene = self.skeleton_view.grab_image()
        window = self.grab()
        container = getattr(self.skeleton_view, "container", None)
        if scene is not None and container is not None and container.isVisible():
            # the 3-D view is a native child window, which a widget grab does not see: paint it in
            painter = QPainter(window)
            painter.drawImage(QRect(container.mapTo(self, QPoint(0, 0)), container.size()), scene)
            painter.end()
        saved = [path] if window.save(str(path)) else []
        extra = [(scene, path.with_name(f"{path.stem}-3d.png")),
                 (self.plots_dock.grab(), path.with_name(f"{path.stem}-plots.png"))]
        for image, target in extra:
            if image is not None and image.save(str(target)):
                saved.append(target)
        return saved
