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


def _overlapping(a: tuple[float, float, float, float], b: tuple[float, float, float, float], gap: float) -> bool:
    """Do rectangles (left, top, right, bottom) ``a`` and ``b`` overlap, or come closer than ``gap``?"""
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def label_rect(bottom_centre: np.ndarray, size: np.ndarray) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of a label of ``size`` (w, h) whose bottom-centre is at (x, y) (y down)."""
    (x, y), (w, h) = map(float, bottom_centre), map(float, size)
    return x - w / 2, y - h, x + w / 2, y


def layout_labels(anchors: np.ndarray, sizes: np.ndarray, gap: float = 0.0,
                  bounds: tuple[float, float] | None = None, order: np.ndarray | None = None) -> np.ndarray:
    """Place id labels so that none overlaps another: (N, 2) bottom-centres (x, y; y down).

    ``anchors`` (N, 2): where each label would go (above its person's box), ``sizes`` (N, 2): its width and
    height, in the same units. Labels are placed in ``order`` (default: as given; the caller passes a stable
    one, e.g. by track id, so the same label moves from frame to frame); each keeps its x and takes the free
    height nearest its anchor among: the anchor itself, just above a label already placed, and only where no
    place above is free (within ``bounds``), just below one (a label below a box covers a head). ``bounds`` (top, bottom): heights a label should stay within (the visible frame) where
    a free place inside them exists."""
    anchors = np.asarray(anchors, np.float64).reshape(-1, 2)
    sizes = np.asarray(sizes, np.float64).reshape(-1, 2)
    out = anchors.copy()
    placed: list[tuple[float, float, float, float]] = []
    for i in (range(len(anchors)) if order is None else order):
        (x, ay), (w, h) = anchors[i], sizes[i]
        beside = [r for r in placed if x - w / 2 < r[2] + gap and r[0] < x + w / 2 + gap]  # share some columns
        heights = {ay} | {r[1] - gap for r in beside} | {r[3] + h + gap for r in beside}
        ranked = sorted(heights, key=lambda y: (y > ay, abs(y - ay)))  # up first: a label below covers a head
        free = [y for y in ranked if not any(_overlapping(label_rect((x, y), (w, h)), r, gap) for r in beside)]
        inside = [y for y in free if bounds is None or (y - h >= bounds[0] and y <= bounds[1])]
        out[i, 1] = (inside or free)[0]
        placed.append(label_rect(out[i], sizes[i]))
    return out


def person_at(boxes: np.ndarray, track_ids: np.ndarray, point: tuple[float, float]) -> int | None:
    """The track id of the person clicked at ``point`` (x, y): of the confirmed people whose box (N, 4: x0, y0,
    x1, y1; NaN: not drawn) holds the point, the one with the smallest box (the nearer of two overlapping
    people is usually the one aimed at); None when no box holds it."""
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    x, y = point
    inside = (boxes[:, 0] <= x) & (x <= boxes[:, 2]) & (boxes[:, 1] <= y) & (y <= boxes[:, 3])
    inside &= np.asarray(track_ids).reshape(-1) >= 0
    if not inside.any():
        return None
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    hit = np.flatnonzero(inside)
    return int(np.asarray(track_ids).reshape(-1)[hit[np.argmin(area[hit])]])
