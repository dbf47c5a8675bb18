"""The shipped fly13 animal mode (top-down: a centre model and an upright crop model): it still reads
held-out flies of SLEAP's two-fly clip within the model card's error, head and abdomen the right way round."""

from __future__ import annotations

import pytest

from conftest import shared_path


def test_fly_held_out_scores():
    """The shipped pair on frames 800-999 read as stills (each frame alone, offline: 4 turns, then 2 upright rounds,
    the search): 1.52 px mean, 400 of 400 flies found, none reversed (studies/fly13.md, "Upright crops"); here every
    10th of those frames (40 flies) with two flies known to be there: 1.46 px, PCK@0.1 0.982."""
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
    assert session.crop_turns == 4
    s = evaluate_items(session.process_image, held_out[::10], cols, fly)
    assert len(held_out) == 200 and s["found"] == 40
    assert s["mean_px"] == pytest.approx(1.46, abs=0.3) and s["reversed"] == 0 and s["oriented"] == s["found"]
    assert s["pck@0.1"] == pytest.approx(0.982, abs=0.02)


def test_the_shipped_fly_mode_finds_a_new_fly_s_heading_at_four_turns_offline_and_live():
    from posetracker.model.weights import load_posenet
    from posetracker.session import LIVE_CROP_TURNS, NetworkSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("fly13")
    net = load_posenet(None, spec)  # the shipped centre model; its crop model beside it
    turns = {m: TrackingSession(net, SessionConfig(mode=m, network=NetworkSettings(runtime="torch"),
                                                   refine=RefineSettings(refiners=()))).crop_turns
             for m in ("offline", "live")}
    assert spec.top_down["turns"] == 4 and spec.crop_align == spec.orientation and turns == {"offline": 4, "live": 4}
    assert LIVE_CROP_TURNS == 2  # an unaligned crop model's live turns
    chosen = TrackingSession(net, SessionConfig(mode="live", network=NetworkSettings(runtime="torch"),
                                                refine=RefineSettings(refiners=(), crop_turns=8)))
    assert chosen.crop_turns == 8 and chosen.crop_model is not None
    with pytest.raises(ValueError, match="crop_turns"):
        SessionConfig(refine=RefineSettings(crop_turns=3))
