"""A bare Linux desktop gets a message naming the missing system library, not a Qt abort."""

from __future__ import annotations

from ui import platform_check
from ui.platform_check import advice, check_platform, import_error_advice, missing_libraries, uses_xcb


def test_which_platform_qt_will_use(monkeypatch):
    monkeypatch.setattr(platform_check.sys, "platform", "linux")
    assert uses_xcb({"DISPLAY": ":0"})
    assert not uses_xcb({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"})
    assert not uses_xcb({"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"})
    assert uses_xcb({"QT_QPA_PLATFORM": "xcb"})
    assert not uses_xcb({})


def test_a_missing_xcb_cursor_is_named_with_its_package(monkeypatch):
    monkeypatch.setattr(platform_check, "_loads", lambda soname: soname != "libxcb-cursor.so.0")
    missing = missing_libraries()
    assert "libxcb-cursor.so.0" in missing
    text = advice(missing)
    assert "libxcb-cursor0" in text and "apt-get install" in text


def test_ldd_reports_what_the_plugin_lacks(monkeypatch, tmp_path):
    plugin = tmp_path / "plugins" / "platforms" / "libqxcb.so"
    plugin.parent.mkdir(parents=True)
    plugin.write_bytes(b"\x7fELF")

    class Done:
        stdout = "\tlibxcb-icccm.so.4 => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x1)\n"

    monkeypatch.setattr(platform_check.shutil, "which", lambda name: "/usr/bin/ldd")
    monkeypatch.setattr(platform_check.subprocess, "run", lambda *a, **k: Done())
    monkeypatch.setattr(platform_check, "_loads", lambda soname: True)
    assert missing_libraries(tmp_path) == ["libxcb-icccm.so.4"]


def test_an_import_error_for_a_system_library_is_explained():
    exc = ImportError("libglib-2.0.so.0: cannot open shared object file: No such file or directory")
    assert "libglib2.0-0" in import_error_advice(exc)
    assert import_error_advice(ImportError("No module named 'PySide6'")) is None


def test_no_display_is_explained(monkeypatch):
    monkeypatch.setattr(platform_check.sys, "platform", "linux")
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    assert "no display" in check_platform()
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert check_platform() is None


def test_the_app_exits_with_the_message_before_qt(monkeypatch, capsys):
    from ui import app

    monkeypatch.setattr(platform_check, "check_platform", lambda: "PoseTracker cannot open its window: libx")
    assert app.main(["--quit-after", "0"]) == 2
    assert "libx" in capsys.readouterr().err


def test_the_message_installs_exactly_what_is_missing_and_readme_lists_every_package(monkeypatch):
    """Issue #50 item 2: libGL (PyOpenGL, the 3-D view) counts too; the message's apt line names exactly the
    missing packages; README's set-up line is the whole list."""
    import re

    from conftest import REPO

    monkeypatch.setattr(platform_check, "_loads", lambda soname: soname != "libGL.so.1")
    monkeypatch.setattr(platform_check, "_ldd_missing", lambda plugin: [])
    missing = missing_libraries()
    assert missing == ["libGL.so.1"]
    line = advice(missing).splitlines()[2].strip()
    assert line == "sudo apt-get install -y --no-install-recommends libgl1"
    readme = " ".join((REPO / "README.md").read_text().split())
    listed = re.search(r"--no-install-recommends ((?:lib[\w.+-]+ ?)+)", readme).group(1).split()
    assert tuple(listed) == platform_check.APT_PACKAGES
    assert set(platform_check.APT_PACKAGES) >= {platform_check.PACKAGES[s] for s in platform_check.RUNTIME_LOADED}
