"""Side panels: source (cameras, files, transport, whole-file processing) and mode & model."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QListWidget, QListWidgetItem,
    QProgressBar, QPushButton, QSlider, QSpinBox, QStyle, QToolButton, QVBoxLayout, QWidget,
)

from posetracker.capture import CameraInfo
from posetracker.defaults import MAX_PEOPLE_LIMIT
from .packets import SourceInfo
from .services import ModelOption

SPEEDS = (0.25, 0.5, 1.0, 2.0)


def format_time(seconds: float) -> str:
    m, s = divmod(max(0.0, seconds), 60.0)
    return f"{int(m):02d}:{s:05.2f}"


class SourcePanel(QWidget):
    camera_chosen = Signal(int)
    refresh_cameras = Signal()
    open_file_clicked = Signal()
    open_recording_clicked = Signal()
    recent_chosen = Signal(str)
    play_toggled = Signal()
    step_requested = Signal(int)
    seek_requested = Signal(int)
    speed_changed = Signal(float)
    loop_toggled = Signal(bool)
    process_clicked = Signal()
    cancel_clicked = Signal()
    calibration_clicked = Signal()  # Load…: File > Camera calibration
    calibration_cleared = Signal()  # Clear: back to the default field of view

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.calibration_label = QLabel()
        self.calibration_label.setObjectName("calibrationLabel")
        self.calibration_label.setWordWrap(True)
        self.load_calibration = QPushButton("Calibration…")
        self.load_calibration.setToolTip("Track this video or camera with its calibrated focal length and floor "
                                         "(as posetracker process --calibration FILE)")
        self.clear_calibration = QPushButton("Clear")
        self.clear_calibration.setToolTip("Back to the default field of view (the file's tag, else the people's)")
        self.cameras = QListWidget()
        self.cameras.setMaximumHeight(64)
        self.refresh = QPushButton("Refresh")
        self.open_file = QPushButton("Open video…")
        self.open_recording = QPushButton("Open recording…")
        self.recent = QComboBox()
        self.recent.setPlaceholderText("Recent files")
        self.source_label = QLabel("No source")
        self.source_label.setWordWrap(True)
        self.play = QToolButton()
        self.back = QToolButton()
        self.forward = QToolButton()
        self.back.setIcon(self._icon("SP_MediaSkipBackward"))
        self.back.setToolTip("Previous frame")
        self.forward.setIcon(self._icon("SP_MediaSkipForward"))
        self.forward.setToolTip("Next frame")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.time_label = QLabel("--:-- / --:--")
        self.speed = QComboBox()
        for s in SPEEDS:
            self.speed.addItem(f"{s:g}×", s)
        self.loop = QCheckBox("Loop")
        self.process = QPushButton("Process whole file")
        self.progress = QProgressBar()
        self.cancel = QPushButton("Cancel")
        self._fps = 30.0
        self._count = 0
        self._playing = True
        self._layout()
        self._connect()
        self.set_source(None)
        self.set_processing(False)
        self.set_calibration(None)

    def _layout(self) -> None:
        cams = QGroupBox("Cameras")
        cl = QVBoxLayout(cams)
        cl.addWidget(self.cameras)
        cl.addWidget(self.refresh)
        files = QGroupBox("Files")
        fl = QVBoxLayout(files)
        for w in (self.open_file, self.open_recording, self.recent, self.source_label):
            fl.addWidget(w)
        transport = QHBoxLayout()
        for w in (self.back, self.play, self.forward, self.speed, self.loop):
            transport.addWidget(w)
        fl.addLayout(transport)
        fl.addWidget(self.slider)
        fl.addWidget(self.time_label)
        fl.addWidget(self.calibration_label)
        calib = QHBoxLayout()
        calib.addWidget(self.load_calibration, 1)
        calib.addWidget(self.clear_calibration)
        fl.addLayout(calib)
        fl.addWidget(self.process)
        prog = QHBoxLayout()
        prog.addWidget(self.progress, 1)
        prog.addWidget(self.cancel)
        fl.addLayout(prog)
        layout = QVBoxLayout(self)
        layout.addWidget(cams)
        layout.addWidget(files)
        layout.addStretch(1)

    def _connect(self) -> None:
        self.cameras.itemActivated.connect(self._on_camera_activated)
        self.refresh.clicked.connect(self.refresh_cameras)
        self.open_file.clicked.connect(self.open_file_clicked)
        self.open_recording.clicked.connect(self.open_recording_clicked)
        self.recent.activated.connect(lambda i: self.recent_chosen.emit(self.recent.itemData(i)))
        self.play.clicked.connect(self.play_toggled)
        self.back.clicked.connect(lambda: self.step_requested.emit(-1))
        self.forward.clicked.connect(lambda: self.step_requested.emit(1))
        self.slider.sliderReleased.connect(lambda: self.seek_requested.emit(self.slider.value()))
        self.slider.actionTriggered.connect(self._on_slider_action)
        self.speed.activated.connect(lambda i: self.speed_changed.emit(float(self.speed.itemData(i))))
        self.loop.toggled.connect(self.loop_toggled)
        self.process.clicked.connect(self.process_clicked)
        self.load_calibration.clicked.connect(self.calibration_clicked)
        self.clear_calibration.clicked.connect(self.calibration_cleared)
        self.cancel.clicked.connect(self.cancel_clicked)

    def _on_slider_action(self, action: int) -> None:
        """Clicks on the groove and keyboard steps seek at once (drags seek on release)."""
        if action != QSlider.SliderAction.SliderMove.value:
            self.seek_requested.emit(self.slider.sliderPosition())

    def set_cameras(self, cameras: list[CameraInfo]) -> None:
        self.cameras.clear()
        for cam in cameras:
            item = QListWidgetItem(f"{cam.index}: {cam.name}")
            item.setData(Qt.ItemDataRole.UserRole, cam.index)
            self.cameras.addItem(item)
        if not cameras:
            item = QListWidgetItem("No camera found")
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.cameras.addItem(item)

    def _on_camera_activated(self, item: QListWidgetItem) -> None:
        index = item.data(Qt.ItemDataRole.UserRole)
        if index is not None:
            self.camera_chosen.emit(int(index))

    def set_recent(self, recent: list[str]) -> None:
        self.recent.clear()
        for spec in recent:
            self.recent.addItem(spec.rsplit("/", 1)[-1] or spec, spec)
            self.recent.setItemData(self.recent.count() - 1, spec, Qt.ItemDataRole.ToolTipRole)
        self.recent.setCurrentIndex(-1)

    def set_source(self, info: SourceInfo | None) -> None:
        self.source_label.setText(info.name if info else "No source")
        file_like = info is not None and not info.is_live and info.seekable
        for w in (self.play, self.back, self.forward, self.slider, self.speed, self.loop, self.process):
            w.setEnabled(file_like)
        self._fps = info.fps if info and info.fps > 0 else 30.0
        self._count = (info.frame_count or 0) if info else 0
        self.slider.setRange(0, max(0, self._count - 1))
        self.set_position(-1, False)

    def set_calibration(self, text: str | None, note: str = "", clearable: bool = True) -> None:
        """The source's calibrated camera in words (``CalibratedView.describe``), or None: the default camera;
        ``clearable`` False: Clear stays off (a several-camera result's camera)."""
        self.calibration_label.setText(f"Calibrated: {text}" if text else "Camera: default field of view")
        self.calibration_label.setToolTip(note)
        self.clear_calibration.setEnabled(bool(text) and clearable)

    def _icon(self, name: str):
        return self.style().standardIcon(getattr(QStyle.StandardPixmap, name))

    def set_position(self, index: int, playing: bool) -> None:
        if playing != self._playing:
            self._playing = playing
            self.play.setIcon(self._icon("SP_MediaPause" if playing else "SP_MediaPlay"))
            self.play.setToolTip("Pause" if playing else "Play")
        if not self.slider.isSliderDown() and index >= 0:
            self.slider.setValue(index)
        total = format_time(self._count / self._fps) if self._count else "--:--"
        self.time_label.setText(f"{format_time(max(index, 0) / self._fps)} / {total}")

    def set_processing(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel.setVisible(busy)
        self.progress.setValue(0)
        self.process.setVisible(not busy)

    def set_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, total if total > 0 else 0)
        self.progress.setValue(min(done, total) if total > 0 else 0)
        self.progress.setFormat(f"{done} / {total} frames" if total else f"{done} frames")


class ModelPanel(QWidget):
    """Skeleton/mode selector, live look-ahead with its latency cost, overlay options, refiners."""

    skeleton_chosen = Signal(str)
    mode_chosen = Signal(str)
    lookahead_changed = Signal(int)
    max_people_changed = Signal(int)
    exact_count_toggled = Signal(bool)
    sync_toggled = Signal(bool)
    refiners_changed = Signal(tuple)  # checked refiner kinds, in list order

    def __init__(self, options: list[ModelOption], refiners: list[str] = (), refiner_note: str | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.skeleton = QComboBox()
        self.set_options(options)
        self.mode = QComboBox()
        self.mode.addItem("Live (causal, low latency)", "live")
        self.mode.addItem("Offline (whole file, bidirectional)", "offline")
        self.lookahead = QSpinBox(minimum=0, maximum=15, suffix=" frames")
        self.cost = QLabel("")
        self.max_people = QSpinBox(minimum=1, maximum=MAX_PEOPLE_LIMIT)
        self.max_people.setToolTip("The most people (or animals) found in a frame; 1 for a one-subject recording")
        self.exact = QCheckBox("exactly")
        self.exact.setToolTip("Every frame holds exactly this many (animals in an arena): the surest readings are "
                              "kept however faint, and whole-file processing joins track pieces into that many ids")
        self.sync = QCheckBox("Draw poses on the frame they came from")
        self.model_label = QLabel("Model: loading…")
        self.model_label.setWordWrap(True)
        self.refiners = QGroupBox("Refiners")
        self.refiner_note = QLabel("")
        self.refiner_note.setWordWrap(True)
        QVBoxLayout(self.refiners).addWidget(self.refiner_note)
        self.refiner_boxes: list[QCheckBox] = []
        self.set_refiners(list(refiners), refiner_note, ())
        form = QFormLayout()
        form.addRow("Skeleton", self.skeleton)
        form.addRow("Mode", self.mode)
        form.addRow("Look-ahead", self.lookahead)
        form.addRow("", self.cost)
        people = QHBoxLayout()
        people.addWidget(self.max_people, 1)
        people.addWidget(self.exact)
        form.addRow("Max people", people)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.sync)
        layout.addWidget(self.model_label)
        layout.addWidget(self.refiners)
        layout.addStretch(1)
        self.skeleton.activated.connect(lambda i: self.skeleton_chosen.emit(self.skeleton.itemData(i)))
        self.mode.activated.connect(lambda i: self.mode_chosen.emit(self.mode.itemData(i)))
        self.lookahead.valueChanged.connect(self.lookahead_changed)
        self.max_people.valueChanged.connect(self.max_people_changed)
        self.exact.toggled.connect(self.exact_count_toggled)
        self.sync.toggled.connect(self.sync_toggled)

    def set_options(self, options: list[ModelOption]) -> None:
        """Fill the skeleton selector (shipped skeletons, then user-trained modes; those without weights
        disabled), keeping the current choice where it is still offered; emits nothing."""
        current = self.skeleton.currentData()
        self.skeleton.blockSignals(True)
        self.skeleton.clear()
        for opt in options:
            self.skeleton.addItem(opt.label, opt.skeleton)
            if not opt.has_weights:
                self.skeleton.model().item(self.skeleton.count() - 1).setEnabled(False)
        if current is not None:
            self.skeleton.setCurrentIndex(max(0, self.skeleton.findData(current)))
        self.skeleton.blockSignals(False)

    def set_refiners(self, names: list[str], note: str | None, checked=()) -> None:
        """Rebuild the refiner check boxes (kind in the "kind" property, the registry's label as text); disabled
        with ``note`` when none."""
        from posetracker.refiners import refiner_label

        layout = self.refiners.layout()
        for box in self.refiner_boxes:
            layout.removeWidget(box)
            box.hide()  # gone at once, not when the event loop deletes it (no box drawn over the new ones)
            box.deleteLater()
        self.refiner_boxes = []
        for kind in names:
            box = QCheckBox(refiner_label(kind))
            box.setProperty("kind", kind)
            box.setChecked(kind in checked)
            box.toggled.connect(lambda _on: self.refiners_changed.emit(self.checked_refiners()))
            layout.insertWidget(len(self.refiner_boxes), box)
            self.refiner_boxes.append(box)
        self.refiner_note.setText(note or "")
        self.refiner_note.setVisible(bool(note) or not names)
        if not names and not note:
            self.refiner_note.setText("No refiners are installed.")
        self.refiners.setEnabled(bool(names))

    def checked_refiners(self) -> tuple[str, ...]:
        return tuple(box.property("kind") for box in self.refiner_boxes if box.isChecked())

    def show_replay(self, on: bool) -> None:
        """A recording plays its own poses: the mode reads "Replay" and the live settings are off while it does."""
        at = self.mode.findData("replay")
        if on and at < 0:
            self.mode.addItem("Replay (recorded poses, no model)", "replay")
            at = self.mode.count() - 1
        if on:
            self.mode.setCurrentIndex(at)
        elif at >= 0:
            self.mode.removeItem(at)
        for widget in (self.mode, self.lookahead):
            widget.setEnabled(not on)

    def set_values(self, skeleton: str, mode: str, lookahead: int, sync: bool, max_people: int | None = None,
                   exact: bool | None = None) -> None:
        """Show these values without emitting; None leaves Max people / "exactly" as they are."""
        for combo, value in ((self.skeleton, skeleton), (self.mode, mode)):
            combo.setCurrentIndex(max(0, combo.findData(value)))
        for spin, value in ((self.lookahead, lookahead), (self.max_people, max_people)):
            if value is not None:
                spin.blockSignals(True)
                spin.setValue(value)
                spin.blockSignals(False)
        for box, on in ((self.sync, sync), (self.exact, exact)):
            if on is None:
                continue
            box.blockSignals(True)
            box.setChecked(on)
            box.blockSignals(False)

    def show_cost(self, lookahead: int, fps: float) -> None:
        ms = 1000.0 * lookahead / fps if fps > 0 else 0.0
        # models/README.md: live jitter 0.60x of the pretrained model at look-ahead 0, 0.42-0.46x at 1 (the default)
        self.cost.setText("lowest latency, more jitter (1 frame halves it)" if lookahead == 0
                          else f"\u2265 +{ms:.0f} ms latency at {fps:.4g} fps, smoother")
        self.cost.setToolTip("Each frame's pose waits for the next inferred frame(s): one source frame if inference "
                             "keeps up with the source, one inference interval when it does not.")
