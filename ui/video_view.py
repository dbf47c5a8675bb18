"""Video view: the frame (pyqtgraph ImageItem, autoLevels=False) with each person's skeleton on top."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QVBoxLayout, QWidget

from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame
from ui.overlay import OverlayOptions, drawn_edges, edge_segments, track_colour, visible_joints


class _PersonItems:
    """Graphics items for one person slot, reused between frames."""

    def __init__(self, view: pg.ViewBox):
        self.edges = pg.PlotCurveItem(connect="pairs")
        self.box = pg.PlotCurveItem()
        self.label = pg.TextItem(anchor=(0.5, 1.0))
        font = QFont()
        font.setPointSize(11)
        font.setBold(True)
        self.label.setFont(font)
        for item in (self.edges, self.box, self.label):
            item.setZValue(10)
            view.addItem(item)
        self.hide()

    def hide(self) -> None:
        for item in (self.edges, self.box, self.label):
            item.setVisible(False)


class VideoView(QWidget):
    """Shows one RGB frame and a PoseFrame; call :meth:`show_frame` from the display timer."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setBackground((20, 20, 20))
        self.view = self.graphics.addViewBox(lockAspect=True, invertY=True, enableMenu=False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.view.addItem(self.image)
        self.joints = pg.ScatterPlotItem(pxMode=True)
        self.joints.setZValue(11)
        self.view.addItem(self.joints)
        self._people: list[_PersonItems] = []
        self._edges = np.zeros((0, 2), np.int64)
        self._spec: SkeletonSpec | None = None
        self._size: tuple[int, int] | None = None
        self.options = OverlayOptions()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.graphics)
        self.frames_shown = 0

    def set_spec(self, spec: SkeletonSpec) -> None:
        self._spec = spec
        self._edges = drawn_edges(spec)

    def show_frame(self, image: np.ndarray | None, pose: PoseFrame | None) -> None:
        """Draw ``image`` ((H, W, 3) uint8 RGB; None keeps the current one) and ``pose``."""
        if image is not None:
            self.image.setImage(image, autoLevels=False, levels=(0, 255))
            size = (image.shape[1], image.shape[0])
            if size != self._size:
                self._size = size
                self.view.setRange(xRange=(0, size[0]), yRange=(0, size[1]), padding=0.0)
            self.frames_shown += 1
        self.draw_pose(pose)

    def clear(self) -> None:
        self.image.clear()
        self._size = None
        self.draw_pose(None)

    def draw_pose(self, pose: PoseFrame | None) -> None:
        spec = self._spec
        n = pose.num_people if pose is not None and spec is not None else 0
        while len(self._people) < n:
            self._people.append(_PersonItems(self.view))
        spots: list[dict] = []
        for p, items in enumerate(self._people):
            if p < n:
                spots.extend(self._draw_person(pose, p, items))
            else:
                items.hide()
        self.joints.setData(spots)

    def _draw_person(self, pose: PoseFrame, p: int, items: _PersonItems) -> list[dict]:
        spec, opt = self._spec, self.options
        xy = pose.keypoints[p, :, :2].astype(np.float64)
        conf = pose.confidence[p]
        colour = track_colour(int(pose.track_ids[p]))
        shown = visible_joints(conf, xy, spec, opt.threshold)
        seg = edge_segments(xy, shown, self._edges)
        items.edges.setData(seg[:, 0], seg[:, 1], pen=pg.mkPen(colour, width=3))
        items.edges.setVisible(len(seg) > 0)
        self._draw_box_and_label(pose, p, items, xy[shown], colour)
        spots = [self._spot(xy[k], conf[k], colour, True) for k in np.flatnonzero(shown)]
        if opt.low_confidence:
            faint = visible_joints(conf, xy, spec, -1.0) & ~shown
            spots += [self._spot(xy[k], conf[k], colour, False) for k in np.flatnonzero(faint)]
        return spots

    @staticmethod
    def _spot(xy: np.ndarray, conf: float, colour: tuple[int, int, int], confident: bool) -> dict:
        if confident:
            alpha = int(110 + 145 * float(np.clip(conf, 0.0, 1.0)))
            return {"pos": (xy[0], xy[1]), "size": 9, "brush": pg.mkBrush(*colour, alpha), "pen": pg.mkPen("k", width=1)}
        return {"pos": (xy[0], xy[1]), "size": 6, "brush": pg.mkBrush(0, 0, 0, 0), "pen": pg.mkPen(*colour, 160, width=1)}

    def _draw_box_and_label(self, pose: PoseFrame, p: int, items: _PersonItems, pts: np.ndarray,
                            colour: tuple[int, int, int]) -> None:
        if len(pts) == 0:
            items.box.setVisible(False)
            items.label.setVisible(False)
            return
        (x0, y0), (x1, y1) = pts.min(axis=0), pts.max(axis=0)
        pad = 0.08 * max(x1 - x0, y1 - y0, 10.0)
        x0, y0, x1, y1 = x0 - pad, y0 - pad, x1 + pad, y1 + pad
        if self.options.boxes:
            items.box.setData([x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0], pen=pg.mkPen(colour, width=2, style=pg.QtCore.Qt.PenStyle.DashLine))
        items.box.setVisible(self.options.boxes)
        if self.options.labels:
            tid = int(pose.track_ids[p])
            items.label.setText(f" {tid} " if tid >= 0 else " ? ", color=(0, 0, 0))
            items.label.fill = pg.mkBrush(*colour, 220)
            items.label.setPos(float((x0 + x1) / 2), float(y0))
        items.label.setVisible(self.options.labels)
