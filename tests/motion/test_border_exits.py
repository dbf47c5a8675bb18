"""A person leaving the image whose id goes on with someone behind: the readings between are no one's, the track
ends where its distance runs away at the border, and the one after is another person (issue #46)."""

from __future__ import annotations

import numpy as np

from posetracker.depth.camera_meta import CameraFov
from posetracker.depth.lift import Camera
from posetracker.motion.border_exits import RUN_MS, run_aways
from posetracker.motion.finish import finish_sequence
from posetracker.skeletons import load_skeleton
from posetracker.types import PoseFrame, PoseSequence
from synthetic_people import STANDING

W, H = 1280, 720
FPS = 50.0
NEAR_M, FAR_M = 5.0, 7.6  # the woman walking out, the man standing behind her at the border


def _handover(frames: int = 80, start: int = 30, ramp: int = 9) -> PoseSequence:
    """One track (id 0) read as the street clip's track 14: a person walks left to the image border at NEAR_M,
    then over ``ramp`` frames from ``start`` the joints slide onto a person standing at the border at FAR_M (the
    distance read ramps smoothly between them, as the motion solve gives it); a second track (id 1) mid-image
    at 9 m whose distance wanders as fast (a far person's depth noise) and stays as read. 50 fps."""
    camera = Camera(W, H, fov_deg=60.0)
    out = []
    for t in range(frames):
        s = np.clip((t - start) / ramp, 0.0, 1.0)
        s = s * s * (3 - 2 * s)
        depth = NEAR_M + (FAR_M - NEAR_M) * s
        scale = NEAR_M / depth
        hip_x = max(5.0 + 50.0 * scale, 300.0 - 8.0 * t)  # at the border (left wrist at x = 5) from frame 30 on
        xy0 = np.array([hip_x, 400.0]) + STANDING * scale
        xy1 = np.array([800.0, 300.0]) + STANDING * 0.5
        z1 = 9.0 + 2.5 * np.sin(t / 3.0)  # up to 42 m/s, mid-image: no border, so no run-away
        kp = np.stack([np.c_[xy0, np.full(18, depth)], np.c_[xy1, np.full(18, z1)]]).astype(np.float32)
        world = np.stack([camera.to_camera(xy0, np.full(18, depth)), camera.to_camera(xy1, np.full(18, z1))])
        out.append(PoseFrame(t, t / FPS, kp, np.full((2, 18), 0.8, np.float32), np.ones(2, np.float32),
                             np.array([0, 1]), (W, H), world=world.astype(np.float32)))
    return PoseSequence(out, FPS, load_skeleton("human18"), {"mode": "offline"})


def _paths(seq: PoseSequence) -> dict[int, list[tuple[float, float]]]:
    """{track id: [(time s, median depth m) per frame it is in]}."""
    paths: dict[int, list[tuple[float, float]]] = {}
    for f in seq.frames:
        for p, tid in enumerate(f.track_ids.tolist()):
            paths.setdefault(tid, []).append((f.timestamp, float(np.median(f.keypoints[p, :, 2]))))
    return paths


def test_a_track_handed_over_at_the_border_ends_there():
    seq = _handover()
    before = np.array(_paths(seq)[0])
    assert (np.abs(np.diff(before[:, 1])) * FPS).max() > 1.5 * RUN_MS  # the reading runs away (~16 m/s)
    finished, _ = finish_sequence(seq, CameraFov(60.0, "user"), rigid_bones=False)
    paths = _paths(finished)
    for tid, path in paths.items():  # old code: track 0 ran away at 21.6 m/s
        if tid == 1:
            continue
        a = np.array(path)
        assert (np.abs(np.diff(a[:, 1])) / np.diff(a[:, 0])).max() < RUN_MS, tid
    near = np.array(paths[0])
    assert np.abs(near[:, 1] - NEAR_M).max() < 0.3  # the woman ends as she leaves
    (new,) = [t for t in paths if t not in (0, 1)]
    far = np.array(paths[new])
    assert np.abs(far[:, 1] - FAR_M).max() < 0.3 and len(far) == 41  # the man behind is someone else
    assert len(paths[1]) == 80  # the far person mid-image keeps every frame and its id
    assert finished.metadata["border_exits"] == {"0": [{"dropped": [31, 38], "new_id": new}]}
    assert round(near[-1, 0] * FPS) == 30 and round(far[0, 0] * FPS) == 39


def test_what_is_left_as_read():
    t = np.arange(40) / FPS
    walk_away = 5.0 + 2.5 * t  # 2.5 m/s at the border: a person, kept
    assert run_aways(t, walk_away, np.ones(40, bool)) == []
    jump = np.where(t < 0.4, 5.0, 7.6)
    assert run_aways(t, jump, np.zeros(40, bool)) == []  # away from the border: not this step's
    assert run_aways(t, jump, np.ones(40, bool)) == [(20, 20)]  # from one frame to the next: split, none dropped
    ends = np.where(t < 0.7, 5.0, 5.0 + 20.0 * (t - 0.7))  # runs away over its last frames at the border
    assert run_aways(t, ends, np.arange(40) >= 30) == [(36, 40)]
    starts = ends[::-1]
    assert run_aways(t, starts, np.arange(40) < 10) == [(0, 4)]
    assert run_aways(t[:2], np.array([5.0, 7.6]), np.ones(2, bool)) == []  # all of it runs away: kept as read
