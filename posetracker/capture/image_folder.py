"""A folder of numbered images played as a video.

Files with the extensions in :data:`IMAGE_EXTENSIONS` (case-insensitive) are
taken in natural order (``img2.png`` before ``img10.png``); hidden files
(``.name``, e.g. macOS ``._img.jpg``) and sub-folders are ignored. Frames are
``(H, W, 3)`` uint8 RGB (grey, 16-bit and alpha images are converted; EXIF
orientation is applied); ``timestamp = index / fps``.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import cv2
import numpy as np

from posetracker.capture.base import CaptureError, FrameSource, SourceNotFoundError, UnreadableImageError
from posetracker.types import Frame

__all__ = ["IMAGE_EXTENSIONS", "ImageFolderSource", "natural_key"]

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"})

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key ordering embedded numbers by value: ``"f2" < "f10"``."""
    parts = (p for p in _DIGITS.split(name) if p)
    return tuple((0, int(p)) if p.isdigit() else (1, p.casefold()) for p in parts)


def load_image_rgb(path: Path) -> np.ndarray | None:
    """Decode an image file to ``(H, W, 3)`` uint8 RGB, or None if unreadable."""
    try:
        data = np.fromfile(path, dtype=np.uint8)  # unicode-safe, unlike cv2.imread on Windows
    except (OSError, ValueError):
        return None
    if data.size == 0:
        return None
    img = cv2.imdecode(data, cv2.IMREAD_COLOR)  # BGR uint8, alpha dropped, EXIF rotation applied
    if img is None or img.size == 0:
        return None
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


class ImageFolderSource(FrameSource):
    """Images of one folder as frames ``0 .. N-1``.

    Images may differ in size: each frame keeps its own size, and ``size``
    reports the size of the first readable image among the first few files
    (``(0, 0)`` if none of those decodes). A file that cannot be decoded makes
    ``read()`` raise :class:`UnreadableImageError` naming it; the source stays
    usable and the next ``read()`` returns the following image.

    Raises SourceNotFoundError if the folder is missing, is not a folder, or
    holds no image file. One thread at a time (calls are serialised).
    """

    _seekable = True

    def __init__(self, folder: str | os.PathLike[str], fps: float = 30.0) -> None:
        self._folder = Path(folder)
        self._name = self._folder.name or str(self._folder)
        if not fps > 0:
            raise ValueError(f"fps must be positive, got {fps}")
        self._fps = float(fps)
        if not self._folder.exists():
            raise SourceNotFoundError(f"Image folder not found: {self._folder}")
        if not self._folder.is_dir():
            raise SourceNotFoundError(f"{self._folder} is not a folder")
        try:
            entries = list(os.scandir(self._folder))
        except OSError as e:
            raise CaptureError(f"Cannot list the image folder {self._folder}: {e.strerror}") from e
        self._files = sorted(
            (
                Path(e.path)
                for e in entries
                if not e.name.startswith(".")
                and os.path.splitext(e.name)[1].lower() in IMAGE_EXTENSIONS
                and e.is_file()
            ),
            key=lambda p: natural_key(p.name),
        )
        if not self._files:
            exts = " ".join(sorted(IMAGE_EXTENSIONS))
            raise SourceNotFoundError(f"No images ({exts}) found in {self._folder}")
        self._frame_count = len(self._files)
        self._lock = threading.Lock()
        self._pos = 0
        self._closed = False
        self._size = (0, 0)
        for path in self._files[:5]:
            img = load_image_rgb(path)
            if img is not None:
                self._size = (int(img.shape[1]), int(img.shape[0]))
                break

    def read(self) -> Frame | None:
        """Next image as a frame, ``None`` after the last file."""
        with self._lock:
            if self._closed:
                raise CaptureError(f"{self.name}: the image folder source is closed")
            if self._pos >= len(self._files):
                return None
            index = self._pos
            self._pos += 1
            path = self._files[index]
            img = load_image_rgb(path)
            if img is None:
                raise UnreadableImageError(
                    f"Cannot read image {path} (frame {index}): the file is damaged or not a supported image",
                    image_path=path,
                    index=index,
                )
            return Frame(index=index, timestamp=index / self._fps, image=img)

    def seek(self, index: int) -> None:
        """Make the next ``read()`` return image ``index`` (IndexError if out of range)."""
        with self._lock:
            index = int(index)
            if not 0 <= index < len(self._files):
                raise IndexError(f"{self.name}: frame {index} out of range ({len(self._files)} images)")
            self._pos = index

    def close(self) -> None:
        """Nothing to release; further reads raise. Idempotent."""
        with self._lock:
            self._closed = True

    @property
    def files(self) -> list[Path]:
        """The image files, in frame order."""
        return list(self._files)
