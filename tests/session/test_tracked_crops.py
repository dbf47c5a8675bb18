"""Live top-down with crops placed where the last frame read the animals (``posetracker.tracked_crops``): the
whole-frame centre model runs every ``centre_every``-th frame and where the placed crops lose an animal (issue #49)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posetracker.decoding import DecodedPeople
from posetracker.decoding.top_down import CropReading
from posetracker.model.preprocess import Letterbox
from posetracker.skeletons import load_skeleton
from posetracker.session_config import PeopleSettings, RefineSettings, SessionConfig
from posetracker.stages import Pending, Prepared
from posetracker.tracked_crops import TrackedCrops

K = 13


def _flies(n: int, confidence: float, facing: float = 1.0) -> DecodedPeople:
    """n flies 200 px apart, every joint on the thorax but the head (joint 0), 30 px to its right (``facing`` 1)
    or left (-1)."""
    kp = np.stack([np.full((K, 2), 100.0 + 200 * i, np.float32) for i in range(n)]) if n else np.zeros((0, K, 2), np.float32)
    kp[:, 0, 0] += 30 * facing
    return DecodedPeople(kp, np.full((n, K), confidence, np.float32), np.ones(n, np.float32), np.full((n, K), np.nan),
                         kp.copy())


class _Session:
    """What TrackedCrops uses of a TrackingSession: ``_people`` records the animals it was handed (the placed
    crops', the joined ones or every centre's crops) and keeps them as the last frame's animals."""

    def __init__(self):
        self.config = SessionConfig(mode="live", people=PeopleSettings(max_people=2, known_count=2))
        self.net, self.runtime, self.calls = None, "torch", []
        self.spec = load_skeleton("fly13")
        self.crop_reading = CropReading(turns=2, rounds=1, align=self.spec.crop_align)
        self._crop_people = None

    def _input(self, frame):
        return torch.zeros(1, 3, 32, 32), None

    def _people(self, out, meta, budget_ms, placed=None):
        assert not out and placed is not None  # the centre model's outputs are decoded by TrackedCrops
        self.calls.append(meta.index)
        self._last_people = placed
        return meta.index


def _moved(people: DecodedPeople, dx: float) -> DecodedPeople:
    return DecodedPeople(people.keypoints + dx, people.confidence, people.scores, people.depth_reads, people.predicted)


def test_the_centre_model_confirms_the_placed_crops_and_only_a_lost_animal_is_searched(monkeypatch):
    """Frames 0-6, the centre model every 3rd: frame 0 (no last frame) reads every centre's crop; 1-2 placed
    crops; 3 (scheduled) the placed crops confirmed by the centre model's centres, no crop read from them; 4 a
    placed crop lost a fly: the centre model on demand, the other fly kept and only the lost one's centre read
    (at the session's two turns); 5 a fly end to end at one turn, read again at two; 6 (scheduled) the centre
    model finds no centre near the second fly: both kept (sure, near, facing), only the far centre read."""
    import posetracker.tracked_crops as tracked_crops

    session = _Session()
    tracked = TrackedCrops(session, every=3, turns=1)
    centre_inputs, every_centre = [], []
    monkeypatch.setattr(tracked, "centre", lambda x: centre_inputs.append(tuple(x.shape)) or {"heatmaps": torch.zeros(1)})
    far = _moved(_flies(1, 0.9), 600.0)
    centres = {0: _flies(2, 0.9), 3: _moved(_flies(2, 0.9), 10.0), 4: _flies(2, 0.9),
               6: DecodedPeople.concat([_flies(1, 0.9), far])}
    monkeypatch.setattr(tracked, "_centres", lambda out, meta: centres[meta.index])
    monkeypatch.setattr(tracked_crops, "SECOND_LOOKS", {
        "animal_crops": lambda s, people, meta, budget, t: every_centre.append(meta.index) or _flies(2, 0.6)})
    crops_read = []

    def crops(seeds, frame, root, crop_px, read, how, keep=None):
        i, turns = int(frame[0, 0, 0]), how.turns
        crops_read.append((i, seeds.num_people, round(float(seeds.confidence.max()), 3), keep, turns))
        if keep is None:  # a centre the kept flies do not explain: frame 4 the lost fly, frame 6 nothing there
            return _flies(2, 0.5).take(np.array([1])) if i == 4 else _moved(_flies(1, 0.05), 600.0)
        return _flies(1 if i == 4 else 2, 0.5, -1.0 if (i, turns) == (5, 1) else 1.0)

    monkeypatch.setattr(tracked_crops, "read_crops", crops)
    box = Letterbox(1.0, (64, 64))
    for i in range(7):
        meta = Pending(i, i / 30, box, None, np.full((64, 64, 3), i, np.uint8))
        item = tracked.infer(Prepared(torch.zeros(1, 3, 32, 32), meta, 0.0))
        assert bool(item.out) == (i % 3 == 0)  # no look-ahead: each frame's own item at once
        tracked.people(item.out, item.meta, None)
        assert session._last_people.num_people == 2
    assert session.calls == list(range(7)) and every_centre == [0]
    # seeds' joints at confidence 0, one turn (two where one turn read a fly end to end); a centre's crop at two
    assert crops_read == [(1, 2, 0.0, 2, 1), (2, 2, 0.0, 2, 1), (3, 2, 0.0, 2, 1), (4, 2, 0.0, 2, 1),
                          (4, 1, 0.9, None, 2), (5, 2, 0.0, 2, 1), (5, 2, 0.0, 2, 2), (6, 2, 0.0, 2, 1),
                          (6, 1, 0.9, None, 2)]
    np.testing.assert_array_equal(session._last_people.keypoints, _flies(2, 0.5).keypoints)  # the far reading dropped
    assert (tracked.frames, tracked.centre_runs, tracked.on_demand, tracked.turned) == (7, 4, 1, 1)
    assert (tracked.confirmed_runs, tracked.partial) == (1, 2) and len(centre_inputs) == 4
    tracked.reset()  # a new stream: no last animals, the schedule from its start
    assert session._last_people is None and tracked.seeds() is None and tracked.pushed == 0


