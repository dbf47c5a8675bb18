"""PyAV helpers shared by the video-file and lavfi sources (private).

Frames handed out are ``(H, W, 3)`` uint8 RGB arrays.

:class:`PacketDecoder` pulls decoded frames one at a time from one video
stream with an explicit demux -> decode loop, so that every iteration consumes
one packet from the demuxer: the loop always progresses towards end-of-file
and cannot spin forever on broken data.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from posetracker.capture.base import CaptureError, CorruptVideoError, NotAVideoError, SourceNotFoundError

# FFmpeg demuxers that "play" files which are not videos for our purposes:
# tty renders .txt/.ans text as ANSI art.
_NON_VIDEO_FORMATS = frozenset({"tty"})

# Demuxers whose duration comes from the file header (not a bitrate guess).
_DURATION_IN_HEADER = frozenset({"matroska,webm", "yuv4mpegpipe"})

# A healthy stream never needs this many packets in a row without a picture
# (decoder delay is at most a few frames, a GOP without keyframe a few hundred).
MAX_EMPTY_PACKETS = 5000


def sniff_container(path: Path) -> str | None:
    """Name of the video container the first bytes look like, else None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except OSError:
        return None
    if len(head) >= 8 and head[4:8] in (b"ftyp", b"moov", b"mdat", b"wide", b"free", b"skip"):
        return "MP4/MOV"
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return "AVI"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "Matroska/WebM"
    if head[:3] == b"FLV":
        return "FLV"
    if head[:4] == b"\x30\x26\xb2\x75":
        return "ASF/WMV"
    return None


def open_video_container(p: Path) -> av.container.InputContainer:
    """Open ``p`` for reading, mapping failures to user-readable capture errors.

    Missing file -> SourceNotFoundError; not a video / no video stream ->
    NotAVideoError; a recognisable container that FFmpeg cannot open (e.g. an
    mp4 cut before its ``moov`` index) -> CorruptVideoError(last_good_index=-1).
    """
    if not p.exists():
        raise SourceNotFoundError(f"Video file not found: {p}")
    if p.is_dir():
        raise NotAVideoError(f"{p} is a folder, not a video file")
    if p.stat().st_size == 0:
        raise NotAVideoError(f"{p} is empty (0 bytes), not a video file")
    try:
        container = av.open(str(p), mode="r", metadata_errors="ignore")
    except av.error.FileNotFoundError as e:
        raise SourceNotFoundError(f"Video file not found: {p}") from e
    except av.error.PermissionError as e:
        raise CaptureError(f"Permission denied reading {p}") from e
    except av.FFmpegError as e:
        kind = sniff_container(p)
        if kind is not None:
            raise CorruptVideoError(
                f"{p} looks like an {kind} video but cannot be opened: it is probably "
                f"truncated or incomplete (e.g. the recording was interrupted) ({e.strerror})",
                last_good_index=-1,
                path=p,
            ) from e
        raise NotAVideoError(f"{p} is not a video file (or is damaged beyond recognition)") from e
    if container.format.name in _NON_VIDEO_FORMATS or not container.streams.video:
        audio_only = bool(container.streams.audio) and not container.streams.video
        container.close()
        raise NotAVideoError(f"{p} contains no video stream (audio only?)" if audio_only
                             else f"{p} is not a video file")
    return container


class NoProgressError(Exception):
    """The decoder swallowed MAX_EMPTY_PACKETS packets without a frame."""


def stream_fps(stream: av.video.stream.VideoStream, default: float = 30.0) -> float:
    """Nominal frame rate of ``stream``: average, then guessed, then base rate."""
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        if rate:
            value = float(rate)
            if 0.0 < value < 10000.0:
                return value
    return default


def _parse_hms(text: str) -> float | None:
    """``"HH:MM:SS.fffffffff"`` (Matroska DURATION tag) -> seconds."""
    try:
        h, m, s = text.strip().split(":")
        return int(h) * 3600 + int(m) * 60 + float(s)
    except ValueError:
        return None


@dataclass(frozen=True)
class Expectation:
    """What a healthy file must deliver, to detect files that end early.

    count: frame count from the header (``exact``) or ``round(duration * fps)``.
    min_frames: frames an exact-count file must decode (for MP4/MOV lowered to
        the stream duration: edit lists can make the sample count exceed what
        plays; AVI shrinks its stream duration when truncated, so not there).
    duration: seconds of video an estimated-count file must cover; checked in
        time, not frames, so variable-frame-rate files are not flagged. Only
        for containers that store their duration (Matroska/WebM, y4m): the
        others (MPEG-PS/TS, raw streams...) may estimate it from the bitrate.
    duration_tol: seconds that may be missing (loose when ``duration`` is the
        container's, which includes audio).
    """

    count: int | None
    exact: bool
    min_frames: int | None
    duration: float | None
    duration_tol: float


