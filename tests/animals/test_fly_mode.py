"""The shipped fly13 animal mode (top-down: a centre model and a crop model read at eight turns): it still reads
held-out flies of SLEAP's two-fly clip within the model card's error, head and abdomen the right way round."""

from __future__ import annotations

import pytest

from conftest import shared_path


def test_fly_held_out_scores():
    """The shipped pair on frames 800-999 read as stills (each frame alone, offline: 8 turns, 3 rounds, the search):
    2.56 px mean, 399 of 400 flies found (frame 980 misses one), none reversed (studies/fly13.md, 2026-12-07);
    here every 10th of those frames (40 flies, frame 980 among them) with two flies known to be there."""
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
    assert session.crop_turns == 8
    s = evaluate_items(session.process_image, held_out[::10], cols, fly)
    assert len(held_out) == 200 and s["found"] >= 39
    assert s["mean_px"] == pytest.approx(2.27, abs=0.3) and s["reversed"] == 0 and s["oriented"] == s["found"]
    assert s["pck@0.1"] == pytest.approx(0.953, abs=0.02)


def test_the_shipped_fly_mode_reads_eight_turns_offline_and_two_live():
    from posetracker.model.weights import load_posenet
    from posetracker.session import LIVE_CROP_TURNS, NetworkSettings, RefineSettings, SessionConfig, TrackingSession
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("fly13")
    net = load_posenet(None, spec)  # the shipped centre model; its crop model beside it
    turns = {m: TrackingSession(net, SessionConfig(mode=m, network=NetworkSettings(runtime="torch"),
                                                   refine=RefineSettings(refiners=()))).crop_turns
             for m in ("offline", "live")}
    assert spec.top_down["turns"] == 8 and turns == {"offline": 8, "live": LIVE_CROP_TURNS} and LIVE_CROP_TURNS == 2
    chosen = TrackingSession(net, SessionConfig(mode="live", network=NetworkSettings(runtime="torch"),
                                                refine=RefineSettings(refiners=(), crop_turns=8)))
    assert chosen.crop_turns == 8 and chosen.crop_model is not None
    with pytest.raises(ValueError, match="crop_turns"):
        SessionConfig(refine=RefineSettings(crop_turns=3))
