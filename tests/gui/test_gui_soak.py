"""An hour of webcam tracking in the app with memory flat (slow): a generated camera stream at speed (no frame
waits for the clock), three people a frame, the window's pose history for Export on disk (issue #24, item 11).
An hour's poses are counted after the plots' time windows have filled."""

from __future__ import annotations

import gc
import os
import time

import pytest

from gui_helpers import FakeSession
from posetracker.capture import CameraInfo, FakeCamera, WebcamSource

HOUR = 108_000  # frames of an hour at 30 fps
WARM = 20_000  # the first poses fill the allocator's pools


def rss_bytes() -> int:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow
@pytest.mark.gui
def test_an_hour_of_webcam_poses_keeps_memory_flat(qtbot):
    from ui.main_window import MainWindow
    from ui.plots import HISTORY_SECONDS
    from ui.services import Services

    services = Services(make_session=lambda choice: FakeSession(people=3),
                        open_camera=lambda index: WebcamSource(index, opener=FakeCamera.factory(
                            size=(160, 120), fps=30.0, realtime=False)),
                        list_cameras=lambda: [CameraInfo(0, "Fake camera")])
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.show()
    opened = time.monotonic()
    window.open_source("camera:0")
    # the plots keep HISTORY_SECONDS of source time (the camera's clock: wall time), however many poses that is at
    # this speed (~2,000 a second here), so the warm-up lasts until their windows are full
    qtbot.waitUntil(lambda: window.poses_received >= WARM and time.monotonic() - opened > HISTORY_SECONDS + 10,
                    timeout=600_000)
    gc.collect()
    start, t0, seen0 = rss_bytes(), time.monotonic(), window.poses_received
    samples = []
    while window.poses_received < seen0 + HOUR:
        qtbot.wait(2000)
        samples.append(rss_bytes())
        assert time.monotonic() - t0 < 1800, f"too slow: {window.poses_received} poses"
    gc.collect()
    end = rss_bytes()
    rate = (window.poses_received - seen0) / (time.monotonic() - t0)
    stored = len(window.history)
    window.close()
    print(f"poses {window.poses_received} ({rate:.0f}/s), history {stored}, RSS {start / 2**20:.1f} -> "
          f"{end / 2**20:.1f} MiB (max {max(samples) / 2**20:.1f})")
    assert stored >= 0.9 * (seen0 + HOUR)  # the poses were kept (on disk), not dropped
    assert end <= 1.05 * start and max(samples) <= 1.05 * start
