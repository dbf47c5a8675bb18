"""The source camera's field of view from the file's own metadata, where it carries one.

What a file can say: a 35 mm-equivalent focal length. iPhones write it into QuickTime
``mdta`` tags (``com.apple.quicktime.camera.focal_length.35mm_equivalent``, which FFmpeg
shows as a container or stream tag); photos carry EXIF ``FocalLengthIn35mmFilm`` (tag
41989, "FocalLengthIn35mmFormat" in exiftool). Android phones and most editors write
neither into MP4 files (none of the clips under ``shared/data/video`` has one).

A 35 mm-equivalent focal length is defined on the diagonal (CIPA DC-004): the lens that
gives the same diagonal angle of view on a 36 x 24 mm frame (diagonal 43.27 mm). Across
the long side of a frame with the long:short ratio ``a`` that is
``2 atan(43.27 a / sqrt(1 + a^2) / 2 / f35)``: 36 mm wide for 3:2, 37.7 mm for 16:9, 34.6
mm for 4:3 (:func:`fov_from_35mm`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

FULL_FRAME_DIAGONAL_MM = math.hypot(36.0, 24.0)  # 43.27
#: container / stream tags holding a 35 mm-equivalent focal length (mm), in the order they are trusted
FOCAL_35MM_TAGS = ("com.apple.quicktime.camera.focal_length.35mm_equivalent",
                   "com.android.capture.focal_length_35mm", "focal_length_35mm")
EXIF_IFD = 0x8769
EXIF_FOCAL_35MM = 41989
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".tif", ".tiff", ".heic", ".png", ".webp")
MIN_F35_MM, MAX_F35_MM = 8.0, 800.0  # outside: a broken tag (8 mm: a 140-degree fisheye)


@dataclass(frozen=True)
class CameraFov:
    """The field of view a run uses and where it came from.

    fov_deg: degrees across the frame's long side; source: ``"user"`` (given), ``"metadata"`` (the file's
    tags), ``"estimated"`` (from the people, :mod:`posetracker.analysis.camera_fov`) or ``"default"`` (60
    degrees, nothing better known); detail: the tag read, the estimate's evidence or why it fell back.
    """

    fov_deg: float
    source: str
    detail: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"fov_deg": round(float(self.fov_deg), 2), "source": self.source, "detail": self.detail}


def fov_from_35mm(f35_mm: float, width: int, height: int) -> float:
    """Degrees across the long side of a ``width`` x ``height`` frame for a 35 mm-equivalent focal length (mm)."""
    if not (math.isfinite(f35_mm) and f35_mm > 0):
        raise ValueError(f"35 mm-equivalent focal length must be positive, got {f35_mm}")
    if width <= 0 or height <= 0:
        raise ValueError(f"frame size must be positive, got {width}x{height}")
    long_mm = FULL_FRAME_DIAGONAL_MM * max(width, height) / math.hypot(width, height)
    return math.degrees(2.0 * math.atan(long_mm / 2.0 / f35_mm))


def _number(value: object) -> float | None:
    try:
        v = float(str(value).strip().split()[0])
    except (ValueError, IndexError):
        return None
    return v if MIN_F35_MM <= v <= MAX_F35_MM else None


def _video_tags(path: Path) -> tuple[dict[str, str], tuple[int, int]]:
    import av

    with av.open(str(path)) as container:
        if not container.streams.video:
            return {}, (0, 0)
        stream = container.streams.video[0]
        tags = {str(k).lower(): v for k, v in dict(container.metadata).items()}
        tags.update({str(k).lower(): v for k, v in dict(stream.metadata).items()})
        return tags, (int(stream.width), int(stream.height))


def _image_f35(path: Path) -> tuple[float | None, tuple[int, int]]:
    from PIL import Image

    with Image.open(path) as im:
        exif = im.getexif()
        value = exif.get_ifd(EXIF_IFD).get(EXIF_FOCAL_35MM) if exif else None
        return (_number(value) if value is not None else None), im.size


def fov_from_metadata(path: str | Path) -> CameraFov | None:
    """The field of view a video's tags or a photo's EXIF give (a folder of images: its first image), or None
    when the file says nothing usable (no tag, a value outside 8-800 mm, an unreadable file)."""
    path = Path(path)
    try:
        if path.is_dir():
            images = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            if not images:
                return None
            path = images[0]
        if path.suffix.lower() in IMAGE_SUFFIXES:
            f35, (w, h) = _image_f35(path)
            if f35 is None or w <= 0:
                return None
            return CameraFov(fov_from_35mm(f35, w, h), "metadata", f"EXIF FocalLengthIn35mmFilm {f35:g} mm ({path.name})")
        tags, (w, h) = _video_tags(path)
    except Exception:  # noqa: BLE001 - unreadable metadata is no metadata; opening the source reports real errors
        return None
    for key in FOCAL_35MM_TAGS:
        f35 = _number(tags[key]) if key in tags else None
        if f35 is not None and w > 0 and h > 0:
            return CameraFov(fov_from_35mm(f35, w, h), "metadata", f"{key} {f35:g} mm")
    return None


__all__ = ["CameraFov", "FOCAL_35MM_TAGS", "fov_from_35mm", "fov_from_metadata"]
