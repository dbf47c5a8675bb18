"""Plots panel: chosen joint angles of the selected person over the last N seconds.

The angles offered are those of the one angle table
(:func:`posetracker.analysis.angle_names` for the skeleton), labelled
"left knee flexion", "trunk lean", ...; the chosen ones are saved by label.

Only the checked angles are measured (each pose costs GUI-thread time per angle), and only at a refresh,
all poses that arrived since in one call; checking another one re-measures the recent poses kept for that.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget,
)

from posetracker.analysis import AngleHistory, AngleKey, angle_names
from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame

CURVE_COLOURS = ((66, 135, 245), (245, 96, 66), (80, 200, 120), (240, 200, 40),
                 (180, 100, 240), (60, 210, 220), (250, 140, 200), (200, 200, 200))
AUTO = -1
HISTORY_SECONDS = 60.0  # the longest plot window
KEY_ROLE = Qt.ItemDataRole.UserRole
#: names saved before the one angle table ("left knee", ...): joint -> table angle
LEGACY_JOINTS = {"knee": "knee_flexion", "elbow": "elbow_flexion", "hip": "hip_flexion",
                 "shoulder": "shoulder_abduction"}


def angle_label(name: str, side: str) -> str:
    """``("knee_flexion", "left")`` -> "left knee flexion"; a centre angle has no side: "trunk lean"."""
    words = name.replace("_", " ")
    return words if side == "centre" else f"{side} {words}"


def _chosen_keys(keys: list[AngleKey], chosen: list[str]) -> set[AngleKey]:
    """The keys whose label is in ``chosen``, or whose old name ("left knee") maps to them."""
    wanted = set(chosen)
    for label in chosen:
        side, _, joint = label.partition(" ")
        if joint in LEGACY_JOINTS:
            wanted.add(angle_label(LEGACY_JOINTS[joint], side))
    return {k for k in keys if angle_label(*k) in wanted}


class AnglePlot(QWidget):
    """Feed poses with :meth:`add_pose`; :meth:`refresh` redraws (called by the display timer)."""

    person_changed = Signal(int)  # track id, -1 = automatic
    angles_changed = Signal(list)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.history: AngleHistory | None = None
        self._spec: SkeletonSpec | None = None
        self._keys: list[AngleKey] = []  # every angle the skeleton offers, in table order
        self._poses: deque[PoseFrame] = deque()  # the last HISTORY_SECONDS of poses, to re-measure
        self._unmeasured: list[PoseFrame] = []  # poses added since the last refresh (also in _poses)
        self.seconds = 10.0
        self.person = AUTO
        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(60)
        self.plot.setLabel("left", "angle", units="deg")
        self.plot.setLabel("bottom", "time before now", units="s")
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.plot.setYRange(-30, 180)
        # no legend over the curves: the angle list beside the plot is the legend (each checked name in its colour)
        self.people = QComboBox()
        self.window_spin = QDoubleSpinBox(minimum=2.0, maximum=60.0, value=10.0, suffix=" s", singleStep=1.0)
        self.angle_list = QListWidget()
        self.empty = QLabel("")
        self._curves: dict[AngleKey, pg.PlotDataItem] = {}
        self._layout()
        self.people.activated.connect(self._on_people_activated)
        self.window_spin.valueChanged.connect(self._on_window_changed)
        self.angle_list.itemChanged.connect(self._on_angle_toggled)

    def _layout(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Person"))
        bar.addWidget(self.people)
        bar.addWidget(QLabel("Window"))
        bar.addWidget(self.window_spin)
        bar.addWidget(self.empty, 1)
        body = QHBoxLayout()
        body.addWidget(self.plot, 1)
        body.addWidget(self.angle_list)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(bar)
        layout.addLayout(body, 1)
        self._fill_people([])

    def set_spec(self, spec: SkeletonSpec, chosen: list[str]) -> None:
        """Offer every angle ``spec`` can measure; check those labelled in ``chosen``."""
        keys = angle_names(spec)
        self._spec, self._keys = spec, keys
        self._poses.clear()
        checked = _chosen_keys(keys, chosen)
        if chosen and not checked:  # chosen for another skeleton (people vs an animal): show all of this one's
            checked = set(keys)
        self.angle_list.blockSignals(True)
        self.angle_list.clear()
        for key in keys:
            item = QListWidgetItem(angle_label(*key))
            item.setData(KEY_ROLE, key)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if key in checked else Qt.CheckState.Unchecked)
            self.angle_list.addItem(item)
        self.angle_list.blockSignals(False)
        self.empty.setText("" if keys else f"No joint angles defined for {spec.name}")
        self._rebuild_history()
        self._rebuild_curves()

    def chosen_keys(self) -> list[AngleKey]:
        """The checked (angle, side) pairs, in table order."""
        items = (self.angle_list.item(i) for i in range(self.angle_list.count()))
        return [tuple(it.data(KEY_ROLE)) for it in items if it.checkState() == Qt.CheckState.Checked]

    def chosen(self) -> list[str]:
        """Labels of the checked angles (what the settings keep)."""
        return [angle_label(*k) for k in self.chosen_keys()]

    def set_person(self, track_id: int) -> None:
        self.person = track_id

    def select_person(self, track_id: int) -> None:
        """Show ``track_id`` (AUTO: automatic) in the Person list, as if picked there (a click in the video)."""
        self.person = track_id
        index = self.people.findData(track_id)
        if index < 0:  # not plotted yet: listed until the next refresh lists the ids recorded
            self.people.addItem(f"#{track_id}", track_id)
            index = self.people.count() - 1
        self.people.setCurrentIndex(index)

    def chosen_person(self) -> int | None:
        """The person picked by the user (not the automatic choice), or None."""
        return None if self.person == AUTO else self.person

    def set_window(self, seconds: float) -> None:
        self.window_spin.setValue(seconds)

    def clear(self) -> None:
        self._poses.clear()
        self._unmeasured.clear()
        if self.history is not None:
            self.history.clear()
        for curve in self._curves.values():
            curve.setData([], [])

    def add_pose(self, pose: PoseFrame) -> None:
        poses, t = self._poses, float(pose.timestamp)
        if poses and t < float(poses[-1].timestamp) - 1e-6:
            poses.clear()  # a seek or a new source, as AngleHistory does
        poses.append(pose)
        while float(poses[0].timestamp) < t - HISTORY_SECONDS:
            poses.popleft()
        self._unmeasured.append(pose)

    def _rebuild_history(self) -> None:
        """A history of the checked angles only, re-measured over the plotted window of kept poses."""
        if self._spec is None:
            return
        self.history = AngleHistory(self._spec, self.chosen_keys(), seconds=HISTORY_SECONDS)
        self._unmeasured.clear()
        if self._poses:
            start = float(self._poses[-1].timestamp) - self.seconds
            self.history.add_many([pose for pose in self._poses if float(pose.timestamp) >= start])

    def current_person(self) -> int | None:
        """The plotted track: the chosen one, else the lowest id in view, else the lowest id recorded."""
        if self.history is None:
            return None
        if self.person != AUTO:
            return self.person
        ids = self.history.latest_ids or self.history.track_ids()
        return ids[0] if ids else None

    def refresh(self) -> None:
        if self.history is None:
            return
        self.history.add_many(self._unmeasured)
        self._unmeasured.clear()
        self._fill_people(self.history.track_ids())
        tid = self.current_person()
        times, values = self.history.series(tid, self.seconds, break_gaps=True) if tid is not None else (np.zeros(0), None)
        for key, curve in self._curves.items():
            if len(times) == 0:
                curve.setData([], [])
                continue
            col = values[:, self.history.column(*key)]
            curve.setData(times - self.history.latest_time, col, connect="finite")
        self.plot.setXRange(-self.seconds, 0, padding=0.02)

    def _rebuild_curves(self) -> None:
        for curve in self._curves.values():
            self.plot.removeItem(curve)
        self._curves.clear()
        if self.history is None:
            return
        chosen = set(self.history.names)
        self.angle_list.blockSignals(True)
        for i, key in enumerate(self._keys):  # colours follow the table, whichever are checked
            colour = CURVE_COLOURS[i % len(CURVE_COLOURS)]
            item = self.angle_list.item(i)
            if key in chosen:
                self._curves[key] = self.plot.plot([], [], pen=pg.mkPen(colour, width=2), name=angle_label(*key))
            if item is not None:  # the list is the legend: a checked angle's name in its curve's colour
                item.setForeground(pg.mkColor(colour) if key in chosen else self.palette().text().color())
        self.angle_list.blockSignals(False)
        width = self.angle_list.sizeHintForColumn(0) + 2 * self.angle_list.frameWidth() + 24  # names never cut
        self.angle_list.setFixedWidth(max(120, min(width, 260)))

    def _fill_people(self, ids: list[int]) -> None:
        wanted = ["Auto"] + [f"#{i}" for i in ids]
        current = [self.people.itemText(i) for i in range(self.people.count())]
        if wanted == current:
            return
        self.people.blockSignals(True)
        self.people.clear()
        self.people.addItem("Auto", AUTO)
        for i in ids:
            self.people.addItem(f"#{i}", i)
        index = self.people.findData(self.person)
        self.people.setCurrentIndex(max(index, 0))
        self.people.blockSignals(False)

    def _on_people_activated(self, index: int) -> None:
        self.person = int(self.people.itemData(index))
        self.person_changed.emit(self.person)

    def _on_window_changed(self, value: float) -> None:
        self.seconds = float(value)

    def _on_angle_toggled(self, _item: QListWidgetItem) -> None:
        self._rebuild_history()
        self._rebuild_curves()
        self.refresh()
        self.angles_changed.emit(self.chosen())
