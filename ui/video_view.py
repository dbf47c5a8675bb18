"""Video view: the frame (pyqtgraph ImageItem, autoLevels=False) with each person's skeleton on top.

Cheap on the GUI thread (inference shares the CPU and the GIL with it): the frame is
downscaled once (cv2 INTER_AREA, which releases the GIL) to the view's pixel size and
shown as a plain RGB888 image (no levels, so pyqtgraph does no per-pixel work), while
the ImageItem keeps source-pixel coordinates for the overlay. Pens, brushes and labels
are cached and only set when they change.
"""

from __future__ import annotations

import cv2
import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QFont, QPen
from PySide6.QtWidgets import QVBoxLayout, QWidget

from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame
from .overlay import (
    OverlayOptions, drawn_edges, edge_segments, layout_labels, person_at, right_side, track_colour, visible_joints,
)


ALPHA_LEVELS = 8  # joint-dot alpha follows confidence in a few steps (few distinct brushes to cache)
MIN_DOWNSCALE = 0.9  # below this scale the frame is resized before display


def display_size(image_size: tuple[int, int], view_size: tuple[float, float]) -> tuple[int, int] | None:
    """(w, h) to resize an ``image_size`` frame to so it fits ``view_size`` device pixels; None: keep it."""
    (w, h), (vw, vh) = image_size, view_size
    if w <= 0 or h <= 0 or vw <= 0 or vh <= 0:
        return None
    scale = min(vw / w, vh / h)
    if scale >= MIN_DOWNSCALE:
        return None
    return max(1, round(w * scale)), max(1, round(h * scale))


WHITE = (255, 255, 255)


class _Styles:
    """Pens and brushes by colour, made once (mkPen/mkBrush per frame is costly)."""

    def __init__(self) -> None:
        self._cache: dict[tuple, QPen | QBrush] = {}

    def get(self, key: tuple, make):
        item = self._cache.get(key)
        if item is None:
            item = self._cache[key] = make()
        return item

    def edge_pen(self, colour: tuple[int, int, int]) -> QPen:
        return self.get(("edge", colour), lambda: pg.mkPen(colour, width=3))

    def box_pen(self, colour: tuple[int, int, int]) -> QPen:
        return self.get(("box", colour), lambda: pg.mkPen(colour, width=2, style=Qt.PenStyle.DashLine))

    def leader_pen(self, colour: tuple[int, int, int]) -> QPen:
        return self.get(("leader", colour), lambda: pg.mkPen(*colour, 200, width=1.5))

    def selected_pen(self) -> QPen:
        return self.get(("selected",), lambda: pg.mkPen((255, 255, 255), width=3))

    def label_brush(self, colour: tuple[int, int, int]) -> QBrush:
        return self.get(("label", colour), lambda: pg.mkBrush(*colour, 220))

    def dot_brush(self, colour: tuple[int, int, int], level: int) -> QBrush:
        alpha = int(110 + 145 * level / (ALPHA_LEVELS - 1))
        return self.get(("dot", colour, level), lambda: pg.mkBrush(*colour, alpha))

    def dot_pen(self) -> QPen:
        return self.get(("dotpen",), lambda: pg.mkPen("k", width=1))

    def faint_brush(self) -> QBrush:
        return self.get(("faint",), lambda: pg.mkBrush(0, 0, 0, 0))

    def faint_pen(self, colour: tuple[int, int, int]) -> QPen:
        return self.get(("faintpen", colour), lambda: pg.mkPen(*colour, 160, width=1))


class _PersonItems:
    """Graphics items for one person slot, reused between frames."""

    def __init__(self, view: pg.ViewBox):
        self.edge_pen: QPen | None = None
        self.box_pen: QPen | None = None
        self.text: str | None = None
        self.fill: QBrush | None = None
        self.leader_pen: QPen | None = None
        self.selected = False  # the label has the selection's white border
        self.anchor = (0.0, 0.0)  # the label's bottom-centre above the person's box (source pixels)
        self.edges = pg.PlotCurveItem(connect="pairs")
        self.box = pg.PlotCurveItem()
        self.label = pg.TextItem(anchor=(0.5, 1.0))
        self.leader = pg.PlotCurveItem()  # from a label moved off its place (another label was there) to its person
        font = QFont()
        font.setPointSize(11)
        font.setBold(True)
        self.label.setFont(font)
        for item in (self.edges, self.box, self.label):
            item.setZValue(10)
            view.addItem(item)
        self.label.setZValue(12)  # above every skeleton: a label moved up may lie over another person
        self.leader.setZValue(9)
        view.addItem(self.leader)
        self.hide()

    def hide(self) -> None:
        for item in (self.edges, self.box, self.label, self.leader):
            item.setVisible(False)


