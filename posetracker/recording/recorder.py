"""SessionRecorder: write a recording folder incrementally (see the package docstring)."""

from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import av
import cv2
import numpy as np

from posetracker.export.files import write_atomic
from posetracker.export.json_io import sequence_to_dict
from posetracker.skeletons import SkeletonSpec
from posetracker.types import Frame, PoseFrame, PoseSequence

FORMAT = "posetracker-recording"
VIDEO, POSES, META = "video.mp4", "poses.jsonl", "meta.json"
_FRAG_OPTIONS = {"movflags": "frag_keyframe+empty_moov+default_base_moof", "flush_packets": "1"}
_MAP_SIZE = 1024  # source frame indices remembered to attach late poses


class RecordingError(RuntimeError):
    """The recording could not be written (disk full, folder not writable...).

    Everything written before the fault stays in the folder.
    """


def is_recording_folder(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a folder holding a recording's ``meta.json``."""
    return (Path(path) / META).is_file()


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` by ``data`` as JSON, synced; the file gets the default permissions."""
    write_atomic({path: json.dumps(data, indent=1)}, sync=True)


def _even(n: int) -> int:
    return max(2, n - n % 2)


class VideoWriter:
    """Fragmented-MP4 writer (libx264, else mpeg4) on a file we can fsync: ``write`` (H, W, 3) uint8 RGB images of
    ``size`` (W, H) (odd sizes cropped by a pixel), ``sync``, ``close``; an interrupted file stays readable up to its
    last second."""

    def __init__(self, path: Path, fps: float, size: tuple[int, int]):
        self.size = (_even(size[0]), _even(size[1]))
        self.file: IO[bytes] = open(path, "wb")
        self.container = av.open(self.file, "w", format="mp4", options=_FRAG_OPTIONS)
        self.rate = rate = max(1, round(fps))  # frames per second of the time base
        codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
        self.stream = self.container.add_stream(codec, rate=rate)
        self.stream.width, self.stream.height = self.size
        self.stream.pix_fmt = "yuv420p"
        self.stream.gop_size = rate  # one keyframe, hence one fragment, per second
        if codec == "libx264":
            self.stream.options = {"preset": "ultrafast", "tune": "zerolatency"}
        self.count = 0

    def write(self, image: np.ndarray, pts: int | None = None) -> None:
        """Append ``image``; ``pts``: its time in frames of ``rate`` (default the next frame; larger steps leave
        gaps, a variable frame rate)."""
        w, h = self.size
        if image.shape[1] < w or image.shape[0] < h:
            image = cv2.resize(image, (w, h))
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image[:h, :w]), format="rgb24")
        frame.pts = self.count if pts is None else int(pts)
        for packet in self.stream.encode(frame):
            self.container.mux(packet)
        self.count += 1

    def sync(self) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self) -> None:
        try:
            for packet in self.stream.encode():
                self.container.mux(packet)
        finally:
            try:
                self.container.close()
            finally:
                self.file.close()


class SessionRecorder:
    """Write frames and poses to ``folder`` as they arrive.

    Args:
        folder: created if needed; must not already hold a recording.
        fps: nominal frame rate of the video.
        size: ``(width, height)`` of the frames (odd sizes are cropped by one pixel).
        spec: skeleton of the poses.
        metadata: free-form description stored in meta.json (source, model...).

    ``write(frame, pose)`` appends a video frame and, if given, its pose;
    ``write_pose(pose)`` attaches a pose that arrives later for a frame
    already written (matched by ``pose.index`` = the frame's source index).
    Any OSError raises :class:`RecordingError`; the recorder is then closed
    and the folder keeps everything written before the fault. One thread.
    """

    def __init__(self, folder: str | os.PathLike[str], fps: float, size: tuple[int, int],
                 spec: SkeletonSpec, metadata: dict[str, Any] | None = None, sync_interval: float = 1.0):
        self.folder = Path(folder)
        self.fps = float(fps) if fps and fps > 0 else 30.0
        self.spec = spec
        self.poses_written = 0
        self.closed = False
        self._sync_interval = sync_interval
        self._last_sync = time.monotonic()
        self._video_index: OrderedDict[int, int] = OrderedDict()
        self._meta: dict[str, Any] = {
            "format": FORMAT, "version": 1, "fps": self.fps, "size": [_even(int(size[0])), _even(int(size[1]))],
            "skeleton": spec.name, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "status": "recording", "metadata": metadata or {},
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if is_recording_folder(self.folder):
                raise RecordingError(f"{self.folder} already holds a recording")
            write_json_atomic(self.folder / META, self._meta)
            self._poses = open(self.folder / POSES, "a", encoding="utf-8")
            self._video = VideoWriter(self.folder / VIDEO, self.fps, (int(size[0]), int(size[1])))
        except (OSError, av.FFmpegError) as exc:
            raise RecordingError(f"cannot start a recording in {self.folder}: {exc}") from exc

    @property
    def frames_written(self) -> int:
        return self._video.count

    def write(self, frame: Frame, pose: PoseFrame | None = None) -> None:
        """Append one captured frame (and its pose, if known)."""
        self._guard(self._write_frame, frame)
        if pose is not None:
            self.write_pose(pose)

    def write_pose(self, pose: PoseFrame) -> None:
        """Append the pose of an already written frame (ignored if that frame was not recorded)."""
        n = self._video_index.get(pose.index)
        if n is not None:
            self._guard(self._write_pose, pose, n)

    def _guard(self, fn: Any, *args: Any) -> None:
        if self.closed:
            raise RecordingError(f"the recording in {self.folder} is closed")
        try:
            fn(*args)
            if time.monotonic() - self._last_sync >= self._sync_interval:
                self._sync()
        except (OSError, av.FFmpegError) as exc:
            self._abort(exc)
            raise RecordingError(f"recording to {self.folder} stopped: {exc}") from exc

    def _write_frame(self, frame: Frame) -> None:
        self._video_index[frame.index] = self._video.count
        while len(self._video_index) > _MAP_SIZE:
            self._video_index.popitem(last=False)
        self._video.write(frame.image)

    def _write_pose(self, pose: PoseFrame, n: int) -> None:
        row = sequence_to_dict(PoseSequence([pose], self.fps, self.spec))["frames"][0]
        row.update(index=n, time_s=n / self.fps, source_index=pose.index, source_time_s=pose.timestamp)
        self._poses.write(json.dumps(row, allow_nan=False) + "\n")
        self._poses.flush()
        self.poses_written += 1

    def _sync(self) -> None:
        os.fsync(self._poses.fileno())
        self._video.sync()
        self._last_sync = time.monotonic()

    def _abort(self, exc: BaseException) -> None:
        """Close everything after a fault, ignoring further errors."""
        self.closed = True
        for closer in (self._poses.close, self._video.close):
            try:
                closer()
            except (OSError, av.FFmpegError, ValueError):
                pass
        self._meta.update(status="failed", error=str(exc))
        self._finish_meta()

    def _finish_meta(self) -> None:
        self._meta.update(frames=self._video.count, poses=self.poses_written,
                          stopped=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        try:
            write_json_atomic(self.folder / META, self._meta)
        except OSError:
            pass  # meta.json from the start stays; the data files are authoritative

    def close(self) -> None:
        """Finish the video and meta.json. Idempotent; RecordingError if the disk fails now."""
        if self.closed:
            return
        self.closed = True
        try:
            self._poses.close()
            self._video.close()
        except (OSError, av.FFmpegError) as exc:
            self._abort(exc)
            raise RecordingError(f"recording to {self.folder} could not be finished: {exc}") from exc
        self._meta["status"] = "complete"
        self._finish_meta()

    def __enter__(self) -> SessionRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
