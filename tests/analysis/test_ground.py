"""The floor fit (analysis.ground): camera pitch, roll and floor height from stance feet, robust to mislabelled
contacts, one floor per person, the level-camera fallback, bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from floor_synthetic import ANKLE, CAMERA_HEIGHT, camera_axes, scene
from posetracker.analysis.floor_plane import (
    LEVEL, GroundError, GroundSettings, camera_angles, fit_floor_plane, floor_rotation,
)
from posetracker.analysis.ground import ground_from_sequence, ground_from_tracks
from posetracker.skeletons import load_skeleton
from posetracker.types import PoseSequence


def _stance_heights(sc, ground, person=0):
    """Floor-frame Y (m) of the truly standing ankles of ``person``, with the library's floor of that person."""
    spec = sc.seq.skeleton
    world = np.stack([f.world[person] for f in sc.seq.frames]).astype(np.float64)
    ankles = world[:, [spec.index("left_ankle"), spec.index("right_ankle")]]
    return ground.frame.to_person_floor(ankles, person)[..., 1][sc.stance[person]]


@pytest.mark.parametrize("pitch, roll", [(12.0, 4.0), (25.0, -3.0), (-4.0, 1.5)])
def test_fit_recovers_pitch_roll_and_floor_height(pitch, roll):
    """A walker on the floor, seen by a pitched and rolled camera, depth noise 1 cm: angles within a degree,
    the standing ankles an ankle height above the fitted floor within a centimetre."""
    sc = scene(pitch_deg=pitch, roll_deg=roll, noise_m=0.01)
    ground = ground_from_sequence(sc.seq)
    r = ground.frame.report
    assert r["fitted"] and r["reason"] == ""
    assert abs(r["pitch_deg"] - pitch) < 1.0 and abs(r["roll_deg"] - roll) < 1.0, (r["pitch_deg"], r["roll_deg"])
    heights = _stance_heights(sc, ground)
    assert abs(np.median(heights) - ANKLE) < 0.01
    assert np.percentile(np.abs(heights - ANKLE), 95) < 0.03  # 1 cm noise per joint
    assert ground.frame.ankle_height[0] == pytest.approx(ANKLE, abs=0.003)  # 0.039 x the measured stature
    # gravity: the floor frame's Y is the true up axis
    up_true = camera_axes(pitch, roll)[:, 1]  # the floor's Y axis in camera coordinates
    assert np.degrees(np.arccos(np.clip(ground.frame.rotation[1] @ up_true, -1, 1))) < 1.0
    assert abs(r["camera_height_m"] - CAMERA_HEIGHT) < 0.05


