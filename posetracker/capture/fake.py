"""A fake camera with the ``cv2.VideoCapture`` surface, for tests and demos.

``WebcamSource(0, opener=FakeCamera.factory(size=(320, 240), unplug_after=10))``
behaves like a camera that delivers 10 frames and is then unplugged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import cv2
import numpy as np

__all__ = ["FakeCamera"]


class FakeCamera:
    """Generates moving BGR test-pattern frames like an OpenCV capture.

    Each ``read()`` returns ``(True, image)`` with ``image`` an ``(H, W, 3)``
    uint8 **BGR** array: a horizontal gradient, a white vertical bar whose x
    position moves 4 px per frame, and a pure blue 8x8 patch in the top-left
    corner (``(255, 0, 0)`` in BGR) so that colour conversion can be checked.

    Args:
        size: default ``(width, height)`` delivered when none is requested.
        fps: default frame rate reported by ``get(CAP_PROP_FPS)``.
        supported_sizes: if given, a requested size snaps to the nearest of
            these (like real drivers); otherwise any request is granted.
        max_fps: if given, requested frame rates are capped to it.
        reports_fps: if False, ``get(CAP_PROP_FPS)`` returns 0 (some drivers do).
        unplug_after: after this many successful reads, ``read()`` fails
            forever, as when the camera is unplugged.
        fail_open: ``isOpened()`` is False, as for a missing camera.
        realtime: if True, ``read()`` sleeps to honour the frame rate.
    """

    def __init__(
        self,
        size: tuple[int, int] = (640, 480),
        fps: float = 30.0,
        *,
        supported_sizes: Sequence[tuple[int, int]] | None = None,
        max_fps: float | None = None,
        reports_fps: bool = True,
        unplug_after: int | None = None,
        fail_open: bool = False,
        realtime: bool = False,
    ) -> None:
        self._supported = list(supported_sizes) if supported_sizes else None
        self._size = self._snap(size)
        self._requested = size
        self._fps = float(fps)
        self._max_fps = max_fps
        self._reports_fps = reports_fps
        self._unplug_after = unplug_after
        self._opened = not fail_open
        self._realtime = realtime
        self._last_read: float | None = None
        self.frames_read = 0
        self.device: int | str | None = None
        self.api_preference: int | None = None

    @classmethod
    def factory(cls, **kwargs: object) -> Callable[[int | str, int], FakeCamera]:
        """An ``opener(device, api_preference)`` building ``FakeCamera(**kwargs)``."""

        def opener(device: int | str, api_preference: int) -> FakeCamera:
            cam = cls(**kwargs)  # type: ignore[arg-type]
            cam.device, cam.api_preference = device, api_preference
            return cam

        return opener

    def _snap(self, size: tuple[int, int]) -> tuple[int, int]:
        w, h = int(size[0]), int(size[1])
        if self._supported is None:
            return max(1, w), max(1, h)
        return min(self._supported, key=lambda s: (abs(s[0] - w) + abs(s[1] - h), -s[0]))

    def unplug(self) -> None:
        """Make every following ``read()`` fail."""
        self._unplug_after = self.frames_read

    # --- cv2.VideoCapture surface ------------------------------------------
    def isOpened(self) -> bool:  # noqa: N802 - mirrors OpenCV
        return self._opened

    def read(self) -> tuple[bool, np.ndarray | None]:
        """``(True, (H, W, 3) uint8 BGR)`` or ``(False, None)`` once unplugged."""
        if not self._opened:
            return False, None
        if self._unplug_after is not None and self.frames_read >= self._unplug_after:
            return False, None
        if self._realtime:
            now = time.monotonic()
            if self._last_read is not None:
                time.sleep(max(0.0, self._last_read + 1.0 / self._fps - now))
            self._last_read = time.monotonic()
        img = self._pattern(self.frames_read)
        self.frames_read += 1
        return True, img

    def _pattern(self, n: int) -> np.ndarray:
        w, h = self._size
        img = np.empty((h, w, 3), np.uint8)
        ramp = np.linspace(0, 200, w, dtype=np.float32).astype(np.uint8)
        img[:] = ramp[None, :, None]
        x = (4 * n) % w
        img[:, x : x + 4] = 255
        img[:8, :8] = (255, 0, 0)  # pure blue in BGR
        return img

    def get(self, prop_id: int) -> float:
        if prop_id == cv2.CAP_PROP_FRAME_WIDTH:
            return float(self._size[0])
        if prop_id == cv2.CAP_PROP_FRAME_HEIGHT:
            return float(self._size[1])
        if prop_id == cv2.CAP_PROP_FPS:
            return self._fps if self._reports_fps else 0.0
        return 0.0

    def set(self, prop_id: int, value: float) -> bool:
        if not self._opened:
            return False
        if prop_id == cv2.CAP_PROP_FRAME_WIDTH:
            self._requested = (int(value), self._requested[1])
        elif prop_id == cv2.CAP_PROP_FRAME_HEIGHT:
            self._requested = (self._requested[0], int(value))
        elif prop_id == cv2.CAP_PROP_FPS:
            fps = float(value)
            self._fps = min(fps, self._max_fps) if self._max_fps else fps
            return True
        else:
            return False
        self._size = self._snap(self._requested)
        return True

    def release(self) -> None:
        self._opened = False