class VideoView(QWidget):
    """Shows one RGB frame and a PoseFrame; call :meth:`show_frame` from the display timer.

    A click on a confirmed person emits ``person_clicked(track id)``, a click elsewhere ``person_clicked(-1)``;
    ``selected`` (a track id or None) draws that person's label with a white border."""

    person_clicked = Signal(int)

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
        self._shown_size: tuple[int, int] | None = None  # size of the array given to the ImageItem
        self._pose: PoseFrame | None = None  # last pose drawn with _drawn_options
        self._drawn_options: OverlayOptions | None = None
        self._styles = _Styles()
        self.options = OverlayOptions()
        self.selected: int | None = None
        self._drawn_selected: int | None = None
        self._boxes = np.zeros((0, 4))  # each drawn person's padded box (NaN: none), for clicks
        self._ids = np.zeros(0, np.int64)
        self.graphics.scene().sigMouseClicked.connect(self._on_click)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.graphics)
        self.frames_shown = 0

    def set_spec(self, spec: SkeletonSpec) -> None:
        self._spec = spec
        self._edges = drawn_edges(spec)
        self._right = right_side(spec)
        self._pose = None  # redraw with the new edges

    def show_frame(self, image: np.ndarray | None, pose: PoseFrame | None) -> None:
        """Draw ``image`` ((H, W, 3) uint8 RGB; None keeps the current one) and ``pose``."""
        if image is not None:
            size = (image.shape[1], image.shape[0])
            shown = self._fit(image)
            self.image.setImage(shown, autoLevels=False)
            shown_size = (shown.shape[1], shown.shape[0])
            if size != self._size or shown_size != self._shown_size:
                self._shown_size = shown_size
                self.image.setRect(QRectF(0, 0, size[0], size[1]))  # overlay stays in source pixels
            if size != self._size:
                self._size = size
                self.view.setRange(xRange=(0, size[0]), yRange=(0, size[1]), padding=0.0)
            self.frames_shown += 1
        self.draw_pose(pose)

    def _fit(self, image: np.ndarray) -> np.ndarray:
        """``image`` resized to the view's device pixels (never enlarged); a uint8 RGB array.

        Whole factors use INTER_AREA (exact pixel averaging, its fast path); what is left
        (a ratio above 1/2) uses INTER_LINEAR, which does not alias at such ratios.
        """
        if image.dtype != np.uint8:
            image = np.clip(image, 0, 255).astype(np.uint8)
        port = self.graphics.viewport()
        ratio = port.devicePixelRatioF()
        target = display_size((image.shape[1], image.shape[0]), (port.width() * ratio, port.height() * ratio))
        if target is None:
            return image
        factor = int(image.shape[1] // target[0])
        if factor >= 2:
            image = cv2.resize(image, (image.shape[1] // factor, image.shape[0] // factor), interpolation=cv2.INTER_AREA)
            if display_size((image.shape[1], image.shape[0]), target) is None:
                return image
        return cv2.resize(image, target, interpolation=cv2.INTER_LINEAR)

    def clear(self) -> None:
        self.image.clear()
        self._size = self._shown_size = None
        self.draw_pose(None)

    def draw_pose(self, pose: PoseFrame | None) -> None:
        if (pose is not None and pose is self._pose and self.options == self._drawn_options
                and self.selected == self._drawn_selected):
            return  # already on screen
        self._pose, self._drawn_options, self._drawn_selected = pose, self.options, self.selected
        spec = self._spec
        n = pose.num_people if pose is not None and spec is not None else 0
        while len(self._people) < n:
            self._people.append(_PersonItems(self.view))
        self._boxes = np.full((n, 4), np.nan)
        self._ids = pose.track_ids[:n].astype(np.int64) if n else np.zeros(0, np.int64)
        pos: list[np.ndarray] = []
        style: list[tuple[np.ndarray, list, list]] = []
        for p, items in enumerate(self._people):
            if p < n:
                self._draw_person(pose, p, items, pos, style)
            else:
                items.hide()
        if pos:
            self.joints.setData(pos=np.concatenate(pos), size=np.concatenate([s[0] for s in style]),
                                brush=[b for s in style for b in s[1]], pen=[q for s in style for q in s[2]])
        else:
            self.joints.setData([])
        self._place_labels(n)

    def _place_labels(self, n: int) -> None:
        """Move the shown labels so that none covers another (``overlay.layout_labels``): a label's size is in
        screen pixels, the overlay in source pixels; a moved label gets a thin leader line to its person."""
        shown = [p for p in range(n) if self._people[p].label.isVisible()]
        for p in range(len(self._people)):
            self._people[p].leader.setVisible(False)
        if not shown:
            return
        px, py = self.view.viewPixelSize()
        if not (np.isfinite(px) and np.isfinite(py) and px > 0 and py > 0):
            return  # not laid out yet: the labels stay above their people
        anchors = np.array([self._people[p].anchor for p in shown])
        sizes = np.array([(self._people[p].label.boundingRect().width() * px,
                           self._people[p].label.boundingRect().height() * py) for p in shown])
        ids = self._ids[shown]
        order = np.array(sorted(range(len(shown)), key=lambda i: (ids[i] < 0, ids[i], i)))
        top, bottom = sorted(self.view.viewRange()[1])
        placed = layout_labels(anchors, sizes, gap=1.0 * py, bounds=(top, bottom), order=order)
        for i, p in enumerate(shown):
            items = self._people[p]
            (x, y), (_, ay) = placed[i], anchors[i]
            items.label.setPos(float(x), float(y))
            if abs(y - ay) > 1e-6:  # moved: a leader from the label's near edge to the person's box
                edge = y if y < ay else y - sizes[i, 1]
                pen = self._styles.leader_pen(track_colour(int(ids[i])))
                if pen is not items.leader_pen:
                    items.leader_pen = pen
                    items.leader.setPen(pen)
                items.leader.setData([x, x], [edge, ay])
                items.leader.setVisible(True)

    def _on_click(self, event) -> None:
        """A left click on the video: the person under it (smallest box holding the point), or -1."""
        if event.button() != Qt.MouseButton.LeftButton or not len(self._ids):
            if event.button() == Qt.MouseButton.LeftButton:
                self.person_clicked.emit(-1)
            return
        point = self.view.mapSceneToView(event.scenePos())
        hit = person_at(self._boxes, self._ids, (point.x(), point.y()))
        self.person_clicked.emit(-1 if hit is None else hit)

    def _draw_person(self, pose: PoseFrame, p: int, items: _PersonItems, pos: list, style: list) -> None:
        spec, opt, st = self._spec, self.options, self._styles
        xy = pose.keypoints[p, :, :2].astype(np.float64)
        conf = pose.confidence[p]
        colour = track_colour(int(pose.track_ids[p]))
        shown = visible_joints(conf, xy, spec, opt.threshold)
        seg = edge_segments(xy, shown, self._edges)
        pen = st.edge_pen(colour)
        if pen is not items.edge_pen:
            items.edge_pen = pen
            items.edges.setPen(pen)
        items.edges.setData(seg[:, 0], seg[:, 1])
        items.edges.setVisible(len(seg) > 0)
        self._draw_box_and_label(pose, p, items, xy[shown], colour)
        idx = np.flatnonzero(shown)
        if len(idx):
            levels = np.rint(np.clip(conf[idx], 0.0, 1.0) * (ALPHA_LEVELS - 1)).astype(int)
            pos.append(xy[idx])
            right = self._right[idx] if opt.sides else np.zeros(len(idx), bool)  # "Sides": the right in white
            style.append((np.full(len(idx), 9.0),
                          [st.dot_brush(WHITE if r else colour, int(v)) for r, v in zip(right, levels)],
                          [st.dot_pen()] * len(idx)))
        if opt.low_confidence:
            faint = np.flatnonzero(visible_joints(conf, xy, spec, -1.0) & ~shown)
            if len(faint):
                pos.append(xy[faint])
                style.append((np.full(len(faint), 6.0), [st.faint_brush()] * len(faint),
                              [st.faint_pen(colour)] * len(faint)))

    def _draw_box_and_label(self, pose: PoseFrame, p: int, items: _PersonItems, pts: np.ndarray,
                            colour: tuple[int, int, int]) -> None:
        if len(pts) == 0:
            items.box.setVisible(False)
            items.label.setVisible(False)
            return
        (x0, y0), (x1, y1) = pts.min(axis=0), pts.max(axis=0)
        pad = 0.08 * max(x1 - x0, y1 - y0, 10.0)
        x0, y0, x1, y1 = x0 - pad, y0 - pad, x1 + pad, y1 + pad
        self._boxes[p] = (x0, y0, x1, y1)
        if self.options.boxes:
            pen = self._styles.box_pen(colour)
            if pen is not items.box_pen:
                items.box_pen = pen
                items.box.setPen(pen)
            items.box.setData([x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0])
        items.box.setVisible(self.options.boxes)
        if self.options.labels:
            tid = int(pose.track_ids[p])
            text = f" {tid} " if tid >= 0 else " ? "
            if text != items.text:
                items.text = text
                items.label.setText(text, color=(0, 0, 0))
            fill = self._styles.label_brush(colour)
            if fill is not items.fill:
                items.fill = fill
                items.label.fill = fill
                items.label.update()
            selected = self.selected is not None and tid == self.selected
            if selected != items.selected:
                items.selected = selected
                items.label.border = self._styles.selected_pen() if selected else pg.mkPen(None)
                items.label.update()
            items.anchor = (float((x0 + x1) / 2), float(y0))  # where the label goes unless another is there
            items.label.setPos(*items.anchor)
        items.label.setVisible(self.options.labels)
