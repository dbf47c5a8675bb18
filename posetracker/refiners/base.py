"""The refiner plug-in contract, its registry and its weights files.

A refiner sits between the heads' outputs and the final keypoints (see
``architecture.md``: "refiners (optional, per skeleton)"). It works on one
frame at a time and implements one or both stages:

- ``refine_maps(maps, image)``: heads' outputs of one frame -> corrected
  outputs, before the tree decoder (method B corrects the heatmaps).
  ``maps["heatmap_logits"]`` (1, K, h, w) and friends (see ``model.network``),
  ``image`` (1, 3, H, W) float RGB 0..255, the network's letterboxed input.
- ``refine_people(people, maps)``: the decoder's people -> corrected people
  (method C moves each keypoint with a graph network over the skeleton).
- ``refine_frame(xy, confidence, rgb, budget_ms)``: people in source pixels,
  with the full-resolution source frame -> corrected (xy, confidence) (the
  precision stage runs a single-person network on a crop around each person);
  ``budget_ms``: the time it may take this frame (live), None: no limit.

Built-ins register themselves by explicit import in ``refiners/__init__.py``;
third-party refiners come through the ``posetracker.refiners`` entry-point
group (loaded lazily, their import errors collected in ``plugin_errors()``
for the UI to show).

Weights: ``models/refiner-<kind>-<skeleton>.safetensors`` holding the module's
state dict and string metadata ``format`` (``refiner-v1``), ``kind``,
``skeleton``, ``detector`` (the detector weights' file name it was trained
with) and ``params`` (JSON of the constructor's keyword arguments).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from posetracker.decoding.people import DecodedPeople
from posetracker.skeletons import SkeletonSpec, load_skeleton
from posetracker.weights_file import MODELS_DIR, read_weights, write_weights

FORMAT = "refiner-v1"
Maps = dict[str, torch.Tensor]


class RefinerError(RuntimeError):
    """A refiner is unknown, its weights are missing or do not fit."""


class Refiner(nn.Module):
    """Base class: identity in both stages. Subclasses set ``kind`` and override a stage."""

    kind: ClassVar[str] = ""
    label: ClassVar[str] = ""  # what the app calls it (default: the kind)
    param_budget: ClassVar[int] = 0  # most parameters allowed (method B step 5); 0 = no budget
    model_budget: ClassVar[int] = 0  # most parameters of the detector and this refiner together; 0 = none

    def __init__(self, spec: SkeletonSpec):
        super().__init__()
        self.spec = spec

    def refine_maps(self, maps: Maps, image: torch.Tensor) -> Maps:
        return maps

    def refine_people(self, people: DecodedPeople, maps: Maps, stride: int) -> DecodedPeople:
        return people

    def refine_frame(self, xy: np.ndarray, confidence: np.ndarray, rgb: np.ndarray,
                     budget_ms: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """xy (P, K, 2) source px, confidence (P, K), rgb (H, W, 3) uint8 source frame -> (xy, confidence)."""
        return xy, confidence

    def accelerate(self, threads: int = 1) -> None:
        """Switch to a faster runtime for inference where the refiner has one (default: none)."""

    def reset(self) -> None:
        """Forget any state carried between frames (a seek, a new source; default: none)."""

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def check_budget(self, detector: nn.Module | None = None) -> None:
        """The refiner alone under ``param_budget``; with its ``detector``, both under ``model_budget``."""
        n = self.num_parameters()
        if self.param_budget and n > self.param_budget:
            raise RefinerError(f"{self.kind} refiner has {n} parameters, over its budget of {self.param_budget}")
        if detector is not None and self.model_budget:
            total = n + sum(p.numel() for p in detector.parameters())
            if total > self.model_budget:
                raise RefinerError(f"the detector and its {self.kind} refiner have {total} parameters together, "
                                   f"over their budget of {self.model_budget}")


_REFINERS: dict[str, Callable[..., Refiner]] = {}
_PLUGIN_ERRORS: dict[str, str] = {}


def register_refiner(name: str):
    """Class decorator: make ``name`` buildable by :func:`build_refiner`. Raises on a duplicate name."""

    def wrap(factory):
        if name in _REFINERS:
            raise ValueError(f"refiner {name!r} is already registered")
        _REFINERS[name] = factory
        return factory

    return wrap


def unregister_refiner(name: str) -> None:
    _REFINERS.pop(name, None)


def _load_entry_point(name: str) -> Callable[..., Refiner] | None:
    for ep in entry_points(group="posetracker.refiners"):
        if ep.name == name:
            try:
                return ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken plug-in is reported, not fatal
                _PLUGIN_ERRORS[name] = f"{type(exc).__name__}: {exc}"
    return None


def registered_refiners() -> list[str]:
    """Built-in kinds plus every installed entry point's name."""
    return sorted(set(_REFINERS) | {ep.name for ep in entry_points(group="posetracker.refiners")})


