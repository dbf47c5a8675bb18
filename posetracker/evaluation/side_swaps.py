"""Left / right swaps of a track's arm and leg pairs against a truth that does not come from its own labels.

A pair (shoulders, hips, elbows, wrists, knees, ankles) of one person-frame is *swapped* where its two labelled
joints fit the true left and right positions better the other way round: with ``l, r`` the labelled points and
``L, R`` the true ones, ``|l - R| + |r - L|`` at least ``margin`` below ``|l - L| + |r - R|``; *right* where it is
at least ``margin`` above; else (or where a joint is unseen) *undecided*. Two sources of truth:

- **by eye** (:func:`eye_verdicts`): frames marked facing the camera or seen from behind. The shoulders' and hips'
  truth is the labelled pair ordered by image x as the mark says (facing the camera a person's left is on the
  image's right); shoulders less than ``min_width`` torso lengths apart in x (a side view) are undecided, hips
  that close follow the true shoulders (the true left hip is the one nearer the true left shoulder). The limbs'
  truth follows the chain: the true left elbow is the labelled elbow nearer the true left shoulder (the verdict
  above with the true shoulders as ``L, R``), the wrists follow the true elbows, the knees the true hips, the
  ankles the true knees; where the chain cannot tell (a narrow stance seen from behind: the hips too close to
  say which knee hangs from which), a pair at least ``min_width`` apart in x is ordered as the mark says. Only
  the labels are judged; the points are the track's own.
- **calibrated views** (:func:`reference_sides` then :func:`view_verdicts`): a person triangulated from several
  views gets left and right from the 3-D body, not from any view's labels: the trunk's line gives the left-right
  axis, the head (the nose in front of the ears) which end is left, the limbs follow the chain in 3-D as above.
  Each view's labels are then judged against the true points projected into it.

Shapes: T frames, K joints, G = 6 pairs (:data:`PAIRS`). Verdicts: (T, G) int8, +1 swapped, 0 right, -1 undecided.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from posetracker.skeletons import SkeletonSpec

PAIRS = ("shoulder", "hip", "elbow", "wrist", "knee", "ankle")
CHAIN = {"elbow": "shoulder", "wrist": "elbow", "knee": "hip", "ankle": "knee"}  # each limb pair's parent pair
GROUPS = {"trunk": ("shoulder", "hip"), "arms": ("elbow", "wrist"), "legs": ("knee", "ankle")}
SWAPPED, RIGHT, UNDECIDED = 1, 0, -1


def _ij(spec: SkeletonSpec, pair: str) -> tuple[int, int]:
    return spec.index(f"left_{pair}"), spec.index(f"right_{pair}")


def crossed(l: np.ndarray, r: np.ndarray, tl: np.ndarray, tr: np.ndarray, margin: np.ndarray) -> np.ndarray:
    """l, r: (T, D) labelled left / right points; tl, tr: (T, D) true ones; margin: (T,) -> (T,) verdicts."""
    same = np.linalg.norm(l - tl, axis=-1) + np.linalg.norm(r - tr, axis=-1)
    cross = np.linalg.norm(l - tr, axis=-1) + np.linalg.norm(r - tl, axis=-1)
    out = np.full(len(l), UNDECIDED, np.int8)
    with np.errstate(invalid="ignore"):
        out[cross <= same - margin] = SWAPPED
        out[cross >= same + margin] = RIGHT
    return out


def _relabel(l: np.ndarray, r: np.ndarray, verdict: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The true left and right points of a judged pair: exchanged where swapped, nan where undecided."""
    s = (verdict == SWAPPED)[:, None]
    tl, tr = np.where(s, r, l), np.where(s, l, r)
    u = (verdict == UNDECIDED)[:, None]
    return np.where(u, np.nan, tl), np.where(u, np.nan, tr)


def torso_lengths(points: np.ndarray, spec: SkeletonSpec) -> np.ndarray:
    """(T, K, D) -> (T,) mid-shoulder to mid-hip distance (nan where unseen)."""
    s, h = _ij(spec, "shoulder"), _ij(spec, "hip")
    return np.linalg.norm(points[:, list(s)].mean(1) - points[:, list(h)].mean(1), axis=-1)


