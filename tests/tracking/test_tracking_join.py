"""tracking.join: a recording tracked in parts (each with its own ids from 0) joined into one, on synthetic people."""

from __future__ import annotations

import dataclasses

import numpy as np

from posetracker.oks import joint_sigmas
from posetracker.tracking.join import join_parts, match_tracks
from posetracker.types import PoseSequence
from test_tracking import FPS, SPEC, make_frame, person

STARTS = [0, 30, 60]  # each part's own frames: [0, 30), [30, 60), [60, 90)
OVERLAP = 9  # frames each part also tracks of its neighbours
N = 90
MIRROR = np.asarray(SPEC.mirror_index)


def truth(t: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The people in frame t, (K, 2) px each: a walker throughout, one who leaves at 25 and one who arrives at
    35 where they left (never both there), and one who arrives at 75 (in the last part only)."""
    people = {"walker": person(100 + 3 * t, 300, rng)}
    if t < 25:
        people["leaver"] = person(450, 300, rng)
    if t >= 35:
        people["comer"] = person(450, 300, rng)
    if t >= 75:
        people["late"] = person(750, 300, rng)
    return people


def part(k: int, ids: dict[str, int], mirrored: str | None = None) -> PoseSequence:
    """Part k as its own tracker would give it: frames [start - OVERLAP, next start + OVERLAP), ids ``ids``
    (its own numbering), its own reading noise, score (k + 1) / 10 (to tell where a joined frame came from);
    ``mirrored``: that person read with every left/right pair the other way round throughout the part."""
    rng = np.random.default_rng(k)
    first, last = max(0, STARTS[k] - OVERLAP), min(N, STARTS[k + 1] + OVERLAP) if k + 1 < len(STARTS) else N
    frames = []
    for t in range(first, last):
        people = truth(t, rng)
        names = sorted(people, key=lambda n: ids[n])
        xy = [people[n][MIRROR] if n == mirrored else people[n] for n in names]
        f = make_frame(t, xy)
        frames.append(dataclasses.replace(f, track_ids=np.array([ids[n] for n in names], np.int64),
                                          scores=np.full(len(names), (k + 1) / 10, np.float32)))
    return PoseSequence(frames, fps=FPS, skeleton=SPEC)


def parts() -> list[PoseSequence]:
    return [part(0, {"walker": 0, "leaver": 1, "comer": 2, "late": 9}),
            part(1, {"comer": 0, "walker": 1, "leaver": 2, "late": 9}),
            part(2, {"walker": 0, "comer": 1, "late": 2, "leaver": 9}, mirrored="walker")]


def test_parts_join_into_one_recording_with_one_id_per_person():
    joined = join_parts(parts(), STARTS)
    assert [f.index for f in joined.frames] == list(range(N))
    assert np.allclose([f.timestamp for f in joined.frames], np.arange(N) / FPS)
    # each frame from the part whose own frames hold it (where it is furthest from a part's edge)
    assert [round(float(f.scores[0]) * 10) - 1 for f in joined.frames] == [0] * 30 + [1] * 30 + [2] * 30
    # one id per person over the whole recording, no id for two people: the walker and the one who leaves keep
    # part 0's ids, the one who arrives where the other left gets its own id, the late one a new id
    rng = np.random.default_rng(99)
    names: dict[int, set[str]] = {}
    for f in joined.frames:
        people = truth(f.index, rng)
        assert len(set(f.track_ids.tolist())) == f.num_people == len(people)
        for p, tid in enumerate(f.track_ids.tolist()):
            # the person nearest this one in the truth (noise 1.5 px; people >= 150 px apart)
            name = min(people, key=lambda n: np.abs(people[n] - f.keypoints[p, :, :2]).max())
            names.setdefault(tid, set()).add(name)
    assert names == {0: {"walker"}, 1: {"leaver"}, 2: {"comer"}, 3: {"late"}}


def test_a_part_that_read_someone_mirrored_is_turned_back():
    """Part 2 reads the walker with every left/right pair the other way round: matched all the same (its
    mirrored reading is compared too) and its sides swapped back, so the left shoulder stays on the left."""
    p = parts()
    sigmas = joint_sigmas(SPEC)
    assert 0 not in match_tracks(p[1].frames, p[2].frames, sigmas, 0.5 / FPS)  # as read, not the same person
    assert match_tracks(p[1].frames, p[2].frames, sigmas, 0.5 / FPS, MIRROR)[0] == 1
    joined = join_parts(p, STARTS)
    left, right = SPEC.joint_names.index("left_shoulder"), SPEC.joint_names.index("right_shoulder")
    for f in joined.frames:
        walker = f.keypoints[f.track_ids == 0][0]
        assert walker[left, 0] < walker[right, 0]  # the template's left shoulder is on the image's left
    f = joined.frames[70]  # in part 2: its own reading, sides swapped back (the same noise as in part 2)
    raw = p[2].frames[70 - (STARTS[2] - OVERLAP)]
    walker, read = f.keypoints[f.track_ids == 0][0], raw.keypoints[raw.track_ids == 0][0]
    assert np.array_equal(walker, read[MIRROR], equal_nan=True)


def test_trailing_empty_parts_are_dropped_and_a_late_part_is_an_error():
    p = parts()
    empty = PoseSequence([], fps=FPS, skeleton=SPEC)  # a part planned past the real end of the video
    assert len(join_parts([*p, empty], [*STARTS, 90])) == N
    late = PoseSequence([f for f in p[1].frames if f.index >= 30], fps=FPS, skeleton=SPEC)  # a seek landed late
    try:
        join_parts([p[0], late, p[2]], STARTS)
    except RuntimeError as exc:
        assert "part 2 of 3 does not start before its frame 30" in str(exc)
    else:
        raise AssertionError("a part that starts at its own first frame has no overlap to join on")
