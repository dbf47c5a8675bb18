"""What an export holds, in words (posetracker.tracks.describe_contents): the Export dialog shows it."""

from __future__ import annotations

import dataclasses

import numpy as np

from posetracker.tracks import describe_contents
from test_bvh_synthetic import make_sequence


def test_people_and_frames_are_named():
    seq = make_sequence(30, people=2, seed=1)
    assert describe_contents(seq) == "2 people (ids 0, 1), frames 0-29 (30 frames, 1.0 s)"
    many = dataclasses.replace(seq, frames=[dataclasses.replace(f, track_ids=f.track_ids + 20) for f in seq.frames])
    assert describe_contents(many).startswith("2 people (ids 20, 21), frames 0-29")
    untracked = dataclasses.replace(seq, frames=[dataclasses.replace(f, track_ids=-np.ones_like(f.track_ids))
                                                 for f in seq.frames])
    assert describe_contents(untracked) == "no tracked person, frames 0-29 (30 frames, 1.0 s)"
    crowd = make_sequence(5, people=10, seed=2)
    assert describe_contents(crowd).startswith("10 people (ids 0, 1, 2, 3, 4, 5, 6, 7, ... 9), frames 0-4")
