"""What every importer returns (:class:`ImportedLabels`) and small helpers they share."""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path


class LabelImportError(ValueError):
    """The project cannot be imported; the message says why (the command line exits with 2)."""


@dataclass
class ImportedLabels:
    """A project read into the common schema, paths still absolute (the writer makes them relative).

    keypoint_names: (N,) the project's keypoints, in its order
    edges:          index pairs of the project's skeleton (SLEAP edges, DeepLabCut ``skeleton``)
    images:         schema ``images`` entries; ``file`` / ``video`` absolute paths
    source:         the .slp file or the DeepLabCut config.yaml
    name:           the default mode name (DeepLabCut ``Task``, the .slp file's stem)
    predicted:      True when model-predicted instances were taken in (pseudo-labels, not ground truth)
    """

    keypoint_names: list[str]
    edges: list[tuple[int, int]]
    images: list[dict]
    source: Path
    name: str
    visibility_note: str
    predicted: bool = False
    warnings: list[str] = field(default_factory=list)


def slug(text: str) -> str:
    """A file-name-safe mode name: letters, digits, ``_`` and ``-``."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", str(text)).strip("_") or "animal"


def keypoint_rows(xy, visible=None) -> list[list[float]]:
    """(N, 2) pixels (nan = missing) -> schema rows [x, y, v]: v=2 labelled, [0, 0, 0] missing."""
    rows = []
    for i, (x, y) in enumerate(xy):
        ok = x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
        if ok and (visible is None or bool(visible[i])):
            rows.append([float(x), float(y), 2])
        else:
            rows.append([0.0, 0.0, 0])
    return rows


def image_size(path: Path) -> tuple[int, int]:
    """(width, height) of an image: from a PNG's header, else decoded with OpenCV."""
    with open(path, "rb") as fh:
        head = fh.read(24)
    if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        w, h = struct.unpack(">II", head[16:24])
        return int(w), int(h)
    import cv2

    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise LabelImportError(f"cannot decode image {path}")
    return int(img.shape[1]), int(img.shape[0])
