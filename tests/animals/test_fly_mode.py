"""The shipped fly13 animal mode (top-down: a centre model and an upright crop model): it still reads
held-out flies of SLEAP's two-fly clip within the model card's error, head and abdomen the right way round."""

from __future__ import annotations

import pytest

from conftest import shared_path


def test_fly_held_out_scores():
    """The shipped pair on frames 800-999 read as stills (each frame alone, offline: 4 turns, then 2 upright rounds,
    the last also at +-20 degrees and mirrored, the search): 0.93 px mean, 400 of 400 flies found, none reversed
    (studies/fly13.md, "The crop model's body trained"); here every 10th of those frames (40 flies) with two
    flies known to be there: 0.86 px, PCK@0.1 0.980 (the crop model with the human body frozen: 1.04 px)."""
    from posetracker.evaluation.held_out import evaluate_items
    from posetracker.model.weights import load_posenet
    from posetracker.session import PeopleSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton
    from posetracker.train.detector_samples import load_split

    data = shared_path("data", "animal", "sleap_flies_clip_train", "normalized.json")
    fly = load_skeleton("fly13")
    _, held_out, cols = load_split(str(data), fly, 0.2)
    session = TrackingSession(load_posenet(None, fly), SessionConfig(mode="offline",
                                                                     people=PeopleSettings(known_count=2),
                                                                     refine=RefineSettings(refiners=())))
    assert session.crop_reading.turns == 4
    s = evaluate_items(session.process_image, held_out[::10], cols, fly)
    assert len(held_out) == 200 and s["found"] == 40
    assert s["mean_px"] == pytest.approx(0.86, abs=0.12) and s["reversed"] == 0 and s["oriented"] == s["found"]
    assert s["pck@0.1"] == pytest.approx(0.980, abs=0.02)


def test_the_shipped_fly_mode_finds_a_new_fly_s_heading_at_four_turns_offline_and_live():
    from posetracker.model.weights import load_posenet
    from posetracker.session import LIVE_CROP_TURNS, NetworkSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("fly13")
    net = load_posenet(None, spec)  # the shipped centre model; its crop model beside it
    turns = {m: TrackingSession(net, SessionConfig(mode=m, network=NetworkSettings(runtime="torch"),
                                                   refine=RefineSettings(refiners=()))).crop_reading
             for m in ("offline", "live")}
    assert spec.top_down["turns"] == 4 and spec.crop_align == spec.orientation
    assert turns["offline"].turns == turns["live"].turns == 4
    # offline the last round also reads each fly turned 20 degrees either way and mirrored; live one crop a fly
    assert (turns["offline"].spread, turns["offline"].mirror) == (20.0, spec.mirror_index)
    assert (turns["live"].spread, turns["live"].mirror) == (0.0, None)
    assert LIVE_CROP_TURNS == 2  # an unaligned crop model's live turns
    chosen = TrackingSession(net, SessionConfig(mode="live", network=NetworkSettings(runtime="torch"),
                                                refine=RefineSettings(refiners=(), crop_turns=8)))
    assert chosen.crop_reading.turns == 8 and chosen.crop_model is not None
    with pytest.raises(ValueError, match="crop_turns"):
        SessionConfig(refine=RefineSettings(crop_turns=3))