def refiner_label(kind: str) -> str:
    """The registered class's ``label`` (what the app shows), else ``kind`` itself; never raises."""
    return getattr(_REFINERS.get(kind), "label", "") or kind


def plugin_errors() -> dict[str, str]:
    """Entry points that failed to import: name -> error."""
    return dict(_PLUGIN_ERRORS)


def build_refiner(kind: str, spec: SkeletonSpec, **params) -> Refiner:
    """A fresh (untrained) refiner of ``kind`` for ``spec``."""
    factory = _REFINERS.get(kind) or _load_entry_point(kind)
    if factory is None:
        raise RefinerError(f"unknown refiner {kind!r}; available: {registered_refiners()}")
    refiner = factory(spec, **params)
    refiner.check_budget()
    return refiner


def refiner_path(kind: str, skeleton: str, models_dir: Path = MODELS_DIR) -> Path:
    return models_dir / f"refiner-{kind}-{skeleton}.safetensors"


def available_refiners(skeleton: str = "human18", models_dir: Path = MODELS_DIR) -> list[str]:
    """Kinds with trained weights for ``skeleton`` in ``models_dir``."""
    return [k for k in registered_refiners() if refiner_path(k, skeleton, models_dir).is_file()]


# the refiners a session runs when none are chosen, by mode: offline work (whole videos, still images) gets the
# precision stage (Thunder); live mode the fast one (Lightning, one crop a frame within
# RefineSettings.crop_budget_ms) where more than one CPU is usable, since it then runs on the live pipeline's
# second thread beside the network (studies/crop-stage-live.md); on one CPU it would take a third of
# every frame, so live mode there runs the bottom-up network alone
DEFAULT_REFINERS: dict[str, tuple[str, ...]] = {"offline": ("crop",), "live": ("crop-fast",)}


def default_refiners(skeleton: str | SkeletonSpec, mode: str, models_dir: Path | None = None) -> tuple[str, ...]:
    """The kinds a ``skeleton`` session runs by default in ``mode``: the skeleton's own (``refiners`` in its YAML,
    e.g. mouse4's heatmap and graph refiners, or a user-trained mode's, ``train.user_mode``), else
    ``DEFAULT_REFINERS[mode]``; of those, the ones with weights for it in ``models_dir`` (None: shipped); live
    mode's only where more than one CPU is usable (``cpu_threads.usable_cpus``: they run on the live pipeline's
    second thread). ``skeleton``: a loaded skeleton, or a shipped one's name."""
    from posetracker.cpu_threads import usable_cpus

    if mode == "live" and usable_cpus() < 2:
        return ()
    name = skeleton if isinstance(skeleton, str) else skeleton.name
    if isinstance(skeleton, str):
        try:
            skeleton = load_skeleton(skeleton)
        except Exception:  # noqa: BLE001 - a name not shipped: the product's defaults
            skeleton = None
    own = skeleton.refiners if skeleton is not None else {}
    have = available_refiners(name, Path(models_dir) if models_dir is not None else MODELS_DIR)
    return tuple(k for k in own.get(mode, DEFAULT_REFINERS.get(mode, ())) if k in have)


def save_refiner(refiner: Refiner, path: str | Path, params: dict, detector: str = "", half: bool = False) -> None:
    """Write a refiner's weights file; ``half`` stores floating tensors as fp16 (lossless for weights
    published in fp16, e.g. MoveNet's; they load back into the float32 module)."""
    meta = {"format": FORMAT, "kind": refiner.kind, "skeleton": refiner.spec.name,
            "params": json.dumps(params, sort_keys=True), "detector": detector}
    state = refiner.state_dict()
    if half:
        state = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
    write_weights(path, state, meta)


