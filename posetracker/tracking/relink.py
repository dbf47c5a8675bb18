"""Re-link the fragments of one person's track over a whole clip (offline).

The live tracker (:class:`~posetracker.tracking.tracker.PoseTracker`) keeps a lost track for ``max_age``
(1 s) and matches it again only by OKS near its predicted pose; someone hidden for longer, or coming out of an
occlusion away from that prediction (behind another person, a pillar, out of the frame and back), comes back
under a new id, and a one-file-per-person export then holds several short "people" for one. With the whole clip
at hand, this pass joins such fragments:

1. Fragments: per track id, the frames where it is present, and, where it has at least 2 joints with confidence
   >= ``min_confidence``, its keypoint box (:func:`posetracker.tracking.encounters._boxes`).
2. Candidates: a fragment ``a`` that ends and a fragment ``b`` that starts later, never present in the same
   frame, ``b``'s first box at most ``max_gap_s`` after ``a``'s last.
3. Their cost, a sum of terms, each a measured difference over what one person allows, squared:

   - motion, both ways in time: ``a``'s box centre and velocity at its end (least squares over its last
     ``fit_s`` seconds, :meth:`posetracker.tracking.encounters._Track.motion`) continued to ``b``'s first
     time, against ``b``'s start; and ``b``'s continued backwards to ``a``'s last time, against ``a``'s end.
     The mean of the two misses, in units of the pair's size (keypoint-box diagonal), over
     ``position_tol + speed_tol * gap``: over a longer gap a person may have stopped, turned or sped up.
     Velocities are capped at ``max_speed`` sizes a second (two noisy boxes of a short fragment can give any);
   - size: ``|log(size_b / size_a)| / size_tol``, each the median box diagonal over the ``fit_s`` seconds next
     to the gap (the camera or the person may have moved over a long fragment);
   - pose: the mean distance of the joints sure in both, ``a``'s last pose against ``b``'s first (each relative
     to its box centre, in box diagonals; the better of ``b`` as read and with its sides swapped), over
     ``pose_tol``; fewer than 3 joints in common count as ``UNKNOWN_POSE`` tolerances (not 0: a fragment
     that shows an arm must not pass as the best match);
   - build: ``|log|`` of the ratio of the two fragments' summed median bone lengths (``world``, metres,
     :func:`posetracker.tracking.bones.bone_lengths`, over the bones measured in both; bones of virtual joints
     left out) over ``bone_tol``; 0 without ``world``;
   - gap: ``gap_cost * gap / max_gap_s``, not squared: of two candidates alike, the one nearer in time wins
     (the longer the gap, the wider the motion tolerance, and the likelier someone else fits it by chance).

   A pair costing more than ``max_cost`` is never joined.
4. Assignment: one global minimum-cost assignment (Hungarian, ``scipy.optimize.linear_sum_assignment``) of
   every end to at most one later start, with "not joined" costing ``max_cost / 2`` for each end and each start
   (the gap-closing matrix of Jaqaman et al., 2008): a pair is joined only where it beats leaving both alone,
   and a good pair is not broken up for a worse one. Ends and starts are separate rows and columns, so one
   assignment makes chains: ``a -> b`` and ``b -> c`` join all three. It is solved per connected group of
   candidate pairs (the same optimum, and a long clip's many fragments stay cheap). A joined track takes the
   earliest id of its chain.
5. Steps 1-4 repeat on the joined tracks until nothing more joins.

Appearance-free and skeleton-agnostic (animals too); people never tracked (id -1) are left alone. It cannot
tell two people apart who stand where one of them was expected (one hidden behind the other, the one in front
lost at the same time): such a pair is joined when its motion, size and pose fit.
Shapes: T frames, P people, K joints, E bones.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.bones import bone_lengths
from posetracker.tracking.encounters import _boxes, _Track
from posetracker.types import PoseFrame

# Chosen by cutting each real person's track for 0.1-1.9 s in tracked clips (the street crowd of
# video_openpose_examples, pose2sim cam02, a dancer, a walker) and re-linking: with these, 91 of 134 cuts in the
# crowd clip were re-joined and 2 joined to someone else (a woman lost where another, hidden behind her, came
# out 1.5 s later), none wrong in the others (dance 154/157, walk 119/122, pose2sim 218/224 re-joined).
MAX_GAP_S = 2.0  # the longest absence bridged
FIT_S = 0.5  # seconds of a fragment's end (start) its motion and size are measured over
POSITION_TOL = 0.5  # sizes (box diagonals): the motion miss allowed without a gap
SPEED_TOL = 1.0  # sizes a second: the miss allowed grows with the gap by this
MAX_SPEED = 3.0  # sizes a second: a fragment's velocity is capped at this
SIZE_TOL = float(np.log(1.5))  # |log| ratio of a person's box diagonal across a gap
POSE_TOL = 0.3  # box diagonals: mean joint distance of the pose at the end and the pose at the start
UNKNOWN_POSE = 0.5  # poses without 3 sure joints in common count as this many POSE_TOL apart
BONE_TOL = 0.25  # |log| ratio of the summed bone lengths (a stature) between the fragments of one person
GAP_COST = 0.5  # the gap term at max_gap_s
MAX_COST = 1.0  # a pair costing more is never joined


@dataclass
class Fragment:
    """One track's summary. at: (F,) frame positions where present, ascending; the rest where it has a box:
    t_start / t_end (s), start / end box centre (2,) px and v_start / v_end velocity (2,) px/s there,
    size_start / size_end (box diagonal, px) next to each, bones (E,) median lengths (m, nan where unmeasured),
    pose_start / pose_end (K, 2) the sure joints at the first / last box relative to its centre, in box
    diagonals (nan: unsure)."""

    tid: int
    at: np.ndarray
    t_start: float
    t_end: float
    start: np.ndarray
    v_start: np.ndarray
    size_start: float
    end: np.ndarray
    v_end: np.ndarray
    size_end: float
    bones: np.ndarray
    pose_start: np.ndarray
    pose_end: np.ndarray


def _anatomical_edges(spec: SkeletonSpec) -> np.ndarray:
    """(E,) bool: edges between two real joints (a bone from a virtual joint changes with the pose)."""
    return np.array([a not in spec.virtual and b not in spec.virtual for a, b in spec.edges.tolist()], bool)


def _side(track: _Track, times: np.ndarray, last: bool, fit_s: float, max_speed: float
          ) -> tuple[float, np.ndarray, np.ndarray, float]:
    """(time, box centre (2,) px, velocity (2,) px/s, size px) of ``track`` at its last (first) box, from its
    boxes within ``fit_s`` of it. times: (T,) s."""
    at = np.asarray(track.at)
    t = times[at]
    edge = t[-1] if last else t[0]
    pick = np.flatnonzero(t >= edge - fit_s) if last else np.flatnonzero(t <= edge + fit_s)
    box = np.stack([track.boxes[i] for i in pick])  # (n, 4)
    size = max(float(np.median(np.hypot(*(box[:, 2:] - box[:, :2]).T))), 1.0)
    fit = track.motion(times, int(at[pick[0]]), int(at[pick[-1]]) + 1)
    if fit is None:  # a single box
        return float(edge), 0.5 * (box[0, :2] + box[0, 2:]), np.zeros(2), size
    centre, velocity, _ = fit  # centre at the picked boxes' mean time
    speed = float(np.linalg.norm(velocity))
    if speed > max_speed * size:
        velocity = velocity * (max_speed * size / speed)
    return float(edge), centre + velocity * (edge - t[pick].mean()), velocity, size


def _pose(frame: PoseFrame, tid: int, min_confidence: float) -> np.ndarray:
    """(K, 2) the sure joints of person ``tid`` in ``frame`` relative to their box centre, in box diagonals;
    nan where unsure (the person has at least 2 sure joints)."""
    p = int(np.flatnonzero(frame.track_ids == tid)[0])
    xy = frame.keypoints[p, :, :2].astype(np.float64)
    sure = (frame.confidence[p] >= min_confidence) & np.isfinite(xy).all(-1)
    lo, hi = xy[sure].min(0), xy[sure].max(0)
    return np.where(sure[:, None], (xy - 0.5 * (lo + hi)) / max(float(np.hypot(*(hi - lo))), 1.0), np.nan)


def fragments(frames: list[PoseFrame], spec: SkeletonSpec, fit_s: float = FIT_S, max_speed: float = MAX_SPEED,
              min_confidence: float = 0.3) -> dict[int, Fragment]:
    """{track id: Fragment} of the tracks of ``frames`` (T tracked PoseFrames in time order) that have at
    least one keypoint box (2 sure joints in a frame)."""
    times = np.array([f.timestamp for f in frames], np.float64)
    present: dict[int, list[int]] = {}
    tracks: dict[int, _Track] = {}
    bones: dict[int, list[np.ndarray]] = {}
    keep = _anatomical_edges(spec)
    for t, frame in enumerate(frames):
        for tid in frame.track_ids.tolist():
            if tid >= 0:
                present.setdefault(int(tid), []).append(t)
        for tid, box in _boxes(frame, min_confidence).items():
            track = tracks.setdefault(tid, _Track())
            track.at.append(t)
            track.boxes.append(box)
            if frame.world is not None:
                p = int(np.flatnonzero(frame.track_ids == tid)[0])
                sure = frame.confidence[p] >= min_confidence
                lengths = bone_lengths(np.where(sure[:, None], frame.world[p], np.nan), spec)  # (E,)
                bones.setdefault(tid, []).append(np.where(keep, lengths, np.nan))
    out = {}
    for tid, track in tracks.items():
        t0, p0, v0, s0 = _side(track, times, False, fit_s, max_speed)
        t1, p1, v1, s1 = _side(track, times, True, fit_s, max_speed)
        b = np.stack(bones[tid]) if tid in bones else np.full((1, spec.num_edges), np.nan)  # (n, E)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a bone never measured: nan
            med = np.nanmedian(b, axis=0)
        out[tid] = Fragment(tid, np.asarray(present[tid]), t0, t1, p0, v0, s0, p1, v1, s1, med,
                            _pose(frames[track.at[0]], tid, min_confidence),
                            _pose(frames[track.at[-1]], tid, min_confidence))
    return out


def link_cost(a: Fragment, b: Fragment, mirror: np.ndarray | None = None, max_gap_s: float = MAX_GAP_S,
              position_tol: float = POSITION_TOL, speed_tol: float = SPEED_TOL, size_tol: float = SIZE_TOL,
              pose_tol: float = POSE_TOL, bone_tol: float = BONE_TOL, gap_cost: float = GAP_COST
              ) -> dict[str, float]:
    """The terms of step 3 (module docstring) for ``a`` continued by ``b`` (``b`` starts after ``a`` ends):
    {"gap_s", "motion", "size", "pose", "build", "gap", "cost"} (cost: the sum of the five terms). mirror: (K,)
    each joint's left/right mirror (``SkeletonSpec.mirror_index``; None: poses compared as read)."""
    gap = b.t_start - a.t_end
    size = 0.5 * (a.size_end + b.size_start)
    forward = np.linalg.norm(a.end + a.v_end * gap - b.start)
    backward = np.linalg.norm(b.start - b.v_start * gap - a.end)
    terms = {"motion": (0.5 * (forward + backward) / size / (position_tol + speed_tol * gap)) ** 2,
             "size": (np.log(b.size_start / a.size_end) / size_tol) ** 2,
             "pose": (_pose_distance(a.pose_end, b.pose_start, mirror, pose_tol * UNKNOWN_POSE) / pose_tol) ** 2,
             "build": (_stature_ratio(a.bones, b.bones) / bone_tol) ** 2,
             "gap": gap_cost * gap / max_gap_s}
    return {"gap_s": float(gap), **{k: float(v) for k, v in terms.items()}, "cost": float(sum(terms.values()))}


