"""The measuring tools of the animal modes (``studies/tools/two_animal_clip.py``, ``studies/tools/found_sheet.py``) on
synthetic frames."""

import importlib.util
from pathlib import Path

import numpy as np

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
TOOLS = REPO / "studies" / "tools"


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _frame(bg: np.ndarray, x: int, y: int) -> np.ndarray:
    """The background with a dark 12 x 8 'animal' whose top left corner is (x, y)."""
    f = bg.copy()
    f[y:y + 8, x:x + 12] = 20
    return f


def test_two_animal_clip_pastes_both_animals_at_their_own_places():
    clip = _tool("two_animal_clip")
    bg = np.full((60, 80, 3), 200, np.uint8)
    frames = [_frame(bg, 5 + 2 * t, 10) for t in range(10)] + [_frame(bg, 50, 40 - t) for t in range(10)]
    est = clip.background(frames, samples=20)
    assert np.array_equal(est, bg)  # each pixel is background in most frames
    out = clip.compose(frames[0], frames[10], est, threshold=40, grow=0)
    dark = out[..., 0] < 100
    assert dark[10:18, 5:17].all() and dark[40:48, 50:62].all()  # both animals
    assert dark.sum() == 2 * 12 * 8  # and nothing else


def test_found_sheet_runs_of_missing_frames():
    runs = _tool("found_sheet").frame_runs  # the tracker's own (tracking.encounters), which the sheet lists
    assert runs([3, 4, 5, 9, 11, 12]) == [(3, 5), (9, 9), (11, 12)]
    assert runs([]) == []
