"""3-D view (pyqtgraph.opengl): every tracked skeleton in camera space above a ground grid.

The scene renders in its own native OpenGL window (pyqtgraph's GLViewMixin on a
QOpenGLWindow) embedded with ``QWidget.createWindowContainer``, not in a
QOpenGLWidget: a QOpenGLWidget makes Qt compose the *whole* main window through
OpenGL on every repaint of any widget, which with a software OpenGL driver
(llvmpipe: no GPU, remote desktops, Xvfb) cost ~0.2 CPU cores while the video
played; the native window costs only the 3-D view's own 10 Hz renders.

Camera space (x right, y down, z forward, metres) maps to a z-up scene: X = x, Y = z, Z = -y. A finished
result that holds the floor its finishing step fitted (``metadata["feet"]``, the floor every export stands on) is
shown on that floor instead: Z up along its normal, the grid on it (Z = 0), each frame turned first where the
camera tilted (``analysis.held_ground``); so people stand on the grid as in the exports, whatever the camera's
pitch. Without an OpenGL context (QT_QPA_PLATFORM=offscreen, no GL driver) a placeholder is shown instead.
"""

from __future__ import annotations

import os

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QOpenGLContext
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from posetracker.analysis.ground import FloorFrame
from posetracker.analysis.held_ground import floor_from_dict, has_held_ground
from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame, PoseSequence
from .overlay import drawn_edges, edge_segments, track_colour, visible_joints

FADED_ALPHA = 0.12  # the people not selected, while one is (additive blending: dim, not gone)
DEFAULT_CAMERA = {"distance": 9.0, "elevation": 20.0, "azimuth": -50.0}  # behind and to the right of the real camera: depth shows


def to_scene(world: np.ndarray, floor: FloorFrame | None = None, turn: np.ndarray | None = None) -> np.ndarray:
    """(..., 3) camera space (x right, y down, z forward) -> z-up scene (X = x, Y = z, Z = -y); with ``floor``
    on it instead (X along it to the camera's right, Y away from the camera, Z up, the floor at Z = 0), the points
    turned by ``turn`` (3, 3) first (that frame's camera -> the one the floor was fitted in)."""
    w = np.asarray(world, np.float64)
    if floor is None:
        return np.stack([w[..., 0], w[..., 2], -w[..., 1]], axis=-1)
    f = floor.to_floor(w if turn is None else w @ np.asarray(turn, np.float64).T)  # X right, Y up, Z to the camera
    return np.stack([f[..., 0], -f[..., 2], f[..., 1]], axis=-1)


def floor_level(scene: np.ndarray, visible: np.ndarray) -> float | None:
    """Scene Z of the floor under the people: the lowest visible joint, or None if none."""
    if not visible.any():
        return None
    return float(scene[visible][:, 2].min())


def person_alphas(track_ids: np.ndarray, selected: int | None) -> np.ndarray:
    """(N,) opacity of each person in the 3-D view: everyone 1 with no selection (or a selected id not in
    view); else 1 for the selected person and ``FADED_ALPHA`` for the others."""
    ids = np.asarray(track_ids).reshape(-1)
    if selected is None or selected < 0 or not (ids == selected).any():
        return np.ones(len(ids))
    return np.where(ids == selected, 1.0, FADED_ALPHA)


def follow_index(track_ids: np.ndarray, selected: int | None) -> int | None:
    """Which person the camera follows: the one with id ``selected``, else the first (None: nobody)."""
    ids = np.asarray(track_ids).reshape(-1).tolist()
    if not ids:
        return None
    return ids.index(selected) if selected in ids else 0


def follow_centre(scene: np.ndarray, visible: np.ndarray) -> np.ndarray | None:
    """Scene point the camera centres on for one person: the middle (median) of their visible joints
    (``scene`` (K, 3), :func:`to_scene`), or of all finite ones when none is visible; None if none is finite."""
    finite = np.isfinite(scene).all(axis=-1)
    use = visible & finite if (visible & finite).any() else finite
    if not use.any():
        return None
    return np.median(scene[use], axis=0)


def gl_available() -> bool:
    """True if an OpenGL context can be made here (False offscreen or without a driver)."""
    if os.environ.get("POSETRACKER_NO_GL") or QGuiApplication.platformName() in ("offscreen", "minimal"):
        return False
    try:
        import pyqtgraph.opengl  # noqa: F401
    except Exception:  # noqa: BLE001 - PyOpenGL missing or no libGL
        return False
    return QOpenGLContext().create()


