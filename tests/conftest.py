"""Shared fixtures. Tests that need ../shared (real data, pretrained source files) skip when it is absent.

The tests live in one folder per package they test (tests/decoding, tests/tracking, ...); shared helpers
live in tests/helpers. Test modules are plain modules (no ``__init__.py``), imported by their basename, so
every basename under tests/ is unique (pytest refuses two of the same name). This file puts tests/helpers
and every test folder on ``sys.path`` once, so ``from sample_clips import short_clip`` and a test's import of
another test's builder (``from test_bvh_synthetic import make_sequence``) work whatever runs first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One thread for torch and BLAS, in this process (set before torch is imported) and the processes the tests start,
# as the app and the batch workers run inference: torch's default, a thread per CPU, spins while it waits, and on
# a busy machine a session's start (the ONNX-against-torch check) took 4.2 CPU s instead of 0.26 (issue #50 item 6).
# Before, the suite ran on one thread only from the first test that used ``shipped_net``.
os.environ.setdefault("OMP_NUM_THREADS", "1")

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
for _folder in sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name not in ("data", "__pycache__")):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))
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
def _shipped_net_once():
    """The shipped human18 PoseNet (models/posenet-human18.safetensors), read from disk once per run; never
    handed to a test itself (a session accelerates its net in place: model.runtime.accelerate)."""
    import torch

    from posetracker.model.weights import load_posenet

    torch.set_num_threads(1)
    return load_posenet()


@pytest.fixture
def shipped_net(_shipped_net_once):
    """The shipped human18 PoseNet in torch, eval mode: each test its own copy of the weights read once, so a
    test may hand it to a session (which swaps in ONNX Runtime parts) without changing what the next test gets."""
    import copy

    return copy.deepcopy(_shipped_net_once)
