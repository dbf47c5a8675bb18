"""Plain grey frames standing in for a camera whose frames were not kept.

A several-camera live run (``posetracker.multiview.live_run``) tracks connected cameras without recording them;
the app plays its result over :class:`BlankSource` frames of the camera's size and rate, so the people (their
keypoints reprojected into the camera) are drawn where the camera saw them, on grey.
"""

from __future__ import annotations

import threading

import numpy as np

from posetracker.capture.base import CaptureError, FrameSource
from posetracker.types import Frame

__all__ = ["BlankSource"]

GREY = 48  # the frames' value in every channel


class BlankSource(FrameSource):
    """``frames`` grey ``(H, W, 3)`` uint8 RGB frames of ``size`` (W, H) at ``fps`` (frame i at i / fps s);
    seekable. ``name`` says what they stand for (``"camera:0 (frames not kept)"``)."""

    _seekable = True

    def __init__(self, size: tuple[int, int], fps: float, frames: int, name: str = "blank") -> None:
        w, h = int(size[0]), int(size[1])
        if w <= 0 or h <= 0 or frames < 0 or not fps > 0:
            raise CaptureError(f"{name}: no frames of {w}x{h} at {fps} fps")
        self._size, self._fps, self._frame_count, self._name = (w, h), float(fps), int(frames), name
        self._image = np.full((h, w, 3), GREY, np.uint8)
        self._next = 0
        self._closed = False
        self._lock = threading.Lock()

    def read(self) -> Frame | None:
        with self._lock:
            if self._closed:
                raise CaptureError(f"{self.name}: the source is closed")
            if self._next >= self._frame_count:
                return None
            index = self._next
            self._next += 1
            # a copy: a viewer may draw on it
            return Frame(index=index, timestamp=index / self._fps, image=self._image.copy())

    def seek(self, index: int) -> None:
        with self._lock:
            self._next = min(max(int(index), 0), self._frame_count)

    def close(self) -> None:
        with self._lock:
            self._closed = True