def test_camera_angle_convention():
    for pitch, roll in [(10.0, 0.0), (0.0, 7.0), (-8.0, -5.0), (30.0, 12.0)]:
        up = camera_axes(pitch, roll)[:, 1]  # the world's up in camera coordinates
        assert camera_angles(up) == pytest.approx((pitch, roll), abs=1e-9)
    np.testing.assert_allclose(floor_rotation([0.0, -1.0, 0.0]), LEVEL)
    rot = floor_rotation(camera_axes(12.0, 4.0)[:, 1])
    np.testing.assert_allclose(rot @ rot.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(rot) == pytest.approx(1.0)
    # X: the camera's x axis projected onto the floor (in the plane of x and the normal, pointing the same way)
    assert np.linalg.det(np.stack([rot[0], [1.0, 0.0, 0.0], rot[1]])) == pytest.approx(0.0, abs=1e-12) and rot[0, 0] > 0


def _plane_points(normal, offset, n, spread, rng, noise=0.0):
    """(n, 3) points on the plane ``normal . p = offset`` spread (sd, m) along its two in-plane axes."""
    normal = normal / np.linalg.norm(normal)
    a = np.cross(normal, [0.0, 0.0, 1.0])
    a /= np.linalg.norm(a)
    b = np.cross(normal, a)
    uv = rng.normal(0.0, 1.0, (n, 2)) * spread
    return offset * normal + uv[:, :1] * a + uv[:, 1:] * b + np.array([0.0, 0.0, 5.0]) + rng.normal(0, noise, (n, 3))


def test_feet_set_the_tilt_where_they_spread_the_prior_elsewhere():
    """The documented weighting: along a direction the stance feet spread over with sd s, their tilt weighs
    s^2 / (s^2 + prior^2); with no prior the points alone."""
    rng = np.random.default_rng(0)
    up = camera_axes(10.0, 5.0)[:, 1]
    pts = _plane_points(up, -1.3, 400, np.array([1.5, 1.5]), rng)
    level = np.array([0.0, -1.0, 0.0])
    free = fit_floor_plane([pts], level, GroundSettings(prior_spread_m=0.0))
    assert np.degrees(np.arccos(np.clip(free.normal @ up, -1, 1))) < 0.01
    fit = fit_floor_plane([pts], level)  # spread 1.5 m each way: the feet weigh 2.25 / (2.25 + 0.09) = 96 %
    tilt = np.degrees(np.arccos(np.clip(fit.normal @ up, -1, 1)))
    assert 0.2 < tilt < 0.8  # 4 % of the 11 degrees between the plane and the level prior
    # along a narrow line (sd 0.1 m across) the prior decides that tilt
    narrow = _plane_points(up, -1.3, 400, np.array([1.5, 0.1]), rng)
    fit = fit_floor_plane([narrow], level)
    assert np.degrees(np.arccos(np.clip(fit.normal @ up, -1, 1))) > 3.0
    assert np.degrees(np.arccos(np.clip(fit.feet_normal @ up, -1, 1))) < 0.01  # the points alone still know it
    assert fit.spread[0] == pytest.approx(1.5, rel=0.15) and fit.spread[1] == pytest.approx(0.1, rel=0.15)


def test_outliers_do_not_move_the_plane():
    """A fifth of the stance ankles 10-40 cm in the air, all at one end of the walk: normal and offset as
    without them, the outliers flagged."""
    rng = np.random.default_rng(1)
    up = camera_axes(15.0, -2.0)[:, 1]
    clean = _plane_points(up, -1.2, 300, np.array([1.0, 0.6]), rng, noise=0.01)
    lifted = clean[np.argsort(clean @ np.cross(up, [0.0, 0.0, 1.0]))[-75:]] + up * rng.uniform(0.1, 0.4, (75, 1))
    base = fit_floor_plane([clean], up)
    fit = fit_floor_plane([np.concatenate([clean, lifted])], up)
    assert np.degrees(np.arccos(np.clip(fit.normal @ base.normal, -1, 1))) < 0.3
    assert abs(fit.offsets[0] - base.offsets[0]) < 0.005
    assert fit.inliers[0][300:].mean() < 0.05 and fit.inliers[0][:300].mean() > 0.97
    naive = np.linalg.svd(np.concatenate([clean, lifted]) - np.concatenate([clean, lifted]).mean(0))[2][-1]
    assert np.degrees(np.arccos(abs(naive @ up))) > 1.0  # a plain least-squares plane does move


def test_a_foot_in_the_air_read_as_standing_does_not_move_the_floor():
    """End to end: during one stance phase the 3-D ankle is 25 cm up (the 2-D still says standing)."""
    sc = scene(noise_m=0.005)
    clean = ground_from_sequence(sc.seq)
    spec = sc.seq.skeleton
    left = sc.stance[0][:, 0]
    first = np.flatnonzero(left & ~np.roll(left, 1))
    a = first[first > 20][0]
    b = a + np.argmin(left[a:])
    frames = []
    for i, f in enumerate(sc.seq.frames):
        if a <= i < b:
            w = f.world.copy()
            w[0, spec.index("left_ankle")] += 0.25 * sc.camera_axes[:, 1]  # the floor's up, in camera coordinates
            f = dataclasses.replace(f, world=w)
        frames.append(f)
    bad = ground_from_sequence(PoseSequence(frames, sc.seq.fps, spec, sc.seq.metadata))
    assert bad.frame.fitted
    assert abs(bad.frame.report["pitch_deg"] - clean.frame.report["pitch_deg"]) < 0.2
    assert abs(bad.frame.report["roll_deg"] - clean.frame.report["roll_deg"]) < 0.2
    assert abs(bad.frame.report["camera_height_m"] - clean.frame.report["camera_height_m"]) < 0.005
    assert bad.frame.report["inliers"] <= clean.frame.report["inliers"] - (b - a) + 3


def test_too_few_stance_frames_fall_back_and_say_so():
    sc = scene(n=20)  # two thirds of a second: under a second of stance ankles
    ground = ground_from_sequence(sc.seq)
    r = ground.frame.report
    assert not ground.frame.fitted and "too few stance ankles" in r["reason"]
    np.testing.assert_array_equal(ground.frame.rotation, LEVEL)
    assert r["pitch_deg"] == 0.0 and r["roll_deg"] == 0.0 and "percentile" in r["method"]
    # the fallback floor: the 2nd percentile of the lowest joint, in the level camera's Y (up = -y)
    world = np.stack([f.world[0] for f in sc.seq.frames]).astype(np.float64)
    lowest = np.min(-world[:, list(sc.seq.skeleton.labelled_joints), 1], axis=1)
    assert ground.frame.translation[1] == pytest.approx(-np.percentile(lowest, 2))


def test_feet_that_lie_on_no_plane_fall_back():
    """Stance feet at heights scattered by 20 cm: no floor."""
    sc = scene(noise_m=0.0)
    spec = sc.seq.skeleton
    rng = np.random.default_rng(3)
    lift = rng.uniform(0.0, 0.4, len(sc.seq.frames))
    frames = []
    for f, h in zip(sc.seq.frames, lift):
        w = f.world.copy()
        w[0, [spec.index("left_ankle"), spec.index("right_ankle")]] += h * sc.camera_axes[:, 1]  # up
        frames.append(dataclasses.replace(f, world=w))
    ground = ground_from_sequence(PoseSequence(frames, sc.seq.fps, spec, sc.seq.metadata))
    assert not ground.frame.fitted and "scatter" in ground.frame.report["reason"]


def test_people_with_wrong_depth_share_gravity_and_keep_their_own_floor():
    """Two walkers, the second placed 25 % too far (a monocular depth error): one normal, two floors, each
    person's standing ankles an ankle height above their own."""
    sc = scene(walkers=((0.0, (-2.0, -5.0), 1.0), (20.0, (-1.0, -3.5), 1.25)), noise_m=0.005)
    ground = ground_from_sequence(sc.seq)
    r = ground.frame.report
    assert r["fitted"] and abs(r["pitch_deg"] - 12.0) < 1.0 and abs(r["roll_deg"] - 4.0) < 1.0
    assert ground.frame.person_floor[0] == 0.0 or ground.frame.person_floor[1] == 0.0
    assert abs(ground.frame.person_floor[0] - ground.frame.person_floor[1]) > 0.2
    for p in (0, 1):
        heights = _stance_heights(sc, ground, p)
        assert abs(np.median(heights) - ground.frame.ankle_height[p]) < 0.01, p
    assert ground.frame.ankle_height[1] == pytest.approx(1.25 * ANKLE, abs=0.004)  # their stature is 25 % too


def test_bad_input_raises_clear_errors():
    rng = np.random.default_rng(0)
    good = _plane_points(np.array([0.0, -1.0, 0.0]), -1.0, 10, np.array([1.0, 1.0]), rng)
    with pytest.raises(GroundError, match=r"shape \(N, 3\)"):
        fit_floor_plane([good[:, :2]])
    with pytest.raises(GroundError, match="finite"):
        fit_floor_plane([np.vstack([good, [[np.nan, 0, 0]]])])
    with pytest.raises(GroundError, match="at least 3 points"):
        fit_floor_plane([good[:2]])
    with pytest.raises(GroundError, match="no groups"):
        fit_floor_plane([])
    with pytest.raises(GroundError, match="prior_up"):
        fit_floor_plane([good], np.array([0.0, 1.0]))
    with pytest.raises(GroundError, match="min_inlier_fraction"):
        fit_floor_plane([good], settings=GroundSettings(min_inlier_fraction=0.0))
    with pytest.raises(GroundError, match="x axis"):
        floor_rotation([1.0, 0.0, 0.0])
    with pytest.raises(GroundError, match="no tracks"):
        ground_from_tracks({}, load_skeleton("human18"))
    with pytest.raises(GroundError, match=r"\(\.\.\., 3\)"):
        ground_from_sequence(scene(n=20).seq).frame.to_floor(np.zeros((4, 2)))


def test_trc_on_the_floor_stands_on_it_and_warns_without_one(tmp_path):
    """TRC origin floor: Y up from the fitted floor (mm); the default stays camera axes; no floor: a warning."""
    from posetracker.export import ExportError, get_exporter
    from posetracker.export.registry import write_reporting

    sc = scene(noise_m=0.005)
    files, warned = write_reporting(get_exporter("trc"), sc.seq, tmp_path / "w.trc", origin="floor")
    assert warned == []
    rows = [ln.split("\t") for ln in files[0].read_text().splitlines()[6:]]
    names = files[0].read_text().splitlines()[3].split("\t")
    col = names.index("left_ankle")  # its X column; Y follows
    y = np.array([float(r[col + 1]) for r in rows])  # mm
    standing = sc.stance[0][:, 0]
    assert abs(np.median(y[standing]) - 1000 * ANKLE) < 10.0
    swinging = y[~standing]
    assert swinging.max() > 1000 * ANKLE + 50  # the swing lifts it: Y is up
    _, warned = write_reporting(get_exporter("trc"), scene(n=20).seq, tmp_path / "short.trc", origin="floor")
    assert len(warned) == 1 and "no floor fitted" in warned[0] and "too few stance ankles" in warned[0]
    with pytest.raises(ExportError, match="origin"):
        get_exporter("trc").write(sc.seq, tmp_path / "x.trc", origin="ceiling")


def test_a_still_foot_held_above_the_standing_one_is_not_standing():
    """A person balancing on one leg holds the other foot still in the air: slow, so read as a stance phase by
    speed, but higher than the standing foot: those frames leave its phases (they would lift the floor)."""
    from posetracker.analysis.ground import drop_raised
    from posetracker.analysis.stance import ContactPhase

    t = 60
    ankles = np.zeros((t, 2, 3))
    ankles[..., 1] = 1.6  # camera y down: 1.6 m below the camera
    ankles[10:30, 0, 1] -= 0.10  # the left foot 10 cm up from 10 to 29
    ankles[40:50, 0, 1] -= 0.03  # and 3 cm up from 40 to 49: within what a depth error does
    up = np.array([0.0, -1.0, 0.0])
    phases = [ContactPhase(0, 0, 60), ContactPhase(1, 0, 60)]
    out = drop_raised(phases, ankles, up, min_len=4)
    assert out == [ContactPhase(0, 0, 10), ContactPhase(1, 0, 60), ContactPhase(0, 30, 60)]
    alone = drop_raised([ContactPhase(0, 0, 60)], ankles, up, min_len=4)  # the other foot not standing: kept
    assert alone == [ContactPhase(0, 0, 60)]
