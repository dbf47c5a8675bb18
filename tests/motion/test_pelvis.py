"""One pelvis per person (motion.pelvis): the hips a constant width apart, each leg moved with its hip; a rig of
constant bones driven by the finished motion (the BVH's) then stands on the ankles the session held, with no leg
repair in the exporter."""

from __future__ import annotations

import dataclasses

import numpy as np
from floor_synthetic import scene

from posetracker.analysis.held_ground import held_ground
from posetracker.export.bvh import BvhOptions, solve_person
from posetracker.export.bvh_solve import world_rotations
from posetracker.motion.feet import plant_feet
from posetracker.motion.pelvis import pelvis_world, rigid_pelvis
from posetracker.tracking.bones import rigid_tracks
from posetracker.tracks import person_tracks
from posetracker.types import PoseSequence

LEGS = ("hip", "knee", "ankle")


def _squeezed(seq: PoseSequence, seed: int = 0) -> PoseSequence:
    """``seq`` with one length per bone of the tree (as the session gives it) and each frame's hips read from 55 to
    105 % of their width apart about the mid-hip, each leg moved with its hip (a depth reading that squeezes the
    pelvis: the hips hang off the virtual centre, so no bone length holds them)."""
    seq = dataclasses.replace(seq, frames=rigid_tracks(seq.frames, seq.skeleton))
    spec = seq.skeleton
    rng = np.random.default_rng(seed)
    frames = []
    for f in seq.frames:
        w = f.world.astype(np.float64)
        lh, rh = spec.index("left_hip"), spec.index("right_hip")
        mid, half = 0.5 * (w[:, lh] + w[:, rh]), 0.5 * (w[:, lh] - w[:, rh])
        squeeze = rng.uniform(0.55, 1.05, size=(len(w), 1))
        for side, sign in (("left", 1.0), ("right", -1.0)):
            shift = mid + sign * squeeze * half - w[:, spec.index(f"{side}_hip")]
            for j in LEGS:
                w[:, spec.index(f"{side}_{j}")] += shift
        frames.append(dataclasses.replace(f, world=w.astype(f.world.dtype)))
    return dataclasses.replace(seq, frames=frames)


def _rig_ankles_off(seq: PoseSequence) -> tuple[np.ndarray, np.ndarray]:
    """cm, over every stance frame the session held: the distance of the BVH rig's ankle (forward kinematics of the
    exporter's solved motion, in the person's floor frame) from the motion's own ankle, and from the point the
    session held that phase's ankle on (``metadata["feet"]``)."""
    ground = held_ground(seq)
    spec = seq.skeleton
    to_world, to_held = [], []
    for tid, track in person_tracks(seq).items():
        motion = solve_person(track, spec, seq.fps, BvhOptions(), ground)
        rig = motion.rig
        world = world_rotations(motion.euler, rig.parents, motion.order)
        pos = np.zeros(world.shape[:2] + (3,))
        pos[:, 0] = motion.root
        for j, p in enumerate(rig.parents):
            if p >= 0:
                pos[:, j] = pos[:, p] + world[:, p] @ rig.offsets[j]
        pos[:, :, [0, 2]] -= motion.shift[[0, 2]]  # the person's floor frame (Y: already up from their floor)
        first = motion.report["takes"][0]["start_frame"] - int(track.frames[0])
        joints = ground.frame.to_person_floor(track.world, tid)
        for phase, held in zip(ground.phases[tid], seq.metadata["feet"]["people"][str(tid)]["phases"]):
            side = ("left", "right")[phase.foot]
            rig_ankle = pos[np.arange(phase.start, phase.stop) - first, rig.names.index(f"{side.title()}Foot")]
            to_world.append(np.linalg.norm(rig_ankle - joints[phase.start:phase.stop, spec.index(f"{side}_ankle")], axis=1))
            to_held.append(np.linalg.norm(rig_ankle - np.array(held["point_m"]), axis=1))
    return 100 * np.concatenate(to_world), 100 * np.concatenate(to_held)


def test_the_hips_are_one_width_apart_and_the_legs_keep_their_shape():
    seq = _squeezed(scene(n=90, noise_m=0.003, seed=2).seq)
    spec = seq.skeleton
    world = np.stack([f.world[0] for f in seq.frames]).astype(np.float64)
    index = {n: spec.index(n) for n in ("left_hip", "right_hip", "left_shoulder", "right_shoulder")}
    legs = {s: (spec.index(f"{s}_knee"), spec.index(f"{s}_ankle")) for s in ("left", "right")}
    out = pelvis_world(world, index, legs, 1 / 30)
    width = np.linalg.norm(out[:, index["left_hip"]] - out[:, index["right_hip"]], axis=1)
    was = np.linalg.norm(world[:, index["left_hip"]] - world[:, index["right_hip"]], axis=1)
    assert was.std() > 0.02 and width.std() < 1e-9  # m: one width
    np.testing.assert_allclose(width, np.median(was), atol=1e-9)
    mid = lambda w: 0.5 * (w[:, index["left_hip"]] + w[:, index["right_hip"]])  # noqa: E731
    np.testing.assert_allclose(mid(out), mid(world), atol=1e-9)  # the root does not move
    for side in ("left", "right"):
        joints = [spec.index(f"{side}_{j}") for j in LEGS]
        np.testing.assert_allclose(out[:, joints] - out[:, joints[:1]], world[:, joints] - world[:, joints[:1]],
                                   atol=1e-9)  # the leg moved as one piece
    others = [k for k in range(spec.num_joints) if not any(k == spec.index(f"{s}_{j}") for s in ("left", "right")
                                                            for j in LEGS)]
    np.testing.assert_array_equal(out[:, others], world[:, others])


def test_the_rig_stands_on_the_held_ankles():
    """The BVH exporter's rig (constant bones and pelvis, no leg repair) stands on the motion's stance ankles to a
    millimetre, and so within a centimetre of the points the session held them on (the hold is a soft term), once
    the session's motion has one pelvis; without it (the hips as read) the rig's hips, and with them its ankles,
    miss by centimetres."""
    seq = _squeezed(scene(n=240, noise_m=0.003, seed=4).seq)
    without, _ = plant_feet(seq)
    with_pelvis, report = plant_feet(rigid_pelvis(seq))
    assert report["planted"] and len(held_ground(with_pelvis).phases[0]) >= 10
    to_world, to_held = _rig_ankles_off(with_pelvis)
    was_world, was_held = _rig_ankles_off(without)
    assert to_world.max() < 0.1 and to_held.max() < 1.0, (to_world.max(), to_held.max())  # cm
    assert np.percentile(was_world, 90) > 1.0 and was_held.max() > 2.0, (np.percentile(was_world, 90), was_held.max())
