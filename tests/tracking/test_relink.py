"""Offline re-linking of one person's track fragments (tracking.relink) on synthetic walkers (human18, 30 fps)."""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import load_skeleton
from posetracker.tracking.relink import fragments, link_cost, relink_fragments
from posetracker.types import PoseFrame
from synthetic_people import STANDING

SPEC = load_skeleton("human18")
FPS = 30.0
PX_PER_M = 170.0


def frames_of(people: dict[int, dict[int, tuple[float, float]]], n: int, build: dict[int, float] | None = None,
              seed: int = 0) -> list[PoseFrame]:
    """{track id: {frame: hips (x, y) px}} -> n PoseFrames; world from the same template in metres, 4 m away,
    scaled by ``build[id]`` (default 1)."""
    rng = np.random.default_rng(seed)
    build = build or {}
    out = []
    for t in range(n):
        here = [(tid, xy[t]) for tid, xy in people.items() if t in xy]
        kp = np.zeros((len(here), SPEC.num_joints, 3), np.float32)
        world = np.zeros_like(kp)
        for p, (tid, (x, y)) in enumerate(here):
            kp[p, :, :2] = STANDING + [x, y] + rng.normal(0, 1.5, STANDING.shape)
            kp[p, :, 2] = 4.0
            world[p, :, :2] = STANDING / PX_PER_M * build.get(tid, 1.0)
            world[p, :, 2] = 4.0
        out.append(PoseFrame(t, t / FPS, kp, np.full(kp.shape[:2], 0.9, np.float32),
                             np.full(len(here), 0.9, np.float32), np.array([tid for tid, _ in here], np.int64),
                             (1280, 720), world))
    return out


def walk(x0: float, y: float, vx: float, frames: range) -> dict[int, tuple[float, float]]:
    """Hips at x0 + vx t (px, t in frames) along y, over ``frames``."""
    return {t: (x0 + vx * t, y) for t in frames}


def ids_at(frames: list[PoseFrame], t: int) -> dict[int, float]:
    """{track id: hips x} in frame t."""
    return {int(i): float(k[11:13, 0].mean()) for i, k in zip(frames[t].track_ids, frames[t].keypoints)}


def test_a_walker_behind_an_occluder_keeps_one_id_and_decoys_stay_apart():
    """Track 0 walks right and is hidden for 20 frames (0.67 s, longer than the tracker's retention would need
    to be generous); track 3 comes out on its extrapolated path: joined. Track 5 starts in the gap far away
    (the other side of the image), track 6 is near the path but seen in the same frames as track 0: neither is
    joined to it. Track 1 walks on its own throughout."""
    people = {0: walk(100, 400, 8, range(0, 40)), 3: walk(100, 400, 8, range(60, 120)),
              5: walk(1400, 380, -4, range(50, 120)), 6: walk(440, 420, 8, range(30, 45)),
              1: walk(200, 650, 3, range(0, 120))}
    frames = frames_of(people, 120)
    out, report = relink_fragments(frames, SPEC)
    assert report["joined"] == {3: 0}, report
    assert report["tracks_before"] == 5 and report["tracks_after"] == 4
    (link,) = report["links"]
    assert (link["from"], link["to"]) == (0, 3) and abs(link["gap_s"] - 21 / FPS) < 1e-6 and link["cost"] < 1
    assert set(ids_at(out, 100)) == {0, 1, 5}
    assert [int(i) for f in out for i in f.track_ids].count(0) == 100
    assert 3 in frames[100].track_ids.tolist()  # the input is not modified


def test_two_people_crossing_while_hidden_each_get_their_own_id_back():
    """A (track 0) walks right, B (track 1) walks left a little further back; both are lost around the crossing
    for 20 frames. Each comes out past the other: the nearest start to A's end is B's (tracks 2 and 3 below),
    so position alone would swap them; the motion, both ways in time, does not."""
    people = {0: walk(200, 400, 10, range(0, 35)), 1: walk(1000, 430, -10, range(0, 35)),
              2: walk(200, 400, 10, range(55, 90)), 3: walk(1000, 430, -10, range(55, 90))}
    frames = frames_of(people, 90)
    a_end, b_end = ids_at(frames, 34)[0], ids_at(frames, 34)[1]
    a_back, b_back = ids_at(frames, 55)[2], ids_at(frames, 55)[3]
    assert abs(a_end - b_back) < abs(a_end - a_back) and abs(b_end - a_back) < abs(b_end - b_back)
    out, report = relink_fragments(frames, SPEC)
    assert report["joined"] == {2: 0, 3: 1}, report
    for t in (60, 89):
        ids = ids_at(out, t)
        assert ids[0] > ids[1], (t, ids)  # A (id 0) has passed B and is on the right, walking right