class SkeletonView(QWidget):
    """Call :meth:`set_pose` from the display timer; ``has_gl`` tells whether it renders."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.has_gl = gl_available()
        self._spec: SkeletonSpec | None = None
        self._edges = np.zeros((0, 2), np.int64)
        self._floor: float | None = None
        self._middle: np.ndarray | None = None  # scene X, Y of the people (smoothed)
        self._framed = False  # camera framed on the first people seen
        self._extent = 4.0  # metres spanned by the people on the floor plane
        self._height = 1.7  # metres from the floor to the highest joint (a mouse: a few cm)
        self._look = np.zeros(3)  # smoothed 3-D median of the people's visible joints (scene)
        self._people: list[tuple[object, object]] = []
        self._ground: FloorFrame | None = None  # the result's fitted floor (set_floor); None: camera axes
        self._rows: dict[int, int] = {}  # frame index -> row of the floor's per-frame turn
        self._chosen: int | None = None  # the person picked when the camera last followed
        self.follow = QCheckBox("Follow person")
        self.reset_button = QPushButton("Reset view")
        bar = QHBoxLayout()
        bar.addWidget(self.reset_button)
        bar.addWidget(self.follow)
        bar.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(bar)
        self.gl = self._make_gl() if self.has_gl else None
        if self.gl is None:
            note = QLabel("3-D view unavailable: no OpenGL context on this display.")
            note.setAlignment(Qt.AlignmentFlag.AlignCenter)
            note.setWordWrap(True)
            layout.addWidget(note, 1)
        else:
            layout.addWidget(self.container, 1)
        self.reset_button.clicked.connect(self.reset_view)

    def _make_gl(self):
        import pyqtgraph.opengl as gl

        view = _gl_view_window_class()()
        view.setBackgroundColor((18, 18, 24))
        self.container = QWidget.createWindowContainer(view, self)
        self.container.setMinimumSize(80, 60)
        self.container.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self._grid = gl.GLGridItem()
        self._grid.setSize(12, 12)
        self._grid.setSpacing(0.5, 0.5)
        self._grid.setColor((120, 120, 140, 160))
        view.addItem(self._grid)
        view.setCameraPosition(**DEFAULT_CAMERA)
        view.opts["center"] = _vec(0.0, 4.0, 0.0)
        return view

    def set_spec(self, spec: SkeletonSpec) -> None:
        self._spec = spec
        self._edges = drawn_edges(spec)

    def reset_view(self) -> None:
        """Look at the people from behind the camera, slightly above."""
        if self.gl is None:
            return
        x, y = self._middle if self._middle is not None else (0.0, 4.0)
        z = self._floor + 0.5 * self._height if self._floor is not None else 0.0  # mid-height of the people
        # one 1.7 m person: ~2.9 m away, half the view high; a small animal is framed as closely
        distance = float(np.clip(1.3 * (self._extent + self._height), 2.0, 25.0))
        self.gl.setCameraPosition(**{**DEFAULT_CAMERA, "distance": distance})
        self.gl.opts["center"] = _vec(x, y, z)
        self.gl.update()

    def set_floor(self, seq: PoseSequence | None) -> None:
        """Show the poses to come on ``seq``'s fitted floor (a finished result; None or a sequence without one:
        in the camera's axes, the grid under the lowest joints)."""
        self._ground = floor_from_dict(seq.metadata["feet"]["floor"]) if seq is not None and has_held_ground(seq) \
            else None
        self._rows = {f.index: i for i, f in enumerate(seq.frames)} if self._ground is not None else {}
        self._floor = None  # the grid moves to the new floor at once
        self._framed = False

    def _scene(self, pose: PoseFrame, p: int) -> np.ndarray:
        """(K, 3) scene points of person ``p`` of ``pose`` (:func:`to_scene` on the result's floor, if any)."""
        g = self._ground
        row = self._rows.get(pose.index) if g is not None and g.turn is not None else None
        return to_scene(pose.world[p], g, None if row is None else g.turn[row])

    def set_pose(self, pose: PoseFrame | None, selected: int | None = None, chosen: int | None = None) -> None:
        """Draw everyone in ``pose`` (needs ``pose.world``); ``selected`` is followed if asked. ``chosen``: a
        person the user picked (the video or the Person list): the others are faded and the camera follows
        ``chosen`` instead (framed on them once when the choice changes). None: everyone alike, as before."""
        if self.gl is None or self._spec is None:
            return
        n = pose.num_people if pose is not None and pose.world is not None else 0
        while len(self._people) < n:
            self._people.append(self._add_person())
        alphas = person_alphas(pose.track_ids[:n], chosen) if n else np.ones(0)
        placed: list[np.ndarray] = []
        for p, (lines, dots) in enumerate(self._people):
            if p >= n:
                lines.setVisible(False)
                dots.setVisible(False)
                continue
            shown = self._draw_person(pose, p, lines, dots, float(alphas[p]))
            if shown is not None:
                placed.append(shown)
        self._update_ground(placed)
        target = chosen if chosen is not None and chosen >= 0 else selected
        if self.follow.isChecked() and n:
            self._follow(pose, target, reframe=chosen is not None and chosen != self._chosen)
            self._chosen = chosen
        elif placed and not self._framed:
            self._framed = True
            self.reset_view()
        elif placed:
            self._keep_in_view()

    def _add_person(self) -> tuple[object, object]:
        import pyqtgraph.opengl as gl

        lines = gl.GLLinePlotItem(mode="lines", width=3, antialias=True)
        dots = gl.GLScatterPlotItem(size=8, pxMode=True)
        self.gl.addItem(lines)
        self.gl.addItem(dots)
        return lines, dots

    def _draw_person(self, pose: PoseFrame, p: int, lines, dots, alpha: float = 1.0) -> np.ndarray | None:
        """Draws one person (``alpha`` < 1: faded); returns their visible scene points (None if none)."""
        scene = self._scene(pose, p).astype(np.float32)  # GL buffers are float32
        shown = visible_joints(pose.confidence[p], scene, self._spec, 0.3)
        colour = tuple(c / 255.0 for c in track_colour(int(pose.track_ids[p]))) + (alpha,)  # a tuple: one colour
        seg = edge_segments(scene, shown, self._edges)
        lines.setVisible(len(seg) > 0)
        if len(seg):
            lines.setData(pos=seg, color=colour)
        dots.setVisible(bool(shown.any()))
        if shown.any():
            dots.setData(pos=scene[shown], color=colour)
            return scene[shown]
        return None

    def _update_ground(self, placed: list[np.ndarray]) -> None:
        """Move the grid under the people: floor at their lowest joints, centred on them (smoothed)."""
        if not placed:
            return
        pts = np.concatenate(placed)
        floor = 0.0 if self._ground is not None else floor_level(pts, np.ones(len(pts), bool))
        middle = np.median(pts[:, :2], axis=0)
        self._extent = float(np.ptp(pts[:, :2], axis=0).max())
        self._height = max(float(pts[:, 2].max() - floor), 0.02)
        first = self._floor is None
        self._floor = floor if first else 0.9 * self._floor + 0.1 * floor
        self._middle = middle if first else 0.9 * self._middle + 0.1 * middle
        look = np.median(pts, axis=0)  # the people's middle in 3-D, what the view keeps in sight
        self._look = look if first else 0.8 * self._look + 0.2 * look
        gx, gy = np.round(self._middle / 0.5) * 0.5
        self._grid.resetTransform()
        self._grid.translate(float(gx), float(gy), float(self._floor))

    def _keep_in_view(self) -> None:
        """Move the point looked at (not the angle or zoom) to the people once they drift out of the view."""
        c = self.gl.opts["center"]
        look = self._look
        if np.linalg.norm(look - np.array([c.x(), c.y(), c.z()])) > 0.25 * float(self.gl.opts["distance"]):
            self.gl.opts["center"] = _vec(*map(float, look))
            self.gl.update()

    def _follow(self, pose: PoseFrame, selected: int | None, reframe: bool = False) -> None:
        """Centre the camera on the followed person; ``reframe``: also come close enough to see them whole."""
        p = follow_index(pose.track_ids, selected)
        if p is None:
            return
        shown = visible_joints(pose.confidence[p], pose.world[p], self._spec, 0.3)
        scene = self._scene(pose, p)
        centre = follow_centre(scene, shown)
        if centre is None:
            return
        self.gl.opts["center"] = _vec(*centre)
        if reframe:
            scene = scene[shown]
            size = float(np.ptp(scene, axis=0).max()) if len(scene) > 1 else self._height
            self.gl.opts["distance"] = float(np.clip(2.2 * max(size, 0.05), 0.3, 25.0))
        self.gl.update()

    def grab_image(self) -> QImage | None:
        """The rendered 3-D scene (None without OpenGL)."""
        return self.gl.grabFramebuffer() if self.gl is not None else None


def _gl_view_window_class() -> type:
    """pyqtgraph's GL view (camera, mouse orbit/zoom, items) as a QOpenGLWindow."""
    from PySide6.QtOpenGL import QOpenGLWindow
    from pyqtgraph.opengl.GLViewWidget import GLViewMixin

    class GLViewWindow(GLViewMixin, QOpenGLWindow):
        pass

    return GLViewWindow


def _vec(x: float, y: float, z: float):
    from pyqtgraph import Vector

    return Vector(float(x), float(y), float(z))
