"""A first start (issue #50 item 4): the model line says the fast model is being prepared while its one-off
export runs, and the quantiser's log lines stay off the console."""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest

from gui_helpers import FakeSession, isolated_settings, make_video, no_modal_dialogs  # noqa: F401

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_ignore("propagateSizeHints")]


def test_preparing_model_sees_an_export_being_written(tmp_path):
    from ui.first_start import RECENT_S, preparing_model

    assert not preparing_model(tmp_path / "absent") and not preparing_model(tmp_path)
    (tmp_path / "live-int8-0123.onnx").write_bytes(b"x")  # a finished graph: nothing in progress
    assert not preparing_model(tmp_path)
    raw = tmp_path / "live-int8-4567.float.onnx"
    raw.write_bytes(b"x")
    assert preparing_model(tmp_path)
    assert not preparing_model(tmp_path, now=time.time() + RECENT_S + 1)  # a crashed run's leftover
    raw.unlink()
    (tmp_path / f"backbone-89ab.{os.getpid()}.tmp").write_bytes(b"x")
    assert preparing_model(tmp_path)


def test_the_model_line_says_the_fast_model_is_being_prepared(qtbot, tmp_path, monkeypatch):
    """The session factory writes an export into the (empty) cache, as the first live session does, and waits:
    meanwhile the window says what is happening; once the model is ready, the usual line."""
    from posetracker.model.runtime import cache_dir
    from ui.first_start import PREPARING_TEXT
    from ui.main_window import MainWindow
    from ui.services import Services

    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    go_on = threading.Event()

    def first_session(choice):
        raw = cache_dir() / "live-int8-0123456789abcdef.float.onnx"
        raw.parent.mkdir(parents=True, exist_ok=True)
        raw.write_bytes(b"being written")
        try:
            go_on.wait(10.0)
        finally:
            raw.unlink()
        return FakeSession()

    window = MainWindow(Services(make_session=first_session, list_cameras=lambda: []))
    qtbot.addWidget(window)
    window.show()
    label = window.model_panel.model_label
    try:
        window.open_source(str(make_video(tmp_path / "clip.mp4", frames=10)))
        qtbot.waitUntil(lambda: label.text() == PREPARING_TEXT, timeout=5000)
        assert "once" in label.text() and "15 s" in label.text()
    finally:
        go_on.set()
    qtbot.waitUntil(lambda: window.model_ok, timeout=5000)
    assert label.text().startswith("Model: pose session") and "ready in" in label.text()
    window.close()


def test_the_first_preparation_prints_no_quantiser_lines(tmp_path, monkeypatch, capfd, caplog):
    """The real first live session with an empty cache (export and 8-bit quantisation, ~10 s): with the app's
    logging (INFO to stderr), nothing from ONNX Runtime's quantiser reaches stderr or the log (the library
    quietens it: posetracker.model.int8.quiet_quantiser, tests/model/test_int8_quiet.py)."""
    import sys

    from posetracker.model.runtime import cache_dir
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession

    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))
    root = logging.getLogger()
    console = logging.StreamHandler(sys.stderr)  # what ui.app's logging.basicConfig(level=INFO) installs
    console.setLevel(logging.INFO)
    level = root.level
    root.addHandler(console)
    root.setLevel(logging.INFO)
    try:
        capfd.readouterr()
        with caplog.at_level(logging.DEBUG):
            session = TrackingSession.open(config=SessionConfig(mode="live", network=NetworkSettings(threads=1)))
    finally:
        root.removeHandler(console)
        root.setLevel(level)
    assert getattr(session.stream, "int8", False)
    assert list(cache_dir().glob("live-int8-*.onnx")), "the 8-bit graph was prepared (and cached)"
    err = capfd.readouterr().err
    assert "WARNING" not in err and "INFO" not in err and "quantiz" not in err.lower(), err
    assert not [r for r in caplog.records if "onnxruntime" in r.pathname or r.name.startswith("onnxruntime")]


def test_the_app_s_console_leaves_out_pyopengl_s_library_search(capfd):
    """On a system without libopengl0 PyOpenGL logs 'Failed to load library' at INFO before it uses libGL: the
    app's console logging (ui.app.console_logging) keeps it out, and its own INFO lines in."""
    from ui.app import console_logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    for h in handlers:
        root.removeHandler(h)
    try:
        console_logging()
        capfd.readouterr()
        logging.getLogger("OpenGL.platform.ctypesloader").info("Failed to load library ( 'libOpenGL.so.0' )")
        logging.getLogger("ui.worker").info("model ready")
        err = capfd.readouterr().err
        assert "libOpenGL" not in err and "model ready" in err
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in handlers:
            root.addHandler(h)
        root.setLevel(level)
        logging.getLogger("OpenGL").setLevel(logging.NOTSET)
