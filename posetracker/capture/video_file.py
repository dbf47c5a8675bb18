"""Video files decoded with PyAV (FFmpeg): mp4, mov, avi, mkv, webm, ...

Frames are ``(H, W, 3)`` uint8 RGB; ``timestamp`` is ``pts * time_base`` of the
first video stream, in seconds relative to the first frame of the file.

Damaged files: every frame that decodes is returned, then ``read()`` raises
:class:`CorruptVideoError` (``last_good_index`` = last returned index). This
happens either when FFmpeg reports a demux/decode error, or when the stream
ends silently with clearly fewer frames than the header promised (FFmpeg
often just stops at the damage, e.g. for truncated mkv or avi files). An mp4
cut before its ``moov`` index (an interrupted recording) cannot be opened at
all and raises :class:`CorruptVideoError` with ``last_good_index == -1``.

Limits: some damage is concealed by FFmpeg and goes unreported - the Matroska
demuxer resynchronises after garbage and carries on (timestamps stay right,
but frames are numbered in decoding order, so indices after the damage lag
behind), and some decoders patch over broken pictures.
"""

from __future__ import annotations

import math
import os
import threading
from functools import partial
from pathlib import Path

import av

from posetracker.capture._av import (
    NoProgressError,
    PacketDecoder,
    expectation,
    frame_to_rgb,
    open_video_container,
    quarter_turns,
    stream_fps,
)
from posetracker.capture.base import CaptureError, CorruptVideoError, FrameSource, PendingFrame, UnsupportedCodecError
from posetracker.types import Frame

__all__ = ["VideoFileSource"]

# Decoder-side errors meaning "this build cannot decode that", not damage.
_UNSUPPORTED = (av.error.DecoderNotFoundError, av.error.PatchWelcomeError)