def test_a_chain_of_three_fragments_becomes_one_track_with_the_first_id():
    """One walker lost twice: tracks 4 -> 7 -> 9, each 15 frames after the last; one assignment (or a second
    round) joins all three under 4, the earliest id."""
    people = {4: walk(100, 400, 6, range(0, 30)), 7: walk(100, 400, 6, range(45, 75)),
              9: walk(100, 400, 6, range(90, 120)), 2: walk(300, 650, 0, range(0, 120))}
    frames = frames_of(people, 120)
    out, report = relink_fragments(frames, SPEC)
    assert report["joined"] == {7: 4, 9: 4}, report
    assert report["tracks_after"] == 2
    assert {int(i) for f in out for i in f.track_ids} == {2, 4}


def test_a_gap_longer_than_max_gap_is_not_bridged_but_a_shorter_limit_can_be_raised():
    people = {0: walk(100, 400, 4, range(0, 30)), 1: walk(100, 400, 4, range(120, 150))}  # 3 s apart
    frames = frames_of(people, 150)
    assert relink_fragments(frames, SPEC, max_gap_s=2.0)[1]["joined"] == {}
    assert relink_fragments(frames, SPEC, max_gap_s=4.0)[1]["joined"] == {1: 0}


def test_unconfirmed_people_and_empty_frames_pass_through():
    people = {0: walk(100, 400, 8, range(0, 30)), 3: walk(100, 400, 8, range(45, 60)),
              -1: walk(900, 300, 0, range(60))}
    frames = frames_of(people, 60)
    frames[50] = PoseFrame.empty(50, 50 / FPS, SPEC.num_joints, (1280, 720))
    out, report = relink_fragments(frames, SPEC)
    assert report["joined"] == {3: 0}
    assert all(-1 in f.track_ids.tolist() for t, f in enumerate(out) if t != 50)
    assert out[50].num_people == 0
    assert relink_fragments([], SPEC)[1] == {"tracks_before": 0, "tracks_after": 0, "joined": {}, "links": []}


def test_link_cost_terms_grow_with_the_miss_the_size_and_the_build():
    """link_cost: the continuation on the path costs least; one off the path, one twice as large in the image
    and one with a 40 % taller skeleton (world) each cost more through their own term."""
    base = {0: walk(100, 400, 8, range(0, 30))}
    on = frames_of({**base, 1: walk(100, 400, 8, range(45, 60))}, 60)
    off = frames_of({**base, 1: walk(100, 800, 8, range(45, 60))}, 60)
    taller = frames_of({**base, 1: walk(100, 400, 8, range(45, 60))}, 60, build={1: 1.4})
    big = frames_of({**base, 1: walk(100, 400, 8, range(45, 60))}, 60)
    for f in big[45:]:
        hips = f.keypoints[0, 11:13, :2].mean(0)
        f.keypoints[0, :, :2] = (f.keypoints[0, :, :2] - hips) * 2 + hips
    mirror = np.asarray(SPEC.mirror_index)
    cost = {name: link_cost(*(lambda fr: (fr[0], fr[1]))(fragments(fr, SPEC)), mirror)
            for name, fr in {"on": on, "off": off, "taller": taller, "big": big}.items()}
    assert cost["on"]["cost"] < 0.2
    assert cost["off"]["motion"] > 1 > cost["on"]["motion"] * 10
    assert cost["big"]["size"] > 1 and cost["big"]["cost"] > 1
    assert cost["taller"]["build"] > 1 > cost["on"]["build"] * 10
    assert abs(cost["on"]["gap_s"] - 16 / FPS) < 1e-9
