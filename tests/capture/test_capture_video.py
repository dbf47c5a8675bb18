"""VideoFileSource and LavfiSource on small videos generated with PyAV."""

from __future__ import annotations

import os
import threading
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from posetracker.capture import (
    CaptureError,
    CorruptVideoError,
    LavfiSource,
    NotAVideoError,
    SourceNotFoundError,
    UnsupportedCodecError,
    VideoFileSource,
    lavfi_available,
    open_source,
)
from posetracker.types import Frame

N, W, H, FPS = 48, 64, 48, 24
MAX_READS = 500  # every read loop is bounded: no test can hang on broken data


def pattern(i: int, rng: np.random.Generator) -> np.ndarray:
    """(H, W, 3) uint8 RGB: frame index as 8 white/black 8x16 blocks, noise below."""
    img = np.zeros((H, W, 3), np.uint8)
    for b in range(8):
        if (i >> b) & 1:
            img[:16, b * 8 : (b + 1) * 8] = 255
    img[16:] = rng.integers(40, 200, (H - 16, W, 3), dtype=np.uint8)
    return img


def index_of(img: np.ndarray) -> int:
    """Read back the frame index drawn by :func:`pattern`."""
    return sum(1 << b for b in range(8) if img[2:14, b * 8 + 2 : b * 8 + 6].mean() > 128)


