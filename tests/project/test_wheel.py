"""The wheel carries the weights, their NOTICE and the sample clip, and an installed copy runs from any folder."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

SHARE = "posetracker-0.1.0.data/data/share/posetracker"
SOURCES = ("pyproject.toml", "setup.py", "README.md", "posetracker", "ui", "models", "assets")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the checkout (the build leaves build/ and *.egg-info beside its source),
    its files stored uncompressed (bdist_wheel --compression=stored): the same files, without deflating ~100 MB of
    weights, which was most of the build's time (issue #50 item 6 / #51: 239 -> 29 s on two busy cores)."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                    "--config-settings=--build-option=--compression=stored", "-w", str(out)],
                   check=True, capture_output=True)
    (built,) = out.glob("posetracker-*.whl")
    return built


def test_wheel_ships_weights_notice_and_sample_clip(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    weights = sorted(p.name for p in (REPO / "models").glob("*.safetensors"))
    assert "posenet-human18.safetensors" in weights
    for name in [*weights, "NOTICE"]:
        assert f"{SHARE}/models/{name}" in names
    assert f"{SHARE}/assets/sample_dance.mp4" in names
    assert "posetracker/resources.py" in names and "posetracker/skeletons/human18.yaml" in names


def test_wheel_installs_the_gui_under_the_project_name(wheel):
    """The GUI folder ui/ is the package posetracker_ui in an install: no top-level ``ui`` in site-packages,
    and the posetracker-gui entry point names it."""
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    assert "posetracker_ui/app.py" in names and "posetracker_ui/main_window.py" in names
    assert not any(name.startswith("ui/") for name in names)
    tops = {name.split("/")[0] for name in names if not name.startswith("posetracker-0.1.0.")}
    assert tops == {"posetracker", "posetracker_ui"}
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "posetracker-gui = posetracker_ui.app:main" in archive.read(entry_points).decode()


def test_gui_modules_import_each_other_relatively():
    """Every import between GUI modules is relative, so the package works as ``ui`` (checkout) and as
    ``posetracker_ui`` (install)."""
    absolute = [f"{path.name}: {line.strip()}" for path in sorted((REPO / "ui").glob("*.py"))
                for line in path.read_text().splitlines() if line.strip().startswith(("from ui", "import ui"))]
    assert absolute == []


@pytest.mark.slow
def test_installed_wheel_processes_the_sample_from_an_empty_folder(wheel, tmp_path):
    """pip install (not editable) into a venv, then ``posetracker process`` in a folder with nothing in it."""
    venv, work = tmp_path / "venv", tmp_path / "work"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--no-deps", "-q", str(wheel)], check=True)
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "POSETRACKER_MODELS", "POSETRACKER_ASSETS")}
    found = subprocess.run([python, "-c", "from posetracker.resources import sample_clip; print(sample_clip())"],
                           cwd=work, env=env, check=True, capture_output=True, text=True).stdout.strip()
    assert Path(found) == venv / "share" / "posetracker" / "assets" / "sample_dance.mp4"
    run = subprocess.run([venv / "bin" / "posetracker", "process", found, "--out", "x.csv"],
                         cwd=work, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "120 frames" in run.stdout and (work / "x.csv").stat().st_size > 0
    gui = subprocess.run([python, "-c", "import posetracker_ui.app, posetracker_ui.main_window; import ui"],
                         cwd=work, env=env, capture_output=True, text=True)
    assert "No module named 'ui'" in gui.stderr, gui.stderr  # the GUI imports under its own name only
