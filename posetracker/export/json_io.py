"""JSON export of a full PoseSequence, and the reader that loads it back exactly.

Layout::

    {"format": "posetracker-sequence", "version": 1, "fps": 30.0,
     "skeleton": {"name": ..., "joints": [...], "parents": [...]},
     "metadata": {...},
     "frames": [{"index": 0, "time_s": 0.0, "image_size": [w, h],
                 "people": [{"id": 0, "score": 0.9,
                             "keypoints": [[x_px, y_px, z_m], ...],   # K rows
                             "confidence": [...],                      # K
                             "world": [[x_m, y_m, z_m], ...] | null}]}]}

Floats are written with ``repr`` precision (float32 values round-trip
exactly); nan is written as null.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from posetracker.export.files import write_files
from posetracker.export.registry import ExportError, check_target
from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame, PoseSequence

FORMAT = "posetracker-sequence"


def _rows(a: np.ndarray) -> list:
    return [[None if not np.isfinite(v) else float(v) for v in row] for row in a]


def _vals(a: np.ndarray) -> list:
    return [None if not np.isfinite(v) else float(v) for v in a]


def sequence_to_dict(seq: PoseSequence) -> dict:
    spec = seq.skeleton
    frames = []
    for f in seq.frames:
        people = []
        for p in range(f.num_people):
            people.append({
                "id": int(f.track_ids[p]), "score": float(f.scores[p]),
                "keypoints": _rows(f.keypoints[p]), "confidence": _vals(f.confidence[p]),
                "world": None if f.world is None else _rows(f.world[p]),
            })
        frames.append({"index": f.index, "time_s": f.timestamp, "image_size": list(f.image_size), "people": people})
    return {
        "format": FORMAT, "version": 1, "fps": seq.fps,
        "skeleton": {"name": spec.name, "joints": list(spec.joint_names), "parents": list(spec.parents)},
        "metadata": seq.metadata, "frames": frames,
    }


def _arr(rows, shape) -> np.ndarray:
    a = np.array([[np.nan if v is None else v for v in r] for r in rows], np.float32) if rows else np.zeros(shape, np.float32)
    return a.reshape(shape)


def sequence_from_dict(data: dict) -> PoseSequence:
    if data.get("format") != FORMAT:
        raise ValueError(f"not a PoseTracker sequence (format {data.get('format')!r})")
    spec = load_skeleton(data["skeleton"]["name"])
    if list(spec.joint_names) != data["skeleton"]["joints"]:
        raise ValueError(f"skeleton {spec.name!r} in the file differs from the installed one")
    k = spec.num_joints
    frames = []
    for fr in data["frames"]:
        people = fr["people"]
        worlds = [p["world"] for p in people]
        has_world = bool(people) and all(w is not None for w in worlds)
        frames.append(PoseFrame(
            index=int(fr["index"]), timestamp=float(fr["time_s"]),
            keypoints=np.stack([_arr(p["keypoints"], (k, 3)) for p in people]) if people else np.zeros((0, k, 3), np.float32),
            confidence=np.array([[np.nan if v is None else v for v in p["confidence"]] for p in people], np.float32).reshape(-1, k),
            scores=np.array([p["score"] for p in people], np.float32),
            track_ids=np.array([p["id"] for p in people], np.int64),
            image_size=tuple(fr.get("image_size", (0, 0))),
            world=np.stack([_arr(w, (k, 3)) for w in worlds]) if has_world else None,
        ))
    return PoseSequence(frames, fps=float(data["fps"]), skeleton=spec, metadata=data.get("metadata", {}))


def read_sequence(path: str | Path) -> PoseSequence:
    """Load a sequence written by :class:`JsonExporter`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None
    return sequence_from_dict(data)


class JsonExporter:
    name = "json"
    suffixes = (".json",)
    description = "JSON, the full sequence with skeleton and metadata (loads back exactly)"

    def write(self, seq: PoseSequence, path: Path, force: bool = False, **_: object) -> list[Path]:
        path = Path(path)
        check_target(path, force)
        try:
            text = json.dumps(sequence_to_dict(seq), allow_nan=False)
        except ValueError as exc:
            raise ExportError(f"cannot write {path}: {exc}") from None
        return write_files({path: text}, force)
