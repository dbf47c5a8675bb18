"""WebcamSource with the injectable FakeCamera backend, list_cameras, real cv2."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from posetracker.capture import (
    CameraDisconnectedError,
    CameraInfo,
    CameraNotFoundError,
    CaptureBackend,
    CaptureError,
    FakeCamera,
    WebcamSource,
    list_cameras,
    open_source,
)

MAX_READS = 500


def test_fake_camera_implements_the_backend_protocol() -> None:
    cam = FakeCamera(size=(32, 24))
    assert isinstance(cam, CaptureBackend)
    ok, img = cam.read()
    assert ok and img is not None and img.shape == (24, 32, 3) and img.dtype == np.uint8
    assert tuple(img[0, 0]) == (255, 0, 0)  # BGR blue


def test_reports_what_the_driver_granted_not_what_was_requested() -> None:
    opener = FakeCamera.factory(supported_sizes=[(320, 240), (640, 480)], max_fps=15)
    with WebcamSource(0, size=(1280, 720), fps=60, opener=opener) as cam:
        assert cam.requested_size == (1280, 720) and cam.requested_fps == 60
        assert cam.size == (640, 480) and cam.fps == 15
        frame = cam.read()
        assert frame is not None and frame.image.shape == (480, 640, 3)
        assert cam.is_live and cam.frame_count is None and not cam.seekable
        assert cam.name == "Camera 0"
        with pytest.raises(CaptureError, match="does not support seeking"):
            cam.seek(0)


def test_granted_request_and_fps_fallback_when_driver_reports_zero() -> None:
    with WebcamSource(2, size=(96, 64), fps=25, opener=FakeCamera.factory(reports_fps=False)) as cam:
        assert cam.size == (96, 64) and cam.fps == 25
    with WebcamSource(2, opener=FakeCamera.factory(size=(40, 30), reports_fps=False)) as cam:
        assert cam.size == (40, 30) and cam.fps == 30.0 and cam.requested_size is None


def test_frames_are_rgb_with_monotonic_timestamps() -> None:
    with WebcamSource(0, opener=FakeCamera.factory(size=(64, 48))) as cam:
        frames = [cam.read() for _ in range(5)]
    assert all(f is not None for f in frames)
    assert [f.index for f in frames] == list(range(5))  # type: ignore[union-attr]
    assert tuple(frames[0].image[0, 0]) == (0, 0, 255)  # type: ignore[union-attr]  # blue, now RGB
    ts = [f.timestamp for f in frames]  # type: ignore[union-attr]
    assert ts[0] == 0.0 and all(b >= a for a, b in zip(ts, ts[1:]))
    # the test pattern moves: consecutive frames differ
    assert not np.array_equal(frames[0].image, frames[1].image)  # type: ignore[union-attr]


def test_realtime_fake_camera_paces_timestamps() -> None:
    with WebcamSource(0, opener=FakeCamera.factory(size=(16, 16), fps=100, realtime=True)) as cam:
        frames = [cam.read() for _ in range(6)]
    ts = np.array([f.timestamp for f in frames])  # type: ignore[union-attr]
    assert ts[-1] >= 0.04  # 5 intervals of 10 ms, minus scheduling slack


def test_unplug_mid_stream_raises_disconnected_after_n_frames() -> None:
    cams: list[FakeCamera] = []

    def opener(device: int | str, api: int) -> FakeCamera:
        cams.append(FakeCamera(size=(32, 24), unplug_after=7))
        return cams[-1]

    cam = WebcamSource(1, opener=opener)
    got = []
    with pytest.raises(CameraDisconnectedError, match="Camera 1") as info:
        for _ in range(MAX_READS):
            frame = cam.read()
            assert frame is not None
            got.append(frame.index)
    assert got == list(range(7))
    assert "after frame 6" in str(info.value)
    assert not cams[0].isOpened()  # released on disconnect
    assert cam.read() is None  # finished
    cam.close()
    with pytest.raises(CaptureError, match="closed"):
        cam.read()


def test_manual_unplug() -> None:
    fake = FakeCamera(size=(16, 16))
    cam = WebcamSource(0, opener=lambda d, a: fake)
    assert cam.read() is not None and cam.read() is not None
    fake.unplug()
    with pytest.raises(CameraDisconnectedError):
        cam.read()


def test_open_failure_is_camera_not_found() -> None:
    with pytest.raises(CameraNotFoundError, match="camera index 3"):
        WebcamSource(3, opener=FakeCamera.factory(fail_open=True))
    # opens but never delivers a picture (e.g. busy device)
    with pytest.raises(CameraNotFoundError, match="no image"):
        WebcamSource(3, opener=FakeCamera.factory(unplug_after=0))


def test_backend_and_device_are_passed_to_the_opener() -> None:
    seen: list[tuple[int | str, int]] = []

    def opener(device: int | str, api: int) -> FakeCamera:
        seen.append((device, api))
        return FakeCamera(size=(8, 8))

    WebcamSource("4", backend=cv2.CAP_V4L2, opener=opener).close()
    assert seen == [(4, cv2.CAP_V4L2)]  # "4" means index 4


class _GrayBackend:
    """A driver delivering single-channel frames (some IR / mono cameras)."""

    def isOpened(self) -> bool:  # noqa: N802
        return True

    def read(self) -> tuple[bool, np.ndarray | None]:
        return True, np.full((12, 20), 77, np.uint8)

    def get(self, prop_id: int) -> float:
        return 0.0

    def set(self, prop_id: int, value: float) -> bool:
        return False

    def release(self) -> None:
        pass


def test_gray_frames_become_rgb() -> None:
    with WebcamSource(0, opener=lambda d, a: _GrayBackend()) as cam:
        frame = cam.read()
    assert frame is not None and frame.image.shape == (12, 20, 3) and np.all(frame.image == 77)


def test_real_opencv_missing_index_fails_fast(capfd: pytest.CaptureFixture[str]) -> None:
    t0 = time.monotonic()
    with pytest.raises(CameraNotFoundError, match="99"):
        WebcamSource(99)
    with pytest.raises(CameraNotFoundError, match="video77"):
        WebcamSource("/dev/video77")
    with pytest.raises(CameraNotFoundError):
        open_source("camera:99")
    assert time.monotonic() - t0 < 2.0
    assert "can't open camera" not in capfd.readouterr().err  # OpenCV warnings silenced


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="other OSes probe devices (slow)")
def test_list_cameras_is_quick_and_quiet(capfd: pytest.CaptureFixture[str]) -> None:
    t0 = time.monotonic()
    cams = list_cameras()
    assert time.monotonic() - t0 < 2.0
    assert isinstance(cams, list)
    if not Path("/sys/class/video4linux").exists():
        assert cams == []
    assert capfd.readouterr().err == ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sysfs listing is Linux-only")
def test_list_cameras_reads_sysfs_names(tmp_path: Path) -> None:
    nodes = [(0, "Integrated Camera", "0"), (1, "Integrated Camera", "1"), (2, "USB Cam", "0"), (10, "Far", "0")]
    for idx, name, node_index in nodes:
        d = tmp_path / f"video{idx}"
        d.mkdir()
        (d / "name").write_text(name + "\n")
        (d / "index").write_text(node_index + "\n")
    (tmp_path / "v4l-subdev0").mkdir()
    cams = list_cameras(8, sysfs_root=tmp_path)
    assert cams == [CameraInfo(0, "Integrated Camera"), CameraInfo(2, "USB Cam")]  # metadata node 1 skipped


def test_list_cameras_probing_with_injected_opener() -> None:
    opener_calls: list[int | str] = []

    def opener(device: int | str, api: int) -> FakeCamera:
        opener_calls.append(device)
        return FakeCamera(fail_open=device != 1)

    assert list_cameras(3, probe=True, opener=opener) == [CameraInfo(1, "Camera 1")]
    assert opener_calls == [0, 1, 2]