def _pose_distance(a: np.ndarray, b: np.ndarray, mirror: np.ndarray | None, unknown: float, min_joints: int = 3
                   ) -> float:
    """Mean distance of the joints sure in both poses (K, 2) (box diagonals, :func:`_pose`), the better of ``b``
    and ``b`` mirrored; ``unknown`` with fewer than ``min_joints`` in common."""
    best = np.inf
    for order in (np.arange(len(b)),) + (() if mirror is None else (np.asarray(mirror),)):
        both = np.isfinite(a).all(-1) & np.isfinite(b[order]).all(-1)
        if both.sum() >= min_joints:
            best = min(best, float(np.linalg.norm(a[both] - b[order][both], axis=-1).mean()))
    return best if np.isfinite(best) else unknown


def _stature_ratio(a: np.ndarray, b: np.ndarray) -> float:
    """|log| of the ratio of the summed lengths of the bones (E,) measured in both; 0 without any."""
    both = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
    return abs(float(np.log(b[both].sum() / a[both].sum()))) if both.any() else 0.0


def _candidates(frags: dict[int, Fragment], mirror: np.ndarray, max_gap_s: float, max_cost: float,
                tols: dict[str, float]) -> dict[tuple[int, int], dict[str, float]]:
    """Steps 2-3: {(a, b): link_cost terms} of the pairs costing at most ``max_cost``."""
    order = sorted(frags.values(), key=lambda f: f.t_start)
    starts = np.array([f.t_start for f in order])
    out = {}
    for fa in frags.values():
        lo = int(np.searchsorted(starts, fa.t_end, side="left"))
        hi = int(np.searchsorted(starts, fa.t_end + max_gap_s, side="right"))
        for fb in order[lo:hi]:
            if fb.at[0] <= fa.at[-1]:  # seen together (or b not after a): two people
                continue
            c = link_cost(fa, fb, mirror, max_gap_s, **tols)
            if c["cost"] <= max_cost:
                out[(fa.tid, fb.tid)] = c
    return out


