"""Where the shipped data lives: the weights (``models/``) and the sample clip (``assets/``).

A source checkout (also an editable install) reads both folders in place. A wheel installs them as
data files under ``<prefix>/share/posetracker/`` (pyproject ``[tool.setuptools.data-files]``), and pip's
record of the installed files says where that prefix is (a venv, ``--user``, a system prefix).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
SHARE = "share/posetracker"  # where the wheel puts models/ and assets/, relative to the install prefix


def installed_share(dist: str = "posetracker") -> Path | None:
    """``<prefix>/share/posetracker`` of the installed distribution, from its RECORD; None when not installed
    or installed without data files (an editable install)."""
    try:
        files = metadata.files(dist) or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        head, found, _ = file.as_posix().partition(SHARE + "/")
        if found:
            return Path(file.dist.locate_file(head + SHARE)).resolve()
    return None


def data_dir(name: str, environ: Mapping[str, str] = os.environ, checkout: Path = CHECKOUT,
             installed: Path | None = None) -> Path:
    """The folder of shipped data ``name`` (``"models"`` or ``"assets"``), the first that applies of:

    1. ``$POSETRACKER_<NAME>`` (``POSETRACKER_MODELS``, ``POSETRACKER_ASSETS``), taken as given;
    2. the source checkout: ``<checkout>/<name>`` beside its ``pyproject.toml``;
    3. the installed copy: ``<installed>/<name>`` (``installed`` None: :func:`installed_share`).

    None there: the checkout's path, so that "not found" messages name the usual place.
    """
    override = environ.get(f"POSETRACKER_{name.upper()}")
    if override:
        return Path(override)
    source = checkout / name
    if (checkout / "pyproject.toml").is_file() and source.is_dir():
        return source
    share = installed if installed is not None else installed_share()
    if share and (share / name).is_dir():
        return share / name
    return source


def default_weights_path(skeleton: str = "human18") -> Path:
    """The shipped PoseNet weights of ``skeleton``: ``models/posenet-<skeleton>.safetensors`` (found here, without
    torch, so that a batch's driver can hash them without loading it)."""
    return data_dir("models") / f"posenet-{skeleton}.safetensors"


def sample_clip() -> Path:
    """The bundled sample video the app opens when no source is given."""
    return data_dir("assets") / "sample_dance.mp4"
