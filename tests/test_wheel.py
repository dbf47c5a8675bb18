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
SOURCES = ("pyproject.toml", "README.md", "posetracker", "ui", "models", "assets")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the checkout (the build leaves build/ and *.egg-info beside its source)."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out)], check=True, capture_output=True)
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
