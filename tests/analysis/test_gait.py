"""Foot contact, heel strikes / toe offs and strides on synthetic side-view walkers with known events."""

from __future__ import annotations

import numpy as np
import pytest

from gait_synthetic import walker, with_frames
from posetracker.analysis.foot_contact import (
    CONTACT, HEEL_STRIKE, SWING, TOE_OFF, UNKNOWN, ContactSettings, GaitError, foot_contacts,
)
from posetracker.analysis.gait import GaitSettings, analyse_gait, summarise_gait
from posetracker.skeletons import load_skeleton
from posetracker.tracks import TrackError, person_tracks
from posetracker.types import PoseFrame, PoseSequence

FEET = ("left", "right")
TOL_S = 0.07  # s: the speed thresholds cross a little before the foot lands and after it lifts (two frames at 30 fps)


def tol(fps):
    return int(np.ceil(TOL_S * fps))


def events(gait, kind, foot):
    return [e.index for e in gait.events if e.kind == kind and e.foot == foot]


def assert_matches(found, truth, frames, n=None, margin=0):
    """Every detected event within ``frames`` of its own true one, one to one (nothing extra), and every true
    event at least ``margin`` frames from both ends of an ``n``-frame track found."""
    pairs = {t: [f for f in found if abs(f - t) <= frames] for t in truth}
    assert all(len(v) <= 1 for v in pairs.values()), (found, truth)
    assert sorted(f for v in pairs.values() for f in v) == sorted(found), (found, truth)
    n = n if n is not None else max(truth + found, default=0) + 1
    assert all(pairs[t] for t in truth if margin <= t < n - margin), (found, truth)


@pytest.mark.parametrize("kw", [{}, {"direction": -1}, {"treadmill": True}, {"fps": 24.0, "cadence_spm": 95.0},
                                {"fps": 60.0}])
def test_heel_strikes_and_toe_offs_of_a_steady_walk(kw):
    w = walker(**kw)
    gait = analyse_gait(w.seq)[0]
    n, fps = len(w.seq), w.seq.fps
    for foot in FEET:
        hs, to = events(gait, HEEL_STRIKE, foot), events(gait, TOE_OFF, foot)
        assert_matches(hs, w.heel_strikes[foot], tol(fps), n, int(0.15 * fps) + tol(fps))
        assert_matches(to, w.toe_offs[foot], tol(fps), n, int(0.15 * fps) + tol(fps))
    assert not len(gait.contacts.swaps)
    strides = gait.strides
    assert len(strides) >= 6
    for s in strides:
        assert s.stride_s == pytest.approx(w.stride_s, abs=1.01 / fps)
        assert s.step_s == pytest.approx(w.stride_s / 2, abs=1.01 / fps)
        assert s.cadence_spm == pytest.approx(120.0 / s.stride_s)
        assert s.stance_pct + s.swing_pct == pytest.approx(100.0)
        assert 100 * w.stance_frac - 2 <= s.stance_pct <= 100 * w.stance_frac + 2 * 100 * TOL_S / w.stride_s
        assert s.angle_method == "2d"


def test_the_treadmill_belt_is_the_ground():
    w = walker(treadmill=True)
    gait = analyse_gait(w.seq)[0]
    leg_m = 0.9  # gait_synthetic.THIGH + SHANK
    assert np.nanmedian(gait.contacts.ground[:, 0]) == pytest.approx(-w.speed_m_s / leg_m, rel=0.05)
    over = analyse_gait(walker().seq)[0]
    assert np.nanmedian(over.contacts.ground[:, 0]) == pytest.approx(0.0, abs=0.02)
    assert [e.index for e in gait.events] == [e.index for e in over.events]  # the same walk, moving or not


def test_standing_still_is_contact_throughout_with_no_events():
    gait = analyse_gait(walker(stand=True).seq)[0]
    c = gait.contacts.contact
    assert (c[1:-1] == CONTACT).all()
    assert gait.events == [] and gait.strides == []