def eye_verdicts(xy: np.ndarray, seen: np.ndarray, facing: np.ndarray, spec: SkeletonSpec,
                 min_width: float = 0.25, margin: float = 0.1, crossing: np.ndarray | None = None) -> np.ndarray:
    """xy: (T, K, 2) px of one track; seen: (T, K) bool; facing: (T,) +1 facing the camera, -1 from behind, 0 not
    marked; crossing: (T,) bool frames where, by eye, limbs really cross (an arm across the chest, legs crossed:
    neither the chain nor the image x can judge them; their limb pairs are undecided) -> (T, G) verdicts (module
    docstring; ``margin`` in torso lengths)."""
    crossing = np.zeros(len(xy), bool) if crossing is None else np.asarray(crossing, bool)
    pts = np.where(seen[..., None], xy.astype(np.float64), np.nan)
    torso = torso_lengths(pts, spec)
    out = np.full((len(xy), len(PAIRS)), UNDECIDED, np.int8)
    truth: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for g, pair in enumerate(PAIRS):
        i, j = _ij(spec, pair)
        l, r = pts[:, i], pts[:, j]
        dx = l[:, 0] - r[:, 0]
        with np.errstate(invalid="ignore"):
            wide = np.abs(dx) >= min_width * torso
        by_x = np.where(np.sign(dx) == facing, RIGHT, SWAPPED).astype(np.int8)
        by_x[~wide | (facing == 0) | ~np.isfinite(dx)] = UNDECIDED
        if pair == "shoulder":
            verdict = by_x
        elif pair == "hip":  # hips close together (a narrow stance, seen from behind): the shoulders' chain
            verdict = np.where(wide, by_x, crossed(l, r, *truth["shoulder"], margin * torso)).astype(np.int8)
        else:  # the limbs: the chain; where it cannot tell (parents too close together), the image x
            verdict = crossed(l, r, *truth[CHAIN[pair]], margin * torso)
            verdict = np.where(verdict == UNDECIDED, by_x, verdict).astype(np.int8)
            verdict[crossing] = UNDECIDED
        out[:, g] = verdict
        truth[pair] = _relabel(l, r, verdict)
    return out


def reference_sides(xyz: np.ndarray, spec: SkeletonSpec, up: Sequence[float] = (0.0, 0.0, 1.0),
                    margin_m: float = 0.03, window: int = 5, head_m: tuple[float, float] = (0.03, 0.25),
                    min_cos: float = 0.5) -> np.ndarray:
    """(T, K, 3) world metres of a triangulated person -> the same with each pair of :data:`PAIRS` labelled by
    the 3-D body, nan where the body cannot tell.

    The trunk's line (left minus right shoulder plus the same of the hips, as triangulated) gives the left-right
    axis, its ends followed from frame to frame (a frame whose triangulation named the trunk the other way round
    does not turn it); which end is left comes from the head: forward is the nose's horizontal offset from the middle of the
    ears (``head_m``: only where it is 3-25 cm long, a head read in one piece), and the trunk as labelled is
    right where ``left x up`` points forward. The head turns against the trunk and is read noisily, so the
    cosine between the two is taken as its median over ``window`` frames either side: above ``min_cos`` the
    labels stand, below ``-min_cos`` they are exchanged, between (a head turned sideways, none read) the frame's
    pairs are nan. Each shoulder and hip pair then has its left end the one further along the true left (by at
    least ``margin_m``, and the pair within 60 degrees of the axis: a bent body's hips may lie across its
    shoulders); the limbs follow the chain in 3-D (:func:`crossed` against the true parents)."""
    up = np.asarray(up, np.float64)
    out = np.array(xyz, np.float64)
    flat = lambda v: v - (v @ up)[..., None] * up  # noqa: E731  (horizontal part)
    nose = out[:, spec.index("nose")]
    ears = out[:, list(_ij(spec, "ear"))].mean(1)
    head = flat(nose - ears)
    size = np.linalg.norm(head, axis=-1)
    ls, rs = _ij(spec, "shoulder")
    lh, rh = _ij(spec, "hip")
    axis = flat(np.nan_to_num(out[:, ls] - out[:, rs]) + np.nan_to_num(out[:, lh] - out[:, rh]))
    last = None
    for t in range(len(axis)):  # one end of the axis followed through time: a trunk cannot turn 90 degrees a frame
        if np.linalg.norm(axis[t]) > 0:
            if last is not None and axis[t] @ last < 0:
                axis[t] = -axis[t]
            last = axis[t]
    fwd = np.cross(axis, up)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = (head * fwd).sum(-1) / (size * np.linalg.norm(fwd, axis=-1))
    cos[~((size >= head_m[0]) & (size <= head_m[1]))] = np.nan
    med = np.full(len(cos), np.nan)
    for t in range(len(cos)):
        near = cos[max(0, t - window): t + window + 1]
        if np.isfinite(near).any():
            med[t] = np.nanmedian(near)
    sign = np.where(med > min_cos, 1.0, np.where(med < -min_cos, -1.0, np.nan))
    with np.errstate(invalid="ignore", divide="ignore"):
        left = sign[:, None] * axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    truth: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for pair in PAIRS:
        i, j = _ij(spec, pair)
        l, r = out[:, i].copy(), out[:, j].copy()
        if pair in CHAIN:
            verdict = crossed(l, r, *truth[CHAIN[pair]], np.full(len(l), margin_m))
        else:
            along = ((l - r) * left).sum(-1)
            verdict = np.full(len(l), UNDECIDED, np.int8)
            with np.errstate(invalid="ignore", divide="ignore"):
                lined_up = np.abs(along) >= min_cos * np.linalg.norm(flat(l - r), axis=-1)  # not across the axis
                verdict[(along >= margin_m) & lined_up] = RIGHT
                verdict[(along <= -margin_m) & lined_up] = SWAPPED
        truth[pair] = _relabel(l, r, verdict)
        out[:, i], out[:, j] = truth[pair]
    return out


