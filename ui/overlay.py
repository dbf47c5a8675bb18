"""Pure drawing helpers shared by the 2-D and 3-D views: track colours and the edges to draw."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.skeletons import SkeletonSpec

# A fixed palette ("20 distinct colours" minus the greys and the darkest); colour = palette[id % n].
PALETTE: tuple[tuple[int, int, int], ...] = (
    (230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48),
    (145, 30, 180), (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212),
    (0, 128, 128), (220, 190, 255), (170, 110, 40), (170, 255, 195), (128, 128, 0), (255, 215, 180),
)
UNCONFIRMED = (190, 190, 190)


def track_colour(track_id: int) -> tuple[int, int, int]:
    """RGB 0..255 of a track; grey for people not yet confirmed (id -1)."""
    return PALETTE[track_id % len(PALETTE)] if track_id >= 0 else UNCONFIRMED


@dataclass(frozen=True)
class OverlayOptions:
    labels: bool = True
    low_confidence: bool = False
    boxes: bool = False
    threshold: float = 0.3
    sides: bool = False  # right-side joints drawn white, the rest in the track's colour


def right_side(spec: SkeletonSpec) -> np.ndarray:
    """(K,) bool: the joints on the body's right: of each mirror pair, the one whose name has an r / R where
    the two names first differ (right_knee / left_knee, wingR / wingL)."""
    out = np.zeros(spec.num_joints, bool)
    for k, name in enumerate(spec.joint_names):
        other = spec.joint_names[spec.mirror_index[k]]
        first = next((i for i, (x, y) in enumerate(zip(name, other)) if x != y), None)
        out[k] = first is not None and name[first].lower() == "r"
    return out


def drawn_edges(spec: SkeletonSpec) -> np.ndarray:
    """(M, 2) joint pairs to draw: tree edges plus extra edges, none touching a virtual joint."""
    pairs = [spec.edges]
    if spec.extra_edges is not None and len(spec.extra_edges):
        pairs.append(spec.extra_edges)
    edges = np.concatenate(pairs).reshape(-1, 2)
    virtual = np.array(sorted(spec.virtual), np.int64)
    keep = ~np.isin(edges, virtual).any(axis=1)
    return edges[keep]


def visible_joints(confidence: np.ndarray, points: np.ndarray, spec: SkeletonSpec, threshold: float) -> np.ndarray:
    """(K,) bool: finite, confident, non-virtual joints of one person."""
    ok = np.isfinite(points).all(axis=-1) & (confidence >= threshold)
    ok[list(spec.virtual)] = False
    return ok


def edge_segments(points: np.ndarray, visible: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(2M', D) consecutive endpoint pairs of the edges whose two joints are visible."""
    keep = visible[edges[:, 0]] & visible[edges[:, 1]]
    sel = edges[keep]
    return points[sel.reshape(-1)].reshape(-1, points.shape[-1])
