"""The frame-source interface and the capture error hierarchy.

Every source yields :class:`posetracker.types.Frame` packets whose ``image`` is
an ``(H, W, 3)`` ``uint8`` RGB array and whose ``timestamp`` is in seconds,
relative to the first frame of the source (``0.0`` for the first frame).

Errors all derive from :class:`CaptureError`; their messages are written for
end users and always name the file, folder or camera concerned::

    CaptureError
    ├── SourceNotFoundError        (also a FileNotFoundError)
    ├── NotAVideoError
    ├── UnsupportedCodecError
    ├── CorruptVideoError          (.last_good_index, .expected_count)
    │   └── UnreadableImageError   (.image_path)
    ├── CameraNotFoundError
    └── CameraDisconnectedError
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import ClassVar

import numpy as np

from posetracker.types import Frame

__all__ = [
    "CameraDisconnectedError",
    "CameraNotFoundError",
    "CaptureError",
    "CorruptVideoError",
    "FrameSource",
    "PendingFrame",
    "NotAVideoError",
    "SourceNotFoundError",
    "UnreadableImageError",
    "UnsupportedCodecError",
]


class CaptureError(Exception):
    """Base class of every error raised by :mod:`posetracker.capture`."""


class SourceNotFoundError(CaptureError, FileNotFoundError):
    """The file or folder does not exist (or the folder holds no images)."""


class NotAVideoError(CaptureError):
    """The file exists but is not a video (text, random bytes, audio only...)."""


class UnsupportedCodecError(CaptureError):
    """The file is a video, but its codec cannot be decoded by this build."""


class CorruptVideoError(CaptureError):
    """Decoding stopped early because the data is truncated or damaged.

    Attributes:
        last_good_index: index of the last frame that decoded correctly, ``-1``
            if no frame could be decoded at all.
        expected_count: number of frames the file header promised, or ``None``
            if unknown.
        path: the file concerned (``None`` if not applicable).
    """

    def __init__(
        self,
        message: str,
        *,
        last_good_index: int,
        expected_count: int | None = None,
        path: str | Path | None = None,
    ) -> None:
        super().__init__(message)
        self.last_good_index = int(last_good_index)
        self.expected_count = expected_count
        self.path = None if path is None else Path(path)


class UnreadableImageError(CorruptVideoError):
    """One image of an image folder cannot be decoded.

    ``image_path`` names the bad file; ``last_good_index`` is the index just
    before it. The folder source stays usable: the next ``read()`` continues
    with the following image.
    """

    def __init__(self, message: str, *, image_path: str | Path, index: int) -> None:
        super().__init__(message, last_good_index=index - 1, path=image_path)
        self.image_path = Path(image_path)
        self.index = int(index)


class CameraNotFoundError(CaptureError):
    """No camera answers at that index / device name, or it gives no image."""


class CameraDisconnectedError(CaptureError):
    """A camera that was delivering frames stopped (unplugged, driver crash)."""


class PendingFrame:
    """A frame read but maybe not yet converted to RGB (:meth:`FrameSource.read_pending`): its ``index`` and
    ``timestamp`` now, the :class:`Frame` (image (H, W, 3) uint8 RGB) from :meth:`frame`, converted at its
    first call by whichever thread makes it, once (a second caller waits for the first's result). The app's
    capture thread holds the conversion (:meth:`converting`) while it offers the frame and converts it just
    after, so that a model taking it meanwhile waits for that conversion instead of making one on the
    inference thread."""

    __slots__ = ("index", "timestamp", "_convert", "_frame", "_lock")

    def __init__(self, index: int, timestamp: float, convert: Callable[[], np.ndarray] | None = None,
                 frame: Frame | None = None):
        self.index, self.timestamp = index, timestamp
        self._convert, self._frame = convert, frame
        self._lock = threading.Lock()

    @classmethod
    def ready(cls, frame: Frame) -> PendingFrame:
        return cls(frame.index, frame.timestamp, frame=frame)

    @property
    def converted(self) -> bool:
        return self._frame is not None

    @contextmanager
    def converting(self) -> Iterator[None]:
        """Reserve the conversion for the calling thread: inside the block it offers the frame; on leaving it
        converts it (errors propagate here), while any other thread's :meth:`frame` waits for that result."""
        if self._frame is not None:
            yield
            return
        with self._lock:
            yield
            if self._frame is None:
                self._frame = Frame(self.index, self.timestamp, self._convert())
                self._convert = None

    def frame(self) -> Frame:
        with self.converting():  # converts here unless done, or waits for the thread that holds it
            pass
        return self._frame


class FrameSource(ABC):
    """A stream of :class:`Frame` packets: video file, camera, image folder...

    Usage::

        with open_source("walk.mp4") as src:
            for frame in src:          # frame.image: (H, W, 3) uint8 RGB
                ...

    ``read()`` returns ``None`` at the end of the stream; after it has raised a
    :class:`CaptureError` the stream is finished too (except for image folders,
    where a bad file only skips that image). A source is meant to be used by
    one thread at a time; implementations serialise concurrent calls with a
    lock so that misuse cannot corrupt decoder state, but frames then arrive
    in an unspecified interleaving.
    """

    @abstractmethod
    def read(self) -> Frame | None:
        """Return the next frame, or ``None`` at the end of the stream."""

    def read_pending(self) -> PendingFrame | None:
        """:meth:`read`, the RGB conversion left to :meth:`PendingFrame.frame` where the source can defer it
        (video files); others convert at once."""
        frame = self.read()
        return None if frame is None else PendingFrame.ready(frame)

    @abstractmethod
    def close(self) -> None:
        """Release the file / device. Idempotent."""

    # Set by subclasses (``_fps``, ``_size`` and ``_name`` in ``__init__``; the
    # others where the class default does not fit) and served by the read-only
    # properties below, so that each source only says what differs.
    _fps: float
    _size: tuple[int, int]
    _name: str
    _frame_count: int | None = None
    _is_live: ClassVar[bool] = False
    _seekable: ClassVar[bool] = False

    @property
    def fps(self) -> float:
        """Nominal frames per second (timestamps are authoritative)."""
        return self._fps

    @property
    def frame_count(self) -> int | None:
        """Number of frames, or ``None`` for a live / unbounded source."""
        return self._frame_count

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels of the frames (of the first frame)."""
        return self._size

    @property
    def is_live(self) -> bool:
        """True for cameras and generators that cannot seek or end on their own."""
        return self._is_live

    @property
    def name(self) -> str:
        """Human-readable description, e.g. ``"walk.mp4"`` or ``"Camera 0"``."""
        return self._name

    @property
    def seekable(self) -> bool:
        """Whether :meth:`seek` is supported."""
        return self._seekable

    def seek(self, index: int) -> None:
        """Position the source so that the next ``read()`` returns frame ``index``."""
        raise CaptureError(f"{self.name}: this source does not support seeking")

    def __iter__(self) -> Iterator[Frame]:
        """Yield frames until the end of the stream. An unreadable image of an image folder is
        skipped and its message kept in :attr:`skipped`; every other error propagates."""
        while True:
            try:
                frame = self.read()
            except UnreadableImageError as exc:
                self.skipped.append(str(exc))
                continue
            if frame is None:
                return
            yield frame

    @property
    def skipped(self) -> list[str]:
        """Messages of the frames iteration skipped (unreadable images), in order."""
        if "_skipped" not in self.__dict__:
            self._skipped: list[str] = []
        return self._skipped

    def __enter__(self) -> FrameSource:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        w, h = self.size
        return f"<{type(self).__name__} {self.name!r} {w}x{h} @ {self.fps:.3g} fps>"
