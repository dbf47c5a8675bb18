"""Skeletons as data: YAML files in this folder, loaded into a frozen SkeletonSpec.

A skeleton is a tree of K joints rooted at the body centre. Everything that
depends on the skeleton (network heads, the tree decoder, the GNN adjacency,
the BVH hierarchy, the 3-D view) is derived from one SkeletonSpec.

YAML layout (see human18.yaml)::

    name: human18
    joints:                       # order = network channel order
      - {name: nose, parent: centre}
      - {name: left_eye, parent: nose, mirror: right_eye}
      - {name: centre, parent: null, virtual: bbox_centre}
    extra_edges: [[a, b]]         # drawn only, not part of the tree
    sigmas: [...]                 # optional OKS sigma per joint (null = none)
    decoder: {window_frac: 1.0, min_window: 4, min_person_score: 0.1, min_centre_distance: 3}
                                  # optional TreeDecoder settings: search window (cells), people
                                  # scoring below min_person_score are dropped, centre peaks
                                  # closer than min_centre_distance cells to a stronger one too
    top_down: {crop_px: 192}      # optional: small animals in large frames; each one found in the whole
                                  # frame is read again from a crop_px square of the full-resolution
                                  # frame around its centre (posetracker.decoding.top_down); with
                                  # crop_weights: posenet-x-crops.safetensors (a file beside the mode's
                                  # weights) a model of its own reads the crops, the mode's weights
                                  # then only find the centres (SLEAP's centroid + centred instance);
                                  # turns: 8 reads each crop turned by each eighth of a turn and
                                  # joins the readings that agree (head and tail read consistently);
                                  # rounds: 2 reads each animal again from a crop centred on its first
                                  # reading's centre (offline; live reads once); align: true turns each
                                  # crop upright by the orientation joints; spread: 20 and mirror: true
                                  # also read the last round's crop turned 20 degrees either way and
                                  # mirrored (offline; top_down.CropReading)
    orientation: [head, abdomen]  # optional front and back joints (evaluation counts reversals)
    score_calibration: [3.05, 4.14]  # optional [slope > 0, offset]: output person scores as probabilities
                                  # (posetracker.decoding.person_scores; fitted by posetracker train score-calibration)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

SKELETON_DIR = Path(__file__).resolve().parent


class SkeletonError(ValueError):
    """A skeleton file is malformed; the message names the offending key."""


@dataclass(frozen=True)
class SkeletonSpec:
    """A skeleton tree of K joints and E = K - 1 edges.

    joint_names:  (K,) names, in channel order
    parents:      (K,) parent index per joint, -1 for the root
    root:         index of the root joint (the body centre)
    edges:        (E, 2) int array of (parent, child), ordered so that every
                  parent is located before its children (edge e = e-th non-root
                  joint of ``topo_order``)
    topo_order:   (K,) joint indices, root first, breadth-first
    first_keypoints:  joints whose parent is the root
    second_keypoints: every other non-root joint, in tree-walk order
    mirror_index: (K,) index of each joint's left/right mirror (itself if none)
    edge_of_child: (K,) index of the edge that ends at each joint, -1 for the root
    virtual:      {joint index: rule} for joints computed from others ("bbox_centre")
    sigmas:       (K,) OKS sigmas, nan where undefined
    extra_edges:  (X, 2) joint pairs drawn but not part of the tree
    """

    name: str
    kind: str
    joint_names: tuple[str, ...]
    parents: tuple[int, ...]
    root: int
    edges: np.ndarray
    topo_order: tuple[int, ...]
    first_keypoints: tuple[int, ...]
    second_keypoints: tuple[int, ...]
    mirror_index: tuple[int, ...]
    edge_of_child: tuple[int, ...]
    virtual: dict[int, str] = field(default_factory=dict)
    sigmas: np.ndarray | None = None
    extra_edges: np.ndarray | None = None
    axes: dict[str, str] = field(default_factory=dict)
    units: str = "m"
    decoder: dict[str, float] = field(default_factory=dict)  # TreeDecoder search window overrides
    # top-down mode (small animals in large frames): {"crop_px": side of the square cut from the full-resolution
    # frame around each animal's centre, which the network then reads at its input size; optional "crop_weights":
    # file name of a crop model beside the mode's weights}; {} = bottom-up only
    top_down: dict[str, Any] = field(default_factory=dict)
    orientation: tuple[int, int] | None = None  # (front, back) joints: head / tail, for orientation checks
    score_calibration: tuple[float, float] | None = None  # (slope, offset) of decoding.person_scores; None: raw
    # the refiner kinds a session runs by default, by mode ("offline", "live"), where this skeleton names its own
    # (refiners.default_refiners; else the product's: the precision stage where trained)
    refiners: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)

    @property
    def num_edges(self) -> int:
        return int(self.edges.shape[0])

    @property
    def crop_align(self) -> tuple[int, int] | None:
        """(front, back) joints an aligned crop model's crops are turned upright by (``top_down: {align:
        true}``, :func:`posetracker.decoding.top_down.upright_turn`); None: crops are cut unturned."""
        return self.orientation if self.top_down.get("align") else None

    def index(self, name: str) -> int:
        """Index of a joint by name; KeyError lists the choices."""
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise KeyError(f"skeleton {self.name!r} has no joint {name!r}; joints: {list(self.joint_names)}") from None

    def children(self, joint: int) -> tuple[int, ...]:
        return tuple(j for j, p in enumerate(self.parents) if p == joint)

    @property
    def labelled_joints(self) -> tuple[int, ...]:
        """Joints that exist in annotations (all but the virtual ones)."""
        return tuple(j for j in range(self.num_joints) if j not in self.virtual)

    def __hash__(self) -> int:
        return hash((self.name, self.joint_names, self.parents))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SkeletonSpec)
            and self.name == other.name
            and self.joint_names == other.joint_names
            and self.parents == other.parents
        )


_VIRTUAL_RULES = {"bbox_centre", "mean"}


def _fail(source: str, msg: str) -> SkeletonError:
    return SkeletonError(f"skeleton {source}: {msg}")


def spec_from_dict(data: dict[str, Any], source: str = "<dict>") -> SkeletonSpec:
    """Validate a parsed skeleton description and build its SkeletonSpec."""
    if not isinstance(data, dict):
        raise _fail(source, "top level must be a mapping")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(source, "'name' is missing")
    joints = data.get("joints")
    if not isinstance(joints, list) or not joints:
        raise _fail(source, "'joints' must be a non-empty list")
    names: list[str] = []
    for i, j in enumerate(joints):
        if not isinstance(j, dict) or not isinstance(j.get("name"), str):
            raise _fail(source, f"joints[{i}] needs a 'name'")
        if j["name"] in names:
            raise _fail(source, f"joints[{i}]: duplicate joint name {j['name']!r}")
        names.append(j["name"])
    index = {n: i for i, n in enumerate(names)}

    parents: list[int] = []
    for i, j in enumerate(joints):
        p = j.get("parent")
        if p is None:
            parents.append(-1)
        elif p not in index:
            raise _fail(source, f"joints[{i}] ({j['name']}): unknown parent {p!r}")
        elif p == j["name"]:
            raise _fail(source, f"joints[{i}] ({j['name']}): a joint cannot be its own parent")
        else:
            parents.append(index[p])
    roots = [i for i, p in enumerate(parents) if p < 0]
    if not roots:
        raise _fail(source, "no root: exactly one joint must have 'parent: null'")
    if len(roots) > 1:
        raise _fail(source, f"several roots {[names[r] for r in roots]}: exactly one joint may have 'parent: null'")
    root = roots[0]

    # Breadth-first order from the root; joints never reached sit on a cycle.
    children: dict[int, list[int]] = {i: [] for i in range(len(names))}
    for i, p in enumerate(parents):
        if p >= 0:
            children[p].append(i)
    order, queue = [], deque([root])
    while queue:
        j = queue.popleft()
        order.append(j)
        queue.extend(children[j])
    if len(order) != len(names):
        lost = [names[i] for i in range(len(names)) if i not in set(order)]
        raise _fail(source, f"cycle in parents: joints {lost} are not connected to the root {names[root]!r}")

    mirror = list(range(len(names)))
    for i, j in enumerate(joints):
        m = j.get("mirror")
        if m is None:
            continue
        if m not in index:
            raise _fail(source, f"joints[{i}] ({j['name']}): unknown mirror {m!r}")
        mirror[i] = index[m]
    for i, m in enumerate(mirror):
        if mirror[m] != i:
            raise _fail(source, f"joints[{i}] ({names[i]}): mirror {names[m]!r} does not mirror it back")

    virtual: dict[int, str] = {}
    for i, j in enumerate(joints):
        rule = j.get("virtual")
        if rule is not None:
            if rule not in _VIRTUAL_RULES:
                raise _fail(source, f"joints[{i}] ({j['name']}): unknown virtual rule {rule!r}; choices: {sorted(_VIRTUAL_RULES)}")
            virtual[i] = rule

    edge_list = [(parents[c], c) for c in order if c != root]
    edge_of_child = [-1] * len(names)
    for e, (_, c) in enumerate(edge_list):
        edge_of_child[c] = e
    first = tuple(c for c in order if parents[c] == root)
    second = tuple(c for c in order if c != root and parents[c] != root)

    sigmas = data.get("sigmas")
    if sigmas is not None:
        if len(sigmas) != len(names):
            raise _fail(source, f"'sigmas' has {len(sigmas)} values for {len(names)} joints")
        sigmas = np.array([np.nan if s is None else float(s) for s in sigmas], np.float64)

    if isinstance(data.get("top_down"), dict) and data["top_down"].get("align") and not data.get("orientation"):
        raise _fail(source, "top_down: align needs orientation: [front, back] (the joints a crop is turned upright by)")
    extra = []
    for pair in data.get("extra_edges") or []:
        if len(pair) != 2 or any(n not in index for n in pair):
            raise _fail(source, f"extra_edges: bad pair {pair!r}")
        extra.append((index[pair[0]], index[pair[1]]))

    return SkeletonSpec(
        name=name,
        kind=str(data.get("kind", "animal")),
        joint_names=tuple(names),
        parents=tuple(parents),
        root=root,
        edges=np.array(edge_list, np.int64).reshape(-1, 2),
        topo_order=tuple(order),
        first_keypoints=first,
        second_keypoints=second,
        mirror_index=tuple(mirror),
        edge_of_child=tuple(edge_of_child),
        virtual=virtual,
        sigmas=sigmas,
        extra_edges=np.array(extra, np.int64).reshape(-1, 2),
        axes=dict(data.get("axes") or {}),
        units=str(data.get("units", "m")),
        decoder=_decoder_options(data.get("decoder"), source),
        top_down=_top_down_options(data.get("top_down"), source),
        orientation=_orientation(data.get("orientation"), index, source),
        score_calibration=_score_calibration(data.get("score_calibration"), source),
        refiners=_default_refiners(data.get("refiners"), source),
    )


def _default_refiners(raw, source: str) -> dict[str, tuple[str, ...]]:
    """The optional ``refiners: {offline: [kind, ...], live: [kind, ...]}``: the kinds run by default per mode."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or set(raw) - {"offline", "live"} or not all(
            isinstance(v, list) and all(isinstance(k, str) for k in v) for v in raw.values()):
        raise _fail(source, f"refiners: expected {{offline: [kind, ...], live: [kind, ...]}}, got {raw!r}")
    return {mode: tuple(kinds) for mode, kinds in raw.items()}


