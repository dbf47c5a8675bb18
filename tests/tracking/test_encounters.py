"""Close encounters (tracking.encounters): two tracks touching, a swap of their ids suspected, the repair."""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import load_skeleton
from posetracker.tracking.encounters import close_encounters, repair_swaps
from posetracker.types import PoseFrame, PoseSequence

SPEC = load_skeleton("human18")
FPS = 30.0


def person(cx: float, cy: float, height: float) -> np.ndarray:
    """(K, 3) keypoints of a stick person centred at (cx, cy), ``height`` px tall, depth 3 m."""
    rng = np.random.default_rng(0)
    offsets = rng.uniform(-0.5, 0.5, (SPEC.num_joints, 2)) * [height * 0.4, height]
    return np.concatenate([offsets + [cx, cy], np.full((SPEC.num_joints, 1), 3.0)], axis=1)


def sequence(paths: list[list[tuple[float, float, float]]], ids: list[list[int]]) -> PoseSequence:
    """paths[p][t] = (cx, cy, height) of person p at frame t; ids[p][t] its track id there."""
    frames = []
    for t in range(len(paths[0])):
        kp = np.stack([person(*paths[p][t]) for p in range(len(paths))]).astype(np.float32)
        frames.append(PoseFrame(t, t / FPS, kp, np.full(kp.shape[:2], 0.9, np.float32),
                                np.full(len(paths), 0.9, np.float32), np.array([i[t] for i in ids], np.int64),
                                (1280, 720)))
    return PoseSequence(frames, FPS, SPEC)


def crossing(frames: int = 60, swap_at: int | None = None, sizes=(200.0, 200.0)):
    """Two people walking towards each other along y = 400 and past each other at frame frames/2;
    with ``swap_at`` the tracker gave each the other's id from that frame on."""
    a = [(200 + 15 * t, 400, sizes[0]) for t in range(frames)]
    b = [(1100 - 15 * t, 400, sizes[1]) for t in range(frames)]
    ids_a = [0 if swap_at is None or t < swap_at else 1 for t in range(frames)]
    ids_b = [1 if swap_at is None or t < swap_at else 0 for t in range(frames)]
    return sequence([a, b], [ids_a, ids_b])


def test_a_clean_crossing_is_an_encounter_without_suspicion():
    (e,) = close_encounters(crossing())
    assert e.tracks == (0, 1) and e.start < 30 < e.end  # they overlap around the middle
    assert not e.swap_suspected and e.kept_cost < e.swapped_cost


def test_ids_handed_over_at_the_crossing_are_suspected_and_repaired():
    seq = crossing(swap_at=30)
    (e,) = close_encounters(seq)
    assert e.swap_suspected and e.swapped_cost < e.kept_cost
    fixed, repaired = repair_swaps(seq)
    assert repaired == [e]
    left = [int(f.track_ids[0]) for f in fixed.frames]  # the person who started on the left
    assert left[: e.start] == [0] * e.start and left[e.end + 1:] == [0] * (len(left) - e.end - 1)
    assert [int(f.track_ids[0]) for f in seq.frames][-1] == 1  # the input is unchanged
    assert not any(x.swap_suspected for x in close_encounters(fixed))  # nothing left to repair
    d = e.as_dict(seq)
    assert d["tracks"] == [0, 1] and d["swap_suspected"] and d["frames"][0] == seq.frames[e.start].index


def test_size_tells_two_people_apart_where_motion_cannot():
    """They meet and part without crossing (each turns back): motion alone would read a swap; a big and a small
    person keep their ids."""
    frames = 60
    a = [(200 + 15 * min(t, 30) - 15 * max(0, t - 30), 400, 300.0) for t in range(frames)]
    b = [(1100 - 15 * min(t, 30) + 15 * max(0, t - 30), 400, 150.0) for t in range(frames)]
    seq = sequence([a, b], [[0] * frames, [1] * frames])
    encounters = close_encounters(seq, iou=0.05)
    assert encounters and not any(e.swap_suspected for e in encounters)


def test_no_context_no_suspicion_and_two_repairs_chain():
    short = sequence([[p] * 1 for p in [(600, 400, 200.0), (620, 400, 200.0)]], [[0], [1]])
    (e,) = close_encounters(short)
    assert not e.swap_suspected and np.isnan(e.kept_cost)  # seen on one side only: listed, never suspected
    # two crossings, the ids swapped at both: one repair each, the second under the ids the first left
    frames = 120
    a = [(200 + 15 * t if t < 60 else 1100 - 15 * (t - 60), 400, 200.0) for t in range(frames)]
    b = [(1100 - 15 * t if t < 60 else 200 + 15 * (t - 60), 400, 200.0) for t in range(frames)]
    wrong = [0 if t < 30 else 1 if t < 90 else 0 for t in range(frames)]
    seq = sequence([a, b], [wrong, [1 - w for w in wrong]])
    fixed, repaired = repair_swaps(seq)
    assert len(repaired) == 2
    first = [int(f.track_ids[0]) for f in fixed.frames]
    inside = {t for e in repaired for t in range(e.start, e.end + 1)}
    assert {first[t] for t in range(frames) if t not in inside} == {0}


def test_finishing_lists_encounters_warns_of_and_repairs_suspected_swaps():
    """The finishing step every front end takes (motion.finish): encounters in the metadata, a warning for the
    front end to show, and with repair_swaps (process's --repair-swaps) the ids swapped back; the input kept."""
    from posetracker.depth.camera_meta import CameraFov
    from posetracker.motion.finish import finish_sequence

    camera = CameraFov(60.0, "user", "--fov")  # the camera it was tracked with: not re-lifted
    seq = crossing(swap_at=30)
    listed, warnings = finish_sequence(seq, camera, rigid_bones=True)
    assert listed.metadata["encounters"][0]["swap_suspected"] and "encounters" not in seq.metadata
    assert listed.metadata["camera"] == camera.as_dict() and "swaps_repaired" not in listed.metadata
    assert len(warnings) == 1 and "ids may have swapped in 1 of 1 close encounters: tracks 0/1" in warnings[0]
    assert int(listed.frames[-1].track_ids[0]) == 1  # listed, not repaired
    fixed, warnings = finish_sequence(crossing(swap_at=30), camera, rigid_bones=True, repair_swaps=True)
    assert int(fixed.frames[-1].track_ids[0]) == 0 and len(fixed.metadata["swaps_repaired"]) == 1
    assert "swapped back" in warnings[0]
    again, warnings = finish_sequence(fixed, None, rigid_bones=True)
    assert again is fixed and warnings == []  # finished once: as it is
    assert finish_sequence(crossing(), camera, rigid_bones=True)[1] == []  # passed each other: nothing to say
