"""Read a recording folder back: its video, its poses, and a session that replays them."""

from __future__ import annotations

import bisect
import json
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from posetracker.capture.base import CaptureError, FrameSource
from posetracker.capture.video_file import VideoFileSource
from posetracker.export.json_io import FORMAT as SEQUENCE_FORMAT
from posetracker.export.json_io import sequence_from_dict
from posetracker.recording.recorder import FORMAT, META, POSES, VIDEO, RecordingError
from posetracker.skeletons import SkeletonError, load_skeleton
from posetracker.types import Frame, PoseFrame, PoseSequence


def read_meta(folder: Path) -> dict[str, Any]:
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordingError(f"{folder} is not a recording folder (no {META})") from None
    except (OSError, ValueError) as exc:
        raise RecordingError(f"cannot read {folder / META}: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise RecordingError(f"{folder / META} is not a PoseTracker recording")
    return meta


def read_poses(folder: Path, meta: dict[str, Any]) -> PoseSequence:
    """Every complete line of poses.jsonl (a line cut by a crash is skipped)."""
    rows = []
    try:
        with open(folder / POSES, encoding="utf-8") as fh:
            for line in fh:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    continue
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise RecordingError(f"cannot read {folder / POSES}: {exc}") from None
    try:
        spec = load_skeleton(meta["skeleton"])
    except SkeletonError as exc:
        raise RecordingError(f"{folder}: {exc}") from None
    data = {"format": SEQUENCE_FORMAT, "fps": meta.get("fps", 30.0), "metadata": meta.get("metadata", {}),
            "skeleton": {"name": spec.name, "joints": list(spec.joint_names)}, "frames": rows}
    try:
        return sequence_from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"{folder / POSES} is damaged: {exc}") from None


def open_recording(folder: str | os.PathLike[str]) -> tuple[FrameSource | None, PoseSequence]:
    """The recording's video (None if it is missing or unreadable) and its poses."""
    folder = Path(folder)
    meta = read_meta(folder)
    seq = read_poses(folder, meta)
    try:
        video: FrameSource | None = VideoFileSource(folder / VIDEO, name=f"{folder.name} (recording)")
    except CaptureError:
        video = None
    return video, seq


def replay_source(folder: str | os.PathLike[str]) -> tuple[FrameSource, PoseSequence]:
    """Like :func:`open_recording`, with blank frames standing in for a lost video."""
    folder = Path(folder)
    video, seq = open_recording(folder)
    if video is not None:
        return video, seq
    meta = read_meta(folder)
    w, h = meta.get("size", (640, 480))
    last = max((f.index for f in seq.frames), default=-1)
    return BlankSource((int(w), int(h)), seq.fps, last + 1, name=f"{folder.name} (poses only)"), seq


class BlankSource(FrameSource):
    """``count`` grey frames of ``size`` at ``fps``: a stand-in for a lost video."""

    _seekable = True
    _frame_count: int

    def __init__(self, size: tuple[int, int], fps: float, count: int, name: str = "blank"):
        self._size, self._fps, self._frame_count, self._name = size, fps, max(0, count), name
        self._next = 0
        self._lock = threading.Lock()
        self._image = np.full((size[1], size[0], 3), 48, np.uint8)

    def read(self) -> Frame | None:
        with self._lock:
            if self._next >= self._frame_count:
                return None
            i, self._next = self._next, self._next + 1
        return Frame(i, i / self._fps, self._image.copy())

    def close(self) -> None:
        pass

    def seek(self, index: int) -> None:
        if not 0 <= index < max(self._frame_count, 1):
            raise IndexError(f"{self._name}: frame {index} out of range")
        self._next = int(index)


class ReplaySession:
    """Plays back stored poses with the ``step``/``reset`` surface of TrackingSession.

    ``step(frame)`` returns the pose stored for ``frame.index``, or the latest
    earlier one if it is at most ``hold`` seconds older (live recordings hold
    poses for only the frames inference kept; seconds of the source's frame
    numbers, ``PoseSequence.index_rate``), else an empty PoseFrame.
    """

    def __init__(self, seq: PoseSequence, hold: float = 0.5, notices: tuple[str, ...] = ()):
        self.seq = seq
        self.spec = seq.skeleton
        self.notices = list(notices)  # shown by the app, like TrackingSession.notices
        ordered = sorted(seq.frames, key=lambda f: f.index)
        self._frames = ordered
        self._indices = [f.index for f in ordered]
        self._hold_frames = max(0, round(hold * seq.index_rate()))

    @property
    def description(self) -> str:
        """What runs, in words, for the app's model line."""
        return "recorded poses (no network runs)"

    def reset(self, keep_ids: bool = False) -> None:
        """Nothing to forget: replay is stateless (its ids are the recording's)."""

    def flush(self) -> list[PoseFrame]:
        """Nothing held back: every step answers its own frame."""
        return []

    def step(self, frame: Frame) -> PoseFrame:
        i = bisect.bisect_right(self._indices, frame.index) - 1
        w, h = frame.size
        if i < 0 or frame.index - self._indices[i] > self._hold_frames:
            return PoseFrame.empty(frame.index, frame.timestamp, self.spec.num_joints, (w, h))
        return replace(self._frames[i], index=frame.index, timestamp=frame.timestamp)