def _score_calibration(raw, source: str) -> tuple[float, float] | None:
    """The optional ``score_calibration: [slope, offset]``: two finite numbers, slope > 0 (a monotone map)."""
    if raw is None:
        return None
    try:
        slope, offset = (float(v) for v in raw)
    except (TypeError, ValueError):
        raise _fail(source, f"score_calibration: expected [slope, offset], got {raw!r}") from None
    if not (np.isfinite(slope) and np.isfinite(offset) and slope > 0):
        raise _fail(source, f"score_calibration: expected finite numbers with slope > 0, got {raw!r}")
    return slope, offset


_DECODER_KEYS = ("window_frac", "min_window", "min_person_score", "min_centre_distance")


def _decoder_options(raw, source: str) -> dict[str, float]:
    """The optional ``decoder`` mapping: search-window settings for small or oddly shaped bodies."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or set(raw) - set(_DECODER_KEYS):
        raise _fail(source, f"decoder: expected a mapping with keys from {list(_DECODER_KEYS)}, got {raw!r}")
    out = {k: float(v) for k, v in raw.items()}
    if any(v <= 0 for v in out.values()):
        raise _fail(source, f"decoder: values must be positive, got {raw!r}")
    return out


def _orientation(raw, index: dict[str, int], source: str) -> tuple[int, int] | None:
    """The optional ``orientation: [front, back]`` joint names -> their indices."""
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != 2 or any(n not in index for n in raw) or raw[0] == raw[1]:
        raise _fail(source, f"orientation: expected [front joint, back joint], got {raw!r}")
    return index[raw[0]], index[raw[1]]


def _top_down_options(raw, source: str) -> dict[str, Any]:
    """The optional ``top_down`` mapping: ``crop_px`` (> 0), the crop side in source pixels, and optionally
    ``crop_weights``, the file name of the crop model beside the mode's weights, ``turns`` (1, 2, 4 or 8),
    how many turned copies of each crop are read and joined, ``rounds`` (1, 2 or 3), how many times each
    animal is read, each round from a crop centred on the last round's reading
    (:func:`posetracker.decoding.top_down.read_crops`), ``align`` (true: the crop model was trained on
    crops turned so the animal stands upright by its ``orientation`` joints, and reads crops cut so;
    :func:`posetracker.decoding.top_down.upright_turn`), and, offline, ``spread`` (0-45 degrees: the last
    round also reads each crop turned this much either way) and ``mirror`` (true: the last round also reads
    each crop mirrored, its left and right joints swapped back; ``top_down.CropReading``)."""
    if raw is None:
        return {}
    expected = ("{crop_px: <pixels > 0>, crop_weights: <file name, optional>, turns: <1, 2, 4 or 8, optional>, "
                "rounds: <1, 2 or 3, optional>, align: <true or false, optional>, spread: <0-45 degrees, optional>, "
                "mirror: <true or false, optional>}")
    if (not isinstance(raw, dict) or "crop_px" not in raw
            or set(raw) - {"crop_px", "crop_weights", "turns", "rounds", "align", "spread", "mirror"}
            or float(raw["crop_px"]) <= 0
            or ("crop_weights" in raw and (not isinstance(raw["crop_weights"], str) or not raw["crop_weights"]))
            or ("turns" in raw and raw["turns"] not in (1, 2, 4, 8))
            or ("rounds" in raw and raw["rounds"] not in (1, 2, 3))
            or ("align" in raw and not isinstance(raw["align"], bool))
            or ("spread" in raw and (isinstance(raw["spread"], bool) or not isinstance(raw["spread"], (int, float))
                                     or not 0 <= raw["spread"] <= 45))
            or ("mirror" in raw and not isinstance(raw["mirror"], bool))):
        raise _fail(source, f"top_down: expected {expected}, got {raw!r}")
    out: dict[str, Any] = {"crop_px": float(raw["crop_px"])}
    if "crop_weights" in raw:
        out["crop_weights"] = raw["crop_weights"]
    if raw.get("turns", 1) != 1:
        out["turns"] = int(raw["turns"])
    if raw.get("rounds", 1) != 1:
        out["rounds"] = int(raw["rounds"])
    if raw.get("align"):
        out["align"] = True
    if raw.get("spread", 0):
        out["spread"] = float(raw["spread"])
    if raw.get("mirror"):
        out["mirror"] = True
    return out


def available_skeletons() -> list[str]:
    """Names of the skeletons shipped with the package."""
    return sorted(p.stem for p in SKELETON_DIR.glob("*.yaml"))


#: PyYAML's safe loader, in C (libyaml) where PyYAML was built with it: the same data, 7x faster (a session start
#: reads several skeletons)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_skeleton(name_or_path: str | Path) -> SkeletonSpec:
    """Load a shipped skeleton by name (``"human18"``) or a YAML file by path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = SKELETON_DIR / f"{name_or_path}.yaml"
        if not path.exists():
            raise SkeletonError(f"unknown skeleton {str(name_or_path)!r}; available: {available_skeletons()}")
    elif not path.exists():
        raise SkeletonError(f"skeleton file not found: {path}")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise SkeletonError(f"skeleton {path}: not valid YAML ({exc})") from None
    return spec_from_dict(data, source=str(path.name))


__all__ = ["SkeletonSpec", "SkeletonError", "load_skeleton", "spec_from_dict", "available_skeletons"]
