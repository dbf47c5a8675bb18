"""Before Qt starts: name the system libraries a bare Linux desktop lacks, instead of a Qt abort.

Qt aborts the whole process (exit 134) when its X11 platform plugin cannot load, and
importing PySide6 without libglib or libEGL ends in a traceback. :func:`missing_libraries`
finds what is missing first (``ldd`` of PySide6's QtWidgets binding and of the xcb plugin, plus
``libxcb-cursor`` and ``libGL``, which Qt and PyOpenGL load at run time), so the app can print the
``apt-get install`` line of exactly the missing packages, all at once, and exit cleanly. Checked on a
minimal Debian 12 by studies/tools/debian12_check.sh (studies/debian12-setup.md).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# shared object -> Debian / Ubuntu package that ships it: every library ``ldd`` of the QtWidgets binding and the
# xcb plugin reports missing on a minimal Debian 12 (``dpkg -S`` there), and those Qt or PyOpenGL load at run time
PACKAGES = {
    "libxcb.so.1": "libxcb1",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libX11.so.6": "libx11-6",
    "libfreetype.so.6": "libfreetype6",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
}
#: Debian / Ubuntu packages of README's set-up line: the libraries Qt's X11 plugin and pyqtgraph's 3-D view
#: (PyOpenGL: libGL) need on a minimal Debian 12
APT_PACKAGES = ("libegl1", "libgl1", "libglib2.0-0", "libfontconfig1", "libdbus-1-3", "libxkbcommon-x11-0",
                "libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libxcb-shape0")
APT_INSTALL = "sudo apt-get install -y --no-install-recommends"
#: loaded at run time, not linked by the xcb plugin: Qt >= 6.5 dlopens libxcb-cursor; PyOpenGL dlopens libGL
RUNTIME_LOADED = ("libxcb-cursor.so.0", "libGL.so.1")

_NOT_FOUND = re.compile(r"^\s*(\S+)\s*=>\s*not found", re.MULTILINE)
_CANNOT_OPEN = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")


def uses_xcb(env: dict[str, str] | None = None) -> bool:
    """Whether Qt will pick its X11 (xcb) platform plugin on this machine."""
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux"):
        return False
    platform = env.get("QT_QPA_PLATFORM", "")
    if platform:
        return platform.split(":")[0] == "xcb"
    return bool(env.get("DISPLAY")) and not env.get("WAYLAND_DISPLAY")


def _ldd_missing(plugin: Path) -> list[str]:
    ldd = shutil.which("ldd")
    if ldd is None or not plugin.is_file():
        return []
    try:
        out = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return _NOT_FOUND.findall(out)


def _loads(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_libraries(pyside_dir: Path | None = None, xcb: bool = True) -> list[str]:
    """Shared objects PySide6's widgets (and with ``xcb`` the X11 plugin) need and this machine lacks (sorted,
    unique). ``pyside_dir``: PySide6's package folder (the one holding ``QtWidgets.abi3.so`` and ``Qt/``);
    importing PySide6 itself loads no Qt library, so this works where ``PySide6.QtWidgets`` cannot import."""
    if pyside_dir is None:
        import PySide6

        pyside_dir = Path(PySide6.__file__).parent
    found = set(_ldd_missing(pyside_dir / "QtWidgets.abi3.so"))
    if xcb:
        found.update(_ldd_missing(pyside_dir / "Qt" / "plugins" / "platforms" / "libqxcb.so"))
        found.update(_ldd_missing(pyside_dir / "Qt" / "lib" / "libQt6XcbQpa.so.6"))
        found.update(soname for soname in RUNTIME_LOADED if not _loads(soname))
    return sorted(found)


def advice(libraries: list[str]) -> str:
    """The message for missing ``libraries``: what is missing, which packages, the set-up line.

    A library outside :data:`PACKAGES` is named as such, never passed to ``apt-get`` as a package name."""
    packages = sorted({PACKAGES[lib] for lib in libraries if lib in PACKAGES})
    unknown = [lib for lib in libraries if lib not in PACKAGES]
    lines = [f"PoseTracker cannot open its window: this system lacks {', '.join(libraries)}."]
    if packages:
        lines += ["Install what is missing (Debian / Ubuntu):", f"  {APT_INSTALL} {' '.join(packages)}"]
    if unknown:
        lines.append(f"{'and the' if packages else 'Install the'} packages that ship {', '.join(unknown)} "
                     "(apt-file search finds them)")
    lines.append("or run without a window: posetracker process VIDEO")
    return "\n".join(lines)


def import_error_advice(exc: ImportError) -> str | None:
    """The message for an ImportError of PySide6 caused by a missing system library, else None.

    The loader stops at the first library it cannot open; ``ldd`` then names all the others too, so one
    ``apt-get`` line installs everything at once."""
    match = _CANNOT_OPEN.search(str(exc))
    if match is None:
        return None
    found = set(missing_libraries(xcb=uses_xcb()))
    found.add(match.group(1))
    return advice(sorted(found))


def check_platform() -> str | None:
    """None when Qt can start its window here, else the message to print."""
    try:
        import PySide6.QtWidgets  # noqa: F401 - links QtCore / QtGui (libglib, libEGL, fontconfig)
    except ImportError as exc:
        return import_error_advice(exc) or f"PoseTracker cannot start its window: {exc}"
    env = os.environ
    if sys.platform.startswith("linux") and not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")
                                                 or env.get("QT_QPA_PLATFORM")):
        return ("PoseTracker cannot open its window: there is no display (DISPLAY is not set).\n"
                "On a machine without a screen, run it under a virtual one: xvfb-run -a python main.py\n"
                "or without a window: posetracker process VIDEO")
    if not uses_xcb():
        return None
    missing = missing_libraries()
    return advice(missing) if missing else None