def _assign(pairs: dict[tuple[int, int], dict[str, float]], max_cost: float) -> list[tuple[int, int]]:
    """Step 4: the (a, b) pairs joined by the gap-closing assignment, solved per connected group of pairs."""
    group: dict[tuple[str, int], tuple[str, int]] = {}  # union-find over ("end", a) and ("start", b)

    def find(x: tuple[str, int]) -> tuple[str, int]:
        while group.setdefault(x, x) != x:
            group[x] = group[group[x]]
            x = group[x]
        return x

    for a, b in pairs:
        group[find(("end", a))] = find(("start", b))
    groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for a, b in pairs:
        groups.setdefault(find(("end", a)), []).append((a, b))
    joined = []
    for members in groups.values():
        ends = sorted({a for a, _ in members})
        starts = sorted({b for _, b in members})
        n, m = len(ends), len(starts)
        big = 1e6  # never chosen while a cheaper way to cover the row and column exists
        cost = np.full((n, m), big)
        for a, b in members:
            cost[ends.index(a), starts.index(b)] = pairs[(a, b)]["cost"]
        # [[links (n, m), end alone (n, n)], [start alone (m, m), dummy (m, n)]]: "alone" costs max_cost / 2 on
        # the diagonal only, so a link is taken only where it costs less than leaving its end and start alone.
        end_alone = np.where(np.eye(n, dtype=bool), 0.5 * max_cost, big)
        start_alone = np.where(np.eye(m, dtype=bool), 0.5 * max_cost, big)
        rows, cols = linear_sum_assignment(np.block([[cost, end_alone], [start_alone, np.zeros((m, n))]]))
        joined += [(ends[r], starts[c]) for r, c in zip(rows, cols) if r < n and c < m and cost[r, c] < big]
    return joined