def load_refiner(path: str | Path, spec: SkeletonSpec | None = None) -> Refiner:
    """A trained refiner from its weights file, in eval mode. ``spec`` must match the file's skeleton."""
    meta, state = read_weights(path, RefinerError, "refiner weights")
    if meta.get("format") != FORMAT:
        raise RefinerError(f"{path} is not a refiner weights file (format {meta.get('format')!r})")
    spec = spec or load_skeleton(meta["skeleton"])
    if spec.name != meta["skeleton"]:
        raise RefinerError(f"{path} is a {meta['skeleton']} refiner; the model's skeleton is {spec.name}")
    refiner = build_refiner(meta["kind"], spec, **json.loads(meta.get("params") or "{}"))
    expected = refiner.state_dict()
    for key, value in state.items():  # structure buffers (the GNN's adjacency) must match the skeleton's
        if key.endswith("adjacency") and key in expected and not torch.equal(value, expected[key]):
            raise RefinerError(f"{path} was trained on another structure of {spec.name} (its edges changed); retrain it")
    try:
        refiner.load_state_dict(state)
    except RuntimeError as exc:
        raise RefinerError(f"{path} does not fit the {meta['kind']} refiner: {exc}") from None
    return refiner.eval()


class RefinerChain:
    """Several refiners applied in order (maps stage of each, decoder, people stage of each)."""

    def __init__(self, refiners: list[Refiner]):
        self.refiners = list(refiners)

    def __bool__(self) -> bool:
        return bool(self.refiners)

    @property
    def names(self) -> list[str]:
        return [r.kind for r in self.refiners]

    @property
    def needs_image(self) -> bool:
        return any(type(r).refine_maps is not Refiner.refine_maps for r in self.refiners)

    @property
    def needs_maps(self) -> bool:
        """A maps- or people-stage refiner: it reads the heads' whole maps (live mode then computes them densely)."""
        return any(type(r).refine_maps is not Refiner.refine_maps or type(r).refine_people is not Refiner.refine_people
                   for r in self.refiners)

    @property
    def needs_frame(self) -> bool:
        return any(type(r).refine_frame is not Refiner.refine_frame for r in self.refiners)

    def accelerate(self, threads: int = 1) -> None:
        for r in self.refiners:
            r.accelerate(threads)

    def reset(self) -> None:
        for r in self.refiners:
            r.reset()

    def check_budgets(self, detector: nn.Module) -> None:
        """Each refiner's own budget and, where it has one, its budget with ``detector`` (method B step 5)."""
        for r in self.refiners:
            r.check_budget(detector)


    @torch.no_grad()
    def refine_maps(self, maps: Maps, image: torch.Tensor | None) -> Maps:
        for r in self.refiners:
            maps = r.refine_maps(maps, image)
        return maps

    @torch.no_grad()
    def refine_people(self, people: DecodedPeople, maps: Maps, stride: int) -> DecodedPeople:
        for r in self.refiners:
            people = r.refine_people(people, maps, stride)
        return people

    def refine_frame(self, xy: np.ndarray, confidence: np.ndarray, rgb: np.ndarray,
                     budget_ms: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        for r in self.refiners:
            xy, confidence = r.refine_frame(xy, confidence, rgb, budget_ms)
        return xy, confidence


def load_chain(kinds: list[str], spec: SkeletonSpec, models_dir: str | Path | None = None,
               files: dict[str, str | Path] | None = None) -> RefinerChain:
    """The refiners of ``kinds`` for ``spec`` in ``models_dir`` (None: the shipped ones), or from ``files``
    ({kind: weights file}) where it names the kind, maps-stage ones first (method B before C)."""
    folder = Path(models_dir) if models_dir is not None else MODELS_DIR
    files = files or {}
    loaded = [load_refiner(files.get(k) or refiner_path(k, spec.name, folder), spec) for k in kinds]
    maps_first = sorted(loaded, key=lambda r: type(r).refine_maps is Refiner.refine_maps)
    return RefinerChain(maps_first)

