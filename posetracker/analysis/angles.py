"""Joint angles from tracked poses.

An angle is defined by three joints ``a - b - c`` (b the vertex). Flexion is
``180 deg - angle(a, b, c)``: 0 for a straight limb, growing as it bends.
Angles are computed from metric camera-space ``world`` coordinates when the
pose has them (3-D angles), else from image pixels (2-D, foreshortened).
A joint below ``min_confidence`` (or not finite) makes the angle ``nan``.

Shapes: P people, K joints, T frames (see :mod:`posetracker.types`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame, PoseSequence


@dataclass(frozen=True)
class AngleDef:
    """Angle at joint ``b`` between segments ``b -> a`` and ``b -> c``.

    flexion: report ``180 - angle`` (0 = straight) instead of the angle itself.
    """

    name: str
    a: str
    b: str
    c: str
    flexion: bool = True


HUMAN_ANGLES: tuple[AngleDef, ...] = (
    AngleDef("left knee", "left_hip", "left_knee", "left_ankle"),
    AngleDef("right knee", "right_hip", "right_knee", "right_ankle"),
    AngleDef("left elbow", "left_shoulder", "left_elbow", "left_wrist"),
    AngleDef("right elbow", "right_shoulder", "right_elbow", "right_wrist"),
    AngleDef("left hip", "left_shoulder", "left_hip", "left_knee"),
    AngleDef("right hip", "right_shoulder", "right_hip", "right_knee"),
    AngleDef("left shoulder", "left_hip", "left_shoulder", "left_elbow", flexion=False),
    AngleDef("right shoulder", "right_hip", "right_shoulder", "right_elbow", flexion=False),
)


def angles_for_spec(spec: SkeletonSpec, candidates: tuple[AngleDef, ...] = HUMAN_ANGLES) -> tuple[AngleDef, ...]:
    """The angle definitions whose three joints all exist in ``spec``."""
    names = set(spec.joint_names)
    return tuple(d for d in candidates if {d.a, d.b, d.c} <= names)


def _index(spec: SkeletonSpec, defs: tuple[AngleDef, ...]) -> np.ndarray:
    """(A, 3) joint indices of each definition."""
    return np.array([[spec.index(d.a), spec.index(d.b), spec.index(d.c)] for d in defs], np.int64).reshape(-1, 3)


def joint_angles(points: np.ndarray, confidence: np.ndarray, spec: SkeletonSpec,
                 defs: tuple[AngleDef, ...], min_confidence: float = 0.3) -> np.ndarray:
    """Angles in degrees.

    points: (..., K, D) coordinates (D = 2 or 3); confidence: (..., K).
    Returns (..., A) float64, ``nan`` where a joint is missing or unsure.
    """
    idx = _index(spec, defs)
    pts = np.asarray(points, np.float64)
    conf = np.asarray(confidence, np.float64)
    a, b, c = (pts[..., idx[:, i], :] for i in range(3))
    u, v = a - b, c - b
    nu, nv = np.linalg.norm(u, axis=-1), np.linalg.norm(v, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.sum(u * v, axis=-1) / (nu * nv)
    ang = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    flex = np.array([d.flexion for d in defs], bool)
    ang = np.where(flex, 180.0 - ang, ang)
    ok = np.all(conf[..., idx] >= min_confidence, axis=-1) & (nu > 1e-9) & (nv > 1e-9)
    return np.where(ok, ang, np.nan)


def frame_angles(pose: PoseFrame, spec: SkeletonSpec, defs: tuple[AngleDef, ...],
                 min_confidence: float = 0.3) -> np.ndarray:
    """(P, A) angles of everyone in one frame (3-D when ``pose.world`` is set)."""
    pts = pose.world if pose.world is not None else pose.keypoints[..., :2]
    return joint_angles(pts, pose.confidence, spec, defs, min_confidence)


def angle_series(seq: PoseSequence, track_id: int, defs: tuple[AngleDef, ...],
                 min_confidence: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Angles of one track over a sequence.

    Returns ``(times (T,), angles (T, A))`` for the T frames where the track appears.
    """
    times: list[float] = []
    rows: list[np.ndarray] = []
    for f in seq.frames:
        hits = np.flatnonzero(f.track_ids == track_id)
        if hits.size:
            times.append(f.timestamp)
            rows.append(frame_angles(f, seq.skeleton, defs, min_confidence)[hits[0]])
    if not rows:
        return np.zeros(0), np.zeros((0, len(defs)))
    return np.array(times), np.stack(rows)
