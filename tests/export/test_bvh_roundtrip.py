"""BVH writer: parse our files with bvhio (an independent reader), run its forward kinematics, compare."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

bvhio = pytest.importorskip("bvhio")

from test_bvh_synthetic import make_sequence, synthetic_world  # noqa: E402

from posetracker.export import ExportError, exporter_for_path, get_exporter  # noqa: E402
from posetracker.export.bvh import BvhExporter, BvhOptions, solve_person  # noqa: E402
from posetracker.export.bvh_rig import HUMANOID  # noqa: E402
from posetracker.skeletons import load_skeleton  # noqa: E402
from posetracker.tracks import person_tracks  # noqa: E402
from posetracker.types import PoseFrame, PoseSequence  # noqa: E402

#: our BVH joints that sit on a keypoint (or a documented virtual point)
ONE_TO_ONE = {"Hips": "mid_hip", "LeftUpLeg": "left_hip", "LeftLeg": "left_knee", "LeftFoot": "left_ankle",
              "RightUpLeg": "right_hip", "RightLeg": "right_knee", "RightFoot": "right_ankle",
              "LeftArm": "left_shoulder", "LeftForeArm": "left_elbow", "LeftHand": "left_wrist",
              "RightArm": "right_shoulder", "RightForeArm": "right_elbow", "RightHand": "right_wrist",
              "Neck": "neck", "Head": "head"}


def fk(path) -> tuple[dict[str, np.ndarray], list[str], dict[str, str | None]]:
    """bvhio forward kinematics: ({joint: (T, 3) world positions}, joint names, {joint: parent})."""
    root = bvhio.readAsHierarchy(str(path))
    layout = [j for j, _, _ in root.layout()]
    n = root.getKeyframeRange()[1] + 1
    pos = {j.Name: np.empty((n, 3)) for j in layout}
    for f in range(n):
        root.loadPose(f)
        for j in layout:
            pos[j.Name][f] = list(j.PositionWorld)
    return pos, [j.Name for j in layout], {j.Name: (j.Parent.Name if j.Parent else None) for j in layout}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    n = 150
    seq = make_sequence(n, fps=30.0, seed=1)
    out = tmp_path_factory.mktemp("bvh") / "synthetic.bvh"
    files = BvhExporter().write(seq, out)
    report = json.loads(out.with_name("synthetic.bvh.json").read_text())
    return seq, out, files, report, synthetic_world(n, 30.0, seed=1)


def test_roundtrip_recovers_joints_within_1cm(synthetic):
    seq, out, files, report, truth = synthetic
    assert files == [out, out.with_name("synthetic.bvh.json")]
    pos, names, _ = fk(out)
    assert names == [name for name, *_ in HUMANOID]
    shift = np.array(report["origin_shift"])
    errors = {j: np.linalg.norm(pos[j] - (truth[k] * 100 + shift), axis=1).max() for j, k in ONE_TO_ONE.items()}
    print("max error per joint (cm):", {k: round(v, 5) for k, v in errors.items()})
    assert max(errors.values()) < 1.0  # cm
    legs = [j for j in errors if "Leg" in j or "Foot" in j or j == "Hips"]
    assert max(errors[j] for j in legs) < 0.01  # in fact exact: constant lengths are reproduced to 0.1 mm
    # above the Spine (which sits on the Hips' +Y, a tenth up the trunk, so the root bone has a length)
    # a second-order error where the trunk leans against the hip line
    assert max(errors.values()) < 0.5  # measured 0.21


def test_bone_lengths_constant(synthetic):
    _, out, _, report, _ = synthetic
    pos, names, parent = fk(out)
    for j in names:
        if parent[j] is None:
            continue
        length = np.linalg.norm(pos[j] - pos[parent[j]], axis=1)
        assert np.ptp(length) < 0.01, j  # cm: < 0.1 mm
        assert length[0] == pytest.approx(report["bone_lengths"][j], abs=1e-3)
    # the synthetic person's true lengths, in cm
    assert report["bone_lengths"]["LeftForeArm"] == pytest.approx(28.0, abs=1e-3)
    assert report["bone_lengths"]["RightFoot"] == pytest.approx(41.0, abs=1e-3)


def test_file_layout_is_blender_safe(synthetic):
    _, out, _, report, _ = synthetic
    text = out.read_text()
    lines = text.splitlines()
    assert lines[0] == "HIERARCHY"
    assert not any(re.match(r"\s*(ROOT|JOINT).*\{", ln) for ln in lines)  # "{" on its own line
    names = re.findall(r"^\s*(?:ROOT|JOINT) (\S+)$", text, re.M)
    assert len(names) == len(set(names)) == 19
    chans = [int(m) for m in re.findall(r"CHANNELS (\d+)", text)]
    assert chans[0] == 6 and set(chans[1:]) == {3}
    assert "CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation" in text
    i = lines.index("MOTION")
    assert lines[i + 1] == "Frames: 150" and lines[i + 2].startswith("Frame Time: 0.0333333333")
    motion = [ln.split() for ln in lines[i + 3 :]]
    assert len(motion) == 150 and {len(r) for r in motion} == {sum(chans)}
    assert "nan" not in text.lower() and "," not in text
    # the rest pose is a T-pose standing on the floor
    offsets = {n: np.array(o.split(), float) for n, o in re.findall(r"(?:ROOT|JOINT) (\S+)\n\s*\{\n\s*OFFSET ([^\n]+)", text)}
    assert offsets["LeftForeArm"][0] > 0 and offsets["RightForeArm"][0] < 0 and offsets["LeftLeg"][1] < 0
    assert offsets["Hips"][1] == pytest.approx(83.0, abs=1e-3)  # thigh + shin


def test_rotations_continuous(synthetic):
    _, out, _, _, _ = synthetic
    lines = out.read_text().splitlines()
    motion = np.array([ln.split() for ln in lines[lines.index("MOTION") + 3 :]], float)
    rot = motion[:, 3:]
    # smooth synthetic motion at 30 fps: no bone turns far between frames, no channel wraps (a 360 or 180-degree
    # flip would); near a knee bent 90 degrees (gimbal lock of ZXY) its Z and Y may trade a little off the hinge
    assert np.abs(np.diff(rot, axis=0)).max() < 90.0
    euler = rot.reshape(len(rot), -1, 3)
    from posetracker.export.bvh_solve import bone_steps, world_rotations

    names = [name for name, *_ in HUMANOID]  # the file's joint order
    parents = [-1 if parent is None else names.index(parent) for _, parent, *_ in HUMANOID]
    assert bone_steps(world_rotations(euler, parents, "ZXY")).max() < 15.0


@pytest.mark.parametrize("order", ["XYZ", "YZX"])
def test_rotation_order_and_units_options(order, tmp_path):
    seq = make_sequence(40, seed=2)
    out = tmp_path / "p.bvh"
    BvhExporter().write(seq, out, rotation_order=order, units="m", origin="camera")
    text = out.read_text()
    axes = " ".join(f"{a}rotation" for a in order)
    assert f"CHANNELS 3 {axes}" in text
    pos, _, _ = fk(out)
    truth = synthetic_world(40, seed=2)
    assert np.abs(pos["LeftHand"] - truth["left_wrist"]).max() < 1e-3  # metres, camera origin (the Spine: 2nd order)
    with pytest.raises(ExportError, match="rotation order"):
        BvhExporter().write(seq, tmp_path / "q.bvh", rotation_order="XXY")


def test_one_file_per_person_and_chosen_person(tmp_path):
    seq = make_sequence(30, people=2)
    files = BvhExporter().write(seq, tmp_path / "take.bvh")
    assert [f.name for f in files] == ["take_person0.bvh", "take_person0.bvh.json", "take_person1.bvh", "take_person1.bvh.json"]
    files = BvhExporter().write(seq, tmp_path / "one.bvh", person=1)
    assert [f.name for f in files] == ["one.bvh", "one.bvh.json"]
    assert json.loads((tmp_path / "one.bvh.json").read_text())["track_id"] == 1
    with pytest.raises(ExportError, match="no person with track id 7"):
        BvhExporter().write(seq, tmp_path / "x.bvh", person=7)
    assert exporter_for_path("a.BVH") is get_exporter("bvh")


def _drop(seq: PoseSequence, joint: str, frames: range) -> PoseSequence:
    k = seq.skeleton.index(joint)
    out = []
    for f in seq.frames:
        if f.index in frames:
            w = f.world.copy()
            w[:, k] = np.nan
            f = PoseFrame(f.index, f.timestamp, f.keypoints, f.confidence, f.scores, f.track_ids, f.image_size, w)
        out.append(f)
    return PoseSequence(out, seq.fps, seq.skeleton, seq.metadata)


def test_short_gaps_interpolated_long_gaps_hold_one_limb_and_reported(tmp_path):
    """A joint missing longer than max_gap_s rides on its parent; the rest of the body moves on (issue #22 item 2)."""
    seq = _drop(_drop(make_sequence(90, seed=4), "left_wrist", range(10, 14)), "right_knee", range(40, 70))
    BvhExporter().write(seq, tmp_path / "g.bvh", max_gap_s=0.5)  # 15 frames
    report = json.loads((tmp_path / "g.bvh.json").read_text())
    assert report["interpolated_gaps"] == [{"joint": "left_wrist", "bvh_frames": [10, 14], "time_s": [pytest.approx(10 / 30), pytest.approx(13 / 30)]}]
    assert report["held_pose"] == []
    assert [(h["joint"], h["bvh_frames"]) for h in report["held_limbs"]] == [("right_knee", [40, 70])]
    lines = (tmp_path / "g.bvh").read_text().splitlines()
    motion = np.array([ln.split() for ln in lines[lines.index("MOTION") + 3 :]], float)
    assert len(motion) == 90
    moving = np.abs(np.diff(motion[39:71, :3], axis=0)).max(axis=1)
    assert (moving > 0).all()  # the root keeps moving through the gap: no frozen frame


def test_a_body_unseen_longer_than_a_gap_splits_the_takes(tmp_path):
    """Absent means absent: with the body centre and a hip unseen for 25 frames (0.83 s > max_gap_s) the rig
    cannot be driven; nothing is held there, the person's motion is two takes (one file each, trimmed to the
    frames seen), each report giving its place on the clip's timeline."""
    seq = _drop(_drop(make_sequence(60, seed=4), "centre", range(20, 45)), "left_hip", range(20, 45))
    BvhExporter().write(seq, tmp_path / "c.bvh", max_gap_s=0.5)
    assert not (tmp_path / "c.bvh").exists()
    reports = [json.loads((tmp_path / f"c_take{k}.bvh.json").read_text()) for k in (1, 2)]
    assert [(r["take"], r["start_frame"], r["frames"]) for r in reports] == [(1, 0, 20), (2, 45, 15)]
    assert reports[0]["takes"] == reports[1]["takes"] and reports[0]["held_pose"] == []
    assert reports[1]["start_time_s"] == pytest.approx(45 / seq.fps)
    for k, n in ((1, 20), (2, 15)):
        text = (tmp_path / f"c_take{k}.bvh").read_text()
        assert f"Frames: {n}\n" in text


def test_a_short_gap_stays_inside_one_take(tmp_path):
    """The same gap at 10 frames (0.33 s <= max_gap_s) is interpolated: one file, no pose held."""
    seq = _drop(_drop(make_sequence(60, seed=4), "centre", range(20, 30)), "left_hip", range(20, 30))
    BvhExporter().write(seq, tmp_path / "c.bvh", max_gap_s=0.5)
    report = json.loads((tmp_path / "c.bvh.json").read_text())
    assert len(report["takes"]) == 1 and report["held_pose"] == [] and report["frames"] == 60
    assert [g["bvh_frames"] for g in report["interpolated_gaps"] if g["joint"] == "left_hip"] == [[20, 30]]


def test_frame_time_from_timestamps_and_dropped_frames(tmp_path):
    seq = make_sequence(60, fps=25.0, seed=5)
    frames = [f for f in seq.frames if f.index not in (20, 21)]  # two dropped frames: a gap on the time grid
    seq2 = PoseSequence(frames, fps=30.0, skeleton=seq.skeleton)  # nominal fps is wrong; timestamps rule
    BvhExporter().write(seq2, tmp_path / "t.bvh")
    text = (tmp_path / "t.bvh").read_text()
    assert "Frame Time: 0.0400000000" in text and "Frames: 60" in text
    report = json.loads((tmp_path / "t.bvh.json").read_text())
    assert [g["bvh_frames"] for g in report["interpolated_gaps"]][:1] == [[20, 22]]


def test_generic_skeleton_rig(tmp_path):
    """An animal skeleton gets its own tree: root = the skeleton's root, names from the skeleton."""
    spec = load_skeleton("fly13")
    rng = np.random.default_rng(0)
    base = rng.normal(0, 0.002, (spec.num_joints, 3))
    base[spec.root] = 0
    t = np.arange(40) / 30
    frames = []
    for i, ti in enumerate(t):
        yaw = 0.5 * np.sin(ti)
        r = np.array([[np.cos(yaw), 0, np.sin(yaw)], [0, 1, 0], [-np.sin(yaw), 0, np.cos(yaw)]])
        w = (base @ r.T + np.array([0.01 * ti, 0.0, 0.3]))[None].astype(np.float32)
        frames.append(PoseFrame(i, ti, w.copy(), np.ones((1, spec.num_joints), np.float32), np.ones(1, np.float32),
                                np.zeros(1, np.int64), (0, 0), w))
    seq = PoseSequence(frames, 30.0, spec)
    BvhExporter().write(seq, tmp_path / "fly.bvh", units="mm", origin="camera")
    pos, names, _ = fk(tmp_path / "fly.bvh")
    assert names[0] == "thorax" and set(names) == set(spec.joint_names)
    truth = np.stack([f.world[0] for f in frames]) * np.array([1, -1, -1]) * 1000  # BVH space, mm
    err = max(np.abs(pos[n] - truth[:, spec.index(n)]).max() for n in names)
    assert err < 0.01  # a rigid body: exact (mm)


def test_solve_person_rejects_2d_only_and_wrong_rig():
    seq = make_sequence(5)
    frames = [PoseFrame(f.index, f.timestamp, f.keypoints, f.confidence, f.scores, f.track_ids) for f in seq.frames]
    seq2 = PoseSequence(frames, 30.0, seq.skeleton)
    with pytest.raises(ValueError, match="world"):
        solve_person(person_tracks(seq2)[0], seq2.skeleton, 30.0)
    mouse = load_skeleton("mouse4")
    with pytest.raises(ValueError, match="humanoid"):
        solve_person(person_tracks(seq)[0], mouse, 30.0, BvhOptions(rig="humanoid"))


def _world_rotations(motion) -> np.ndarray:
    """(T, J, 3, 3) world rotations composed from the written Euler angles (the BVH semantics)."""
    from scipy.spatial.transform import Rotation

    t, j = motion.euler.shape[:2]
    local = Rotation.from_euler(motion.order, motion.euler.reshape(-1, 3), degrees=True).as_matrix().reshape(t, j, 3, 3)
    world = local.copy()
    for i, p in enumerate(motion.rig.parents):
        if p >= 0:
            world[:, i] = world[:, p] @ local[:, i]
    return world


def test_twist_elbow_and_knee_are_hinges_and_head_follows_the_face():
    from scipy.spatial.transform import Rotation

    n = 120
    seq = make_sequence(n, seed=6)
    motion = solve_person(person_tracks(seq)[0], seq.skeleton, seq.fps)
    names = motion.rig.names
    truth = synthetic_world(n, seed=6)
    loc = Rotation.from_euler(motion.order, motion.euler.reshape(-1, 3), degrees=True).as_rotvec().reshape(n, -1, 3)
    for joint, axis, upper, mid, lower in (("LeftForeArm", 1, "left_shoulder", "left_elbow", "left_wrist"),
                                           ("RightLeg", 0, "right_hip", "right_knee", "right_ankle")):
        d1 = truth[mid] - truth[upper]
        d2 = truth[lower] - truth[mid]
        bend = np.degrees(np.arccos(np.sum(d1 * d2, 1) / np.linalg.norm(d1, axis=1) / np.linalg.norm(d2, axis=1)))
        v = loc[bend > 31, names.index(joint)]
        assert len(v) > 10
        off = np.delete(v, axis, axis=1)
        assert np.abs(off).max() < 0.01, joint  # the lower segment turns about the hinge axis (within 0.6 deg)
    world = _world_rotations(motion)
    head_up = world[:, names.index("Head")] @ np.array([0.0, 1.0, 0.0])
    assert np.abs(head_up - truth["head_up"]).max() < 0.05  # within 3 deg: the head is solved over the take


def test_head_follows_the_neck_without_depth():
    seq = make_sequence(30, seed=7)
    flat = []
    for f in seq.frames:  # one depth for the whole person, as before the depth head is trained
        w = f.world.copy()
        w[..., 2] = w[..., 2].mean()
        flat.append(PoseFrame(f.index, f.timestamp, f.keypoints, f.confidence, f.scores, f.track_ids, f.image_size, w))
    seq = PoseSequence(flat, seq.fps, seq.skeleton)
    motion = solve_person(person_tracks(seq)[0], seq.skeleton, seq.fps)
    head = motion.rig.names.index("Head")
    # no spurious nod or turn (ZXY: [z, x, y]); the sideways tilt of the ear line is seen in the image and kept
    assert motion.order == "ZXY" and np.abs(motion.euler[:, head, 1:]).max() < 1e-6


def test_several_people_share_one_timeline_and_one_origin(tmp_path):
    """Each file covers its person's frames only (absent means absent: no pose held before they come or after
    they go); its report places it on the clip's timeline; people stand apart where they stood."""
    seq = make_sequence(60, people=2, seed=6)
    frames = []
    for f in seq.frames:  # person 1 is in the clip from frame 20 to 44 only
        if not 20 <= f.index < 45:
            f = f.select(np.array([True, False]))
        frames.append(f)
    seq = PoseSequence(frames, seq.fps, seq.skeleton, seq.metadata)
    BvhExporter().write(seq, tmp_path / "two.bvh")
    motion, report = {}, {}
    for tid in (0, 1):
        lines = (tmp_path / f"two_person{tid}.bvh").read_text().splitlines()
        motion[tid] = np.array([ln.split() for ln in lines[lines.index("MOTION") + 3:]], float)
        report[tid] = json.loads((tmp_path / f"two_person{tid}.bvh.json").read_text())
    assert len(motion[0]) == 60 and len(motion[1]) == 25
    assert report[0]["start_time_s"] == 0.0 and report[1]["start_time_s"] == pytest.approx(20 / seq.fps)
    assert report[1]["start_frame"] == 20 and report[1]["held_pose"] == []
    assert report[0]["origin_shift"] == report[1]["origin_shift"]
    np.testing.assert_allclose(motion[0][0, [0, 2]], 0.0, atol=1e-4)  # the first person's first root at X = Z = 0
    hips = [seq.skeleton.index("left_hip"), seq.skeleton.index("right_hip")]
    truth = [100 * np.array([f.world[p, hips, 0].mean() for f in seq.frames[20:45]]) for p in (0, 1)]  # cm, X = x
    np.testing.assert_allclose(motion[1][:, 0] - motion[0][20:45, 0], truth[1] - truth[0], atol=0.5)
