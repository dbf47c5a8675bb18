"""Shared fixtures. Tests that need ../shared (real data, pretrained source files) skip when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("POSETRACKER_SHARED", REPO.parent / "shared"))


def shared_path(*parts: str) -> Path:
    """A path under ../shared; skips the test when it is not there."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"needs {p} (../shared is absent)")
    return p


@pytest.fixture(scope="session")
def human18():
    from posetracker.skeletons import load_skeleton

    return load_skeleton("human18")


@pytest.fixture(scope="session")
def shipped_net():
    """The shipped human18 PoseNet (models/posenet-human18.safetensors)."""
    import torch

    from posetracker.model.weights import load_posenet

    torch.set_num_threads(1)
    return load_posenet()
