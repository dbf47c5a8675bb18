"""Cameras through OpenCV's ``cv2.VideoCapture`` (V4L2, MSMF, AVFoundation...).

Frames are ``(H, W, 3)`` uint8 RGB (converted from OpenCV's BGR); timestamps
are ``time.monotonic()`` seconds relative to the first frame.

The capture object is injectable: pass ``opener=`` any callable
``(device, api_preference) -> CaptureBackend``; :class:`FakeCamera` in
:mod:`posetracker.capture.fake` implements that surface without hardware.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import cv2
import numpy as np

from posetracker.capture.base import CameraDisconnectedError, CameraNotFoundError, CaptureError, FrameSource
from posetracker.types import Frame

__all__ = ["CameraInfo", "CaptureBackend", "WebcamSource", "list_cameras"]

SYSFS_V4L = "/sys/class/video4linux"


@runtime_checkable
class CaptureBackend(Protocol):
    """The part of ``cv2.VideoCapture`` that :class:`WebcamSource` uses."""

    def isOpened(self) -> bool: ...  # noqa: N802 - mirrors OpenCV

    def read(self) -> tuple[bool, np.ndarray | None]:
        """``(ok, (H, W, 3) uint8 BGR image)``; ``(False, None)`` on failure."""
        ...

    def get(self, prop_id: int) -> float: ...

    def set(self, prop_id: int, value: float) -> bool: ...

    def release(self) -> None: ...


Opener = Callable[[int | str, int], CaptureBackend]


@dataclass(frozen=True)
class CameraInfo:
    """A camera found by :func:`list_cameras`: OpenCV index and display name."""

    index: int
    name: str


@contextlib.contextmanager
def _quiet_opencv() -> Iterator[None]:
    """Silence OpenCV's WARN lines (e.g. "can't open camera by index")."""
    log = getattr(getattr(cv2, "utils", None), "logging", None)
    if log is None:
        yield
        return
    level = log.getLogLevel()
    log.setLogLevel(log.LOG_LEVEL_ERROR)
    try:
        yield
    finally:
        log.setLogLevel(level)


def _cv2_opener(device: int | str, api_preference: int) -> CaptureBackend:
    with _quiet_opencv():
        return cv2.VideoCapture(device, api_preference)


def _sysfs_name(index: int, root: str | Path = SYSFS_V4L) -> str | None:
    try:
        return (Path(root) / f"video{index}" / "name").read_text(errors="replace").strip() or None
    except OSError:
        return None


def list_cameras(
    max_index: int = 8,
    *,
    sysfs_root: str | Path = SYSFS_V4L,
    probe: bool | None = None,
    opener: Opener | None = None,
) -> list[CameraInfo]:
    """Cameras with OpenCV index ``< max_index``, sorted by index.

    On Linux (``probe`` None or False) nothing is opened: names come from
    ``<sysfs_root>/videoN/name``, and nodes whose ``index`` file is not 0
    (UVC metadata nodes) are skipped; no sysfs folder means no camera.
    Elsewhere, or with ``probe=True``, indices are opened one by one with
    OpenCV's warnings silenced (can take ~1 s per index on Windows).
    """
    if sys.platform.startswith("linux") and not probe:
        root = Path(sysfs_root)
        if not root.is_dir():
            return []
        found = []
        for entry in root.iterdir():
            suffix = entry.name[len("video"):]
            if not entry.name.startswith("video") or not suffix.isdigit() or int(suffix) >= max_index:
                continue
            try:
                if (entry / "index").read_text().strip() not in ("", "0"):
                    continue
            except OSError:
                pass
            idx = int(suffix)
            found.append(CameraInfo(idx, _sysfs_name(idx, root) or f"Camera {idx}"))
        return sorted(found, key=lambda c: c.index)
    open_ = opener or _cv2_opener
    found = []
    for idx in range(max_index):
        cap = open_(idx, cv2.CAP_ANY)
        try:
            if cap.isOpened():
                found.append(CameraInfo(idx, _sysfs_name(idx) or f"Camera {idx}"))
        finally:
            with _quiet_opencv():
                cap.release()
    return found


def _to_rgb(img: np.ndarray) -> np.ndarray:
    """BGR / BGRA / gray (any int dtype) -> ``(H, W, 3)`` uint8 RGB."""
    if img.dtype == np.uint16:
        img = (img >> 8).astype(np.uint8)
    elif img.dtype != np.uint8:
        img = np.clip(img, 0, 255).astype(np.uint8)
    if img.ndim == 2 or img.shape[2] == 1:
        return cv2.cvtColor(img, cv2.COLOR_GRAY2RGB)
    if img.shape[2] == 4:
        return cv2.cvtColor(img, cv2.COLOR_BGRA2RGB)
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


