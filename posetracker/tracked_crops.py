"""Live top-down: each animal's crop placed where the last frame read it; the whole-frame centre model only
every ``centre_every``-th frame and where the placed crops lose an animal.

A top-down skeleton with a crop model of its own (fly13) reads a frame in two networks: the centre model on the
whole frame finds each animal's centre, the crop model reads each animal from a crop around it. Live, the last
frame's readings already say where each animal is (the crop model's own reading of its root, a better centre
than the centre model's: the offline rounds, ``decoding.top_down.read_crops``), so on most frames the centre
model is not run (``RefineSettings.centre_every`` = k):

- every frame with a last frame's animals, each read surely: each animal's crop goes to the last frame's root
  (:meth:`TrackedCrops.seeds`; their joints' confidence zeroed, so a crop that finds no animal near its centre
  leaves it at 0), read at ``PLACED_TURNS`` (1) turns (an aligned crop model's crop cut upright by the last
  frame's reading, ``decoding.top_down.upright_turn``); an animal read end to end against the last frame's
  (:meth:`TrackedCrops.facing`) has the crops read again at the session's turns, whose vote decides. The placed
  crops' animals are the frame's where they read every animal surely and near the last frame's (below) and,
  on a frame the centre model read, it confirms them (:meth:`TrackedCrops.confirmed`: each has a centre of its own
  within ``REPEAT_FRAC`` x the crop, and no centre lies away from them where there is room for another animal);
- frames 0, k, 2k, ... since the last reset (counted as they are pushed, so the schedule is the same on one or
  two threads): the centre model reads the whole frame as a still (:class:`CentreStill`: no temporal state and no
  look-ahead wait, the reading ``held-out-eval --mode live`` scores), and so does any frame whose placed crops
  read fewer animals than were placed (two crops on one animal are joined: ``drop_repeats``), or an animal with a
  mean joint confidence under ``min_confidence``, or one whose root moved more than ``MAX_STEP`` x the crop from
  the last frame's (a crop re-centred on its own reading drifted onto the fly it touched: studies/fly13.md);
- where the centre model read the frame and did not confirm the placed crops: the animals they read surely (near
  the last frame's, facing its way) are kept and only the centres a quarter crop from all of them are read from
  crops, at the session's turns (:meth:`TrackedCrops.joined`: the issue's "when one of two flies is not read, the
  crop stage searches where the track says it is", and where it is not found there, where the centre model
  finds it); where none is kept (or no last frame) or the join reads fewer animals, every centre's crop is read,
  as offline.

fly13, two flies live, one core, with the upright crop model: the whole frame searched on demand in 6 of 150 frames,
2.3 crops a frame, ~18 fps of CPU time with ``--animals 2``; held-out frames read in sequence 1.43 px, walking flies
6.12 px (studies/fly13.md, "The centre model confirms the placed crops", "Upright crops").

The centre model's stream (``model.fused``) is not pushed in this mode. ``centre_runs`` / ``frames`` count how often
the centre model ran (scheduled and on demand, ``on_demand``), ``confirmed_runs`` the centre frames read from the
placed crops, ``partial`` those read from kept animals and the others' centres, for the benches.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch

from posetracker.cpu_threads import torch_threads
from posetracker.decoding import DecodedPeople
from posetracker.decoding.tiles import shift_people
from posetracker.decoding.top_down import REPEAT_FRAC, drop_repeats, most_confident, read_crops
from posetracker.model.still_graph import still_graph
from posetracker.second_look import SECOND_LOOKS
from posetracker.stages import Inferred, Pending, Prepared
from posetracker.types import PoseFrame

MIN_CONFIDENCE = 0.1  # a placed crop's animal with a mean joint confidence under this: the centre model reads the frame
MAX_STEP = 0.06  # a placed crop's animal whose root moved more than this x crop_px from the last frame's: the centre
# model reads the frame (a crop re-centred on its own reading may drift onto the animal it touches)
PLACED_TURNS = 1  # turned reads of a placed crop: the track says which way the animal faces (TrackedCrops.facing)


def sure(people: DecodedPeople, expected: int, min_confidence: float = MIN_CONFIDENCE) -> bool:
    """``expected`` animals read, each with a mean joint confidence >= ``min_confidence``."""
    return people.num_people == expected and bool(
        (np.nan_to_num(people.confidence).mean(-1) >= min_confidence).all())


class CentreStill:
    """The centre model on one frame as a still: ``reader(x)`` with x (1, 3, h, w) float 0..255 (the letterboxed
    network input) -> the output dict of one frame, (1, 1, C, h/4, w/4) tensors: the heatmaps and the heads'
    input (``head_features``: the session's decoder evaluates the other heads at the cells it reads) through the
    still graph (``model.still_graph``), else the network's own outputs (no ONNX Runtime)."""

    def __init__(self, net, threads: int = 1, graph: bool = True):
        self.net = net
        self.graph = still_graph(net, threads) if graph else None

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        if self.graph is not None and not x.shape[-1] % 32 and not x.shape[-2] % 32:
            heat, features = self.graph(x.numpy())
            return {"heatmaps": torch.from_numpy(heat)[:, None], "head_features": torch.from_numpy(features)[:, None]}
        return self.net(x[:, None])


class TrackedCrops:
    """The live stages of :mod:`posetracker.tracked_crops` for one session (see the module docstring)."""

    def __init__(self, session, every: int, min_confidence: float = MIN_CONFIDENCE, turns: int | None = None):
        self.session, self.every, self.min_confidence = session, every, min_confidence
        self.turns = turns  # turned reads of a placed crop (None: the session's crop_reading.turns)
        self.centre = CentreStill(session.net, session.config.network.threads, session.runtime == "onnxruntime")
        self.reset()

    def reset(self) -> None:
        """A new stream: the schedule from its start, the last frame's animals forgotten."""
        self.pushed = 0  # frames through infer since the reset (the schedule)
        self.frames = self.centre_runs = self.on_demand = self.turned = 0  # turned: placed crops read again at all turns
        self.confirmed_runs = self.partial = 0  # centre frames read from the placed crops / from kept ones and the others
        self.session._last_people = None  # (P, K) source px, set by frame_people after each tracked frame

    def infer(self, prepared: Prepared) -> Inferred:
        """Stage 1b: the centre model's still reading on a scheduled frame, else nothing ({}); no look-ahead."""
        t0 = time.perf_counter()
        due, self.pushed = self.pushed % self.every == 0, self.pushed + 1
        with torch_threads(self.session.config.network.threads):
            out = self._centre(prepared.x) if due else {}
        return Inferred(out, prepared.meta, prepared.ms + (time.perf_counter() - t0) * 1000)

    def _centre(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        self.centre_runs += 1
        with torch.inference_mode():
            return self.centre(x)

    def seeds(self) -> DecodedPeople | None:
        """The last frame's animals (P, K) in source px with every joint's confidence 0, where there were some and
        each was sure (mean joint confidence >= ``min_confidence``); else None."""
        last = self.session._last_people
        if last is None or last.num_people == 0 or not self.sure(last, last.num_people):
            return None
        return DecodedPeople(last.keypoints, np.zeros_like(last.confidence), last.scores, last.depth_reads,
                             last.predicted)

    def sure(self, people: DecodedPeople, expected: int) -> bool:
        """``expected`` animals read, each with a mean joint confidence >= ``min_confidence`` (:func:`sure`)."""
        return sure(people, expected, self.min_confidence)

    def stayed(self, people: DecodedPeople, seeds: DecodedPeople) -> bool:
        """Each reading's root lies within ``MAX_STEP`` x the crop's side of the nearest seed's (the last frame's)."""
        root, limit = self.session.spec.root, MAX_STEP * float(self.session.spec.top_down["crop_px"])
        d = np.linalg.norm(people.keypoints[:, None, root] - seeds.keypoints[None, :, root], axis=-1)  # (P, S)
        return bool(len(d)) and bool((np.nan_to_num(d, nan=np.inf).min(1) <= limit).all())

    def facing(self, people: DecodedPeople, seeds: DecodedPeople) -> bool:
        """Each reading points the way the seed nearest its root (the last frame's animal) pointed, by the skeleton's
        ``orientation`` (front, back joints; True without one): a crop read at one turn may read an animal end to
        end, which the turns' vote (``agreeing_reads``) would have caught."""
        ends, root = self.session.spec.orientation, self.session.spec.root
        if ends is None or not seeds.num_people:
            return True
        axis = lambda p: p.keypoints[:, ends[0]] - p.keypoints[:, ends[1]]  # noqa: E731  (P, 2) back -> front
        near = np.linalg.norm(people.keypoints[:, None, root] - seeds.keypoints[None, :, root], axis=-1).argmin(1)
        return bool(((axis(people) * axis(seeds)[near]).sum(-1) > 0).all())

    def people(self, out: dict[str, torch.Tensor], meta: Pending, budget_ms: float | None) -> PoseFrame:
        """Stage 2, as ``TrackingSession._people``: the frame's people from the placed crops (``turns``; where they
        read an animal end to end against the track, again at the session's turns) where they read every animal
        surely and, on a frame the centre model read, where it finds each of them (:meth:`confirmed`); else the
        animals the placed crops read surely kept and crops only where the centre model finds the others
        (:meth:`joined`); else (none kept, or the join short of an animal) the centre model's every centre read
        from crops, as before."""
        session = self.session
        self.frames += 1
        placed, centres, seeds = None, None, self.seeds()
        if seeds is not None:
            expected = session.config.people.known_count or seeds.num_people
            for turns in sorted({self.turns or session.crop_reading.turns, session.crop_reading.turns}):
                placed = read_crops(seeds, meta.frame, session.spec.root, session.spec.top_down["crop_px"],
                                    session._crop_people, replace(session.crop_reading, turns=turns, search=0.0),
                                    keep=session.config.people.known_count)
                if not (self.sure(placed, expected) and self.stayed(placed, seeds)):
                    break  # an animal lost, or its reading jumped: the centre model searches the frame
                if turns == session.crop_reading.turns or self.facing(placed, seeds):
                    if not out:
                        return session._people({}, meta, budget_ms, placed=placed)
                    if self.confirmed(placed, centres := self._centres(out, meta)):
                        self.confirmed_runs += 1
                        return session._people({}, meta, budget_ms, placed=placed)
                    break
                self.turned += 1
        if not out:  # the placed crops lost an animal (or there were none): the whole frame searched
            self.on_demand += 1
            with torch.inference_mode(), torch_threads(session.config.network.threads):
                out = self._centre(session._input(meta.frame)[0])
        centres = centres if centres is not None else self._centres(out, meta)
        if placed is not None and (joined := self.joined(placed, seeds, centres, meta)) is not None:
            self.partial += 1
            return session._people({}, meta, budget_ms, placed=joined)
        people = SECOND_LOOKS["animal_crops"](session, centres, meta, budget_ms, True)  # every centre's crop
        return session._people({}, meta, budget_ms, placed=people)

    def _centres(self, out: dict[str, torch.Tensor], meta: Pending) -> DecodedPeople:
        """The centre model's people of the frame ((P, K) source px) from its outputs (1, 1, C, h, w)."""
        session = self.session
        return shift_people(session._decode({k: v[:, 0] for k, v in out.items()}, meta.image), meta.box.scale)

    def confirmed(self, placed: DecodedPeople, centres: DecodedPeople) -> bool:
        """Each placed crop's animal has a centre of its own (the centre model's root, one per animal, nearest
        first) within ``REPEAT_FRAC`` x the crop, and, where fewer animals are placed than may be in the frame
        (the known count, else ``max_people``), the centre model finds none away from them (a quarter crop)."""
        root, crop_px = self.session.spec.root, float(self.session.spec.top_down["crop_px"])
        d = np.nan_to_num(np.linalg.norm(placed.keypoints[:, None, root] - centres.keypoints[None, :, root],
                                         axis=-1), nan=np.inf)  # (P, C) px
        free = np.ones(centres.num_people, bool)
        for p in np.argsort(d.min(1, initial=np.inf), kind="stable"):
            c = int(np.argmin(np.where(free, d[p], np.inf))) if free.any() else -1
            if c < 0 or d[p, c] > REPEAT_FRAC * crop_px:
                return False
            free[c] = False
        people = self.session.config.people
        return placed.num_people >= (people.known_count or people.max_people) \
            or not (d.min(0, initial=np.inf) > crop_px / 4).any()

    def joined(self, placed: DecodedPeople, seeds: DecodedPeople, centres: DecodedPeople,
               meta: Pending) -> DecodedPeople | None:
        """The placed crops' animals read surely (mean joint confidence >= ``min_confidence``), near the last frame's
        (``MAX_STEP``) and facing its way, with the centre model's centres a quarter crop from all of them read from
        crops at the session's turns (one reading per animal, the known count's surest): (P, K) source px, or
        None where none was kept or the join reads fewer animals than the last frame (or the known count), or one
        unsurely (the caller reads every centre)."""
        session = self.session
        root, crop_px, known = session.spec.root, float(session.spec.top_down["crop_px"]), session.config.people.known_count
        keep = [p for p in range(placed.num_people) if self.sure(placed.take(np.array([p])), 1)
                and self.stayed(placed.take(np.array([p])), seeds) and self.facing(placed.take(np.array([p])), seeds)]
        if not keep:
            return None
        kept = placed.take(np.array(keep))
        d = np.linalg.norm(centres.keypoints[:, None, root] - kept.keypoints[None, :, root], axis=-1)  # (C, P)
        others = np.flatnonzero(np.isfinite(centres.keypoints[:, root]).all(-1)
                                & (np.nan_to_num(d, nan=0.0).min(1, initial=np.inf) > crop_px / 4))
        people = kept
        if len(others):
            new = read_crops(centres.take(others), meta.frame, root, crop_px, session._crop_people,
                             replace(session.crop_reading, search=0.0))
            both = DecodedPeople.concat([kept, new])
            both = both.take(drop_repeats(both, np.ones(both.num_people, bool), crop_px, root=root))
            people = both if known is None or both.num_people <= known else both.take(most_confident(both, known))
        return people if self.sure(people, max(known or 0, seeds.num_people)) else None


def tracked_crops_for(session) -> TrackedCrops | None:
    """The session's :class:`TrackedCrops` where it is live, top-down with a crop model of its own, tracking,
    and ``centre_every`` > 1; else None (the centre model's stream every frame)."""
    every = session.centre_every
    if session.config.mode != "live" or every <= 1 or session.crop_model is None or not session.spec.top_down \
            or not session.config.people.track:
        return None
    return TrackedCrops(session, every, MIN_CONFIDENCE, PLACED_TURNS)


__all__ = ["MAX_STEP", "MIN_CONFIDENCE", "PLACED_TURNS", "CentreStill", "TrackedCrops", "tracked_crops_for"]