def test_stride_angles_are_the_range_over_the_stride_of_that_side():
    w = walker()
    gait = analyse_gait(w.seq)[0]
    spec = w.seq.skeleton
    kp = person_tracks(w.seq)[0].keypoints[..., :2]

    def angle(a, b):  # unsigned angle between (T, 2) vectors, degrees
        cos = np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        return np.degrees(np.arccos(np.clip(cos, -1, 1)))

    J = spec.index
    trunk = kp[:, [J("left_hip"), J("right_hip")]].mean(1) - kp[:, [J("left_shoulder"), J("right_shoulder")]].mean(1)
    for s in gait.strides:
        i, j = s.start_frame, s.end_frame + 1
        hip, knee, ankle = (kp[i:j, J(f"{s.foot}_{n}")] for n in ("hip", "knee", "ankle"))
        flex = angle(knee - hip, ankle - knee)
        assert s.knee_rom_deg == pytest.approx(flex.max() - flex.min(), abs=0.05)
        thigh = angle(trunk[i:j], knee - hip)
        assert s.hip_rom_deg == pytest.approx(thigh.max() - thigh.min(), abs=0.05)
        assert s.knee_rom_deg > 20


def _blank(frames, joints, conf_only=True):
    def fn(index, kp, conf):
        if index in frames:
            conf[0, joints] = 0.0
            if not conf_only:
                kp[0, joints] = np.nan
    return fn


@pytest.mark.parametrize("conf_only", [True, False])
def test_a_gap_gives_no_events_and_breaks_the_strides_across_it(conf_only):
    w = walker()
    spec = w.seq.skeleton
    lo, hi = 50, 66  # half a second without the left ankle, over its landing at frame 59
    seq = with_frames(w.seq, _blank(set(range(lo, hi)), [spec.index("left_ankle")], conf_only))
    gait = analyse_gait(seq)[0]
    full = analyse_gait(w.seq)[0]
    c = gait.contacts.contact[:, 0]
    assert (c[lo:hi] == UNKNOWN).all()
    assert [e for e in gait.events if e.foot == "left" and lo - 2 <= e.index <= hi + 2] == []
    left = [s for s in gait.strides if s.foot == "left"]
    assert all(s.end_frame < lo or s.start_frame >= hi for s in left)
    assert len(left) < len([s for s in full.strides if s.foot == "left"])
    assert [s.start_frame for s in gait.strides if s.foot == "right"] == \
        [s.start_frame for s in full.strides if s.foot == "right"]
    steps = [s for s in gait.strides if s.foot == "right" and s.start_frame < 59 < s.end_frame]
    assert steps and all(np.isnan(s.step_s) for s in steps)  # the left landing inside the gap is unknown


def test_a_one_frame_dropout_is_bridged_and_never_an_event():
    w = walker()
    spec = w.seq.skeleton
    truth = w.heel_strikes["right"]
    drop = {truth[2] + 8, truth[3] - 1}  # mid-stance, and the frame before a landing
    seq = with_frames(w.seq, _blank(drop, [spec.index("right_ankle")]))
    gait = analyse_gait(seq)[0]
    full = analyse_gait(w.seq)[0]
    assert gait.contacts.bridged[sorted(drop), 1].all() and gait.contacts.bridged.sum() == 2
    assert (gait.contacts.contact[:, 1] != UNKNOWN)[5:-5].all()
    right = [e.index for e in gait.events if e.foot == "right" and e.kind == HEEL_STRIKE]
    assert not any(abs(i - d) <= 1 for i in right for d in drop if i - d in (0, 1))
    assert len(gait.strides) >= len(full.strides) - 2  # only the strides ending or starting at a guessed landing go


