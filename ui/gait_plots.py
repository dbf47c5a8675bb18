"""Gait panel: foot contact of the plotted person (left and right bands) and knee flexion with heel strikes marked.

All analysis is the library's: :func:`posetracker.analysis.gait.analyse_gait` on the poses
received over the last window (plus a few seconds of lead-in, so the window's first steps
have context), re-run at most every ``ANALYSE_EVERY_S`` of source time. Below the plots: the
window's cadence, stride time and stance % (the ``gait`` export's summary numbers).
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from posetracker.analysis.foot_contact import CONTACT, FEET, GaitError
from posetracker.analysis.gait import PersonGait, analyse_gait, summarise_gait
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import TrackError, runs
from posetracker.types import PoseFrame, PoseSequence

FOOT_COLOURS = {"left": (66, 135, 245), "right": (245, 96, 66)}
FOOT_ROWS = {"left": 1.0, "right": 0.0}  # band centres on the contact plot
LEAD_IN_S = 4.0  # analysed before the plotted window
ANALYSE_EVERY_S = 1.0


def _corner_text(plot: pg.PlotWidget, text: str) -> pg.TextItem:
    """A caption fixed at the top-left corner of the plot area (in the view's pixels, not the data's)."""
    item = pg.TextItem(text, color=(210, 210, 210), anchor=(0, 0), fill=pg.mkBrush(0, 0, 0, 170))
    item.setParentItem(plot.getPlotItem().getViewBox())
    item.setPos(4, -2)
    return item


class GaitPlot(QWidget):
    """Feed poses with :meth:`add_pose`; :meth:`refresh` (display timer) redraws for a track id."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._spec: SkeletonSpec | None = None
        self._poses: deque[PoseFrame] = deque()
        self.seconds = 10.0
        self.gait: PersonGait | None = None  # the last analysis
        self._analysed: tuple[int | None, float] | None = None  # (track id, newest pose time) of self.gait
        self._in_front = True  # False while its dock is a tab behind another (see set_in_front)
        self._track: int | None = None
        self.contact_plot = pg.PlotWidget()
        self.contact_plot.setMinimumHeight(50)
        self.contact_plot.setYRange(-0.5, 1.5, padding=0)
        self.contact_plot.getAxis("left").setTicks([[(FOOT_ROWS["left"], "left"), (FOOT_ROWS["right"], "right")]])
        self.contact_plot.getAxis("left").setWidth(44)
        self.contact_plot.hideAxis("bottom")  # shared with the knee plot below
        self.contact_plot.setMouseEnabled(x=False, y=False)
        _corner_text(self.contact_plot, "foot on the ground")
        self.knee_plot = pg.PlotWidget()
        self.knee_plot.setMinimumHeight(60)
        self.knee_plot.getAxis("left").setWidth(44)
        _corner_text(self.knee_plot, "knee flexion (deg)   ▲ heel strike")
        self.knee_plot.setLabel("bottom", "time before now", units="s")
        self.knee_plot.showGrid(x=True, y=True, alpha=0.3)
        self.knee_plot.setYRange(-5, 100)
        self.knee_plot.setXLink(self.contact_plot)
        self.summary = QLabel("")
        self.summary.setObjectName("gait_summary")
        self.summary.setWordWrap(True)  # a long line never widens the window
        self.bands: dict[str, pg.BarGraphItem] = {}
        self.knees: dict[str, pg.PlotDataItem] = {}
        self.strikes: dict[str, pg.ScatterPlotItem] = {}
        for foot, colour in FOOT_COLOURS.items():
            self.bands[foot] = pg.BarGraphItem(x0=[], y0=[], width=[], height=[], brush=pg.mkBrush(*colour, 170),
                                               pen=pg.mkPen(None))
            self.contact_plot.addItem(self.bands[foot])
            self.knees[foot] = self.knee_plot.plot([], [], pen=pg.mkPen(colour, width=2), name=f"{foot} knee")
            self.strikes[foot] = pg.ScatterPlotItem(symbol="t1", size=11, brush=pg.mkBrush(*colour),
                                                    pen=pg.mkPen("w", width=1))
            self.knee_plot.addItem(self.strikes[foot])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(1)
        layout.addWidget(self.contact_plot, 2)
        layout.addWidget(self.knee_plot, 3)
        layout.addWidget(self.summary)

    def set_spec(self, spec: SkeletonSpec) -> None:
        self._spec = spec
        self.clear()

    def set_window(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self._analysed = None

    def clear(self) -> None:
        self._poses.clear()
        self.gait, self._analysed = None, None
        self._draw(None, 0.0)

    def add_pose(self, pose: PoseFrame) -> None:
        poses, t = self._poses, float(pose.timestamp)
        if poses and t < float(poses[-1].timestamp) - 1e-6:
            poses.clear()  # a seek or a new source
        poses.append(pose)
        while float(poses[0].timestamp) < t - self.seconds - LEAD_IN_S:
            poses.popleft()

    def refresh(self, track_id: int | None) -> None:
        """Analyse again when the person changed or ``ANALYSE_EVERY_S`` of new poses arrived; redraw. Hidden
        or behind another tab it does nothing: the analysis (~70 ms) would take the GUI thread from inference."""
        self._track = track_id
        if not self.isVisible() or not self._in_front:
            return
        if not self._poses or self._spec is None:
            self._draw(None, 0.0)
            return
        now = float(self._poses[-1].timestamp)
        stale = self._analysed is None or self._analysed[0] != track_id or now - self._analysed[1] >= ANALYSE_EVERY_S \
            or now < self._analysed[1]
        if stale:
            self.gait = self._analyse(track_id)
            self._analysed = (track_id, now)
        self._draw(self.gait, now)

    def set_in_front(self, shown: bool) -> None:
        """Connected to its dock's ``visibilityChanged``: a tabified dock's widget behind another tab is not hidden
        (``isVisible()`` stays True), so the dock says when its tab is in front; brought there, it draws at once."""
        self._in_front = shown
        if shown:
            self.refresh(self._track)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name: brought to front, draw what came meanwhile
        super().showEvent(event)
        self.refresh(self._track)

    def _analyse(self, track_id: int | None) -> PersonGait | None:
        if track_id is None:
            return None
        frames = list(self._poses)
        fps = (len(frames) - 1) / max(frames[-1].timestamp - frames[0].timestamp, 1e-6) if len(frames) > 1 else 30.0
        try:
            return analyse_gait(PoseSequence(frames, fps, self._spec), person=track_id).get(track_id)
        except (TrackError, GaitError) as exc:  # not in view, or a skeleton without legs
            self.summary.setText(str(exc))
            return None

    def _draw(self, gait: PersonGait | None, now: float) -> None:
        start = -self.seconds
        for f, foot in enumerate(FEET):
            x0, width, ys, knee_t, knee_v, hs_t, hs_v = [], [], [], [], [], [], []
            if gait is not None:
                t = gait.contacts.times - now
                dt = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
                for a, b in runs(gait.contacts.contact[:, f] == CONTACT):
                    if t[b - 1] >= start:
                        x0.append(max(t[a], start))
                        width.append(t[b - 1] + dt - x0[-1])
                        ys.append(FOOT_ROWS[foot] - 0.3)
                shown = t >= start
                knee_t, knee_v = t[shown], gait.knee[shown, f]
                for e in gait.heel_strikes(foot):
                    if t[e.index] >= start:
                        hs_t.append(t[e.index])
                        hs_v.append(gait.knee[e.index, f] if np.isfinite(gait.knee[e.index, f]) else 0.0)
            self.bands[foot].setOpts(x0=x0, y0=ys, width=width, height=[0.6] * len(x0))
            self.knees[foot].setData(knee_t, knee_v, connect="finite")
            self.strikes[foot].setData(hs_t, hs_v)
        self.contact_plot.setXRange(start, 0, padding=0.02)
        if gait is not None:
            self.summary.setText(self._numbers(gait, now))
        elif self._spec is None or not self._poses:
            self.summary.setText("")

    def _numbers(self, gait: PersonGait, now: float) -> str:
        strides = [s for s in gait.strides if s.end_s >= now - self.seconds]
        if not strides:
            return f"#{gait.person_id}: no full stride in the last {self.seconds:g} s (side-view walking needed)"
        both = summarise_gait({gait.person_id: replace(gait, strides=strides)})[-1]
        return (f"#{gait.person_id}, last {self.seconds:g} s: {both.strides} strides, cadence {both.cadence_spm:.0f} "
                f"steps/min, stride {both.stride_s:.2f} s, stance {both.stance_pct:.0f} %, "
                f"knee ROM {both.knee_rom_deg:.0f}°")

    def band_count(self, foot: str) -> int:
        """Contact bands drawn for ``foot`` (tests)."""
        return len(self.bands[foot].opts.get("x0", []))

    def strike_count(self, foot: str) -> int:
        """Heel-strike markers drawn for ``foot`` (tests)."""
        return len(self.strikes[foot].data)
