"""Feet in the BVH export: the session holds the standing feet on the floor (motion.feet), the export moves none of
them; a finished sequence's BVH stands still on its fitted floor, a foot held in the air stays up, people stand on
their own floors; the BVH is exact where it was (read back with bvhio, an independent reader)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

bvhio = pytest.importorskip("bvhio")

from floor_synthetic import SHANK, THIGH, scene  # noqa: E402
from test_bvh_roundtrip import ONE_TO_ONE, fk  # noqa: E402
from test_bvh_synthetic import make_sequence  # noqa: E402

from posetracker.analysis.held_ground import held_ground  # noqa: E402
from posetracker.analysis.stance import slide  # noqa: E402
from posetracker.evaluation.feet_on_floor import motion_frames  # noqa: E402
from posetracker.export.bvh import BvhExporter, BvhOptions, solve_person  # noqa: E402
from posetracker.motion.feet import plant_feet  # noqa: E402
from posetracker.tracking.bones import rigid_tracks  # noqa: E402
from posetracker.tracks import person_tracks  # noqa: E402
from posetracker.types import PoseSequence  # noqa: E402


def _rigid(seq: PoseSequence) -> PoseSequence:
    """``seq`` with one length per bone and track, as the session gives it."""
    return dataclasses.replace(seq, frames=rigid_tracks(seq.frames, seq.skeleton))


def _bvh_stance(path, seq, tid: int) -> tuple[list[np.ndarray], float]:
    """The BVH's ankles (cm, bvhio's forward kinematics) over each stance phase of ``seq``'s floor as the export
    reads it (the session's, fitted again for a sequence without one), and the person's ankle height (cm)."""
    ground = held_ground(seq)
    track = person_tracks(seq)[tid]
    report = json.loads(path.with_name(path.name + ".json").read_text())
    pos, _, _ = fk(path)
    motion = solve_person(track, seq.skeleton, seq.fps, BvhOptions(), ground)
    motion.report["start_time_s"] = report["start_time_s"]
    where = motion_frames(track, motion)
    out = []
    for p in ground.phases[tid]:
        rows = where[p.start:p.stop]
        rows = rows[rows >= 0]
        out.append(pos["LeftFoot" if p.foot == 0 else "RightFoot"][rows])
    return out, 100 * ground.frame.ankle_height[tid]


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """A walker with 3 mm noise (unsmoothed: the rig's median hips and bones then put its ankles up to 1-3 cm off
    the joints at 1 cm) whose depth swings by 3 % (the standing feet slide 10-70 cm along the rays), with one
    length per bone, as read and with its feet held on the floor by the session, each exported."""
    sc = scene(n=240, noise_m=0.003, wobble=0.03, seed=4)
    read = _rigid(sc.seq)
    planted, _ = plant_feet(read)
    out = tmp_path_factory.mktemp("feet")
    BvhExporter().write(read, out / "read.bvh")
    BvhExporter().write(planted, out / "planted.bvh")
    return read, planted, out / "read.bvh", out / "planted.bvh"


def test_the_bvh_of_planted_feet_stands_still_an_ankle_height_above_the_floor(walked):
    seq, planted, read, feet = walked
    after, ankle_cm = _bvh_stance(feet, planted, 0)
    before, _ = _bvh_stance(read, seq, 0)
    assert len(after) >= 12
    for seg in after:
        assert slide(seg) < 2.0 and np.abs(seg[:, 1] - ankle_cm).max() < 2.0  # cm
    assert np.median([slide(seg) for seg in before]) > 10.0  # cm: the export itself moves no foot


def test_the_export_moves_no_foot(tmp_path):
    """The BVH's legs land on the camera-space joints mapped by the report's bvh_from_camera, to 0.1 mm, planted
    or not: nothing is locked or clamped on the way out (the old export's lock moved them by centimetres)."""
    sc = scene(n=120, pitch_deg=15.0, roll_deg=-3.0)
    planted, report = plant_feet(sc.seq)
    assert report["planted"]
    for seq, path in ((sc.seq, tmp_path / "read.bvh"), (planted, tmp_path / "planted.bvh")):
        BvhExporter().write(seq, path)
        report = json.loads(path.with_name(path.name + ".json").read_text())
        assert report["floor"]["fitted"] and abs(report["floor"]["pitch_deg"] - 15.0) < 1.0
        assert "foot_lock" not in report
        rot = np.array(report["bvh_from_camera"]["rotation"])
        t = np.array(report["bvh_from_camera"]["translation"])
        spec = seq.skeleton
        world = np.stack([f.world[0] for f in seq.frames]).astype(np.float64)
        pos, _, _ = fk(path)
        for joint, key in ONE_TO_ONE.items():
            if "Leg" in joint or "Foot" in joint:
                want = world[:, spec.index(key)] @ rot.T * 100 + t
                assert np.abs(pos[joint] - want).max() < 0.01, joint  # cm


def test_without_a_floor_the_export_is_the_old_one(tmp_path):
    """The BVH tests' synthetic person waves their legs in the air: no floor, so the default export is byte for
    byte the percentile floor's (the method before the fit), and the report says why."""
    seq = make_sequence(150, seed=1)
    BvhExporter().write(seq, tmp_path / "a.bvh")
    BvhExporter().write(seq, tmp_path / "b.bvh", floor="percentile")
    assert (tmp_path / "a.bvh").read_text() == (tmp_path / "b.bvh").read_text()
    report = json.loads((tmp_path / "a.bvh.json").read_text())
    assert report["floor"]["fitted"] is False and "too few stance ankles" in report["floor"]["reason"]


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


def test_a_foot_held_in_the_air_is_not_put_on_the_floor():
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
    planted, report = plant_feet(seq)
    assert report["planted"]
    held = [(planted.frames[i].world[0, ankle] - seq.frames[i].world[0, ankle]) @ sc.camera_axes[:, 1]
            for i in range(a, b)]
    knee = spec.index("left_knee")
    hip = spec.index("left_hip")
    # the foot in the air, above the other standing one, is not a stance phase (analysis.ground.drop_raised): it
    # is not put on the floor; the body may move as a whole, the leg keeps its shape
    assert min(lifted) + min(held) > 0.2
    for i in range(a + 3, b - 3):
        leg = planted.frames[i].world[0, [hip, knee, ankle]] - planted.frames[i].world[0, hip]
        was = seq.frames[i].world[0, [hip, knee, ankle]] - seq.frames[i].world[0, hip]
        assert np.abs(leg - was).max() < 0.02, i  # m


def test_people_on_their_own_floors_share_the_origin(tmp_path):
    sc = scene(n=180, walkers=((0.0, (-2.0, -5.0), 1.0), (20.0, (-1.0, -3.5), 1.25)), noise_m=0.005)
    planted, _ = plant_feet(_rigid(sc.seq))
    BvhExporter().write(planted, tmp_path / "two.bvh")
    for tid in (0, 1):
        path = tmp_path / f"two_person{tid}.bvh"
        stance, ankle_cm = _bvh_stance(path, planted, tid)
        assert len(stance) > 5
        for seg in stance:
            assert np.abs(seg[:, 1] - ankle_cm).max() < 2.0  # cm, on their own floor
        if tid == 0:
            np.testing.assert_allclose(_motion_lines(path)[0, [0, 2]], 0.0, atol=1e-4)  # X = Z = 0: the first root
    r0 = json.loads((tmp_path / "two_person0.bvh.json").read_text())
    r1 = json.loads((tmp_path / "two_person1.bvh.json").read_text())
    assert r0["origin_shift"][0] == r1["origin_shift"][0] and r0["origin_shift"][2] == r1["origin_shift"][2]
    assert r0["origin_shift"][1] != r1["origin_shift"][1]  # each on their own floor


def _motion_lines(path) -> np.ndarray:
    lines = path.read_text().splitlines()
    return np.array([ln.split() for ln in lines[lines.index("MOTION") + 3:]], float)


def test_export_cli_floor_options(tmp_path):
    from posetracker.cli import main
    from posetracker.export import get_exporter

    src = tmp_path / "walk.json"
    get_exporter("json").write(scene(n=150).seq, src)
    assert main(["export", str(src), "-f", "bvh", "--out", str(tmp_path / "a.bvh")]) == 0
    assert main(["export", str(src), "-f", "bvh", "--floor", "percentile", "--out", str(tmp_path / "c.bvh")]) == 0
    a, c = (json.loads((tmp_path / f"{n}.bvh.json").read_text()) for n in "ac")
    assert a["floor"]["fitted"] and c["floor"]["fitted"] is False
    np.testing.assert_allclose(np.array(c["bvh_from_camera"]["rotation"]), np.diag([1.0, -1.0, -1.0]))


def test_the_exports_read_the_floor_the_session_decided(tmp_path):
    """BVH and TRC stand people on the floor in ``metadata["feet"]`` (they fit none again): the result saved as
    JSON and read back exports the same BVH byte for byte, and a floor 5 cm higher in the metadata moves both
    exports by 5 cm (on the code that fitted the floor again at export, neither moved)."""
    from posetracker.export import get_exporter, read_sequence

    planted, _ = plant_feet(_rigid(scene(n=150).seq))
    get_exporter("json").write(planted, tmp_path / "r.json")
    BvhExporter().write(planted, tmp_path / "a.bvh")
    BvhExporter().write(read_sequence(tmp_path / "r.json"), tmp_path / "b.bvh")
    assert (tmp_path / "a.bvh").read_text() == (tmp_path / "b.bvh").read_text()
    feet = json.loads(json.dumps(planted.metadata["feet"]))
    feet["floor"]["translation"][1] -= 0.05  # the floor frame's origin 5 cm up: every point 5 cm lower in it
    lower = dataclasses.replace(planted, metadata={**planted.metadata, "feet": feet})
    BvhExporter().write(lower, tmp_path / "c.bvh")
    a, c = (json.loads((tmp_path / f"{n}.bvh.json").read_text()) for n in "ac")
    assert abs(a["bvh_from_camera"]["translation"][1] - c["bvh_from_camera"]["translation"][1] - 5.0) < 1e-6  # cm
    for seq, name in ((planted, "a.trc"), (lower, "c.trc")):
        get_exporter("trc").write(seq, tmp_path / name, origin="floor")
    ya, yc = (np.array([ln.split("\t")[3] for ln in (tmp_path / n).read_text().splitlines()[6:]], float)
              for n in ("a.trc", "c.trc"))  # the first marker's Y, mm
    np.testing.assert_allclose(ya - yc, 50.0, atol=1e-3)