def test_left_right_label_swaps_at_every_crossing_are_undone_once_before_the_gait_table():
    """As networks do in side views: "left" is the foot in front, so the labels swap whenever the feet pass. The
    motion step (motion.sides, which the session runs) exchanges the legs back; the gait analysis reads them as
    given, so its left foot is the sequence's left foot in every frame (the swapped walk read as named: strides
    about half as long as the walker's)."""
    import dataclasses

    from posetracker.motion.sides import one_leg_each

    w = walker()
    spec = w.seq.skeleton
    legs = [(spec.index(f"left_{n}"), spec.index(f"right_{n}")) for n in ("hip", "knee", "ankle")]
    kp0 = np.stack([f.keypoints[0] for f in w.seq.frames])
    front_is_left = kp0[:, legs[2][0], 0] >= kp0[:, legs[2][1], 0]

    def swap(index, kp, conf):
        if not front_is_left[index]:
            for a, b in legs:
                kp[0, [a, b]] = kp[0, [b, a]]

    swapped = with_frames(w.seq, swap)
    as_named = analyse_gait(swapped)[0]
    assert not len(as_named.contacts.swaps)  # the gait table exchanges nothing itself
    np.testing.assert_array_equal(as_named.track.keypoints, person_tracks(swapped)[0].keypoints)
    assert as_named.strides and all(s.stride_s < 0.6 * w.stride_s for s in as_named.strides)
    frames, swaps = one_leg_each(swapped.frames, spec, swapped.fps)
    assert len(swaps[0]) >= 8
    decided = dataclasses.replace(swapped, frames=frames)
    gait = analyse_gait(decided)[0]
    assert not len(gait.contacts.swaps)
    np.testing.assert_array_equal(gait.track.keypoints, person_tracks(decided)[0].keypoints)
    seen = ~gait.contacts.bridged[:, 0]
    np.testing.assert_allclose(gait.contacts.position[seen, 0], gait.track.keypoints[seen, legs[2][0], :2])
    clean = analyse_gait(w.seq)[0]
    strikes = [(e.index, e.foot) for e in gait.events if e.kind == HEEL_STRIKE]
    assert_matches([i for i, _ in strikes], [e.index for e in clean.heel_strikes()], 1)
    assert all(a != b for (_, a), (_, b) in zip(strikes[:-1], strikes[1:]))  # the feet alternate again
    assert len(gait.strides) >= len(clean.strides) - 1
    for s in gait.strides:
        assert s.stride_s == pytest.approx(w.stride_s, abs=1.01 / w.seq.fps)


def test_summary_rows_per_foot_and_both():
    w = walker()
    gaits = analyse_gait(w.seq)
    rows = summarise_gait(gaits)
    assert [(r.person_id, r.foot) for r in rows] == [(0, "left"), (0, "right"), (0, "both")]
    both = rows[2]
    assert both.strides == rows[0].strides + rows[1].strides == len(gaits[0].strides)
    assert both.cadence_spm == pytest.approx(120.0 / both.stride_s)
    assert both.cadence_spm == pytest.approx(110.0, rel=0.03)
    assert both.step_s == pytest.approx(w.stride_s / 2, abs=0.02)


def test_a_pause_is_not_a_stride():
    """Walk, stop for two seconds in double support, walk on: no stride spans the pause (max_stride_s)."""
    w = walker()
    hold = w.heel_strikes["right"][2] + 2  # both feet on the ground
    frames = []
    for i, f in enumerate(w.seq.frames[:hold] + [w.seq.frames[hold]] * 60 + w.seq.frames[hold:]):
        frames.append(PoseFrame(i, i / w.seq.fps, f.keypoints, f.confidence, f.scores, f.track_ids, f.image_size))
    gait = analyse_gait(PoseSequence(frames, w.seq.fps, w.seq.skeleton))[0]
    assert len(gait.strides) >= 6
    assert all(s.stride_s <= GaitSettings().max_stride_s for s in gait.strides)
    assert not any(s.start_frame < hold + 30 < s.end_frame for s in gait.strides)
    long = analyse_gait(PoseSequence(frames, w.seq.fps, w.seq.skeleton), settings=GaitSettings(max_stride_s=4.0))[0]
    assert any(s.start_frame < hold + 30 < s.end_frame for s in long.strides)


