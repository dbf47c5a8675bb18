"""The window's results: the heights given to a whole-file result, recording, and export (a mixin of
``ui.main_window.MainWindow``; it uses the window's ``controller``, ``heights_panel``, ``state``, ``pool``)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from posetracker.export import exporter_for_path, get_exporter, with_suffix
from posetracker.motion.finish import is_finished
from posetracker.motion.heights import Heights
from posetracker.recording import SessionRecorder
from posetracker.types import PoseSequence
from .heights import people_of, with_heights
from .jobs import ExportJob, new_recording_folder


class WindowResults:
    """Heights, recording and export of :class:`ui.main_window.MainWindow`."""

    # ------------------------------------------------------------------ heights (issue #48)

    def set_result(self, seq: PoseSequence) -> None:
        """A whole-file result (or a replayed recording) arrived: listed in the Heights panel and scaled to the
        heights given (``self.sequence``: what the 3-D view plays and Export writes)."""
        self.forget_views()  # a several-camera result (ui.window_views) is replaced
        self.processed = seq
        self.heights_panel.set_people(people_of(seq))
        self.sequence, warnings = with_heights(seq, self.heights)
        self.skeleton_view.set_floor(self.sequence)  # the 3-D view on the result's floor, as the exports
        self.heights_panel.show_result(self.sequence)
        self._show_warnings(warnings)

    def forget_result(self) -> None:
        """Back to live poses (or no source): the panel lists the ids seen live."""
        self.processed = None
        self.skeleton_view.set_floor(None)  # live poses: the camera's axes
        self.forget_views()  # a several-camera result (ui.window_views) is gone with it
        self.heights_panel.set_people([])

    def set_heights(self, heights: Heights) -> None:
        """Heights given from outside the panel (``--height``): shown in its fields and applied."""
        self.heights_panel.set_heights(heights)
        self.heights_dock.raise_()  # in front of the joint angles: the heights given are seen
        self.on_heights_changed(heights)

    def on_heights_changed(self, heights: Heights) -> None:
        """The Heights panel changed: re-scale the finished result (3-D view, exports) from the one processed and
        replay it where it was; live poses keep their size (their exports are finished with the heights)."""
        self.heights = heights
        base = self.processed
        if base is None or not is_finished(base):  # live poses, or a live recording replayed: finished on export
            if heights:
                self.statusBar().showMessage("Heights apply to exports; process the whole file to see them in the "
                                             "3-D view", 8000)
            return
        seq, warnings = with_heights(base, heights)
        self.heights_panel.show_result(seq)
        self._show_warnings(warnings)
        self.sequence = seq
        self.skeleton_view.set_floor(seq)
        stats = self.controller.snapshot()
        self.controller.start_inference(self.replay_of(seq))  # the 3-D view plays the scaled result
        self.controller.seek(max(stats.position, 0))
        given = ", ".join(f"#{t} {e['stature_m']:.2f} m" for t, e in (seq.metadata.get("people") or {}).items()
                          if e.get("stature_source") == "given")
        self.statusBar().showMessage(f"Scaled to the heights given ({given}): the 3-D view and Export use them"
                                     if given else "Every person as estimated from the video", 8000)

    # ------------------------------------------------------------------ recording, export

    def _show_warnings(self, warnings: list[str]) -> None:
        for warning in warnings:
            self.show_error(warning[:1].upper() + warning[1:])

    def start_recording(self, folder: str | Path | None = None) -> Path | None:
        info = self.source_info
        if info is None:
            self.show_error("Open a source before recording.")
            self.uncheck_record()
            return None
        folder = Path(folder) if folder else new_recording_folder(Path(self.state.recordings_dir))
        meta = {"source": self.state.source, "mode": self.state.mode, "source_fps": info.fps}
        if self.calibration is not None:  # its export is finished with the camera it was tracked with
            meta["calibration"] = self.calibration.as_dict()
        self.controller.start_recording(partial(SessionRecorder, folder, info.fps, info.size, self.spec, meta))
        self.status.set_recording(f"● REC {folder.name}")
        self.record_action.blockSignals(True)
        self.record_action.setChecked(True)
        self.record_action.blockSignals(False)
        return folder

    def stop_recording(self) -> None:
        self.controller.stop_recording()
        self.uncheck_record()

    def uncheck_record(self) -> None:
        self.record_action.blockSignals(True)
        self.record_action.setChecked(False)
        self.record_action.blockSignals(False)
        self.status.set_recording("")

    def current_sequence(self) -> PoseSequence | None:
        """What Export writes: the offline result or replayed recording, else every pose received."""
        if self.sequence is not None:
            return self.sequence
        if not self.history:
            return None
        frames = self.history.frames()
        fps = self.source_info.fps if self.source_info and self.source_info.fps > 0 else 30.0
        return PoseSequence(frames, fps, self.spec, {"source": self.state.source, "mode": self.state.mode})

    def export_to(self, path: str | Path, name: str | None = None, options: dict | None = None) -> ExportJob | None:
        """Write what :meth:`current_sequence` holds with the exporter ``name`` (default: by the suffix) and its
        write() keywords ``options`` (the Export dialog's choices) off the GUI thread."""
        seq = self.current_sequence()
        if seq is None or len(seq) == 0:
            self.show_error("Nothing to export yet: no poses have been tracked.")
            return None
        try:
            exporter = get_exporter(name) if name else exporter_for_path(path)
        except KeyError as exc:
            self.show_error(str(exc.args[0]))
            return None
        job = ExportJob(exporter, seq, with_suffix(path, exporter), options, heights=self.heights,
                        calibration=self.calibration)
        job.setAutoDelete(False)
        job.signals.done.connect(lambda files: self._on_export_done(job, files))
        job.signals.failed.connect(lambda msg: self._on_export_failed(job, msg))
        self._jobs.add(job)
        self.pool.start(job)
        return job

    def _on_export_done(self, job: ExportJob, files: list) -> None:
        self._jobs.discard(job)
        self.statusBar().showMessage("Exported " + ", ".join(str(f) for f in files), 8000)

    def _on_export_failed(self, job: ExportJob, message: str) -> None:
        self._jobs.discard(job)
        self.show_error(message)
