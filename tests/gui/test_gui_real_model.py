"""The one GUI test with the real shipped model: the sample clip opens and the dancer is tracked."""

from __future__ import annotations

import pytest

from gui_helpers import isolated_settings, no_modal_dialogs  # noqa: F401

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_level_fail("WARNING"),
              pytest.mark.qt_log_ignore("propagateSizeHints")]


def test_real_model_tracks_the_sample_dancer(qtbot):
    import torch

    from ui.main_window import MainWindow
    from ui.services import SAMPLE_CLIP, Services

    torch.set_num_threads(1)
    window = MainWindow(Services())
    qtbot.addWidget(window)
    window.show()
    window.open_source(str(SAMPLE_CLIP))
    qtbot.waitUntil(lambda: window.latest is not None and (window.latest.pose.track_ids >= 0).any(), timeout=20000)
    pose = window.latest.pose
    assert pose.image_size == (576, 576) and pose.world is not None
    label = window.model_panel.model_label.text()  # in words, not class names (issue #50 item 5)
    assert "pose network, live" in label and "Session" not in label, label
    window.close()
    assert not window.controller.running_threads()