def view_verdicts(xy: np.ndarray, seen: np.ndarray, truth_xy: np.ndarray, spec: SkeletonSpec,
                  margin: float = 0.1, min_apart: float = 0.15) -> np.ndarray:
    """xy: (T, K, 2) px of one view's track; seen: (T, K); truth_xy: (T, K, 2) the true points projected into the
    view -> (T, G) verdicts; a pair whose true points lie less than ``min_apart`` torso lengths apart in this view
    (one behind the other) is undecided. ``margin``: torso lengths (the true torso in the view)."""
    pts = np.where(seen[..., None], xy.astype(np.float64), np.nan)
    torso = torso_lengths(truth_xy, spec)
    out = np.full((len(xy), len(PAIRS)), UNDECIDED, np.int8)
    for g, pair in enumerate(PAIRS):
        i, j = _ij(spec, pair)
        verdict = crossed(pts[:, i], pts[:, j], truth_xy[:, i], truth_xy[:, j], margin * torso)
        with np.errstate(invalid="ignore"):
            verdict[~(np.linalg.norm(truth_xy[:, i] - truth_xy[:, j], axis=-1) >= min_apart * torso)] = UNDECIDED
        out[:, g] = verdict
    return out


def summary(verdicts: np.ndarray, present: np.ndarray) -> dict:
    """(T, G) verdicts, (T,) bool person-frames counted -> counts and rates per 1,000 person-frames: a frame is
    swapped where any pair is (per group: any pair of the group); ``events``: frames swapped after a counted
    frame that was not (a new swap), ``decided``: person-frames with at least one pair decided."""
    v = verdicts[present]
    out: dict = {"person_frames": int(present.sum()), "decided": int((v >= 0).any(1).sum())}
    groups = {"any": PAIRS, **GROUPS}
    for name, pairs in groups.items():
        cols = [PAIRS.index(p) for p in pairs]
        bad = (v[:, cols] == SWAPPED).any(1)
        events = int(bad[0]) + int((bad[1:] & ~bad[:-1]).sum()) if len(bad) else 0
        n = max(len(bad), 1)
        out[name] = {"swapped": int(bad.sum()), "per_1000": round(1000 * bad.sum() / n, 1), "events": events,
                     "events_per_1000": round(1000 * events / n, 1)}
    return out


__all__ = ["GROUPS", "PAIRS", "crossed", "eye_verdicts", "reference_sides", "summary", "torso_lengths",
           "view_verdicts"]