def make_video(path: Path, codec: str = "mpeg4", options: dict[str, str] | None = None) -> Path:
    rng = np.random.default_rng(1)
    with av.open(str(path), "w", options=options or {}) as out:
        stream = out.add_stream(codec, rate=FPS)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.gop_size = 12
        if codec == "libx264":
            stream.options = {"preset": "ultrafast"}
        for i in range(N):
            for packet in stream.encode(av.VideoFrame.from_ndarray(pattern(i, rng), format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def drain(src: VideoFileSource) -> tuple[list[Frame], CaptureError | None]:
    frames: list[Frame] = []
    for _ in range(MAX_READS):
        try:
            frame = src.read()
        except CaptureError as e:
            return frames, e
        if frame is None:
            return frames, None
        frames.append(frame)
    raise AssertionError("read() never reached the end of the stream")


def _has_x264() -> bool:
    return "libx264" in av.codecs_available


VARIANTS = [
    ("mpeg4", "mp4"),
    ("mpeg4", "avi"),
    ("mpeg4", "mkv"),
    pytest.param("libx264", "mp4", marks=pytest.mark.skipif(not _has_x264(), reason="no libx264")),
    pytest.param("libx264", "avi", marks=pytest.mark.skipif(not _has_x264(), reason="no libx264")),
]


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("videos")
    out = {f"mpeg4.{e}": make_video(d / f"mpeg4.{e}") for e in ("mp4", "avi", "mkv")}
    out["faststart.mp4"] = make_video(d / "faststart.mp4", options={"movflags": "faststart"})
    if _has_x264():
        for e in ("mp4", "avi"):
            out[f"libx264.{e}"] = make_video(d / f"libx264.{e}", "libx264")
    return out


def damaged(src: Path, dst: Path, *, cut: float | None = None, garbage_at: float | None = None) -> Path:
    data = bytearray(src.read_bytes())
    if cut is not None:
        data = data[: int(len(data) * cut)]
    if garbage_at is not None:
        start, size = int(len(data) * garbage_at), len(data) // 10
        data[start : start + size] = np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8).tobytes()
    dst.write_bytes(bytes(data))
    return dst


@pytest.mark.parametrize(("codec", "ext"), VARIANTS)
def test_reads_every_frame_with_timestamps(videos: dict[str, Path], codec: str, ext: str) -> None:
    with VideoFileSource(videos[f"{codec}.{ext}"]) as src:
        assert src.frame_count == N
        assert src.frame_count_exact == (ext != "mkv")  # mkv stores no count: duration * fps
        assert src.fps == pytest.approx(FPS)
        assert src.size == (W, H)
        assert not src.is_live and src.seekable
        assert src.name == f"{codec}.{ext}"
        frames, err = drain(src)
    assert err is None
    assert [f.index for f in frames] == list(range(N))
    assert [index_of(f.image) for f in frames] == list(range(N))
    assert all(f.image.shape == (H, W, 3) and f.image.dtype == np.uint8 for f in frames)
    ts = np.array([f.timestamp for f in frames])
    assert ts[0] == 0.0 and np.all(np.diff(ts) > 0)
    np.testing.assert_allclose(ts, np.arange(N) / FPS, atol=1e-3)


@pytest.mark.parametrize(("codec", "ext"), VARIANTS)
def test_seek_lands_on_the_requested_frame(videos: dict[str, Path], codec: str, ext: str) -> None:
    with VideoFileSource(videos[f"{codec}.{ext}"]) as src:
        for target in [30, 0, 11, 12, 13, 47, 5, 46, 1, 24]:
            src.seek(target)
            frame = src.read()
            assert frame is not None
            assert (frame.index, index_of(frame.image)) == (target, target)
            assert frame.timestamp == pytest.approx(target / FPS, abs=1e-3)
        src.seek(45)
        rest, err = drain(src)
        assert err is None
        assert [(f.index, index_of(f.image)) for f in rest] == [(45, 45), (46, 46), (47, 47)]
        for bad in (-1, N, 1000):
            with pytest.raises(IndexError):
                src.seek(bad)


def test_seek_falls_back_to_decoding_from_the_start(videos: dict[str, Path]) -> None:
    """White-box: a demuxer that cannot seek still lands on the right frame."""

    class NoSeek:
        def __init__(self, inner: av.container.InputContainer) -> None:
            self._inner = inner

        def seek(self, *args: object, **kwargs: object) -> None:
            raise av.error.InvalidDataError(1094995529, "seeking unsupported")

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

    with VideoFileSource(videos["mpeg4.mkv"]) as src:
        src._container = src._decoder.container = NoSeek(src._container)  # type: ignore[assignment]
        src.seek(30)
        frame = src.read()
        assert frame is not None and (frame.index, index_of(frame.image)) == (30, 30)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.mp4"
    with pytest.raises(SourceNotFoundError, match="nope.mp4") as info:
        VideoFileSource(path)
    assert isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("notes.mp4", b"this is a text file, not a video\n" * 30),
        ("notes.txt", b"plain text that FFmpeg's tty demuxer would render\n" * 30),
        ("random.mp4", np.random.default_rng(3).integers(0, 256, 20000, dtype=np.uint8).tobytes()),
        ("empty.avi", b""),
    ],
)
def test_not_a_video(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(NotAVideoError, match=name):
        VideoFileSource(path)


def test_audio_only_file_is_not_a_video(tmp_path: Path) -> None:
    path = tmp_path / "beep.wav"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        for packet in [*stream.encode(frame), *stream.encode()]:
            out.mux(packet)
    with pytest.raises(NotAVideoError, match="no video stream"):
        VideoFileSource(path)


def test_unknown_codec(videos: dict[str, Path], tmp_path: Path) -> None:
    data = videos["mpeg4.avi"].read_bytes()
    assert b"FMP4" in data  # FourCC of FFmpeg's mpeg4 encoder
    path = tmp_path / "alien.avi"
    path.write_bytes(data.replace(b"FMP4", b"ZZZZ"))
    with pytest.raises(UnsupportedCodecError, match="alien.avi"):
        VideoFileSource(path)


@pytest.mark.parametrize("name", ["faststart.mp4", "mpeg4.mkv", "mpeg4.avi"])
def test_truncated_file_yields_frames_then_corrupt_error(videos: dict[str, Path], tmp_path: Path, name: str) -> None:
    path = damaged(videos[name], tmp_path / f"cut_{name}", cut=0.6)
    t0 = time.monotonic()
    with VideoFileSource(path) as src:
        frames, err = drain(src)
        assert isinstance(err, CorruptVideoError), err
        assert 0 < len(frames) < N
        assert [index_of(f.image) for f in frames] == list(range(len(frames)))
        assert err.last_good_index == len(frames) - 1
        assert err.expected_count == N
        assert f"after frame {err.last_good_index}" in str(err) and name in str(err)
        assert src.read() is None  # finished after the error
    assert time.monotonic() - t0 < 5


def test_mp4_cut_before_its_index_cannot_be_opened(videos: dict[str, Path], tmp_path: Path) -> None:
    # moov (the sample index) is written last by default: an interrupted recording.
    path = damaged(videos["mpeg4.mp4"], tmp_path / "interrupted.mp4", cut=0.6)
    with pytest.raises(CorruptVideoError, match="truncated or incomplete") as info:
        VideoFileSource(path)
    assert info.value.last_good_index == -1


@pytest.mark.parametrize("name", ["mpeg4.mp4", "faststart.mp4", "mpeg4.mkv", "mpeg4.avi"])
def test_garbage_in_the_middle_never_hangs(videos: dict[str, Path], tmp_path: Path, name: str) -> None:
    path = damaged(videos[name], tmp_path / f"bad_{name}", garbage_at=0.45)
    t0 = time.monotonic()
    try:
        src = VideoFileSource(path)
    except CorruptVideoError:
        return  # damage reached the headers: reported at open, fine
    with src:
        frames, err = drain(src)
    assert time.monotonic() - t0 < 5
    assert err is None or isinstance(err, CorruptVideoError)
    if err is not None:
        assert err.last_good_index == len(frames) - 1 < N - 1
    if name.endswith(".mp4"):  # FFmpeg's mp4 path reports this damage as a decode error
        assert isinstance(err, CorruptVideoError) and err.__cause__ is not None
        assert [index_of(f.image) for f in frames] == list(range(len(frames)))
    if name.endswith(".mkv"):
        # The Matroska demuxer resynchronises after the garbage and goes on: the
        # damage may go unreported, but timestamps still match the pictures.
        assert [index_of(f.image) for f in frames] == [round(f.timestamp * FPS) for f in frames]
        assert len(frames) < N


def test_variable_frame_rate_mkv_is_not_reported_as_damaged(tmp_path: Path) -> None:
    path = tmp_path / "vfr.mkv"
    rng = np.random.default_rng(2)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=30)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.codec_context.time_base = Fraction(1, 1000)
        t_ms, stamps = 0, []
        for i in range(30):
            frame = av.VideoFrame.from_ndarray(pattern(i, rng), format="rgb24")
            frame.pts, frame.time_base = t_ms, Fraction(1, 1000)
            stamps.append(t_ms / 1000)
            t_ms += 33 if i % 5 else 250  # a pause every 5 frames
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    with VideoFileSource(path) as src:
        assert not src.frame_count_exact
        frames, err = drain(src)
    assert err is None
    assert [index_of(f.image) for f in frames] == list(range(30))
    np.testing.assert_allclose([f.timestamp for f in frames], stamps, atol=1e-3)