class VideoFileSource(FrameSource):
    """Frames of the first video stream of a file.

    Properties: ``fps`` (nominal), ``frame_count`` (the stream header's count;
    if the container does not store one, ``round(duration * fps)`` - see
    ``frame_count_exact``), ``size`` (declared ``(width, height)``; a stream
    that changes resolution mid-way yields frames of the new size).

    ``seek(index)`` assumes a constant frame rate: it seeks to the keyframe at
    or before time ``index / fps`` and decodes forward to the first frame whose
    timestamp is within half a frame of it (exact for constant-frame-rate
    files; approximate for variable-frame-rate ones, and MPEG-PS can be a
    frame off). If the demuxer cannot seek there it decodes from the start.
    Frames read sequentially are numbered 0, 1, 2, ... in decoding order.

    Thread safety: one source should be used by one thread at a time; calls
    are serialised by an internal lock. Use one source per thread to decode
    the same file in parallel.
    """

    _seekable = True

    def __init__(self, path: str | os.PathLike[str], name: str | None = None) -> None:
        """``name``: what the app calls the source (default: the file's name)."""
        self._path = Path(path)
        self._name = name or self._path.name
        self._lock = threading.RLock()
        self._closed = False
        self._failed = False
        self._next_index = 0
        self._container = open_video_container(self._path)
        try:
            self._setup()
        except BaseException:
            self._container.close()
            raise

    def _setup(self) -> None:
        p = self._path
        stream = self._container.streams.video[0]
        if stream.codec_context is None:
            raise UnsupportedCodecError(f"{p}: the video codec is unknown to this FFmpeg build")
        self._stream = stream
        self._codec = stream.codec_context.name
        self._fps = stream_fps(stream)
        self._size = (int(stream.codec_context.width), int(stream.codec_context.height))
        self._expect = expectation(self._container, stream, self._fps)
        self._frame_count, self._count_exact = self._expect.count, self._expect.exact
        self._decoder = PacketDecoder(self._container, stream)
        self._tb = self._decoder.time_base
        self._covered = 0.0  # end time (s) of the last decoded frame
        # Decode the first frame now: validates the codec and fixes time zero.
        self._first_pts: int | None = None
        first = self._decode()
        if first is None:
            raise CorruptVideoError(
                f"{p} contains no decodable video frame", last_good_index=-1,
                expected_count=self._frame_count, path=p,
            )
        self._first_pts = first.pts
        if self._size[0] <= 0 or self._size[1] <= 0:
            self._size = (first.width, first.height)
        if quarter_turns(first) % 2:  # portrait phone video: frames come out upright, width and height swapped
            self._size = (self._size[1], self._size[0])
        self._decoder.push_front(first)

    def _corrupt(self, cause: BaseException | None, what: str) -> CorruptVideoError:
        last = self._next_index - 1
        self._failed = True
        where = f"after frame {last}" if last >= 0 else "before the first frame"
        total = f" ({self._frame_count} frames expected)" if self._frame_count is not None else ""
        detail = f" [{cause}]" if cause is not None else ""
        return CorruptVideoError(
            f"{self._path}: {what}; decoding stopped {where}{total}{detail}",
            last_good_index=last, expected_count=self._frame_count, path=self._path,
        )

    def _decode(self) -> av.VideoFrame | None:
        """Next raw frame from the decoder, mapping PyAV errors."""
        try:
            return self._decoder.next_frame()
        except _UNSUPPORTED as e:
            raise UnsupportedCodecError(
                f"{self._path}: cannot decode {self._codec!r} video with this FFmpeg build ({e})"
            ) from e
        except (av.FFmpegError, NoProgressError, OSError) as e:
            raise self._corrupt(e, "the video data is damaged or truncated") from e

    def _timestamp(self, frame: av.VideoFrame, index: int) -> float:
        if frame.pts is None or self._first_pts is None:
            return index / self._fps
        return float((frame.pts - self._first_pts) * self._tb)

    def _note(self, frame: av.VideoFrame, ts: float) -> None:
        """Record how far into the video decoding got (for _check_ended_early)."""
        dur = float(frame.duration * self._tb) if frame.duration else 1.0 / self._fps
        self._covered = max(self._covered, ts + dur)

    def _check_ended_early(self) -> None:
        """At end of stream: raise CorruptVideoError if clearly short.

        Exact header count: fewer than ``min_frames`` minus 1 % (at least one
        frame) decoded. Estimated count: the frames cover less than the
        header duration minus ``duration_tol``.
        """
        e = self._expect
        if e.exact and e.min_frames is not None:
            if self._next_index < e.min_frames - max(1, math.ceil(0.01 * e.min_frames)):
                raise self._corrupt(None, "the file ends early (truncated or damaged)")
        elif e.duration is not None and self._covered < e.duration - e.duration_tol:
            raise self._corrupt(
                None, f"the file ends early (truncated or damaged): the video stops at "
                f"{self._covered:.2f} s of {e.duration:.2f} s"
            )

    def _check_open(self) -> None:
        if self._closed:
            raise CaptureError(f"{self.name}: the video source is closed")

    def read(self) -> Frame | None:
        """Next frame ``(H, W, 3)`` uint8 RGB, ``None`` at the end of the file.

        Raises CorruptVideoError once, after the last good frame, if the data
        is damaged; afterwards returns ``None``.
        """
        pending = self.read_pending()
        return None if pending is None else pending.frame()

    def read_pending(self) -> PendingFrame | None:
        """:meth:`read`, the decoded picture converted to RGB only when :meth:`PendingFrame.frame` asks."""
        with self._lock:
            self._check_open()
            if self._failed:
                return None
            frame = self._decode()
            if frame is None:
                self._check_ended_early()
                return None
            index = self._next_index
            self._next_index += 1
            ts = self._timestamp(frame, index)
            self._note(frame, ts)
            return PendingFrame(index, ts, partial(frame_to_rgb, frame))

    def seek(self, index: int) -> None:
        """Make the next ``read()`` return frame ``index`` (see class docstring).

        Raises IndexError if ``index`` is negative or past the end of the video,
        CorruptVideoError if the data up to it is damaged.
        """
        with self._lock:
            self._check_open()
            index = int(index)
            if index < 0 or (self._count_exact and self._frame_count is not None and index >= self._frame_count):
                raise IndexError(f"{self.name}: frame {index} out of range (video has {self._frame_count} frames)")
            self._failed = False
            if self._first_pts is None:  # no timestamps (raw stream): count from the start
                self._reopen()
                frame = self._decode()
                while frame is not None and self._next_index < index:
                    self._next_index += 1
                    frame = self._decode()
            else:
                in_range = self._frame_count is None or index < self._frame_count
                frame = self._seek_pts(self._first_pts + round(index / self._fps / self._tb), in_range)
            if frame is None:
                self._next_index = index
                self._check_ended_early()
                raise IndexError(f"{self.name}: frame {index} is past the end of the video")
            self._decoder.push_front(frame)
            self._next_index = index

    def _seek_pts(self, target: int, in_range: bool) -> av.VideoFrame | None:
        """Keyframe-seek then decode to the first frame within half a frame of ``target``.

        Falls back to decoding from the start if the demuxer cannot seek, lands
        after the target, or lands at end-of-file for a target ``in_range``
        (MPEG-TS does that near the end).
        """
        tol = math.floor(0.5 / self._fps / self._tb)  # half a frame, in pts units
        try:
            self._container.seek(int(target), stream=self._stream, backward=True, any_frame=False)
            self._decoder.reset()
            frame = self._decode()
            # Landing after the target means the demuxer's keyframe index is too coarse.
            overshot = (frame is None and in_range) or (
                frame is not None and frame.pts is not None and frame.pts > target + tol
            )
        except (av.FFmpegError, OSError):
            frame, overshot = None, True
        if overshot:  # robust fallback: reopen and decode forward from the start
            self._reopen()
            frame = self._decode()
        return self._decode_until(frame, target - tol)

    def _reopen(self) -> None:
        self._container.close()
        self._container = open_video_container(self._path)
        self._stream = self._container.streams.video[0]
        self._decoder = PacketDecoder(self._container, self._stream)
        self._next_index = 0

    def _decode_until(self, frame: av.VideoFrame | None, min_pts: int) -> av.VideoFrame | None:
        """Decode forward from ``frame`` to the first frame with pts >= min_pts."""
        while frame is not None and frame.pts is not None and frame.pts < min_pts:
            ts = self._timestamp(frame, 0)  # keeps last_good_index meaningful if decoding fails
            self._next_index = round(ts * self._fps) + 1
            self._note(frame, ts)
            frame = self._decode()
        return frame

    def close(self) -> None:
        """Close the file. Idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._container.close()

    @property
    def path(self) -> Path:
        """The video file."""
        return self._path

    @property
    def codec(self) -> str:
        """FFmpeg name of the video codec, e.g. ``"h264"``."""
        return self._codec

    @property
    def frame_count_exact(self) -> bool:
        """True if ``frame_count`` comes from the header, False if estimated."""
        return self._count_exact
