"""Joint angles (the one table): known poses in 3-D and 2-D, labels, per-frame angles, summary and the CSV export."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from test_bvh_synthetic import make_sequence

from posetracker.analysis import ANGLES, angle_names, check_angle_names, compute_angles, frame_angles, summarise
from posetracker.export import get_exporter
from posetracker.export.angles_csv import SUMMARY_COLUMNS
from posetracker.skeletons import load_skeleton, spec_from_dict
from posetracker.types import PoseFrame, PoseSequence

HUMAN = load_skeleton("human18")
C, S = np.cos, np.sin
R = np.radians


def body_pose(lean_deg: float = 0.0) -> dict[str, np.ndarray]:
    """A posed person in Y-up body space (facing +Z, left = +X), metres, with known angles.

    left hip flexed 90 (thigh forward), left knee 90; right leg straight; left arm abducted 90,
    straight; right shoulder flexed 60, right elbow 45; trunk leaning forward by ``lean_deg``.
    """
    p = {"left_hip": np.array([0.1, 1.0, 0.0]), "right_hip": np.array([-0.1, 1.0, 0.0])}
    mid = np.array([0.0, 1.0, 0.0])
    up = np.array([0.0, C(R(lean_deg)), S(R(lean_deg))])
    neck = mid + 0.5 * up
    p["left_shoulder"], p["right_shoulder"] = neck + [0.18, 0, 0], neck - [0.18, 0, 0]
    p["left_knee"] = p["left_hip"] + [0, 0, 0.42]
    p["left_ankle"] = p["left_knee"] + [0, -0.41, 0]
    p["right_knee"] = p["right_hip"] + [0, -0.42, 0]
    p["right_ankle"] = p["right_knee"] + [0, -0.41, 0]
    p["left_elbow"] = p["left_shoulder"] + [0.28, 0, 0]
    p["left_wrist"] = p["left_elbow"] + [0.26, 0, 0]
    # right arm in the trunk's sagittal plane: 60 deg forward of trunk-down, forearm 45 deg further
    down, front = -up, np.array([0.0, -S(R(lean_deg)), C(R(lean_deg))])
    p["right_elbow"] = p["right_shoulder"] + 0.28 * (C(R(60)) * down + S(R(60)) * front)
    p["right_wrist"] = p["right_elbow"] + 0.26 * (C(R(105)) * down + S(R(105)) * front)
    head = neck + 0.2 * up
    p.update(nose=head + [0, -0.03, 0.1], left_eye=head + [0.035, 0, 0.08], right_eye=head + [-0.035, 0, 0.08],
             left_ear=head + [0.075, 0, 0], right_ear=head - [0.075, 0, 0])
    return p


def pose_sequence(lean: float = 0.0, flat: bool = False, world: bool = True, frames: int = 3) -> PoseSequence:
    spec = load_skeleton("human18")
    body = body_pose(lean)
    w = np.zeros((spec.num_joints, 3))
    for name, v in body.items():
        w[spec.index(name)] = v * [1, -1, -1] + [0, 0, 3.0]  # body space -> camera, 3 m away
    w[spec.index("centre")] = w[:17].mean(0)
    if flat:
        w[:, 2] = 3.0
    kp = w.copy()
    kp[:, 0] = 800 * w[:, 0] / w[:, 2] + 320
    kp[:, 1] = 800 * w[:, 1] / w[:, 2] + 600  # the whole body inside the 640 x 960 frame
    fr = [PoseFrame(i, i / 30, kp[None].astype(np.float32), np.full((1, 18), 0.9, np.float32), np.ones(1, np.float32),
                    np.zeros(1, np.int64), (640, 960), w[None].astype(np.float32) if world else None) for i in range(frames)]
    return PoseSequence(fr, 30.0, spec)


def value(table, angle: str, side: str) -> tuple[float, str]:
    deg, methods = table.series(0, angle, side)
    return float(deg[0]), methods[0]


EXPECTED_3D = {("knee_flexion", "left"): 90, ("knee_flexion", "right"): 0, ("hip_flexion", "left"): 90,
               ("hip_flexion", "right"): 0, ("elbow_flexion", "left"): 0, ("elbow_flexion", "right"): 45,
               ("shoulder_abduction", "left"): 90, ("shoulder_abduction", "right"): 0,
               ("shoulder_flexion", "right"): 60, ("trunk_lean", "centre"): 0}


def test_known_pose_3d():
    table = compute_angles(pose_sequence())
    for (angle, side), want in EXPECTED_3D.items():
        got, method = value(table, angle, side)
        assert method == "3d"
        assert got == pytest.approx(want, abs=0.05), (angle, side)


def test_trunk_lean_and_angles_relative_to_the_trunk():
    table = compute_angles(pose_sequence(lean=20.0))
    assert value(table, "trunk_lean", "centre")[0] == pytest.approx(20.0, abs=0.05)
    assert value(table, "shoulder_flexion", "right")[0] == pytest.approx(60.0, abs=0.05)  # measured from the trunk
    assert value(table, "hip_flexion", "left")[0] == pytest.approx(110.0, abs=0.05)  # thigh forward, trunk leaning


@pytest.mark.parametrize("flat, world", [(True, True), (False, False)])
def test_2d_fallback_is_labelled(flat, world):
    table = compute_angles(pose_sequence(flat=flat, world=world))
    assert set(table.method) == {"2d"}
    # a front view: abduction and a straight limb read right in the image
    assert value(table, "shoulder_abduction", "left")[0] == pytest.approx(90.0, abs=2.0)
    assert value(table, "knee_flexion", "right")[0] == pytest.approx(0.0, abs=1.0)
    assert value(table, "elbow_flexion", "left")[0] == pytest.approx(0.0, abs=1.0)


def test_modes_and_missing_joints():
    seq = pose_sequence(flat=True)
    t3 = compute_angles(seq, mode="3d")
    assert np.all(np.isnan(t3.degrees)) and set(t3.method) == {""}
    f = seq.frames[1]
    conf = f.confidence.copy()
    conf[0, seq.skeleton.index("left_wrist")] = 0.05
    seq.frames[1] = PoseFrame(f.index, f.timestamp, f.keypoints, conf, f.scores, f.track_ids, f.image_size, f.world)
    deg, methods = compute_angles(seq).series(0, "elbow_flexion", "left")
    assert np.isnan(deg[1]) and methods[1] == "" and methods[0] == "2d"
    with pytest.raises(ValueError, match="mode"):
        compute_angles(seq, mode="4d")


def test_table_and_ankle_only_with_feet():
    human = load_skeleton("human18")
    names = angle_names(human)
    assert ("ankle_dorsiflexion", "left") not in names
    assert len(names) == 11 and ("trunk_lean", "centre") in names
    assert {d.name for d in ANGLES} >= {"knee_flexion", "hip_flexion", "elbow_flexion", "shoulder_abduction",
                                        "shoulder_flexion", "trunk_lean", "ankle_dorsiflexion"}
    joints = [{"name": "root", "parent": None}] + [
        {"name": f"{s}_{j}", "parent": "root"} for s in ("left", "right") for j in ("hip", "knee", "ankle", "big_toe")]
    feet = spec_from_dict({"name": "legs", "kind": "human", "joints": joints})
    assert ("ankle_dorsiflexion", "left") in angle_names(feet)


def test_summary_and_csv_export(tmp_path):
    seq = make_sequence(60)
    table = compute_angles(seq)
    rows = summarise(table)
    knee = {r.side: r for r in rows if r.angle == "knee_flexion"}
    deg_l, _ = table.series(0, "knee_flexion", "left")
    deg_r, _ = table.series(0, "knee_flexion", "right")
    assert knee["left"].rom_deg == pytest.approx(deg_l.max() - deg_l.min())
    assert knee["left"].mean_deg == pytest.approx(deg_l.mean()) and knee["left"].method == "3d"
    assert knee["left-right"].mean_deg == pytest.approx(np.mean(deg_l - deg_r))
    assert knee["left-right"].rom_deg == pytest.approx(knee["left"].rom_deg - knee["right"].rom_deg)
    files = get_exporter("angles").write(seq, tmp_path / "clip.angles.csv")
    assert [f.name for f in files] == ["clip.angles.csv", "clip.angles.summary.csv"]
    per_frame = list(csv.DictReader(files[0].open()))
    assert len(per_frame) == 60 * 11 and per_frame[0]["method"] == "3d"
    assert set(per_frame[0]) == {"frame", "time_s", "person_id", "angle", "side", "degrees", "method"}
    summary = list(csv.reader(files[1].open()))
    assert tuple(summary[0]) == SUMMARY_COLUMNS and len(summary) == 1 + 11 + 5  # + left-right rows


def two_people(a: PoseFrame, b: PoseFrame) -> PoseFrame:
    """One frame holding person ``a`` (track 0) and person ``b`` (track 1)."""
    cat = lambda x, y: None if x is None else np.concatenate([x, y])  # noqa: E731
    return PoseFrame(a.index, a.timestamp, cat(a.keypoints, b.keypoints), cat(a.confidence, b.confidence),
                     cat(a.scores, b.scores), np.array([0, 1], np.int64), a.image_size, cat(a.world, b.world))


@pytest.mark.parametrize("flat", [False, True])
def test_frame_angles_are_the_sequence_table_frame_by_frame(flat):
    seq = pose_sequence(flat=flat)
    table = compute_angles(seq)
    got = frame_angles(seq.frames[0], seq.skeleton)
    assert list(got) == angle_names(seq.skeleton)
    for (angle, side), deg in got.items():
        assert deg.shape == (1,)
        assert deg[0] == pytest.approx(value(table, angle, side)[0], abs=1e-6), (angle, side)
    if not flat:
        for key, want in EXPECTED_3D.items():
            assert got[key][0] == pytest.approx(want, abs=0.05), key


def test_frame_angles_judge_depth_per_person():
    deep, flat = pose_sequence().frames[0], pose_sequence(flat=True).frames[0]
    spec = load_skeleton("human18")
    got = frame_angles(two_people(deep, flat), spec)
    t3, t2 = compute_angles(pose_sequence()), compute_angles(pose_sequence(flat=True))
    for angle, side in angle_names(spec):
        assert got[(angle, side)][0] == pytest.approx(value(t3, angle, side)[0], abs=1e-6)
        assert got[(angle, side)][1] == pytest.approx(value(t2, angle, side)[0], abs=1e-6)
    # the thigh points at the camera: 90 deg in 3-D, far less in the image
    assert got[("hip_flexion", "left")][0] == pytest.approx(90.0, abs=0.05)
    assert abs(got[("hip_flexion", "left")][1] - 90.0) > 20.0
    only_2d = frame_angles(two_people(deep, flat), spec, mode="2d")[("hip_flexion", "left")]
    assert only_2d[0] == pytest.approx(value(compute_angles(pose_sequence(), mode="2d"), "hip_flexion", "left")[0])
    assert abs(only_2d[0] - 90.0) > 20.0
    assert np.isnan(frame_angles(flat, spec, mode="3d")[("knee_flexion", "left")]).all()


def test_frame_angles_flexion_missing_joints_and_names():
    spec = load_skeleton("human18")
    kp = np.zeros((1, spec.num_joints, 3), np.float32)
    hip, knee, ankle = (spec.index(n) for n in ("left_hip", "left_knee", "left_ankle"))
    kp[0, hip, :2], kp[0, knee, :2], kp[0, ankle, :2] = (0, 0), (0, 100), (100, 100)  # a right angle at the knee
    conf = np.ones((1, spec.num_joints), np.float32)
    pose = lambda c: PoseFrame(0, 0.0, kp, c, np.ones(1, np.float32), np.zeros(1, np.int64), (640, 480))  # noqa: E731
    names = [("knee_flexion", "left"), ("trunk_lean", "centre")]
    got = frame_angles(pose(conf), spec, names)
    assert list(got) == names and got[("knee_flexion", "left")][0] == pytest.approx(90.0)
    conf[0, ankle] = 0.05
    assert np.isnan(frame_angles(pose(conf), spec, names)[("knee_flexion", "left")][0])
    conf[0, ankle] = np.nan  # an unknown confidence is no confidence
    assert np.isnan(frame_angles(pose(conf), spec, names)[("knee_flexion", "left")][0])
    assert all(v.shape == (0,) for v in frame_angles(PoseFrame.empty(0, 0.0, spec.num_joints), spec).values())
    with pytest.raises(ValueError, match="ankle_dorsiflexion"):
        frame_angles(pose(conf), spec, [("ankle_dorsiflexion", "left")])  # human18 has no feet
    with pytest.raises(ValueError, match="knee"):
        check_angle_names(spec, [("knee", "left")])
    with pytest.raises(ValueError, match="mode"):
        frame_angles(pose(conf), spec, mode="4d")


def test_mouse_head_turn():
    spec = load_skeleton("mouse4")
    assert angle_names(spec) == [("head_turn", "centre")]
    kp = np.zeros((2, spec.num_joints, 3), np.float32)
    at = {"tailbase": (0, 0), "leftear": (90, -5), "rightear": (90, 5)}
    for p, snout in enumerate([(120, 0), (90, 30)]):  # in line with the body; turned a right angle
        for name, xy in {**at, "snout": snout}.items():
            kp[p, spec.index(name), :2] = np.add(xy, 100)  # inside the 640 x 480 frame
    pose = PoseFrame(0, 0.0, kp, np.ones((2, spec.num_joints), np.float32), np.ones(2, np.float32),
                     np.arange(2), (640, 480))
    np.testing.assert_allclose(frame_angles(pose, spec)[("head_turn", "centre")], [0.0, 90.0], atol=1e-4)


def test_no_angle_from_joints_outside_the_frame():
    """A person entering at the edge: the network's guesses for joints beyond the frame give no angle."""
    seq = pose_sequence(frames=2)
    f = seq.frames[1]
    kp = f.keypoints.copy()
    kp[0, HUMAN.index("left_wrist"), 0] = -40.0  # left wrist guessed beyond the left edge
    seq.frames[1] = PoseFrame(f.index, f.timestamp, kp, f.confidence, f.scores, f.track_ids, f.image_size, f.world)
    live = frame_angles(seq.frames[1], HUMAN)
    assert np.isnan(live[("elbow_flexion", "left")][0]) and np.isfinite(live[("elbow_flexion", "right")][0])
    deg, _ = compute_angles(seq).series(0, "elbow_flexion", "left")
    assert np.isfinite(deg[0]) and np.isnan(deg[1])