def test_bad_input_gives_clear_errors():
    with pytest.raises(GaitError, match="ankle"):
        mouse = load_skeleton("mouse4")
        frame = PoseFrame(0, 0.0, np.zeros((1, mouse.num_joints, 3), np.float32),
                          np.ones((1, mouse.num_joints), np.float32), np.ones(1, np.float32), np.zeros(1, np.int64))
        analyse_gait(PoseSequence([frame], 30.0, mouse))
    seq = walker(seconds=1.0).seq
    with pytest.raises(TrackError, match="no person with track id 3"):
        analyse_gait(seq, person=3)
    with pytest.raises(TrackError, match="no frames"):
        analyse_gait(PoseSequence([], 30.0, seq.skeleton))
    with pytest.raises(GaitError, match="on_fraction"):
        analyse_gait(seq, settings=GaitSettings(contact=ContactSettings(on_fraction=0.6, off_fraction=0.5)))
    with pytest.raises(GaitError, match="max_stride_s"):
        analyse_gait(seq, settings=GaitSettings(max_stride_s=0))


def test_a_person_never_seen_well_has_unknown_contact_and_nothing_else():
    w = walker(seconds=2.0)
    spec = w.seq.skeleton
    seq = with_frames(w.seq, _blank(set(range(len(w.seq))), [spec.index("left_ankle"), spec.index("right_ankle")]))
    track = person_tracks(seq)[0]
    c = foot_contacts(track, spec, image_size=(1280, 720))
    assert (c.contact == UNKNOWN).all() and np.isnan(c.speed).all()
    gait = analyse_gait(seq)[0]
    assert gait.events == [] and gait.strides == []
    assert set(np.unique(analyse_gait(w.seq)[0].contacts.contact)) <= {CONTACT, SWING, UNKNOWN}


def test_heel_and_toe_joints_join_the_foot_point_when_the_skeleton_has_them():
    import yaml

    from posetracker.analysis.foot_contact import foot_joints
    from posetracker.skeletons import SKELETON_DIR, spec_from_dict

    data = yaml.safe_load((SKELETON_DIR / "human18.yaml").read_text())
    centre = data["joints"].pop()
    for side in FEET:
        data["joints"] += [{"name": f"{side}_heel", "parent": f"{side}_ankle"},
                           {"name": f"{side}_big_toe", "parent": f"{side}_ankle"}]
    data["joints"].append(centre)
    data["name"], data["sigmas"] = "human18feet", None
    spec = spec_from_dict(data)
    assert [spec.joint_names[j] for j in foot_joints(spec)["left"]] == ["left_ankle", "left_heel", "left_big_toe"]
    w = walker()
    base = w.seq.skeleton
    frames = []
    for f in w.seq.frames:
        kp = np.zeros((1, spec.num_joints, 3), np.float32)
        conf = np.full((1, spec.num_joints), 0.9, np.float32)
        for name in base.joint_names:
            kp[0, spec.index(name)] = f.keypoints[0, base.index(name)]
        for side in FEET:  # the foot under the ankle, toes forward (walking right)
            ankle = f.keypoints[0, base.index(f"{side}_ankle")]
            kp[0, spec.index(f"{side}_heel")] = ankle + [-5, 8, 0]
            kp[0, spec.index(f"{side}_big_toe")] = ankle + [15, 9, 0]
            if 100 <= f.index < 120:
                conf[0, spec.index(f"{side}_big_toe")] = 0.0  # no toes: the foot is not seen
        frames.append(PoseFrame(f.index, f.timestamp, kp, conf, f.scores, f.track_ids, f.image_size))
    gait = analyse_gait(PoseSequence(frames, w.seq.fps, spec))[0]
    ankle_only = analyse_gait(w.seq)[0]
    assert (gait.contacts.contact[100:120] == UNKNOWN).all()
    assert not np.allclose(gait.contacts.position[:100], ankle_only.contacts.position[:100])  # the mean of three
    same = [e.index for e in ankle_only.events if e.index < 90]
    assert [e.index for e in gait.events if e.index < 90] == same
