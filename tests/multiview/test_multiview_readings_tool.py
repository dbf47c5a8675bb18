"""The precision stage's heads read on a mirrored crop, turned back (``studies/tools/multiview_readings.py``, the
"heads-flip" readings of studies/metres.md): decoding them gives the mirrored crop's points mirrored back as the
product maps them (``model.thunder.to_source(..., mirrored=True)``), and a crop whose mirror reads the same body
keeps its own reading when the two are averaged. Synthetic heads; no network."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from posetracker.model.thunder import HEAD_CHANNELS, decode_thunder, to_source

TOOL = Path(__file__).resolve().parents[2] / "studies" / "tools" / "multiview_readings.py"


def _tool():
    spec = importlib.util.spec_from_file_location("multiview_readings", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _heads(seed: int, grid: int = 64) -> dict[str, np.ndarray]:
    """Random raw heads (G, G, C) each, a clear centre and joints away from the crop's edge."""
    rng = np.random.default_rng(seed)
    heads = {k: rng.normal(0, 1, (grid, grid, c)).astype(np.float32) for k, c in HEAD_CHANNELS.items()}
    heads["centre"][:] = -8.0  # one clear person (the graph's centre prior is half a cell off the mirror's)
    heads["centre"][30, 27, 0] = 8.0
    heads["offset"] = rng.uniform(0, 1, heads["offset"].shape).astype(np.float32)
    return heads


def _decode(tool, heads: dict[str, np.ndarray]) -> np.ndarray:
    weight = tool.centre_prior(64)
    return decode_thunder(heads["centre"], heads["heatmap"], heads["regress"], heads["offset"], weight)


def test_unmirrored_heads_decode_to_the_mirrored_reading_mapped_back():
    tool = _tool()
    window = (100, 40, 512)  # x0, y0, side px of the crop in the source
    for seed in range(5):
        mirrored = _heads(seed)
        expected = to_source(_decode(tool, mirrored), window, 256, mirrored=True)
        got = to_source(_decode(tool, tool.unmirror(mirrored)), window, 256)
        np.testing.assert_allclose(got, expected, atol=1e-3)


def test_a_mirror_that_agrees_leaves_the_reading_as_it_is():
    tool = _tool()
    heads = _heads(7)
    agreeing_mirror = tool.unmirror(heads)  # what the mirrored crop reads if it sees the same body
    np.testing.assert_allclose(_decode(tool, tool.averaged_heads(heads, agreeing_mirror)), _decode(tool, heads), atol=1e-4)
    other = tool.averaged_heads(heads, _heads(8))  # a mirror that disagrees moves the reading
    assert np.abs(_decode(tool, other) - _decode(tool, heads)).max() > 1e-3


def test_the_centre_prior_is_the_graphs():
    """The formula the 384 px readings use gives Thunder's shipped prior at its 64 x 64 grid."""
    import torch

    from posetracker.refiners.base import load_refiner, refiner_path
    from posetracker.skeletons import load_skeleton

    torch.set_num_threads(1)
    shipped = load_refiner(refiner_path("crop", "human18"), load_skeleton("human18")).centre_weight.numpy()
    np.testing.assert_allclose(_tool().centre_prior(64), shipped, atol=5e-4)
