"""A second look at the frame: the plug-ins that read a frame's people again after the whole frame was decoded.

One interface (:class:`SecondLook`: ``wanted`` for a frame, then people in -> people out, in source pixels), one
registry (:data:`SECOND_LOOKS`, in the order a frame goes through them), and the networks they run loaded here or
in the refiner registry, never in ``decoding/`` (which stays numpy):

    name             reads again                                  geometry (numpy)       network
    tiles            the frame's overlapping tiles as stills;     ``decoding.tiles``     the session's own
                     adds the people found only there
    animal_crops     each animal from a crop of the full-         ``decoding.top_down``  the mode's crop model
                     resolution frame (a skeleton's ``top_down``),                       (:class:`CropModel`), else
                     turned copies joined                                                the session's own
    precision_crops  each person's joints from a crop of the      ``refiners.crop``      Thunder (the refiner
                     source frame (the refiners' frame stage)                            chain's frame stage)

The first two change which people there are and where; the last refines joints only, and the joints before it
stay the readings the tracker links by and the depth stage reads (``keeps_input``). A look runs on the session's
attributes (``config``, ``spec``, ``refiners``, ``sigmas``, ``crop_model``, ``crop_reading``, the still reading
``_still_people`` / ``_crop_people`` / ``_read_tile`` of ``frame_people.FramePeople``); it imports nothing of
``posetracker.session``.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from posetracker.cpu_threads import torch_threads
from posetracker.decoding import DecodedPeople
from posetracker.decoding.duplicates import suppress_duplicates
from posetracker.decoding.tiles import add_tile_people
from posetracker.decoding.top_down import MAP_KEYS, read_crops, with_missing
from posetracker.model import int8 as eight_bit
from posetracker.model.heads_at_cells import CellHeads
from posetracker.model.live_graph import torch_parts
from posetracker.model.preprocess import to_tensor
from posetracker.model.runtime import accelerate
from posetracker.model.still_graph import StillGraph, still_graph
from posetracker.model.still_int8 import int8_still_session
from posetracker.refiners import Refiner, RefinerChain
from posetracker.stages import Pending


class SecondLook(ABC):
    """One way of reading a frame's people again. ``keeps_input``: the people it is given stay the frame's
    readings (what the tracker links by, where the depth stage reads), as for the precision stage."""

    name = ""
    keeps_input = False

    @abstractmethod
    def wanted(self, session, meta: Pending) -> bool:
        """Whether this frame gets this look (the source frame is there and the session asks for it)."""

    @abstractmethod
    def __call__(self, session, people: DecodedPeople, meta: Pending, budget_ms: float | None,
                 tracked: bool) -> DecodedPeople:
        """``people`` (P, K) of the frame in source px -> the people after this look (P', K), source px.
        budget_ms: time for it (live; None: every person); tracked: the frame goes on to the tracker."""


class Tiles(SecondLook):
    name = "tiles"

    def wanted(self, session, meta: Pending) -> bool:
        return meta.frame is not None and meta.tiles > 1

    def __call__(self, session, people, meta, budget_ms, tracked):
        return add_tile_people(people, meta.frame, meta.tiles, session._read_tile, meta.box.scale, session.sigmas,
                               session.config.people.max_people)


class AnimalCrops(SecondLook):
    name = "animal_crops"

    def wanted(self, session, meta: Pending) -> bool:
        return meta.frame is not None and bool(session.spec.top_down)

    def __call__(self, session, people, meta, budget_ms, tracked):
        crop_px, root, known = session.spec.top_down["crop_px"], session.spec.root, session.config.people.known_count
        read = people
        people = read_crops(read, meta.frame, root, crop_px, session._crop_people, session.crop_reading, keep=known)
        if tracked:  # a known number of animals, one not read: searched where the last frame had it
            missing = with_missing(people, getattr(session, "_last_roots", None), known, root, crop_px)
            if missing.num_people > people.num_people:
                extra = missing.take(np.arange(people.num_people, missing.num_people))
                people = read_crops(DecodedPeople.concat([read, extra]), meta.frame, root, crop_px,
                                    session._crop_people, session.crop_reading, keep=known)
                people = people.take(np.flatnonzero(people.confidence.max(axis=1, initial=0.0) > 0))
        return people


class PrecisionCrops(SecondLook):
    name = "precision_crops"
    keeps_input = True

    def wanted(self, session, meta: Pending) -> bool:
        return meta.frame is not None and session.refiners.needs_frame

    def __call__(self, session, people, meta, budget_ms, tracked):
        with torch_threads(session.config.network.threads):
            xy, confidence = session.refiners.refine_frame(people.keypoints.astype(np.float64), people.confidence,
                                                           meta.frame, budget_ms)
        return replace(people, keypoints=xy, confidence=confidence)


#: every second look, in the order a frame goes through them
SECOND_LOOKS: dict[str, SecondLook] = {look.name: look for look in (Tiles(), AnimalCrops(), PrecisionCrops())}


class CropModel:
    """A top-down mode's crop model (``top_down: {crop_weights}``): a PoseNet of its own trained on crops only,
    each crop read as a still (no temporal state) and decoded by ``decoder`` (the session's tree decoder).

    ``model(crops)``: crops (N, S, S, 3) uint8 -> N x :class:`DecodedPeople` in crop-input px, one batch.
    ``weights``: the file the network was read from (its 8-bit companion sits beside it, ``model.still_int8``).
    ``refiners``: maps- and people-stage refiners (methods B and C) trained on this crop model, run on each crop's
    maps (:func:`crop_refiners` hands a session's chain over); empty: none."""

    def __init__(self, net, decoder, sigmas: np.ndarray, weights: Path | None = None):
        self.net, self.decoder, self.sigmas, self.weights = net.eval(), decoder, sigmas, weights
        self.refiners = RefinerChain([])
        self.runtime = "torch"  # "onnxruntime" once accelerated (:meth:`accelerate`)
        self.still: StillGraph | None = None  # the crops' batch as one runtime call, sparse heads (:meth:`accelerate`)
        self.int8 = False  # the still graph's body is 8-bit (:meth:`accelerate` with int8)
        self._cells: CellHeads | None = None

    def accelerate(self, threads: int = 1, int8: bool = False) -> None:
        """The network in ONNX Runtime (``model.runtime.accelerate``), and the crops' batch through its still
        graph (``model.still_graph``): backbone and heatmap heads in one call, the other heads at the cells the
        decoder reads (``model.heads_at_cells``). ``int8``: the still graph with the 8-bit body
        (``model.still_int8``) where a companion made for these weights sits beside them; else float."""
        self.runtime = accelerate(self.net, threads)
        if self.runtime != "onnxruntime":
            return
        if int8 and self.weights is not None and (companion := eight_bit.companion_path(self.weights)).is_file():
            try:
                session = int8_still_session(self.net, companion, threads)
                if session is not None:
                    self.still, self.int8 = StillGraph(session), True
            except Exception as exc:  # the float still graph then, say why
                warnings.warn(f"8-bit crop graph not used ({exc}); float", RuntimeWarning, stacklevel=2)
        if self.still is None:
            self.still = still_graph(self.net, threads)
        self._cells = CellHeads(torch_parts(self.net)[3]) if self.still is not None else None

    def __call__(self, crops: np.ndarray) -> list[DecodedPeople]:
        x = to_tensor(crops)  # (N, 3, S, S)
        if self.refiners.needs_maps:
            return self._refined(x)
        if self.still is not None and not x.shape[-1] % 32 and not x.shape[-2] % 32:
            heat, features = self.still(x.numpy())  # (N, K, s, s), (N, C, s, s)
            maps = [{"heatmaps": heat[i], **self._cells.maps(features[i])} for i in range(len(crops))]
        else:
            with torch.inference_mode():
                out = self.net(x[:, None])  # {key: (N, 1, C, h, w)}
            maps = [{k: out[k][i, 0].numpy() for k in MAP_KEYS if k in out} for i in range(len(crops))]
        return [suppress_duplicates(self.decoder.decode(m), self.sigmas) for m in maps]

    def _refined(self, x: torch.Tensor) -> list[DecodedPeople]:
        """Crops x (N, 3, S, S) float 0..255 -> each crop's people through the refiners: the whole maps in torch
        ({key: (N, C, h, w)}; method B needs the heatmap logits and the crops), the maps stage over the batch,
        then each crop decoded and its people moved by the people stage."""
        with torch.inference_mode():
            out = {k: v[:, 0] for k, v in self.net(x[:, None]).items()}
            out = self.refiners.refine_maps(out, x if self.refiners.needs_image else None)
            people = []
            for i in range(len(x)):
                maps = {k: v[i : i + 1] for k, v in out.items()}
                found = suppress_duplicates(self.decoder.decode({k: maps[k][0].numpy() for k in MAP_KEYS if k in maps}),
                                            self.sigmas)
                people.append(self.refiners.refine_people(found, maps, self.net.stride))
        return people


def crop_refiners(session) -> None:
    """A top-down session's maps- and people-stage refiners (methods B, C) moved onto its crop model, whose
    reading is the animals' keypoints (the centre model's only places the crops): the refiners ``fly13``'s
    files hold were trained on its crop model (``configs/fly13-crops.yaml``, ``fly13-crops-heatmap.yaml``). Frame-stage
    refiners stay.
    No crop model, or no such refiner: unchanged."""
    model = getattr(session, "crop_model", None)
    if model is None or not session.refiners.needs_maps:
        return
    on_maps = [r for r in session.refiners.refiners if type(r).refine_frame is Refiner.refine_frame]
    model.refiners = RefinerChain(on_maps)
    session.refiners = RefinerChain([r for r in session.refiners.refiners if r not in on_maps])


def load_crop_model(spec, weights_dir: str | Path | None, decoder, sigmas: np.ndarray) -> CropModel | None:
    """The crop model a skeleton's ``top_down.crop_weights`` names, read from ``weights_dir`` (the mode's weights'
    folder; None: the shipped models); None when the skeleton names none. WeightsError when it is missing."""
    from posetracker.model.weights import MODELS_DIR, load_posenet

    name = spec.top_down.get("crop_weights")
    if not name:
        return None
    path = Path(weights_dir or MODELS_DIR) / name
    return CropModel(load_posenet(path, spec), decoder, sigmas, path)


__all__ = ["SECOND_LOOKS", "AnimalCrops", "CropModel", "PrecisionCrops", "SecondLook", "Tiles", "crop_refiners",
           "load_crop_model"]
