"""Frame sources: video files, cameras, image folders and synthetic streams.

Every source is a :class:`FrameSource` yielding :class:`posetracker.types.Frame`
packets (``image``: ``(H, W, 3)`` uint8 RGB, ``timestamp``: seconds since the
first frame). :func:`open_source` picks the right one from a string::

    with open_source("walk.mp4") as src:      # or "camera:0", "frames/", "lavfi:testsrc2"
        for frame in src:
            ...

Importing this package has no side effects (no device is probed).
"""

from __future__ import annotations

import os

from posetracker.capture.base import (
    CameraDisconnectedError,
    CameraNotFoundError,
    CaptureError,
    CorruptVideoError,
    FrameSource,
    NotAVideoError,
    PendingFrame,
    SourceNotFoundError,
    UnreadableImageError,
    UnsupportedCodecError,
)
from posetracker.capture.fake import FakeCamera
from posetracker.capture.image_folder import IMAGE_EXTENSIONS, ImageFolderSource
from posetracker.capture.lavfi import LavfiSource, lavfi_available
from posetracker.capture.video_file import VideoFileSource
from posetracker.capture.webcam import CameraInfo, CaptureBackend, WebcamSource, list_cameras

__all__ = [
    "IMAGE_EXTENSIONS",
    "CameraDisconnectedError",
    "CameraInfo",
    "CameraNotFoundError",
    "CaptureBackend",
    "CaptureError",
    "CorruptVideoError",
    "FakeCamera",
    "FrameSource",
    "ImageFolderSource",
    "LavfiSource",
    "NotAVideoError",
    "PendingFrame",
    "SourceNotFoundError",
    "UnreadableImageError",
    "UnsupportedCodecError",
    "VideoFileSource",
    "WebcamSource",
    "lavfi_available",
    "list_cameras",
    "open_source",
]

CAMERA_PREFIX = "camera:"
LAVFI_PREFIX = "lavfi:"


def open_source(spec: str | os.PathLike[str]) -> FrameSource:
    """Open the frame source described by ``spec``.

    - ``"camera:N"`` -> :class:`WebcamSource` ``(N)``; ``"camera:/dev/video2"``
      (any non-numeric rest) opens that device name / path;
    - ``"lavfi:GRAPH"`` -> :class:`LavfiSource` ``(GRAPH)``;
    - an existing directory -> :class:`ImageFolderSource`;
    - anything else -> :class:`VideoFileSource`.

    Raises the sources' errors (all :class:`CaptureError`), e.g.
    SourceNotFoundError for a missing path.
    """
    text = os.fspath(spec)
    if text.startswith(CAMERA_PREFIX):
        device = text[len(CAMERA_PREFIX):].strip()
        return WebcamSource(int(device) if device.isdigit() else device)
    if text.startswith(LAVFI_PREFIX):
        return LavfiSource(text[len(LAVFI_PREFIX):])
    if os.path.isdir(text):
        return ImageFolderSource(text)
    return VideoFileSource(text)
