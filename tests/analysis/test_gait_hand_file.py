"""The hand-event file (tests/data/gait_hand_events.json) and its reader; fast, no ../shared needed."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from posetracker.evaluation.gait_events import load_hand_events

HAND = REPO / "tests" / "data" / "gait_hand_events.json"


def test_the_tuned_and_the_held_out_clips_are_told_apart():
    clips = load_hand_events(HAND)
    tuned = [c.path.rsplit("/", 1)[-1] for c in clips if not c.held_out]
    held_out = [c for c in clips if c.held_out]
    assert tuned == ["demo4_older_woman_walking.mp4", "27_Tennage_Hooligan.mp4", "32_SCUBA_Diver.mp4"]
    assert len(held_out) >= 3 and sum(len(c.heel_strikes) for c in held_out) >= 15
    for c in held_out:
        assert list(c.heel_strikes) == sorted(set(c.heel_strikes)), c.path


def test_held_out_must_be_a_boolean(tmp_path):
    clip = {"path": "a.mp4", "fps": 30, "evaluate": [0, 10], "heel_strikes": [3]}
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({"clips": [clip]}))
    assert load_hand_events(path)[0].held_out is False
    path.write_text(json.dumps({"clips": [dict(clip, held_out=True)]}))
    assert load_hand_events(path)[0].held_out is True
    path.write_text(json.dumps({"clips": [dict(clip, held_out="yes")]}))
    with pytest.raises(ValueError, match="held_out must be true or false"):
        load_hand_events(path)
