"""configs/heldout/mouse4-sleap-minsession.json: SLEAP's mouse session mapped onto mouse4's joints by
studies/tools/map_labelled_set.py (the set itself: skipped without ../shared)."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from posetracker.evaluation.datasets import item_points, joint_columns, load_labelled_set
from posetracker.skeletons import load_skeleton

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
HELD_OUT = REPO / "configs" / "heldout" / "mouse4-sleap-minsession.json"
SOURCE = REPO.parent / "shared" / "data" / "animal" / "sleap_mouse_multiview_minsession" / "normalized.json"
NAMES = [("snout", "Nose"), ("leftear", "Ear_L"), ("rightear", "Ear_R"), ("tailbase", "TTI")]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "studies" / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_map_set_takes_the_named_keypoints_in_the_skeletons_order(tmp_path):
    src = {"keypoint_names": ["Ear_R", "Nose", "TTI", "Tail", "Ear_L"],
           "images": [{"file": "videos/a.mp4", "video": "videos/a.mp4", "frame_idx": 3, "width": 8, "height": 8,
                       "instances": [{"keypoints": [[1, 1, 2], [2, 2, 2], [3, 3, 2], [4, 4, 2], [5, 5, 0]],
                                      "track": "t0"}]}]}
    out = _tool("map_labelled_set").map_set(src, NAMES, tmp_path / "src", tmp_path / "configs")
    assert out["keypoint_names"] == ["snout", "leftear", "rightear", "tailbase"]
    assert out["images"][0]["instances"][0]["keypoints"] == [[2, 2, 2], [5, 5, 0], [1, 1, 2], [3, 3, 2]]
    assert out["images"][0]["video"] == "../src/videos/a.mp4" and out["images"][0]["file"] == "videos/a.mp4"
    assert out["images"][0]["instances"][0]["track"] == "t0"


@pytest.mark.skipif(not SOURCE.is_file(), reason="../shared/data (the SLEAP mouse session) is not here")
def test_the_held_out_set_is_the_sleap_session_with_its_joints_mapped_by_name():
    mouse = load_skeleton("mouse4")
    held = load_labelled_set(HELD_OUT)
    src = load_labelled_set(SOURCE)
    assert len(held.items) == len(src.items) == 16
    cols = joint_columns(held.keypoint_names, mouse)  # every mouse4 joint is there
    src_cols = np.array([list(src.keypoint_names).index(s) for _, s in NAMES])
    assert [mouse.joint_names[k] for k in range(4)] == [j for j, _ in NAMES]
    mice = 0
    for h, s in zip(held.items, src.items):
        assert h.video == s.video and h.frame_idx == s.frame_idx  # the source's own video frames
        got = item_points(h, cols)[:, :4]
        want = item_points(s, src_cols)
        assert np.array_equal(got, want, equal_nan=True)
        mice += len(h.instances)
    assert mice == 28
    assert json.loads(HELD_OUT.read_text())["images"] == _tool("map_labelled_set").map_set(
        json.loads(SOURCE.read_text()), NAMES, SOURCE.parent, HELD_OUT.parent)["images"]  # the tool made it
    rows = _tool("mouse_arena_score").labelled_mice(str(HELD_OUT))
    assert len(rows) == 28 and all(60 < r[3] < 260 for r in rows)  # snout-to-tail-base lengths, px
