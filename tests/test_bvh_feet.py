"""Foot locking in the BVH export (export.bvh_feet on the fitted floor): standing feet stay put on the floor, swing
is left alone, no pops; the BVH is still exact where it was (read back with bvhio, an independent reader)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

bvhio = pytest.importorskip("bvhio")

from floor_synthetic import SHANK, THIGH, scene  # noqa: E402
from test_bvh_roundtrip import ONE_TO_ONE, fk  # noqa: E402
from test_bvh_synthetic import make_sequence  # noqa: E402

from posetracker.analysis.stance import ContactPhase  # noqa: E402
from posetracker.export.bvh import BvhExporter  # noqa: E402
from posetracker.export.bvh_feet import lock_weights, root_shift, two_bone  # noqa: E402
from posetracker.types import PoseSequence  # noqa: E402

LEG = ("UpLeg", "Leg", "Foot")


def motion_lines(path) -> np.ndarray:
    lines = path.read_text().splitlines()
    return np.array([ln.split() for ln in lines[lines.index("MOTION") + 3:]], float)


def channels(path) -> dict[str, slice]:
    """{joint: its rotation columns in the motion lines} (the root's 3 positions first)."""
    names = [ln.split()[1] for ln in path.read_text().splitlines() if ln.strip().startswith(("ROOT", "JOINT"))]
    return {n: slice(3 + 3 * i, 6 + 3 * i) for i, n in enumerate(names)}


def test_two_bone_ik_reaches_with_the_rig_lengths_and_keeps_the_hinge():
    rng = np.random.default_rng(0)
    n = 200
    hip = rng.normal(0, 1, (n, 3))
    direction = rng.normal(0, 1, (n, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    reach = rng.uniform(0.2, 0.85, n)
    target = hip + reach[:, None] * direction
    hinge = rng.normal(0, 1, (n, 3))
    d1, d2, h = two_bone(hip, target, hinge, 0.45, 0.42)
    np.testing.assert_allclose(hip + 0.45 * d1 + 0.42 * d2, target, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(d1, axis=1), 1.0)
    np.testing.assert_allclose(np.linalg.norm(d2, axis=1), 1.0)
    np.testing.assert_allclose((d1 * h).sum(1), 0.0, atol=1e-9)  # both segments in the plane normal to the hinge
    np.testing.assert_allclose((d2 * h).sum(1), 0.0, atol=1e-9)
    assert ((np.cross(d1, d2) * h).sum(1) > 0).all()  # bent forwards about the hinge
    assert ((h * hinge).sum(1) > 0).all()  # the hinge kept (made normal to the leg), not flipped
    far = hip + 1.2 * direction  # out of reach: straight towards it
    d1, d2, _ = two_bone(hip, far, hinge, 0.45, 0.42)
    np.testing.assert_allclose(d1, direction, atol=1e-3)
    np.testing.assert_allclose(d2, direction, atol=1e-3)


def test_lock_weights_ease_within_half_the_swing_never_across_a_swap_or_past_the_ends():
    phases = [ContactPhase(0, 2, 10), ContactPhase(0, 14, 20), ContactPhase(1, 5, 12)]
    w, owner = lock_weights(phases, 24, blend=3, cuts=[12])
    np.testing.assert_array_equal(w[2:10, 0], 1.0)
    assert (w[:2, 0] > 0).all() and w[0, 0] < w[1, 0] < 1  # two frames before the first phase: the clip's start
    assert (w[10:14, 0] > 0).all() and (owner[10:12, 0] == 0).all() and (owner[12:14, 0] == 1).all()  # 2 each side
    assert (w[20:23, 0] > 0).all() and w[23, 0] == 0  # three frames after the last phase
    assert w[12, 1] == 0 and (w[2:5, 1] > 0).all()  # no easing out across the swap at frame 12
    assert set(owner[w[:, 0] > 0, 0]) == {0, 1} and (owner[w[:, 0] == 0, 0] == -1).all()


def test_root_shift_is_continuous_and_exact_with_one_foot_down():
    t = 40
    w = np.zeros((t, 2))
    w[5:15, 0] = 1.0
    w[15:18, 0] = [0.84, 0.5, 0.16]
    w[25:35, 1] = 1.0
    w[22:25, 1] = [0.16, 0.5, 0.84]
    c = np.zeros((t, 2, 3))
    c[:, 0] = [0.1, 0.0, 0.0]
    c[:, 1] = [-0.2, 0.0, 0.05]
    r = root_shift(w, c)
    np.testing.assert_allclose(r[5:15], np.tile([0.1, 0.0, 0.0], (10, 1)))
    np.testing.assert_allclose(r[25:35], np.tile([-0.2, 0.0, 0.05], (10, 1)))
    assert np.abs(np.diff(r, axis=0)).max() < 0.05  # 30 cm between the two feet, spread over the gap


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """A walker with 1 cm noise whose depth swings by 3 % (the standing feet slide 30-50 cm), exported locked
    and unlocked."""
    sc = scene(n=240, noise_m=0.01, wobble=0.03, seed=4)
    out = tmp_path_factory.mktemp("lock")
    BvhExporter().write(sc.seq, out / "locked.bvh")
    BvhExporter().write(sc.seq, out / "free.bvh", foot_lock=False)
    report = json.loads((out / "locked.bvh.json").read_text())
    return sc, out / "locked.bvh", out / "free.bvh", report


def test_locked_feet_stand_still_an_ankle_height_above_the_floor(walked):
    sc, locked, free, report = walked
    lock = report["foot_lock"]
    assert report["floor"]["fitted"] and lock["enabled"] and lock["locked_phases"] == lock["phases"] >= 12
    pos, _, _ = fk(locked)
    raw, _, _ = fk(free)
    ankle_cm = lock["ankle_height"]
    before, after = [], []
    for ph in lock["stance_phases"]:
        a, b = ph["bvh_frames"]
        joint = "LeftFoot" if ph["foot"] == "left" else "RightFoot"
        seg = pos[joint][a:b]
        after.append(np.linalg.norm(seg[:, None] - seg[None], axis=-1).max())
        before.append(np.linalg.norm(raw[joint][a:b][:, None] - raw[joint][a:b][None], axis=-1).max())
        assert np.abs(seg[:, 1] - ankle_cm).max() < 0.3, ph  # cm
        assert ph["slide_after"] == pytest.approx(after[-1], abs=0.01)
    assert max(after) < 0.5 and np.median(before) > 10.0  # cm: 0.5 after, 10-70 before


def test_swing_is_untouched_and_nothing_pops(walked):
    sc, locked, free, report = walked
    lock = report["foot_lock"]
    cols = channels(locked)
    m_lock, m_free = motion_lines(locked), motion_lines(free)
    near = {"left": np.zeros(len(m_lock), bool), "right": np.zeros(len(m_lock), bool)}
    for ph in lock["stance_phases"]:
        a, b = ph["bvh_frames"]
        near[ph["foot"]][max(0, a - lock["blend_frames"]):b + lock["blend_frames"]] = True
    for foot, side in (("left", "Left"), ("right", "Right")):
        swing = ~near[foot]
        assert swing.sum() > 15
        for part in LEG:
            np.testing.assert_array_equal(m_lock[swing][:, cols[side + part]], m_free[swing][:, cols[side + part]])
    others = [j for j in cols if not any(j.endswith(p) for p in LEG) and j != "Hips"]
    for j in others:  # the lock moves the root and turns the legs, nothing else
        np.testing.assert_array_equal(m_lock[:, cols[j]], m_free[:, cols[j]])
    pos, _, _ = fk(locked)
    raw, _, _ = fk(free)

    def most(points, order):  # the largest step (order 1) or acceleration (order 2) of any joint, cm per frame
        return max(np.linalg.norm(np.diff(p, order, axis=0), axis=1).max() for p in points.values())

    # no pop: a swinging foot brakes harder into its lock (this clip: steps x 1.24, accelerations x 1.39; the
    # knee flipping sides in a frame, before the ease was in rotation, gave steps x 2.1)
    assert most(pos, 1) < 1.5 * most(raw, 1) and most(pos, 2) < 2.0 * most(raw, 2)


def test_round_trip_still_exact_on_the_fitted_floor(tmp_path):
    """Without the lock the legs land on the camera-space joints mapped by the report's bvh_from_camera, to
    0.1 mm, as they did on the camera axes before."""
    sc = scene(n=120, pitch_deg=15.0, roll_deg=-3.0)
    out = tmp_path / "w.bvh"
    BvhExporter().write(sc.seq, out, foot_lock=False)
    report = json.loads(out.with_name("w.bvh.json").read_text())
    assert report["floor"]["fitted"] and abs(report["floor"]["pitch_deg"] - 15.0) < 1.0
    rot = np.array(report["bvh_from_camera"]["rotation"])
    t = np.array(report["bvh_from_camera"]["translation"])
    spec = sc.seq.skeleton
    world = np.stack([f.world[0] for f in sc.seq.frames]).astype(np.float64)
    pos, _, _ = fk(out)
    for joint, key in ONE_TO_ONE.items():
        if "Leg" in joint or "Foot" in joint:
            want = world[:, spec.index(key)] @ rot.T * 100 + t
            assert np.abs(pos[joint] - want).max() < 0.01, joint  # cm
    # locked, the joints above the legs are where they were, moved with the root
    BvhExporter().write(sc.seq, tmp_path / "l.bvh")
    locked, _, _ = fk(tmp_path / "l.bvh")
    for joint in ("Head", "LeftHand", "RightForeArm"):
        moved = (locked[joint] - locked["Hips"]) - (pos[joint] - pos["Hips"])
        assert np.abs(moved).max() < 1e-3, joint


def test_without_a_floor_the_export_is_the_old_one(tmp_path):
    """The BVH tests' synthetic person waves their legs in the air: no floor, so the default export is byte for
    byte the percentile floor's (the method before the fit), and the report says why."""
    seq = make_sequence(150, seed=1)
    BvhExporter().write(seq, tmp_path / "a.bvh")
    BvhExporter().write(seq, tmp_path / "b.bvh", floor="percentile")
    assert (tmp_path / "a.bvh").read_text() == (tmp_path / "b.bvh").read_text()
    report = json.loads((tmp_path / "a.bvh.json").read_text())
    assert report["floor"]["fitted"] is False and "too few stance ankles" in report["floor"]["reason"]
    assert report["foot_lock"]["enabled"] is False and "no fitted floor" in report["foot_lock"]["reason"]


def raise_knee(sc, side: str, a: int, b: int, heading: float) -> PoseSequence:
    """``sc``'s sequence with the ``side`` knee held up in 3-D over frames [a, b) (thigh level and forward, shin
    straight down: the ankle about 33 cm up; the walker heads ``heading`` degrees); the image keypoints, and
    so the 2-D contact, are left as they were."""
    spec = sc.seq.skeleton
    hip, knee, ankle = (spec.index(f"{side}_{j}") for j in ("hip", "knee", "ankle"))
    up = sc.camera_axes[:, 1]  # the floor's up and the walker's forward, in camera coordinates
    fwd = sc.camera_axes @ np.array([np.cos(np.radians(heading)), 0.0, -np.sin(np.radians(heading))])
    frames = []
    for i, f in enumerate(sc.seq.frames):
        if a <= i < b:
            w = f.world.astype(np.float64)
            w[0, knee] = w[0, hip] + THIGH * fwd
            w[0, ankle] = w[0, knee] - SHANK * up
            f = dataclasses.replace(f, world=w.astype(np.float32))
        frames.append(f)
    return PoseSequence(frames, sc.seq.fps, spec, sc.seq.metadata)


def test_a_foot_held_in_the_air_is_not_locked(tmp_path):
    sc = scene(n=180, noise_m=0.005)
    spec = sc.seq.skeleton
    left = sc.stance[0][:, 0]
    starts = np.flatnonzero(left[1:] & ~left[:-1]) + 1
    a = int(starts[starts > 40][0])
    b = a + int(np.argmin(left[a:]))
    seq = raise_knee(sc, "left", a, b, heading=35.0)  # the scene's walker heads 35 degrees
    ankle = spec.index("left_ankle")
    lifted = [(seq.frames[i].world[0, ankle] - sc.seq.frames[i].world[0, ankle]) @ sc.camera_axes[:, 1]
              for i in range(a, b)]
    assert min(lifted) > 0.25  # metres up
    BvhExporter().write(seq, tmp_path / "air.bvh")
    lock = json.loads((tmp_path / "air.bvh.json").read_text())["foot_lock"]
    # the foot in the air, above the other standing one, is not a stance phase at all (analysis.ground.drop_raised);
    # what is left of the phase around it is not locked there either
    for ph in lock["stance_phases"]:
        lo, hi = ph["bvh_frames"]
        if ph["foot"] == "left" and ph["locked"]:
            assert hi <= a + 3 or lo >= b - 3, (ph, a, b)
    assert sum(ph["locked"] for ph in lock["stance_phases"]) >= 4


def test_people_on_their_own_floors_share_the_origin(tmp_path):
    sc = scene(n=180, walkers=((0.0, (-2.0, -5.0), 1.0), (20.0, (-1.0, -3.5), 1.25)), noise_m=0.005)
    BvhExporter().write(sc.seq, tmp_path / "two.bvh")
    for tid in (0, 1):
        path = tmp_path / f"two_person{tid}.bvh"
        report = json.loads(path.with_name(path.name + ".json").read_text())
        pos, _, _ = fk(path)
        lock = report["foot_lock"]
        assert lock["locked_phases"] == lock["phases"] > 5
        for ph in lock["stance_phases"]:
            a, b = ph["bvh_frames"]
            joint = "LeftFoot" if ph["foot"] == "left" else "RightFoot"
            assert np.abs(pos[joint][a:b, 1] - lock["ankle_height"]).max() < 0.3  # cm, on their own floor
        if tid == 0:
            np.testing.assert_allclose(motion_lines(path)[0, [0, 2]], 0.0, atol=1e-4)  # X = Z = 0: the first root
    r0 = json.loads((tmp_path / "two_person0.bvh.json").read_text())
    r1 = json.loads((tmp_path / "two_person1.bvh.json").read_text())
    assert r0["origin_shift"][0] == r1["origin_shift"][0] and r0["origin_shift"][2] == r1["origin_shift"][2]
    assert r0["origin_shift"][1] != r1["origin_shift"][1]  # each on their own floor


def test_export_cli_floor_and_foot_lock_options(tmp_path):
    from posetracker.cli import main
    from posetracker.export import get_exporter

    src = tmp_path / "walk.json"
    get_exporter("json").write(scene(n=150).seq, src)
    assert main(["export", str(src), "-f", "bvh", "--out", str(tmp_path / "a.bvh")]) == 0
    assert main(["export", str(src), "-f", "bvh", "--no-foot-lock", "--out", str(tmp_path / "b.bvh")]) == 0
    assert main(["export", str(src), "-f", "bvh", "--floor", "percentile", "--out", str(tmp_path / "c.bvh")]) == 0
    a, b, c = (json.loads((tmp_path / f"{n}.bvh.json").read_text()) for n in "abc")
    assert a["floor"]["fitted"] and a["foot_lock"]["enabled"]
    assert b["floor"]["fitted"] and not b["foot_lock"]["enabled"] and b["foot_lock"]["reason"] == "foot_lock off"
    assert c["floor"]["fitted"] is False and not c["foot_lock"]["enabled"]
    np.testing.assert_allclose(np.array(c["bvh_from_camera"]["rotation"]), np.diag([1.0, -1.0, -1.0]))



def _stick_rig():
    """The humanoid rig with simple offsets (m): legs 0.45 + 0.42 m, hips 0.1 m either side of the root."""
    from posetracker.export.bvh_rig import HUMANOID, Rig

    names = [r[0] for r in HUMANOID]
    parents = [-1 if r[1] is None else names.index(r[1]) for r in HUMANOID]
    length = {"LeftUpLeg": 0.1, "RightUpLeg": 0.1, "LeftLeg": 0.45, "RightLeg": 0.45, "LeftFoot": 0.42,
              "RightFoot": 0.42}
    offsets = np.array([np.array(r[3], float) * length.get(r[0], 0.15) for r in HUMANOID])
    offsets[0] = 0.0
    return Rig(names, parents, offsets, {}, [r[2] for r in HUMANOID])


def test_a_swinging_foot_through_the_floor_is_lifted_smoothly():
    """clamp_swing: the body sinks 6 cm around frame 30 while the left foot is locked and the right swings: the
    right ankle is raised to standing height (within the tolerance) by bending its knee, eased over the
    neighbouring frames; the locked left leg and every frame far from the dip keep their rotations exactly."""
    from posetracker.export.bvh_feet import SwingSettings, clamp_swing, leg_points

    rig = _stick_rig()
    t = 61
    world = np.tile(np.eye(3), (t, rig.num_joints, 1, 1))
    sink = 0.06 * np.exp(-0.5 * ((np.arange(t) - 30) / 4.0) ** 2)  # m, a smooth dip of the whole body
    root = np.stack([np.zeros(t), 0.87 - sink, np.zeros(t)], 1)
    stand_y = 0.0  # a standing ankle (rest pose: the ankle 0.87 m under the root)
    locked = np.zeros((t, 2))
    locked[:, 0] = 1.0  # the left foot stands (its lock is what holds it), the right swings
    new, lift = clamp_swing(world, root, rig, stand_y, 1 / 30, locked)
    _, knees, ankles = leg_points(new, root, rig)
    _, _, before = leg_points(world, root, rig)
    tol = SwingSettings().tolerance_m
    assert before[30, 1, 1] < -0.05 and ankles[:, 1, 1].min() > stand_y - tol - 1e-3
    assert lift[:, 0].max() == 0.0 and lift[30, 1] >= 0.06 - tol - 1e-9
    left = [rig.names.index(n) for n in ("LeftUpLeg", "LeftLeg", "LeftFoot")]
    np.testing.assert_array_equal(new[:, left], world[:, left])
    far = lift[:, 1] == 0
    assert far[:5].all() and far[-5:].all()
    np.testing.assert_array_equal(new[far], world[far])
    assert (knees[30, 1, 2] > knees[0, 1, 2] + 0.05)  # the knee bends forwards (+Z), not backwards
    step = np.linalg.norm(np.diff(ankles[:, 1], axis=0), axis=1)
    assert step.max() < 0.02  # m per frame: eased, no pop (the dip itself moves the ankle up to 1.4 cm a frame)