def relink_fragments(frames: list[PoseFrame], spec: SkeletonSpec, max_gap_s: float = MAX_GAP_S,
                     max_cost: float = MAX_COST, *, fit_s: float = FIT_S, position_tol: float = POSITION_TOL,
                     speed_tol: float = SPEED_TOL, max_speed: float = MAX_SPEED, size_tol: float = SIZE_TOL,
                     pose_tol: float = POSE_TOL, bone_tol: float = BONE_TOL, gap_cost: float = GAP_COST,
                     min_confidence: float = 0.3) -> tuple[list[PoseFrame], dict]:
    """Join the fragments of one person's track (module docstring) in ``frames``: T tracked PoseFrames in time
    order, each with keypoints (P, K, 3) x, y px and depth m, confidence (P, K), track_ids (P,) (-1: not
    tracked), world (P, K, 3) m or None. Returns new frames (the input is not modified; the people of a joined
    fragment carry the earliest id of its chain, nothing else changes) and a report for the metadata::

        {"tracks_before": int, "tracks_after": int,
         "joined": {tracker's id: the id it now carries},  # only the ids that changed
         "links": [{"from": id, "to": id, "gap_s", "motion", "size", "pose", "build", "gap", "cost"}, ...]}

    ``links``: each join in order of the later fragment's start; "from" is the earlier track's id at the time
    (its chain's earliest), "to" the id of the later one's first fragment.
    """
    tols = {"position_tol": position_tol, "speed_tol": speed_tol, "size_tol": size_tol, "pose_tol": pose_tol,
            "bone_tol": bone_tol, "gap_cost": gap_cost}
    mirror = np.asarray(spec.mirror_index)
    before = sorted({int(i) for f in frames for i in f.track_ids if i >= 0})
    owner = {tid: tid for tid in before}  # tracker's id -> the id it carries now
    out = list(frames)
    links: list[dict] = []
    while True:
        frags = fragments(out, spec, fit_s, max_speed, min_confidence)
        pairs = _candidates(frags, mirror, max_gap_s, max_cost, tols)
        joins = _assign(pairs, max_cost) if pairs else []
        if not joins:
            break
        parent = {b: a for a, b in joins}
        root: dict[int, int] = {}
        for b in sorted(parent, key=lambda i: frags[i].t_start):  # a chain's earlier links are resolved first
            root[b] = root.get(parent[b], parent[b])
        links += [{"from": a, "to": b, **{k: round(v, 3) for k, v in pairs[(a, b)].items()}} for a, b in joins]
        owner = {tid: root.get(cur, cur) for tid, cur in owner.items()}
        out = [_renamed(f, root) for f in out]
    start = {}  # tracker's id -> its first frame position
    for t, f in enumerate(frames):
        for i in f.track_ids.tolist():
            start.setdefault(int(i), t)
    links.sort(key=lambda d: (start[d["to"]], d["to"]))
    return out, {"tracks_before": len(before), "tracks_after": len(set(owner.values())),
                 "joined": {tid: cur for tid, cur in owner.items() if cur != tid}, "links": links}


def _renamed(frame: PoseFrame, ids: dict[int, int]) -> PoseFrame:
    """``frame`` with each track id in ``ids`` replaced by ``ids[id]``."""
    if not any(int(t) in ids for t in frame.track_ids):
        return frame
    return dataclasses.replace(frame, track_ids=np.array([ids.get(int(t), int(t)) for t in frame.track_ids], np.int64))


__all__ = ["Fragment", "fragments", "link_cost", "relink_fragments"]
