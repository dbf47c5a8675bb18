"""Feet on the floor in the BVH of real clips (slow, needs ../shared): the targets of docs/experiments/floor-and-feet.md.

Each clip is tracked offline by the shipped model, the floor fitted to everyone's stance feet, and every person
exported as BVH with the feet locked: during stance the ankles stand within 3 cm of standing on the floor, no
stance phase slides 2 cm, no whole-body hold, rigid bones, no pop; the old export (level camera, percentile
floor) misses the same targets.
"""

from __future__ import annotations

import pytest

from conftest import shared_path
from posetracker.analysis.ground import ground_from_sequence
from posetracker.evaluation.feet_on_floor import feet_on_floor
from posetracker.export.bvh import BvhOptions, solve_person
from posetracker.tracks import person_tracks

CLIPS = ("more/sports2d_demos/demo4_older_woman_walking.mp4", "sleap_dance_human/dance.mp4",
         "more/pose2sim_demo/multi_cam02.mp4")


def _track(clip: str):
    from posetracker.capture import open_source
    from posetracker.session import SessionConfig, TrackingSession

    path = shared_path("data", "video", *clip.split("/"))
    session = TrackingSession.open(config=SessionConfig(mode="offline"))
    with open_source(str(path)) as src:
        return session.run(src, fps=src.fps)


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.parametrize("clip", CLIPS)
def test_feet_stand_on_the_fitted_floor(clip):
    seq = _track(clip)
    ground = ground_from_sequence(seq)
    floor = ground.frame.report
    assert floor["fitted"], floor["reason"]
    assert floor["inlier_fraction"] >= 0.9 and floor["scale_cm"] < 5.0
    if clip.startswith("more/sports2d"):  # the wall's vertical mortar joints stay vertical: a nearly level camera
        assert abs(floor["pitch_deg"]) < 6.0 and abs(floor["roll_deg"]) < 3.0
    checked = 0
    for tid, track in person_tracks(seq).items():
        phases = ground.phases.get(tid, [])
        try:
            locked = solve_person(track, seq.skeleton, seq.fps, BvhOptions(), ground)
        except ValueError:
            continue  # a person the rig cannot drive is reported by the exporter, not animated
        if len(phases) < 2:
            continue
        free = solve_person(track, seq.skeleton, seq.fps, BvhOptions(foot_lock=False), ground)
        old = solve_person(track, seq.skeleton, seq.fps, BvhOptions(floor="percentile"), ground)
        ankle = ground.frame.ankle_height[tid]
        after = feet_on_floor(locked, track, phases, ankle)
        unlocked = feet_on_floor(free, track, phases, ankle)
        before = feet_on_floor(old, track, phases, 0.0)  # that floor is at the ankles
        assert after.within >= 0.95 and after.clearance_p95 <= 0.03, (tid, after)
        assert after.slide_under >= 0.95 and after.locked_phases >= 0.9 * after.phases, (tid, after)
        assert after.held_frames == 0 and after.bone_cv <= 0.01, (tid, after)
        # the lock adds no pop: a standing foot stands, then swings, so its acceleration rises above the unlocked
        # foot's (which slides smoothly: solved motion), to what walking feet show, never to a jump
        assert after.step_max <= 1.6 * unlocked.step_max and after.accel_p99 <= 0.1, (tid, after, unlocked)
        assert before.slide_under < 0.5, (tid, before)  # the old export slid
        checked += 1
    assert checked >= 1
