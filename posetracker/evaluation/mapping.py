"""Joint correspondences from the labelled sets' own layouts to human18.

human18 = the 17 COCO keypoints (COCO order, indices 0..16) + a virtual body
centre (index 17, never labelled). Each dataset layout gets an explicit table
``{set joint name: human18 joint name}`` plus the list of its joints that are
left out, with the reason. Only joints that are the same anatomical point are
mapped: shoulders, elbows, wrists, hips, knees, ankles, and the nose / eyes /
ears where a set labels them. Left out everywhere:

- head top / top_head / head (crown of the head; JHMDB/ExLPose ``head`` is the
  head centre), head_bottom, neck / upper_neck / thorax, pelvis / belly / hip
  (Halpe mid-hip): human18 has no such joint, and the nose or the eyes are not
  the same point (guessing them would bias every metric);
- Halpe feet, face and hand points, MPII-TRB contour points: not in human18.

Known soft spots (mapped anyway, they are the same named joint): MPII/AIC hip
labels sit slightly lower/wider than COCO's; PoseTrack18 declares the ears but
never labels them (v = 0, so they never count).

Layouts are found by their exact ``keypoint_names`` (:func:`detect_layout`) or
by name (:func:`get_layout`); an unknown one fails loudly and lists the choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "HUMAN18_JOINTS",
    "LAYOUTS",
    "Layout",
    "UnknownLayoutError",
    "detect_layout",
    "get_layout",
    "human18_from_set",
    "register_layout",
    "to_human18",
]

# human18 joint order (posetracker/skeletons/human18.yaml; a test checks they agree).
HUMAN18_JOINTS: tuple[str, ...] = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear",
    "left_shoulder", "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist",
    "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle",
    "centre",
)
_H18 = {n: i for i, n in enumerate(HUMAN18_JOINTS)}
_COCO17 = HUMAN18_JOINTS[:17]
_LIMBS = tuple(n for n in _COCO17 if n.split("_", 1)[-1] in
               {"shoulder", "elbow", "wrist", "hip", "knee", "ankle"})


class UnknownLayoutError(KeyError):
    """No registered layout matches; the message lists the registered ones."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Layout:
    """A dataset's joint layout and its correspondence to human18.

    keypoint_names: (N,) the set's joint names, in the set's order
    to_h18:         {set joint name: human18 joint name} for corresponding joints
    left_out:       {set joint name: why it has no human18 equivalent}
    """

    name: str
    keypoint_names: tuple[str, ...]
    to_h18: dict[str, str]
    left_out: dict[str, str]

    def __post_init__(self) -> None:
        names = self.keypoint_names
        if len(set(names)) != len(names):
            raise ValueError(f"layout {self.name!r}: duplicate keypoint names")
        for src, dst in self.to_h18.items():
            if src not in names:
                raise ValueError(f"layout {self.name!r}: mapped joint {src!r} is not one of its keypoint_names")
            if dst not in _H18 or dst == "centre":
                raise ValueError(f"layout {self.name!r}: {src!r} -> {dst!r} is not a labelled human18 joint")
        if len(set(self.to_h18.values())) != len(self.to_h18):
            raise ValueError(f"layout {self.name!r}: two joints map to the same human18 joint")
        undecided = [n for n in names if (n in self.to_h18) == (n in self.left_out)]
        if undecided:
            raise ValueError(f"layout {self.name!r}: each joint must be either mapped or left out: {undecided}")

    def indices(self) -> tuple[np.ndarray, np.ndarray]:
        """``(h18_idx (M,), set_idx (M,))`` int64, sorted by human18 index."""
        pairs = sorted((_H18[dst], self.keypoint_names.index(src)) for src, dst in self.to_h18.items())
        arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0].copy(), arr[:, 1].copy()


LAYOUTS: dict[str, Layout] = {}


def register_layout(layout: Layout) -> Layout:
    """Add a layout to :data:`LAYOUTS` (name must be new)."""
    if layout.name in LAYOUTS:
        raise ValueError(f"layout {layout.name!r} is already registered")
    LAYOUTS[layout.name] = layout
    return layout


def _same(names: Sequence[str]) -> dict[str, str]:
    return {n: n for n in names}


_WHY = {
    "head_top": "crown of the head: no human18 equivalent (not the nose or the eyes)",
    "top_head": "crown of the head: no human18 equivalent (not the nose or the eyes)",
    "head": "head point (top / centre): no human18 equivalent",
    "head_bottom": "chin / lower head: no human18 equivalent",
    "neck": "neck: no human18 joint (the shoulder midpoint is not labelled the same way)",
    "upper_neck": "upper neck: no human18 equivalent",
    "thorax": "thorax: no human18 equivalent",
    "pelvis": "pelvis: no human18 joint (the hip midpoint is not labelled the same way)",
    "belly": "belly: no human18 equivalent",
    "hip": "mid-hip / pelvis: no human18 joint",
}


def _layout(name: str, names: Sequence[str], mapped: Sequence[str], why: dict[str, str] | None = None) -> Layout:
    why = why or {}
    left = {n: why.get(n) or _WHY.get(n) or "not in human18" for n in names if n not in mapped}
    return register_layout(Layout(name, tuple(names), _same(mapped), left))


# COCO-17 (also SLEAP / YOLO / mmpose_coco): identical names and order.
_layout("coco17", _COCO17, _COCO17)

# MPII 16 (also MHP, which uses the MPII layout). No nose / eyes / ears.
_MPII16 = ("right_ankle", "right_knee", "right_hip", "left_hip", "left_knee", "left_ankle", "pelvis", "thorax",
           "upper_neck", "head_top", "right_wrist", "right_elbow", "right_shoulder", "left_shoulder",
           "left_elbow", "left_wrist")
