"""Small people: the frame also read as overlapping tiles (posetracker.decoding.tiles, the session's tile pass)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posetracker.decoding import DecodedPeople
from posetracker.decoding.tiles import add_new_people, shift_people, tile_windows
from posetracker.skeletons import load_skeleton
from posetracker.tracking import joint_sigmas

SIGMAS = joint_sigmas(load_skeleton("human18"))
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "human" / "mmpose_posetrack18" / "normalized.json"


def people(centres, scores, k=18, size=40.0) -> DecodedPeople:
    """Stick people: K joints spread on a size x size square around each (x, y) centre."""
    rng = np.random.default_rng(0)
    offs = rng.uniform(-size / 2, size / 2, (k, 2)).astype(np.float32)
    kp = np.stack([np.asarray(c, np.float32) + offs for c in centres]).astype(np.float32)
    p = len(centres)
    return DecodedPeople(kp, np.full((p, k), 0.9, np.float32), np.asarray(scores, np.float32),
                         np.ones((p, k)), kp.copy())


def test_tiles_cover_the_frame_edge_to_edge_and_overlap():
    wins = tile_windows(1920, 1080, 2)
    assert wins == [(0, 0, 1152, 648), (768, 0, 1152, 648), (0, 432, 1152, 648), (768, 432, 1152, 648)]
    assert tile_windows(1920, 1080, 1) == []
    three = tile_windows(100, 50, 3, 0.45)
    assert len(three) == 9 and max(x + w for x, _, w, _ in three) == 100 and max(y + h for _, y, _, h in three) == 50


def test_shift_maps_tile_pixels_to_the_frame_and_scales_the_root_depth_only():
    p = people([(50, 50)], [0.5])
    s = shift_people(p, 0.5, (100, 10), depth_zoom=2.0)
    np.testing.assert_allclose(s.keypoints, p.keypoints / 0.5 + [100, 10], rtol=1e-6)
    assert s.depth_reads[0, 0] == 2.0 and (s.depth_reads[0, 1:] == 1.0).all()


def test_only_new_people_are_added_strongest_first_and_capped():
    kept = people([(100, 100)], [0.3])
    extra = people([(101, 99), (400, 300), (700, 300)], [0.9, 0.6, 0.2])
    both = add_new_people(kept, extra, SIGMAS, max_people=10)
    assert both.num_people == 3  # the copy of the kept person is not added, though it scores higher
    np.testing.assert_allclose(both.scores, [0.6, 0.3, 0.2])
    assert add_new_people(kept, extra, SIGMAS, max_people=2).num_people == 2
    assert add_new_people(kept, extra.take(np.zeros(0, int)), SIGMAS, 10) is kept


def test_the_session_adds_tile_people_once(monkeypatch):
    """On the sample dancer the tiles see her again: she stays one person, and a 2 x 2 grid runs 4 more stills."""
    from posetracker.capture import open_source
    from posetracker.resources import sample_clip
    from posetracker.session import RefineSettings, SessionConfig, TrackingSession

    with open_source(str(sample_clip())) as src:
        rgb = next(iter(src)).image
    session = TrackingSession.open(config=SessionConfig(mode="offline", refine=RefineSettings(refiners=())))
    assert session.image_tile_grid == 2 and session.tile_grid == 1  # stills get tiles, video not
    assert TrackingSession.open(config=SessionConfig(mode="offline",
                                                     refine=RefineSettings(tile_grid=3))).tile_grid == 3
    calls = []
    net_call = type(session.net).__call__
    monkeypatch.setattr(type(session.net), "__call__", lambda self, x: calls.append(x.shape) or net_call(self, x))
    tiled = session.process_image(rgb)
    assert len(calls) == 5 and tiled.num_people == 1
    whole = TrackingSession.open(config=SessionConfig(mode="offline", refine=RefineSettings(refiners=(),
                                                                                            tile_grid=1))).process_image(rgb)
    np.testing.assert_array_equal(tiled.keypoints, whole.keypoints)  # the whole frame's reading is kept


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared")
def test_tiles_find_the_small_dancers_of_a_crowd_frame():
    from posetracker.evaluation import evaluate_set, load_labelled_set
    from posetracker.session import RefineSettings, SessionConfig, TrackingSession

    from dataclasses import replace

    ls = load_labelled_set(SHARED)
    ls = replace(ls, items=ls.items[:1])  # ten wheelchair dancers, ~1/5 of a 1080p frame high, in a crowd
    recall = {}
    for grid in (1, 2):
        s = TrackingSession.open(config=SessionConfig(mode="offline",
                                                      refine=RefineSettings(refiners=(), tile_grid=grid)))
        recall[grid] = evaluate_set(ls, s.process_image, keep_predictions=False)["recall_tall"]
    assert recall[2] >= recall[1] + 0.3, recall  # measured 0.18 -> 0.64 (without the precision stage)