class WebcamSource(FrameSource):
    """A live camera.

    Args:
        device: OpenCV camera index (``0``), or a device path / name / URL
            (``"/dev/video2"``, a GStreamer pipeline...).
        size: requested ``(width, height)``; the driver may grant another.
        fps: requested frame rate; the driver may grant another.
        backend: OpenCV API preference (``cv2.CAP_ANY``, ``cv2.CAP_V4L2``...).
        opener: factory ``(device, backend) -> CaptureBackend``; defaults to
            ``cv2.VideoCapture``. Tests pass ``FakeCamera.factory(...)``.
        read_retries: extra ``read()`` attempts before a failure counts.

    ``size`` is the size of the frames actually delivered (from the first
    frame, read when opening), ``fps`` what the driver reports (or the
    request, or 30, if it reports 0); ``requested_size`` / ``requested_fps``
    are what was asked. Raises CameraNotFoundError (quickly) if nothing
    answers at ``device`` or it gives no image; ``read()`` raises
    CameraDisconnectedError if frames stop after having started, after which
    the source is finished (``read()`` returns ``None``). One thread at a time.
    """

    _is_live = True

    def __init__(
        self,
        device: int | str = 0,
        size: tuple[int, int] | None = None,
        fps: float | None = None,
        backend: int = cv2.CAP_ANY,
        *,
        opener: Opener | None = None,
        read_retries: int = 2,
    ) -> None:
        if isinstance(device, str) and device.strip().isdigit():
            device = int(device)
        self._device = device
        self._requested_size = size
        self._requested_fps = fps
        self._retries = max(0, int(read_retries))
        self._lock = threading.Lock()
        self._closed = False
        self._ended = False
        self._next_index = 0
        label = _sysfs_name(device) if isinstance(device, int) else None
        self._name = f"Camera {device}" + (f" ({label})" if label else "")
        where = f"camera index {device}" if isinstance(device, int) else f"camera {device!r}"
        if isinstance(device, str) and device.startswith("/dev/") and not Path(device).exists():
            raise CameraNotFoundError(f"No camera found at {where}: the device does not exist")
        cap = (opener or _cv2_opener)(device, backend)
        if not cap.isOpened():
            cap.release()
            raise CameraNotFoundError(f"No camera found at {where} (is it connected and not in use?)")
        self._cap = cap
        if size is not None:
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, float(size[0]))
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, float(size[1]))
        if fps is not None:
            cap.set(cv2.CAP_PROP_FPS, float(fps))
        first = self._grab()
        if first is None:
            self._release()
            raise CameraNotFoundError(
                f"The camera at {where} opened but delivered no image (in use by another program?)"
            )
        self._first: np.ndarray | None = first
        self._t0 = time.monotonic()
        self._size = (int(first.shape[1]), int(first.shape[0]))
        reported = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
        self._fps = reported if 0.0 < reported < 10000.0 else float(fps or 30.0)

    def _grab(self) -> np.ndarray | None:
        """One RGB image from the backend, or None after all attempts failed."""
        for _ in range(1 + self._retries):
            try:
                ok, img = self._cap.read()
            except cv2.error:
                ok, img = False, None
            if ok and img is not None and img.size:
                return _to_rgb(img)
        return None

    def _release(self) -> None:
        with _quiet_opencv():
            self._cap.release()

    def read(self) -> Frame | None:
        """Next camera frame ``(H, W, 3)`` uint8 RGB; blocks for the driver."""
        with self._lock:
            if self._closed:
                raise CaptureError(f"{self._name}: the camera source is closed")
            if self._ended:
                return None
            if self._first is not None:
                img, self._first, ts = self._first, None, 0.0
            else:
                grabbed = self._grab()
                if grabbed is None:
                    self._ended = True
                    self._release()
                    raise CameraDisconnectedError(
                        f"{self._name} stopped delivering frames after frame {self._next_index - 1} "
                        "(unplugged, or taken by another program?)"
                    )
                img, ts = grabbed, time.monotonic() - self._t0
            index = self._next_index
            self._next_index += 1
            return Frame(index=index, timestamp=ts, image=img)

    def close(self) -> None:
        """Release the camera. Idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                if not self._ended:
                    self._release()

    @property
    def device(self) -> int | str:
        return self._device

    @property
    def requested_size(self) -> tuple[int, int] | None:
        return self._requested_size

    @property
    def requested_fps(self) -> float | None:
        return self._requested_fps