_layout("mpii16", _MPII16, _LIMBS)
_layout("mhp16", _MPII16, _LIMBS)

# CrowdPose 14.
_layout("crowdpose14", ("left_shoulder", "right_shoulder", "left_elbow", "right_elbow", "left_wrist",
                        "right_wrist", "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle",
                        "right_ankle", "top_head", "neck"), _LIMBS)

# AI Challenger 14.
_layout("aic14", ("right_shoulder", "right_elbow", "right_wrist", "left_shoulder", "left_elbow", "left_wrist",
                  "right_hip", "right_knee", "right_ankle", "left_hip", "left_knee", "left_ankle", "head_top",
                  "neck"), _LIMBS)

# PoseTrack18: COCO order but slots 1/2 are head_bottom/head_top (no eyes). Ears exist but are never labelled.
_layout("posetrack18", ("nose", "head_bottom", "head_top") + _COCO17[3:], ("nose",) + _COCO17[3:])

# JHMDB 15 (sub-JHMDB puppet joints).
_layout("jhmdb15", ("neck", "belly", "head", "right_shoulder", "left_shoulder", "right_hip", "left_hip",
                    "right_elbow", "left_elbow", "right_knee", "left_knee", "right_wrist", "left_wrist",
                    "right_ankle", "left_ankle"), _LIMBS,
        {"head": "JHMDB head = head centre: no human18 equivalent"})

# ExLPose 14 (CrowdPose-like order).
_layout("exlpose14", ("left_shoulder", "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist",
                      "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle", "head",
                      "neck"), _LIMBS, {"head": "ExLPose head = top of the head: no human18 equivalent"})

# Halpe-FullBody 136: COCO-17 first, then head, neck, hip, 6 foot, 68 face, 2 x 21 hand points.
_HAND = ("hand_root",) + tuple(f"{f}{i}" for f in ("thumb", "forefinger", "middle_finger", "ring_finger",
                                                   "pinky_finger") for i in range(1, 5))
_HALPE = (_COCO17 + ("head", "neck", "hip", "left_big_toe", "right_big_toe", "left_small_toe", "right_small_toe",
                     "left_heel", "right_heel") + tuple(f"face-{i}" for i in range(68))
          + tuple(f"left_{h}" for h in _HAND) + tuple(f"right_{h}" for h in _HAND))
_layout("halpe136", _HALPE, _COCO17)

# MPII-TRB 40: 14 joints (CrowdPose order) + 26 contour points.
_TRB_CONTOUR = ("right_neck", "left_neck") + tuple(
    f"{side}_{part}" for part in ("right_shoulder", "right_bow", "right_wrist", "left_shoulder", "left_bow",
                                  "left_wrist", "right_hip", "right_knee", "right_ankle", "left_hip", "left_knee",
                                  "left_ankle") for side in ("medial", "lateral"))
_layout("mpii_trb40", LAYOUTS["crowdpose14"].keypoint_names[:12] + ("head", "neck") + _TRB_CONTOUR, _LIMBS,
        {n: "MPII-TRB contour point: not in human18" for n in _TRB_CONTOUR})


def _choices() -> str:
    return ", ".join(f"{n} ({len(l.keypoint_names)} joints)" for n, l in LAYOUTS.items())


def get_layout(name: str) -> Layout:
    """The registered layout ``name``; UnknownLayoutError lists the choices."""
    try:
        return LAYOUTS[name]
    except KeyError:
        raise UnknownLayoutError(f"unknown keypoint layout {name!r}; registered layouts: {_choices()}") from None


def detect_layout(keypoint_names: Sequence[str]) -> Layout:
    """The first registered layout whose keypoint_names equal ``keypoint_names`` exactly.

    UnknownLayoutError (listing the choices) when none does: register a Layout
    with an explicit table rather than guessing.
    """
    names = tuple(keypoint_names)
    for lay in LAYOUTS.values():
        if lay.keypoint_names == names:
            return lay
    shown = list(names[:20]) + (["..."] if len(names) > 20 else [])
    raise UnknownLayoutError(
        f"no registered keypoint layout has these {len(names)} keypoint_names {shown}; "
        f"registered layouts: {_choices()} (add one with register_layout)"
    )


def to_human18(keypoint_names: Sequence[str], layout: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Corresponding joints: ``(h18_idx (M,), set_idx (M,))`` int64, sorted by human18 index.

    ``human18[h18_idx[m]]`` is the same joint as ``set[set_idx[m]]``. The layout is
    found from ``keypoint_names`` unless named; a named layout must have exactly
    these names.
    """
    if layout is None:
        lay = detect_layout(keypoint_names)
    else:
        lay = get_layout(layout)
        if lay.keypoint_names != tuple(keypoint_names):
            raise ValueError(f"layout {layout!r} does not have these keypoint_names {list(keypoint_names)[:20]}")
    return lay.indices()


def human18_from_set(
    instance_keypoints: np.ndarray, keypoint_names: Sequence[str], layout: str | None = None
) -> np.ndarray:
    """One person's ``(N, 3)`` x, y, v in the set's layout -> ``(18, 3)`` float64 in human18.

    Unmapped human18 joints (and the virtual centre) get ``0, 0, v=0``.
    """
    kp = np.asarray(instance_keypoints, dtype=np.float64)
    if kp.shape != (len(keypoint_names), 3):
        raise ValueError(f"keypoints must be ({len(keypoint_names)}, 3), got {kp.shape}")
    h_idx, s_idx = to_human18(keypoint_names, layout)
    out = np.zeros((len(HUMAN18_JOINTS), 3), dtype=np.float64)
    out[h_idx] = kp[s_idx]
    return out
