"""Synthetic stick figures and the ideal network outputs for them (tests, demos, fake models).

A template places every labelled joint of a skeleton in body units (height 1,
x right, y down, origin near the body centre). :func:`make_person` scales, rotates
and moves it into input pixels; virtual joints (the human/mouse centre) stay nan
so the encoder computes them. :func:`ideal_outputs` encodes people into exactly
the maps a perfect network would output.
"""

from __future__ import annotations

import math

import numpy as np

from posetracker.decoding.encode import encode_targets
from posetracker.skeletons import SkeletonSpec

# Person facing the camera: their left is image right (+x).
_HUMAN18 = {
    "nose": (0.0, -0.40), "left_eye": (0.02, -0.42), "right_eye": (-0.02, -0.42),
    "left_ear": (0.045, -0.41), "right_ear": (-0.045, -0.41),
    "left_shoulder": (0.11, -0.30), "right_shoulder": (-0.11, -0.30),
    "left_elbow": (0.16, -0.15), "right_elbow": (-0.16, -0.15),
    "left_wrist": (0.18, -0.02), "right_wrist": (-0.18, -0.02),
    "left_hip": (0.07, 0.0), "right_hip": (-0.07, 0.0),
    "left_knee": (0.08, 0.24), "right_knee": (-0.08, 0.24),
    "left_ankle": (0.08, 0.46), "right_ankle": (-0.08, 0.46),
}
# Animals seen from above, facing up (-y): their left is image left (-x).
_MOUSE4 = {"snout": (0.0, -0.5), "leftear": (-0.12, -0.28), "rightear": (0.12, -0.28), "tailbase": (0.0, 0.5)}
_FLY13 = {
    "head": (0.0, -0.30), "thorax": (0.0, 0.0), "abdomen": (0.0, 0.40),
    "wingL": (-0.15, 0.45), "wingR": (0.15, 0.45),
    "forelegL4": (-0.30, -0.22), "forelegR4": (0.30, -0.22),
    "midlegL4": (-0.38, 0.05), "midlegR4": (0.38, 0.05),
    "hindlegL4": (-0.30, 0.32), "hindlegR4": (0.30, 0.32),
    "eyeL": (-0.07, -0.34), "eyeR": (0.07, -0.34),
}
TEMPLATES: dict[str, dict[str, tuple[float, float]]] = {"human18": _HUMAN18, "mouse4": _MOUSE4, "fly13": _FLY13}


def _generic_template(spec: SkeletonSpec) -> dict[str, tuple[float, float]]:
    """Joints fanned out around the root, 0.15 body units per tree level."""
    depth = {spec.root: 0}
    for k in spec.topo_order[1:]:
        depth[k] = depth[spec.parents[k]] + 1
    out = {}
    n = spec.num_joints
    for k in range(n):
        a = 2.0 * math.pi * k / n
        out[spec.joint_names[k]] = (0.15 * depth[k] * math.cos(a), 0.15 * depth[k] * math.sin(a))
    return out


def template(spec: SkeletonSpec) -> np.ndarray:
    """(K, 2) joint positions in body units; virtual joints nan."""
    table = TEMPLATES.get(spec.name) or _generic_template(spec)
    out = np.full((spec.num_joints, 2), np.nan)
    for k, name in enumerate(spec.joint_names):
        if k not in spec.virtual:
            out[k] = table[name]
    return out


def make_person(
    spec: SkeletonSpec,
    origin: tuple[float, float],
    height: float,
    angle_deg: float = 0.0,
    pose: dict[str, tuple[float, float]] | None = None,
) -> np.ndarray:
    """One stick figure in input pixels.

    origin: template origin (px); height: body height (px); angle_deg: rotation
    (clockwise on screen); pose: joint name -> (x, y) body units replacing the
    template's. Returns (K, 2) float64 px, virtual joints nan.
    """
    t = template(spec)
    for name, xy in (pose or {}).items():
        t[spec.index(name)] = xy
    a = math.radians(angle_deg)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    return t @ rot.T * float(height) + np.asarray(origin, dtype=np.float64)


def ideal_outputs(
    people_xy: np.ndarray,
    spec: SkeletonSpec,
    visible: np.ndarray | None = None,
    depth: np.ndarray | None = None,
    out_size: tuple[int, int] = (64, 64),
    stride: int = 4,
    **encode_kw: float,
) -> dict[str, np.ndarray]:
    """What a perfect network outputs for these people: the encoder's targets without
    the weight masks (``depth`` left out when no depth is given)."""
    t = encode_targets(people_xy, spec, visible, depth, out_size, stride, **encode_kw)
    keys = ("heatmaps", "offsets", "vectors") + (("depth",) if depth is not None else ())
    return {k: t[k] for k in keys}


__all__ = ["TEMPLATES", "template", "make_person", "ideal_outputs"]
