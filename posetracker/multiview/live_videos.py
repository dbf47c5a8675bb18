"""Each camera's frames of a several-camera live run, kept as a video so the result can be played over them.

A connected camera's frames are gone once a live run has read them; :class:`ViewVideos` writes every paired
instant's frames (``live_sources.paired_frames``) to one fragmented MP4 per source in a folder, on its own thread.
Each frame is written once, at the time of the instant's first-source frame number (the number the result's
``PoseFrame.index`` carries; frames the pairing dropped are not written, so the file has a variable frame rate and
plays at the pace it was tracked). :class:`KeptFrames` plays such a file back as a constant-rate source whose frame
``i`` is the instant of index ``i`` (a dropped frame shows the instant before it), as a whole-file result plays. A
file cut short (the disk filled, the app was killed) stays readable up to its last second
(``recording.VideoWriter``).
"""

from __future__ import annotations

import bisect
import queue
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import av
import numpy as np

from posetracker.capture import CaptureError, FrameSource
from posetracker.recording import VideoWriter
from posetracker.types import Frame

QUEUED = 32  # instants waiting for the writer thread; the pairing waits when it is this far behind


class ViewVideosError(RuntimeError):
    """The frames could not be kept (the folder cannot be made or written)."""


def video_names(names: Sequence[str]) -> list[str]:
    """One file name per view: its camera's name made safe for a file (``cam01.mp4``), numbered where two
    views' names would be the same."""
    out: list[str] = []
    for v, name in enumerate(names):
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("._") or f"view{v + 1}"
        out.append(f"{stem}.mp4" if f"{stem}.mp4" not in out else f"{stem}_{v + 1}.mp4")
    return out


class ViewVideos:
    """Writes each instant's frames of ``len(names)`` sources to ``folder``/``video_names(names)``, frames of
    ``sizes`` (W, H) per source, times in frames of ``rate`` (= round(fps)). ``write(index, images)`` per instant
    (the first source's frame number, V (H, W, 3) uint8 RGB images in the sources' order) returns at once unless
    the writer is ``QUEUED`` instants behind; ``close()`` finishes the files and returns their paths. A write fault
    stops the writing (``problem()``); the files keep what was written before it."""

    def __init__(self, folder: str | Path, names: Sequence[str], sizes: Sequence[tuple[int, int]], fps: float):
        self.folder = Path(folder)
        self.paths = [self.folder / n for n in video_names(names)]
        self.error: BaseException | None = None
        self._writers: list[VideoWriter] = []
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            taken = [p for p in self.paths if p.exists()]
            if taken:
                raise ViewVideosError(f"{taken[0]} exists already: the frames are kept in a new folder")
            for path, (w, h) in zip(self.paths, sizes):
                self._writers.append(VideoWriter(path, fps, (int(w), int(h))))
        except (OSError, av.FFmpegError) as exc:
            self._close_writers()
            raise ViewVideosError(f"cannot keep the cameras' frames in {self.folder}: {exc}") from exc
        self.rate = self._writers[0].rate if self._writers else max(1, round(fps))
        self._queue: queue.Queue = queue.Queue(QUEUED)
        self._last = -1  # the last index written
        self._thread = threading.Thread(target=self._run, daemon=True, name="posetracker-view-videos")
        self._thread.start()

    def write(self, index: int, images: Sequence[np.ndarray]) -> None:
        """Keep one instant's images (V,) at frame number ``index`` (an index not past the last one is skipped)."""
        if self.error is None and index > self._last:
            self._last = int(index)
            self._queue.put((int(index), list(images)))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self.error is not None:
                continue  # drained, not written: the fault is said by problem()
            index, images = item
            try:
                for writer, image in zip(self._writers, images):
                    writer.write(image, pts=index)
            except (OSError, av.FFmpegError) as exc:
                self.error = exc

    def _close_writers(self) -> None:
        for writer in self._writers:
            try:
                writer.close()
            except (OSError, av.FFmpegError) as exc:
                self.error = self.error or exc

    def close(self) -> list[Path]:
        """Finish the files -> their paths (one per source, in order)."""
        self._queue.put(None)
        self._thread.join()
        self._close_writers()
        return list(self.paths)

    def problem(self) -> str:
        """The fault in words ("" when there was none)."""
        return "" if self.error is None else (f"keeping the cameras' frames in {self.folder} stopped: {self.error} "
                                              "(the frames before it are kept)")


class KeptFrames(FrameSource):
    """A file of :class:`ViewVideos` played at ``rate`` frames per second: frame ``i`` is the frame written at
    index ``i``, or the last one written before it; seekable. Frames are (H, W, 3) uint8 RGB."""

    _seekable = True

    def __init__(self, path: str | Path, rate: float):
        self._path, self._rate, self._name = str(path), float(rate), Path(path).name
        try:
            self._open()
            self._stamps = sorted(p.pts for p in self._container.demux(self._stream) if p.pts is not None)  # (N,)
            self._open()
        except (OSError, av.FFmpegError) as exc:
            raise CaptureError(f"{path}: cannot read the kept frames: {exc}") from exc
        if not self._stamps:
            raise CaptureError(f"{path}: no frame was kept")
        first = self._stamps[0]
        self._indices = [round(float((s - first) * self._stream.time_base) * self._rate) for s in self._stamps]
        self._fps, self._frame_count = self._rate, self._indices[-1] + 1
        self._size = (self._stream.codec_context.width, self._stream.codec_context.height)
        self._next, self._held, self._image = 0, -1, None  # the next index; the kept frame in _image (its number)

    def _open(self) -> None:
        if getattr(self, "_container", None) is not None:
            self._container.close()
        self._container = av.open(self._path)
        self._stream = self._container.streams.video[0]
        self._frames = self._container.decode(self._stream)

    def read(self) -> Frame | None:
        if self._next >= self._frame_count:
            return None
        want = bisect.bisect_right(self._indices, self._next) - 1  # the kept frame shown at index _next
        try:
            while self._held < want:
                frame = next(self._frames, None)
                if frame is None:
                    raise CaptureError(f"{self.name}: the file ends before frame {self._next}")
                self._held = bisect.bisect_left(self._stamps, frame.pts) if frame.pts is not None else self._held + 1
                self._image = frame.to_ndarray(format="rgb24")
        except av.FFmpegError as exc:
            raise CaptureError(f"{self.name}: {exc}") from exc
        index, self._next = self._next, self._next + 1
        return Frame(index, index / self._rate, self._image.copy())

    def seek(self, index: int) -> None:
        if not 0 <= index < self._frame_count:
            raise IndexError(f"{self.name}: frame {index} out of range ({self._frame_count} frames)")
        want = bisect.bisect_right(self._indices, index) - 1
        if want != self._held:
            self._held = -1
            try:  # the keyframe at or before it, then read() decodes forward; from the start where that fails
                self._container.seek(self._stamps[want], stream=self._stream, backward=True, any_frame=False)
                self._frames = self._container.decode(self._stream)
                frame = next(self._frames, None)
                at = len(self._stamps) if frame is None or frame.pts is None else bisect.bisect_left(self._stamps,
                                                                                                     frame.pts)
                if at > want:  # landed after it
                    self._open()
                else:
                    self._held, self._image = at, frame.to_ndarray(format="rgb24")
            except av.FFmpegError:
                self._open()
        self._next = int(index)

    def close(self) -> None:
        self._container.close()

__all__ = ["KeptFrames", "ViewVideos", "ViewVideosError", "video_names"]
