"""Shared helpers for the GUI tests: autouse safety fixtures, a fake session, fake services, a generated video.

Import the fixtures into a test module (``from gui_helpers import *``) to activate them there.
"""

from __future__ import annotations

import time
from pathlib import Path

import av
import numpy as np
import pytest

from posetracker.capture import CameraInfo, FakeCamera, WebcamSource
from posetracker.skeletons import SkeletonSpec, load_skeleton
from posetracker.types import Frame, PoseFrame, PoseSequence

def _share_gl_contexts() -> None:
    """As ui.app does: must happen before pytest-qt creates the QApplication (GL views under xvfb)."""
    from PySide6.QtCore import QCoreApplication, Qt

    if QCoreApplication.instance() is None:
        QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)


_share_gl_contexts()

__all__ = ["FakeSession", "fake_services", "isolated_settings", "make_video", "no_modal_dialogs", "wait_until"]

# A standing person in the unit square (x right, y down), human18 joint order.
_TEMPLATE = np.array([
    [0.50, 0.12], [0.53, 0.10], [0.47, 0.10], [0.56, 0.11], [0.44, 0.11],
    [0.60, 0.25], [0.40, 0.25], [0.65, 0.40], [0.35, 0.40], [0.66, 0.55], [0.34, 0.55],
    [0.57, 0.55], [0.43, 0.55], [0.58, 0.72], [0.42, 0.72], [0.58, 0.90], [0.42, 0.90],
    [0.50, 0.50],
], np.float32)


class FakeSession:
    """Stands in for TrackingSession: one stick figure per person, optional delay per frame."""

    def __init__(self, spec: SkeletonSpec | None = None, delay: float = 0.0, people: int = 1,
                 notices: tuple[str, ...] = ()):
        from posetracker.session import SessionConfig

        self.spec = spec or load_skeleton("human18")
        self.config = SessionConfig()  # what the app reads of a session's settings (the camera, rigid bones)
        self.delay, self.people = delay, people
        self.notices = list(notices)
        self.steps = 0
        self.resets = 0

    def reset(self, keep_ids: bool = False) -> None:
        self.resets += 1
        self.kept_ids = keep_ids

    def flush(self) -> list[PoseFrame]:
        return []

    def step(self, frame: Frame) -> PoseFrame:
        if self.delay:
            time.sleep(self.delay)
        self.steps += 1
        return self.pose_for(frame)

    def pose_for(self, frame: Frame) -> PoseFrame:
        w, h = frame.size
        k = self.spec.num_joints
        xy = np.stack([_TEMPLATE * [w / self.people, h] + [p * w / self.people, 0] for p in range(self.people)])
        xy[:, 13:17, 1] -= 0.05 * h * np.sin(frame.timestamp * 6.0)  # knees and ankles move
        depth = np.full((self.people, k, 1), 3.0, np.float32)
        world = np.concatenate([(xy - [w / 2, h / 2]) / max(w, h) * 3.0, depth], -1).astype(np.float32)
        return PoseFrame(
            index=frame.index, timestamp=frame.timestamp,
            keypoints=np.concatenate([xy, depth], -1).astype(np.float32),
            confidence=np.full((self.people, k), 0.9, np.float32), scores=np.full(self.people, 0.9, np.float32),
            track_ids=np.arange(self.people, dtype=np.int64), image_size=(w, h), world=world,
        )

    def run(self, frames, fps, total=None, progress=None, cancel=None, metadata=None) -> PoseSequence:
        poses = []
        for i, frame in enumerate(frames):
            if cancel and cancel():
                break
            poses.append(self.step(frame))
            if progress:
                progress(i + 1, total)
        return PoseSequence(poses, fps=fps, skeleton=self.spec, metadata=metadata or {})


class LookaheadSession(FakeSession):
    """A fake with one frame of look-ahead, like TrackingSession's live default: each step answers
    the frame before; flush answers the held one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.held: Frame | None = None

    def reset(self, keep_ids: bool = False) -> None:
        super().reset(keep_ids)
        self.held = None

    def flush(self) -> list[PoseFrame]:
        out = [] if self.held is None else [self.pose_for(self.held)]
        self.held = None
        return out

    def step(self, frame: Frame) -> PoseFrame | None:
        previous, self.held = self.held, frame
        self.steps += 1
        return None if previous is None else self.pose_for(previous)


def fake_services(delay: float = 0.0, camera: dict | None = None, session_error: Exception | None = None,
                  session_notices: tuple[str, ...] = ()):
    """Services with FakeSession models and a FakeCamera at index 0 (no hardware, no weights)."""
    from ui.services import Services

    camera_kwargs = {"size": (160, 120), "fps": 30.0, "realtime": True, **(camera or {})}

    choices = []

    def make_session(choice):
        choices.append(choice)
        if session_error is not None:
            raise session_error
        return FakeSession(delay=delay, notices=session_notices)

    def open_camera(index: int):
        return WebcamSource(index, opener=FakeCamera.factory(**camera_kwargs))

    services = Services(make_session=make_session, open_camera=open_camera,
                        list_cameras=lambda: [CameraInfo(0, "Fake camera")])
    services.choices = choices  # every ModelChoice asked for, in order
    return services


def make_video(path: Path, frames: int = 45, size: tuple[int, int] = (160, 120), fps: int = 30) -> Path:
    """A small mpeg4 clip with a moving bar."""
    w, h = size
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        for i in range(frames):
            img = np.full((h, w, 3), 60, np.uint8)
            img[:, (4 * i) % w:(4 * i) % w + 6] = 230
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def open_window(qtbot, services=None, **fake):
    """The main window on ``services`` (None: ``fake_services(**fake)``), shown; qtbot closes it with the test."""
    from ui.main_window import MainWindow

    window = MainWindow(services if services is not None else fake_services(**fake))
    qtbot.addWidget(window)
    window.show()
    return window


@pytest.fixture
def window(qtbot):
    """The main window on fake services; closed after the test, with no worker thread left running."""
    w = open_window(qtbot)
    yield w
    w.close()
    assert not w.controller.running_threads()


def wait_until(qtbot, condition, timeout: float = 5.0) -> None:
    qtbot.waitUntil(condition, timeout=int(timeout * 1000))


@pytest.fixture(autouse=True)
def no_modal_dialogs(monkeypatch):
    """Any modal QMessageBox or file dialog fails the test instead of blocking it."""
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    def refuse(*args, **kwargs):
        pytest.fail(f"a modal dialog was opened: {args[1:3] if len(args) > 2 else args}")

    for name in ("critical", "warning", "information", "question", "about"):
        monkeypatch.setattr(QMessageBox, name, staticmethod(refuse))
    monkeypatch.setattr(QMessageBox, "exec", refuse)
    for name in ("getOpenFileName", "getSaveFileName", "getExistingDirectory"):
        monkeypatch.setattr(QFileDialog, name, staticmethod(refuse))


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, monkeypatch):
    """QSettings (INI, user scope) go to tmp_path; recordings default to tmp_path too."""
    from PySide6.QtCore import QSettings

    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    monkeypatch.setattr("ui.state.default_recordings_dir", lambda: str(tmp_path / "recordings"))
    yield tmp_path / "settings"
