"""Feet on the floor in the BVH of real clips (slow, needs ../shared): the targets of studies/floor-and-feet.md.

Each clip is tracked offline by the shipped model and finished as ``posetracker process`` finishes it (the session
fits the floor to everyone's stance feet and holds the standing feet on it: motion.feet), and every person exported
as BVH on that floor, over the stance phases the session decided (``metadata["feet"]``, which every export reads):
during stance the ankles stand within 3 cm of standing on the floor, no stance phase slides 2 cm, no whole-body
hold, rigid bones, no pop; the old export (level camera, percentile floor) of the motion as tracked, before the feet
were held, misses the same targets.
"""

from __future__ import annotations

import pytest

from conftest import shared_path
from posetracker.analysis.held_ground import has_held_ground, held_ground
from posetracker.evaluation.feet_on_floor import feet_on_floor
from posetracker.export.bvh import BvhOptions, solve_person
from posetracker.tracks import person_tracks

CLIPS = ("more/sports2d_demos/demo4_older_woman_walking.mp4", "sleap_dance_human/dance.mp4",
         "more/pose2sim_demo/multi_cam02.mp4")


def _track(clip: str):
    from posetracker.capture import open_source
    from posetracker.session import DepthSettings, SessionConfig, TrackingSession

    path = shared_path("data", "video", *clip.split("/"))
    from posetracker.motion.finish import camera_before, finish_sequence, fov_to_track

    camera = camera_before(path, "auto")
    session = TrackingSession.open(config=SessionConfig(mode="offline",
                                                        depth=DepthSettings(fov_deg=fov_to_track(camera))))
    with open_source(str(path)) as src:
        seq = session.run(src, fps=src.fps)
    return seq, finish_sequence(seq, camera, rigid_bones=True)[0]


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.parametrize("clip", CLIPS)
def test_feet_stand_on_the_fitted_floor(clip):
    tracked, seq = _track(clip)
    assert has_held_ground(seq)
    ground = held_ground(seq)  # the floor and stance phases the session decided, as every export reads them
    floor = ground.frame.report
    assert floor["fitted"], floor["reason"]
    assert floor["inlier_fraction"] >= 0.9 and floor["scale_cm"] < 5.0
    if clip.startswith("more/sports2d"):  # the wall's vertical mortar joints stay vertical: a nearly level camera
        assert abs(floor["pitch_deg"]) < 6.0 and abs(floor["roll_deg"]) < 3.0
    was = person_tracks(tracked)
    checked = 0
    for tid, track in person_tracks(seq).items():
        phases = ground.phases.get(tid, [])
        try:
            motion = solve_person(track, seq.skeleton, seq.fps, BvhOptions(), ground)
        except ValueError:
            continue  # a person the rig cannot drive is reported by the exporter, not animated
        if len(phases) < 2 or tid not in was:
            continue
        old = solve_person(was[tid], seq.skeleton, seq.fps, BvhOptions(floor="percentile"), ground)
        ankle = ground.frame.ankle_height[tid]
        after = feet_on_floor(motion, track, phases, ankle)
        before = feet_on_floor(old, was[tid], phases, 0.0)  # that floor is at the ankles
        assert after.within >= 0.95 and after.clearance_p95 <= 0.03, (tid, after)
        assert after.slide_under >= 0.95, (tid, after)
        assert after.held_frames == 0 and after.bone_cv <= 0.01, (tid, after)
        assert after.step_max <= 1.6 * before.step_max and after.accel_p99 <= 0.1, (tid, after, before)  # no pop
        assert before.slide_under < 0.5, (tid, before)  # the old export slid
        checked += 1
    assert checked >= 1