def test_close_and_context_manager(videos: dict[str, Path]) -> None:
    src = VideoFileSource(videos["mpeg4.mp4"])
    with src as same:
        assert same is src
        assert next(iter(src)).index == 0
    src.close()  # idempotent
    with pytest.raises(CaptureError, match="closed"):
        src.read()


def test_concurrent_readers_share_one_decoder_safely(videos: dict[str, Path]) -> None:
    got: list[int] = []
    with VideoFileSource(videos["mpeg4.mp4"]) as src:

        def worker() -> None:
            for _ in range(MAX_READS):
                frame = src.read()
                if frame is None:
                    return
                assert index_of(frame.image) == frame.index
                got.append(frame.index)

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
    assert sorted(got) == list(range(N))


def test_open_source_picks_video_file(videos: dict[str, Path], tmp_path: Path) -> None:
    with open_source(str(videos["mpeg4.avi"])) as src:
        assert isinstance(src, VideoFileSource)
    with pytest.raises(SourceNotFoundError):
        open_source(tmp_path / "missing.mkv")


needs_lavfi = pytest.mark.skipif(not lavfi_available(), reason="PyAV built without lavfi")


@needs_lavfi
def test_lavfi_source_yields_frames_of_the_requested_size() -> None:
    with LavfiSource("testsrc2=size=96x64:rate=25", duration=0.4) as src:
        assert src.is_live and src.frame_count is None
        assert src.size == (96, 64) and src.fps == pytest.approx(25)
        frames = list(src)
    assert len(frames) == 10
    assert all(f.image.shape == (64, 96, 3) and f.image.dtype == np.uint8 for f in frames)
    np.testing.assert_allclose([f.timestamp for f in frames], np.arange(10) / 25, atol=1e-6)
    assert frames[0].image.std() > 10  # a real test picture, not blank


@needs_lavfi
def test_lavfi_realtime_pacing() -> None:
    with LavfiSource("testsrc2=size=32x24:rate=100", duration=0.06, realtime=True) as src:
        t0 = time.monotonic()
        frames = list(src)
        elapsed = time.monotonic() - t0
    assert len(frames) == 6 and elapsed >= 0.045  # 5 intervals of 10 ms


@needs_lavfi
def test_lavfi_bad_graph_and_open_source() -> None:
    with pytest.raises(CaptureError, match="no_such_filter"):
        LavfiSource("no_such_filter=size=8x8")
    with open_source("lavfi:testsrc2=size=32x24:rate=10") as src:
        assert isinstance(src, LavfiSource)
        frame = src.read()
        assert frame is not None and frame.image.shape == (24, 32, 3)


