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
    plugin = tmp_path / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    plugin.parent.mkdir(parents=True)
    plugin.write_bytes(b"\x7fELF")

    class Done:
        stdout = "\tlibxcb-icccm.so.4 => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x1)\n"

    monkeypatch.setattr(platform_check.shutil, "which", lambda name: "/usr/bin/ldd")
    monkeypatch.setattr(platform_check.subprocess, "run", lambda *a, **k: Done())
    monkeypatch.setattr(platform_check, "_loads", lambda soname: True)
    assert missing_libraries(tmp_path) == ["libxcb-icccm.so.4"]


def test_an_import_error_for_a_system_library_is_explained(monkeypatch):
    monkeypatch.setattr(platform_check, "_ldd_missing", lambda path: [])
    exc = ImportError("libglib-2.0.so.0: cannot open shared object file: No such file or directory")
    assert "libglib2.0-0" in import_error_advice(exc)
    assert import_error_advice(ImportError("No module named 'PySide6'")) is None


#: what ``ldd`` of PySide6 6.11.3's QtWidgets binding and xcb plugin reported missing on a minimal Debian 12
#: (debootstrap --variant=minbase bookworm, python3-venv, git; studies/debian12-setup.md)
BARE_DEBIAN12 = {
    "QtWidgets.abi3.so": ["libEGL.so.1", "libGL.so.1", "libX11.so.6", "libdbus-1.so.3", "libfontconfig.so.1",
                          "libfreetype.so.6", "libglib-2.0.so.0", "libgthread-2.0.so.0", "libxkbcommon.so.0"],
    "libqxcb.so": ["libEGL.so.1", "libGL.so.1", "libX11-xcb.so.1", "libX11.so.6", "libdbus-1.so.3",
                   "libfontconfig.so.1", "libfreetype.so.6", "libglib-2.0.so.0", "libgthread-2.0.so.0",
                   "libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-image.so.0", "libxcb-keysyms.so.1",
                   "libxcb-randr.so.0", "libxcb-render-util.so.0", "libxcb-render.so.0", "libxcb-shape.so.0",
                   "libxcb-shm.so.0", "libxcb-sync.so.1", "libxcb-util.so.1", "libxcb-xfixes.so.0",
                   "libxcb-xkb.so.1", "libxcb.so.1", "libxkbcommon-x11.so.0", "libxkbcommon.so.0"],
}


def test_a_bare_system_gets_one_line_that_installs_everything(monkeypatch):
    """On a minimal Debian 12 importing PySide6.QtWidgets fails on libGL.so.1 alone; the message must still name
    every missing library, and its apt line only real package names (no soname passed to apt-get)."""
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.setattr(platform_check.sys, "platform", "linux")
    monkeypatch.setattr(platform_check, "_ldd_missing", lambda path: BARE_DEBIAN12.get(path.name, []))
    monkeypatch.setattr(platform_check, "_loads", lambda soname: False)
    text = import_error_advice(ImportError("libGL.so.1: cannot open shared object file: No such file or directory"))
    every = sorted(set(BARE_DEBIAN12["libqxcb.so"]))
    assert text.splitlines()[0] == f"PoseTracker cannot open its window: this system lacks {', '.join(every)}."
    line = text.splitlines()[2].split()
    assert line[:5] == ["sudo", "apt-get", "install", "-y", "--no-install-recommends"]
    assert ".so" not in " ".join(line[5:])
    assert set(line[5:]) == {platform_check.PACKAGES[lib] for lib in every} >= set(platform_check.APT_PACKAGES)


def test_a_library_without_a_known_package_is_named_not_installed():
    text = advice(["libGL.so.1", "libfoo.so.3"])
    assert text.splitlines()[2].split()[5:] == ["libgl1"]
    assert "libfoo.so.3" in text.splitlines()[3] and "libfoo" not in text.splitlines()[2]


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