def test_a_placed_animal_without_a_centre_near_it_is_not_confirmed():
    session = _Session()
    tracked = TrackedCrops(session, every=3)
    placed = _flies(2, 0.5)
    assert tracked.confirmed(placed, _moved(_flies(2, 0.9), 15.0))  # 21 px < 0.1 x the 250 px crop
    assert not tracked.confirmed(placed, _moved(_flies(2, 0.9), 20.0))  # 28 px
    assert not tracked.confirmed(placed, _flies(1, 0.9))  # one centre for two animals
    session.config = SessionConfig(mode="live", people=PeopleSettings(max_people=2))
    assert not tracked.confirmed(placed.take(np.array([0])), _flies(2, 0.9))  # room for a second, found by the centres
    assert tracked.confirmed(placed.take(np.array([0])), _flies(1, 0.9))


def test_an_unsure_last_frame_gives_no_seeds():
    session = _Session()
    tracked = TrackedCrops(session, every=4, min_confidence=0.3)
    session._last_people = _flies(2, 0.2)
    assert tracked.seeds() is None
    session._last_people = _flies(2, 0.4)
    seeds = tracked.seeds()
    assert seeds.num_people == 2 and not seeds.confidence.any()
    np.testing.assert_array_equal(seeds.keypoints, session._last_people.keypoints)
    assert not tracked.sure(_flies(1, 0.9), 2) and tracked.sure(_flies(2, 0.35), 2)
    # read at one turn, a fly the track had facing right now faces left
    assert tracked.facing(_flies(2, 0.5), seeds) and not tracked.facing(_flies(2, 0.5, facing=-1.0), seeds)


def test_centre_every_is_checked():
    assert RefineSettings(centre_every=3).centre_every == 3
    with pytest.raises(ValueError, match="centre_every"):
        RefineSettings(centre_every=0)


@pytest.mark.slow
def test_two_flies_live_read_from_placed_crops_stay_on_the_flies():
    """The shipped fly13 pair, live, two flies known, on 9 held-out frames of SLEAP's two-fly clip (990-998, where
    the touching flies start to walk): with the centre model every 3rd frame it runs on 3 frames (and on demand only
    where a crop lost a fly), every frame reads both flies, and each fly's thorax lies within 6 px of its label
    (within 3.5 px with the upright crop model; the centre model on every frame re-centres the crops and is up to
    12 px off there)."""
    from conftest import shared_path

    from posetracker.evaluation.datasets import FrameCache
    from posetracker.session import NetworkSettings, TrackingSession
    from posetracker.types import Frame

    from posetracker.evaluation.datasets import item_points
    from posetracker.skeletons import load_skeleton
    from posetracker.train.detector_samples import load_split

    data = shared_path("data", "animal", "sleap_flies_clip_train", "normalized.json")
    _, held_out, cols = load_split(str(data), load_skeleton("fly13"), 0.2)
    labels = {it.frame_idx: item_points(it, cols) for it in held_out if 990 <= it.frame_idx < 999}  # (2, K, 2) px
    video = shared_path("data", "animal", "sleap_flies_clip_train", "clip.mp4")
    with FrameCache() as cache:
        frames = [Frame(i, i / 30, cache.frame(video, 990 + i)) for i in range(9)]
    roots = {}
    for every in (1, 3):
        config = SessionConfig(mode="live", network=NetworkSettings(threads=1),
                               people=PeopleSettings(max_people=2, known_count=2), refine=RefineSettings(centre_every=every))
        session = TrackingSession.open("fly13", None, config)
        assert (session.tracked_crops is None) == (every == 1)
        poses = [p for f in frames if (p := session.step(f)) is not None] + session.flush()
        assert [p.num_people for p in poses] == [2] * 9
        r = session.spec.root
        roots[every] = np.stack([p.keypoints[np.argsort(p.keypoints[:, r, 0]), r, :2] for p in poses])  # (9, 2, 2)
    tracked = session.tracked_crops
    assert tracked.frames == 9 and tracked.centre_runs == 3 + tracked.on_demand and tracked.on_demand <= 3
    truth = np.stack([labels[990 + i][np.argsort(labels[990 + i][:, r, 0]), r] for i in range(9)])  # (9, 2, 2)
    assert np.linalg.norm(roots[3] - truth, axis=-1).max() < 6.0