def with_display_rotation(src: Path, dst: Path) -> Path:
    """Copy an MP4 with its track matrix set to a phone's portrait rotation ("rotate 90": turn clockwise to show)."""
    import struct

    data = bytearray(src.read_bytes())
    i = data.find(b"tkhd")
    assert i > 0 and data[i + 4] == 0  # version 0 header
    at = i + 4 + 4 + 5 * 4 + 8 + 8  # box type, version/flags, 5 x 32-bit fields, reserved, layer/group/volume
    data[at : at + 36] = struct.pack(">9I", 0, 0x10000, 0, 0xFFFF0000, 0, 0, 0, 0, 0x40000000)
    dst.write_bytes(bytes(data))
    return dst


def test_portrait_phone_video_comes_out_upright(videos: dict[str, Path], tmp_path: Path) -> None:
    path = with_display_rotation(videos["mpeg4.mp4"], tmp_path / "portrait.mp4")
    plain = VideoFileSource(videos["mpeg4.mp4"])
    first_plain = next(iter(plain)).image
    plain.close()
    with VideoFileSource(path) as src:
        assert src.size == (H, W)  # width and height swapped
        first = next(iter(src)).image
    assert first.shape == (W, H, 3)
    # turned clockwise: the top row (frame index blocks) becomes the right-hand column
    np.testing.assert_array_equal(first, np.rot90(first_plain, -1))


def test_read_pending_converts_only_when_asked(tmp_path):
    """The app's capture thread reads every frame at the file's pace; only those taken are converted to RGB."""
    from posetracker.capture import PendingFrame

    clip = make_video(tmp_path / "clip.mp4")
    with VideoFileSource(clip) as a, VideoFileSource(clip) as b:
        for i in range(3):
            pending = a.read_pending()
            assert isinstance(pending, PendingFrame) and pending.index == i and not pending.converted
            frame = b.read()
            assert pending.timestamp == frame.timestamp
            got = pending.frame()
            assert pending.converted and pending.frame() is got
            np.testing.assert_array_equal(got.image, frame.image)
        assert a.read_pending().index == 3  # skipped without conversion, the stream goes on


def test_a_held_conversion_makes_other_takers_wait_for_it():
    """While one thread holds a frame's conversion (offering it), another thread's frame() waits and gets that
    thread's result: the image is converted once, on the holder's thread (the app's capture thread)."""
    import threading

    from posetracker.capture import PendingFrame

    calls = []
    image = np.zeros((4, 6, 3), np.uint8)
    pending = PendingFrame(0, 0.0, lambda: (calls.append(threading.get_ident()), image)[1])
    got, started = [], threading.Event()

    def taker():
        started.set()
        got.append(pending.frame())

    with pending.converting():
        other = threading.Thread(target=taker)
        other.start()
        started.wait(2.0)
        other.join(timeout=0.2)
        assert other.is_alive() and not calls  # the taker waits; nothing converted yet
    other.join(timeout=2.0)
    assert calls == [threading.get_ident()] and got and got[0].image is image and pending.frame() is got[0]
    with pending.converting():  # already converted: nothing to hold
        pass
    assert calls == [threading.get_ident()]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
@pytest.mark.parametrize(("name", "damage"), [("mpeg4.mkv", {"garbage_at": 0.45}), ("mpeg4.mp4", {"garbage_at": 0.45}),
                                              ("faststart.mp4", {"cut": 0.6})])
def test_one_cpu_decoding_hands_out_no_concealed_picture(videos: dict[str, Path], tmp_path: Path, name: str,
                                                         damage: dict) -> None:
    """On one CPU FFmpeg decodes in one thread and conceals a damaged frame with the previous picture under the
    damaged frame's timestamp (corrupt flags on the frame, or on a truncated last packet): such frames are
    skipped, so every picture handed out is the one of its timestamp."""
    path = damaged(videos[name], tmp_path / f"bad_{name}", **damage)
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})  # this thread: FFmpeg sizes its decoder threads by it
    try:
        with VideoFileSource(path) as src:
            frames, err = drain(src)
            skipped = src._decoder.corrupt_skipped
    finally:
        os.sched_setaffinity(0, before)
    assert frames and skipped >= 1
    assert [index_of(f.image) for f in frames] == [round(f.timestamp * FPS) for f in frames]
    if err is not None:
        assert err.last_good_index == len(frames) - 1