def expectation(
    container: av.container.InputContainer, stream: av.video.stream.VideoStream, fps: float
) -> Expectation:
    """The :class:`Expectation` for ``stream`` from its headers."""
    video_s = float(stream.duration * stream.time_base) if stream.duration and stream.time_base else None
    if video_s is None and "DURATION" in stream.metadata:
        video_s = _parse_hms(stream.metadata["DURATION"])
    any_s = video_s or (container.duration / av.time_base if container.duration else None)
    if stream.frames and stream.frames > 0:
        count = int(stream.frames)
        min_frames = count
        if video_s and "mov" in container.format.name.split(","):
            min_frames = min(count, round(video_s * fps))
        return Expectation(count, True, min_frames, None, 0.0)
    if not any_s or any_s <= 0:
        return Expectation(None, False, None, None, 0.0)
    count = max(1, round(any_s * fps))
    if container.format.name not in _DURATION_IN_HEADER:
        return Expectation(count, False, None, None, 0.0)
    tol = max(3.0 / fps, (0.01 if video_s else 0.10) * any_s)
    return Expectation(count, False, None, any_s, tol)


def quarter_turns(frame: av.VideoFrame) -> int:
    """Counter-clockwise quarter turns that stand the frame upright (0-3), from its display matrix.

    Phones store portrait video as landscape pictures plus a rotation in the container;
    PyAV reports it as ``frame.rotation`` (degrees counter-clockwise; a phone's
    "rotate 90" reads -90, i.e. one clockwise turn = 3 counter-clockwise ones).
    """
    return int(round((getattr(frame, "rotation", 0) or 0) / 90.0)) % 4


def frame_to_rgb(frame: av.VideoFrame) -> np.ndarray:
    """Convert a decoded frame to an ``(H, W, 3)`` uint8 RGB contiguous array, upright (rotation metadata applied)."""
    img = frame.to_ndarray(format="rgb24")
    turns = quarter_turns(frame)
    if turns:
        img = np.rot90(img, turns)
    return np.ascontiguousarray(img, dtype=np.uint8)


class PacketDecoder:
    """Decode one video stream of an open input container, frame by frame.

    Not thread-safe: the owning source serialises calls. ``next_frame`` lets
    PyAV errors (subclasses of ``av.FFmpegError``) propagate; the caller maps
    them to capture errors.
    """

    def __init__(self, container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> None:
        self.container = container
        self.stream = stream
        self.time_base: Fraction = stream.time_base or Fraction(1, 1000)
        self._packets: Iterator[av.Packet] = container.demux(stream)
        self._queue: deque[av.VideoFrame] = deque()
        self.eof = False
        self.corrupt_skipped = 0  # frames of damaged data (see next_frame), not handed out
        self._corrupt_pts: set[int] = set()  # timestamps of packets the demuxer flagged corrupt

    def reset(self) -> None:
        """Forget buffered frames and restart demuxing (call after a seek)."""
        self._packets = self.container.demux(self.stream)
        self._queue.clear()
        self._corrupt_pts.clear()
        self.eof = False

    def push_front(self, frame: av.VideoFrame) -> None:
        """Put ``frame`` back so that the next ``next_frame`` returns it."""
        self._queue.appendleft(frame)

    def next_frame(self) -> av.VideoFrame | None:
        """The next decoded frame in presentation order, or ``None`` at EOF. A frame of damaged data is skipped:
        one FFmpeg flags corrupt, or one whose packet the demuxer flagged corrupt (a truncated last sample). Its
        picture is the decoder's concealment (single-threaded decoding hands out the previous picture again
        under the damaged frame's timestamp), so a pose read from it would belong to another time."""
        empty = 0
        while not self._queue:
            if self.eof:
                return None
            try:
                packet = next(self._packets)
            except StopIteration:
                self.eof = True
                return None
            if packet.is_corrupt and packet.pts is not None:
                self._corrupt_pts.add(packet.pts)
            try:
                frames = packet.decode()
            except av.error.EOFError:
                self.eof = True
                return None
            for f in frames:
                if isinstance(f, av.VideoFrame):
                    if f.is_corrupt or (f.pts is not None and f.pts in self._corrupt_pts):
                        self.corrupt_skipped += 1
                    else:
                        self._queue.append(f)
            if not self._queue:
                empty += 1
                if empty > MAX_EMPTY_PACKETS:
                    self.eof = True
                    raise NoProgressError(f"{empty} packets decoded without producing a frame")
        return self._queue.popleft()
