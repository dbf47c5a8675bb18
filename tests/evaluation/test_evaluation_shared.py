"""posetracker.evaluation on the labelled human sets in ../shared (skipped when absent).

The ORACLE predictor returns each item's ground truth as a human18 PoseFrame,
so every metric must be exactly 1: this proves loading, mapping, image reading
and scoring fit together on the real files.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_path

from posetracker.evaluation import (
    HUMAN18_JOINTS,
    FrameCache,
    detect_layout,
    evaluate_paths,
    evaluate_set,
    load_labelled_set,
    read_image,
    to_human18,
)
from test_labelled_sets import oracle

pytestmark = pytest.mark.shared

HUMAN_SETS = {  # folder under data/human -> expected layout
    "mmpose_aic": "aic14",
    "mmpose_crowdpose": "crowdpose14",
    "mmpose_exlpose": "exlpose14",
    "mmpose_halpe": "halpe136",
    "mmpose_jhmdb": "jhmdb15",
    "mmpose_mhp": "mpii16",  # MHP uses the MPII layout (same table as mhp16)
    "mmpose_mpii": "mpii16",
    "mmpose_posetrack18": "posetrack18",
}


def _reader_or_blank(item):
    """read_image, or a black image of the json's size when the file is not shipped (Halpe's COCO photos)."""
    if not item.path.is_file():
        return np.zeros((item.height, item.width, 3), np.uint8)
    return read_image(item)


def test_every_human_set_is_known():
    found = {p.parent.name for p in shared_path("data", "human").glob("*/normalized.json")}
    assert found == set(HUMAN_SETS), "a new labelled set needs a layout table in posetracker/evaluation/mapping.py"


@pytest.mark.parametrize("folder", sorted(HUMAN_SETS))
def test_set_loads_maps_and_reads(folder):
    ls = load_labelled_set(shared_path("data", "human", folder, "normalized.json"))
    assert len(ls) > 0 and ls.num_people > 0
    assert detect_layout(ls.keypoint_names).name == HUMAN_SETS[folder]
    h_idx, s_idx = to_human18(ls.keypoint_names)
    assert len(h_idx) >= 6
    assert all(HUMAN18_JOINTS[h] == ls.keypoint_names[s] for h, s in zip(h_idx, s_idx))
    item = ls.items[0]
    if not item.path.is_file():
        with pytest.raises(FileNotFoundError):
            read_image(item)
        pytest.skip(f"{folder}: image {item.path} is not shipped in ../shared")
    rgb = read_image(item)
    assert rgb.dtype == np.uint8 and rgb.shape == (item.height, item.width, 3)


@pytest.mark.parametrize("folder", sorted(HUMAN_SETS))
def test_oracle_scores_one(folder):
    ls = load_labelled_set(shared_path("data", "human", folder, "normalized.json"))
    res = evaluate_set(ls, oracle(ls), reader=_reader_or_blank)
    assert res["pck@0.1"] == 1.0 and res["pck@0.2"] == 1.0, res
    assert res["ap"] == pytest.approx(1.0) and res["ap50"] == pytest.approx(1.0), res
    assert res["recall"] == 1.0, res
    assert res["images"] == len(ls) and res["people"] + res["ignored_people"] == ls.num_people
    assert len(res["mapped_joints"]) >= 6 and len(res["predictions"]) == len(ls)


def test_mpii_trb40_and_paths():
    paths = [shared_path("data", "human", "mmpose_mpii", n) for n in ("normalized.json", "normalized_trb40.json")]
    ls = load_labelled_set(paths[1])
    assert detect_layout(ls.keypoint_names).name == "mpii_trb40"
    out = evaluate_paths(paths, oracle_chain(paths))
    assert list(out) == ["mmpose_mpii", "mmpose_mpii/normalized_trb40"]
    for res in out.values():
        assert res["pck@0.2"] == 1.0 and res["ap"] == pytest.approx(1.0) and res["recall"] == 1.0


def oracle_chain(paths):
    """An oracle over several sets visited one after another."""
    preds = [oracle(load_labelled_set(p)) for p in paths]
    counts = [len(load_labelled_set(p)) for p in paths]
    state = {"set": 0, "n": 0}

    def predict(rgb):
        while state["n"] >= counts[state["set"]]:
            state["set"] += 1
            state["n"] = 0
        state["n"] += 1
        return preds[state["set"]](rgb)

    return predict


def test_video_frame_labels_with_pyav():
    """SLEAP dance clip: labels on video frames 0..2, decoded through PyAV."""
    ls = load_labelled_set(shared_path("data", "video", "sleap_dance_human", "normalized.json"))
    assert all(it.video is not None for it in ls.items)
    res = evaluate_set(ls, oracle(ls))  # default reader: read_image + FrameCache
    assert res["pck@0.1"] == 1.0 and res["ap"] == pytest.approx(1.0) and res["recall"] == 1.0
    assert res["predictions"][0]["frame_idx"] == ls.items[0].frame_idx


def test_video_frame_index_matches_extracted_jpgs():
    """PoseTrack18 ships 5 frames both as jpgs and as an mp4: decoded frame i must look like jpg i."""
    from posetracker.capture.image_folder import load_image_rgb

    folder = shared_path("data", "human", "mmpose_posetrack18", "videos", "000001_mpiinew_test")
    jpgs = [load_image_rgb(folder / f"{i:06d}.jpg").astype(np.int16) for i in range(5)]
    with FrameCache(max_skip=0) as cache:  # max_skip=0: every jump ahead seeks
        for i in (3, 0, 4, 1, 2):
            frame = cache.frame(folder / "000001_mpiinew_test.mp4", i).astype(np.int16)
            diffs = [float(np.abs(frame - j).mean()) for j in jpgs]
            assert int(np.argmin(diffs)) == i and diffs[i] < 5.0, diffs


def test_eval_versus_movenet_prints_the_paired_table(tmp_path, capsys):
    """``posetracker eval --versus movenet`` on two small sets: both tables, the paired means and the joints."""
    import json

    from posetracker.cli import main

    sets = [str(shared_path("data", "human", n, "normalized.json")) for n in ("mmpose_mpii", "mmpose_jhmdb")]
    out = tmp_path / "versus.json"
    movenet = str(shared_path("pretrained", "movenet", "movenet-multipose.json"))
    assert main(["eval", "--data", *sets, "--versus", "movenet", "--movenet", movenet, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "tiles 2x2), refiners: crop" in text and "original MoveNet MultiPose decode" in text
    assert "mean over 2 sets: ours / movenet" in text and "knees" in text and "recall_tall ours:" in text
    doc = json.loads(out.read_text())
    ours, theirs = doc["results"]["mmpose_mpii"], doc["versus"]["results"]["mmpose_mpii"]
    assert ours["pck@0.1"] >= theirs["pck@0.1"]  # measured 1.000 against 0.964


def test_eval_live_mode_scores_the_live_pipeline(tmp_path, capsys):
    """``posetracker eval --mode live``: each photo held as a still clip through the live session (look-ahead,
    tracker, smoothing, the live refiners); the dancer's labelled frames are found as offline."""
    import json

    from posetracker.cli import main

    dance = str(shared_path("data", "video", "sleap_dance_human", "normalized.json"))
    out = tmp_path / "live.json"
    assert main(["eval", "--mode", "live", "--data", dance, "--refiners", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "live (look-ahead 1, each photo held 8 frames)" in text and "tiles 1x1" in text
    result = json.loads(out.read_text())["results"]["sleap_dance_human"]
    assert result["recall"] == 1.0 and result["pck_first@0.1"] >= 0.9 and result["duplicates"] == 0


def test_a_live_still_is_read_after_the_look_ahead_and_the_tracker(shipped_net):
    from posetracker.evaluation.live_stills import live_still_predictor
    from posetracker.capture.image_folder import load_image_rgb
    from posetracker.session import RefineSettings, SessionConfig, TrackingSession

    frame = load_image_rgb(shared_path("data", "human", "mmpose_mpii", "004645041.jpg"))
    live = TrackingSession(shipped_net, SessionConfig(mode="live", refine=RefineSettings(refiners=())))
    pose = live_still_predictor(live, hold=6)(frame)
    assert pose.index == 5 and pose.num_people >= 1 and (pose.track_ids >= 0).all()
    with pytest.raises(ValueError, match="live-mode"):
        live_still_predictor(TrackingSession(shipped_net, SessionConfig(mode="offline",
                                                                        refine=RefineSettings(refiners=()))))


def test_thunder_given_the_true_boxes_is_scored_beside_ours(tmp_path, capsys):
    """``posetracker eval --versus thunder-boxes``: the precision stage's network read from each labelled person's
    box (one skeleton per labelled person), compared set by set with the product (issue #47's teacher row)."""
    import json

    from posetracker.cli import main

    sets = [str(shared_path("data", "human", n, "normalized.json")) for n in ("mmpose_mpii", "mmpose_crowdpose")]
    out = tmp_path / "versus.json"
    assert main(["eval", "--data", *sets, "--versus", "thunder-boxes", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "MoveNet Thunder given the true person boxes" in text and "ours / thunder-boxes" in text
    assert "pck_first@0.1" in text
    theirs = json.loads(out.read_text())["versus"]["results"]
    assert theirs["mmpose_mpii"]["predicted_people"] == 5 and theirs["mmpose_mpii"]["recall"] == 1.0
    assert theirs["mmpose_crowdpose"]["predicted_people"] == theirs["mmpose_crowdpose"]["people"] == 4
