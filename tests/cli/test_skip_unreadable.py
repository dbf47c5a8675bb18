"""One unreadable image in a folder is skipped with a warning; the rest is tracked (CLI, library, app)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from gui_helpers import isolated_settings, no_modal_dialogs  # noqa: F401 - autouse: no dialogs, no saved settings
from posetracker.capture import ImageFolderSource


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """img1.png .. img6.png, img3.png damaged."""
    rng = np.random.default_rng(0)
    for i in range(1, 7):
        cv2.imwrite(str(tmp_path / f"img{i}.png"), rng.integers(0, 256, (64, 96, 3), dtype=np.uint8))
    (tmp_path / "img3.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    return tmp_path


def test_process_skips_the_bad_image_and_says_so(folder, tmp_path_factory, capsys):
    from posetracker.cli import main
    from posetracker.export import read_sequence

    out = tmp_path_factory.mktemp("out") / "poses.json"
    assert main(["process", str(folder), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "skipped" in err and "img3.png" in err
    seq = read_sequence(out)
    assert [f.index for f in seq.frames] == [0, 1, 3, 4, 5]
    assert "img3.png" in seq.metadata["skipped"][0]


@pytest.mark.gui
def test_the_app_plays_on_past_the_bad_image(qtbot, folder):
    from gui_helpers import FakeSession
    from ui.pipeline import PipelineController

    controller = PipelineController()
    try:
        with qtbot.waitSignal(controller.failed, timeout=5000) as blocker:
            controller.start(lambda: ImageFolderSource(folder), FakeSession)
        assert "img3.png" in blocker.args[0]
        qtbot.waitUntil(lambda: controller.capture is not None and controller.capture.position == 5, timeout=5000)
    finally:
        assert controller.stop()
