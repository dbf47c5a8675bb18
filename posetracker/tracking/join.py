"""Join a recording tracked in parts: the parts' tracks matched in their overlaps, one id per person throughout.

A long video is tracked in parts (``posetracker.batch``: one Ray task each), part k over frames
[start_k - overlap, start_k+1 + overlap), each with its own tracker (ids from 0), smoothing and network state.
:func:`join_parts` makes them one sequence, as if tracked in one piece:

- frames: each from the part whose own frames [start_k, start_k+1) hold it, i.e. the part where it is furthest
  from an edge (the other part's copy is at most ``overlap`` frames from its edge, where its network and
  smoothing see less context and its tracker has just started);
- ids: part k's tracks are matched to part k-1's in the frames both tracked (:func:`match_tracks`: mean OKS,
  Hungarian); a matched track takes the earlier track's id, an unmatched one a new id above every id handed out
  before, so no id names two people;
- left/right: each part's tracker keeps a person's mirror pairs consistent with how it first read them
  (``tracking.mirror``), so two parts can disagree about a side for a whole track; :func:`align_sides` swaps
  a matched track's pairs that sit crossed against the earlier part's in the overlap, so sides do not flip at
  a join;
- bones: one length per bone and track over the whole joined recording, each joint on its camera ray
  (``tracking.bones.rigid_tracks``, as the offline session; the parts are tracked without it).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.optimize import linear_sum_assignment

from posetracker.oks import joint_sigmas, keypoint_bbox_area
from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.bones import rigid_tracks
from posetracker.tracking.mirror import crossed_pairs, mirror_pairs, swap_permutation
from posetracker.tracking.similarity import oks_matrix
from posetracker.types import PoseFrame, PoseSequence

MIN_SIMILARITY = 0.5  # two parts' tracks are one person at this similarity (see match_tracks) or above
MIN_CONFIDENCE = 0.3  # joints compared (as tracking.offline.backfill_ids)


def common_frames(a: list[PoseFrame], b: list[PoseFrame], tolerance_s: float) -> list[tuple[PoseFrame, PoseFrame]]:
    """(frame of ``a``, frame of ``b``) at the same timestamp (within ``tolerance_s``), in ``b``'s order."""
    times = np.array([f.timestamp for f in a], np.float64)
    out = []
    for fb in b:
        if len(times):
            j = int(np.argmin(np.abs(times - fb.timestamp)))
            if abs(times[j] - fb.timestamp) <= tolerance_s:
                out.append((a[j], fb))
    return out


def _person(frame: PoseFrame, people: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, K, 2) float64 image x, y (0 where not compared) and (P, K) bool joints compared, of ``people``."""
    xy = frame.keypoints[people, :, :2].astype(np.float64)
    ok = (frame.confidence[people] >= MIN_CONFIDENCE) & np.isfinite(xy).all(-1)
    return np.where(ok[..., None], xy, 0.0), ok


def match_tracks(a: list[PoseFrame], b: list[PoseFrame], sigmas: np.ndarray, tolerance_s: float,
                 mirror: np.ndarray | None = None, min_similarity: float = MIN_SIMILARITY) -> dict[int, int]:
    """{id in ``b``: id in ``a``} for the tracks of two consecutive parts that follow the same person.

    a, b: the tracked frames of the two parts; their common frames (the overlap) are those at the same timestamp
    (:func:`common_frames`). sigmas: (K,) OKS sigmas; mirror: (K,) each joint's left/right mirror
    (``SkeletonSpec.mirror_index``): a frame's OKS is the better of ``b`` as read and ``b`` with its sides
    swapped (a part may have read a person's sides the other way, :func:`align_sides`). The similarity of a
    track of ``a`` and one of ``b`` is their OKS summed over the common frames where both are seen, divided by
    the common frames where either is (two people who are seen together only in some of them score low); pairs
    are matched one to one (Hungarian, highest total) and kept at ``min_similarity`` or above.
    """
    ids_a = sorted({int(t) for f in a for t in f.track_ids if t >= 0})
    ids_b = sorted({int(t) for f in b for t in f.track_ids if t >= 0})
    row = {t: i for i, t in enumerate(ids_a)}
    col = {t: i for i, t in enumerate(ids_b)}
    oks_sum = np.zeros((len(ids_a), len(ids_b)))  # (A, B)
    both = np.zeros((len(ids_a), len(ids_b)))
    seen_a, seen_b = np.zeros(len(ids_a)), np.zeros(len(ids_b))
    for fa, fb in common_frames(a, b, tolerance_s):
        pa, pb = np.flatnonzero(fa.track_ids >= 0), np.flatnonzero(fb.track_ids >= 0)
        ra = [row[int(t)] for t in fa.track_ids[pa]]
        cb = [col[int(t)] for t in fb.track_ids[pb]]
        seen_a[ra] += 1
        seen_b[cb] += 1
        xy_a, ok_a = _person(fa, pa)
        xy_b, ok_b = _person(fb, pb)
        area_a, area_b = keypoint_bbox_area(xy_a, ok_a), keypoint_bbox_area(xy_b, ok_b)
        sim = oks_matrix(xy_a, ok_a, area_a, xy_b, ok_b, area_b, sigmas)  # (Pa, Pb)
        if mirror is not None:
            sim = np.maximum(sim, oks_matrix(xy_a, ok_a, area_a, xy_b[:, mirror], ok_b[:, mirror], area_b, sigmas))
        oks_sum[np.ix_(ra, cb)] += sim
        both[np.ix_(ra, cb)] += 1
    either = seen_a[:, None] + seen_b[None] - both
    similarity = np.divide(oks_sum, either, out=np.zeros_like(oks_sum), where=either > 0)
    rows, cols = linear_sum_assignment(similarity, maximize=True)
    return {ids_b[c]: ids_a[r] for r, c in zip(rows, cols) if similarity[r, c] >= min_similarity}


def align_sides(a: list[PoseFrame], b: list[PoseFrame], same: dict[int, int], spec: SkeletonSpec, since_s: float,
                tolerance_s: float) -> list[PoseFrame]:
    """``b`` with its tracks' left/right mirror pairs made to agree with the ``a`` tracks they continue.

    same: {id in b: id in a} (:func:`match_tracks`). For each matched track and mirror pair, the common frames
    from ``since_s`` on (the join: where ``b``'s frames take over from ``a``'s) vote: where the pair sits crossed
    against ``a``'s (``tracking.mirror.crossed_pairs``) in more than half of the frames where both of its joints
    are seen in both, it is swapped in all of the track's frames of ``b`` (keypoints, confidence, world). Returns
    new frames (``b`` is not modified).
    """
    pairs = mirror_pairs(spec)
    if not same or not pairs.size:
        return b
    crossed = {t: np.zeros(len(pairs)) for t in same}  # (M,) per b track: frames voting "crossed"
    seen = {t: np.zeros(len(pairs)) for t in same}  # (M,): frames where the pair is compared
    for fa, fb in common_frames(a, b, tolerance_s):
        if fb.timestamp < since_s:
            continue
        for tid in set(fb.track_ids.tolist()) & set(same):
            pa = np.flatnonzero(fa.track_ids == same[tid])
            if not pa.size:
                continue
            det, det_ok = _person(fb, np.flatnonzero(fb.track_ids == tid))
            ref, ref_ok = _person(fa, pa)
            i, j = pairs[:, 0], pairs[:, 1]
            seen[tid] += det_ok[0, i] & det_ok[0, j] & ref_ok[0, i] & ref_ok[0, j]
            crossed[tid] += crossed_pairs(det, det_ok, ref, ref_ok, pairs)[0]
    swap = {t: crossed[t] > seen[t] / 2 for t in same if (crossed[t] > seen[t] / 2).any()}  # (M,) bool
    if not swap:
        return b
    out = []
    for f in b:
        people = [p for p, t in enumerate(f.track_ids.tolist()) if t in swap]
        if not people:
            out.append(f)
            continue
        kp, conf = f.keypoints.copy(), f.confidence.copy()
        world = None if f.world is None else f.world.copy()
        for p in people:
            order = swap_permutation(swap[int(f.track_ids[p])][None], pairs, f.num_joints)[0]  # (K,)
            kp[p], conf[p] = kp[p, order], conf[p, order]
            if world is not None:
                world[p] = world[p, order]
        out.append(dataclasses.replace(f, keypoints=kp, confidence=conf, world=world))
    return out


def join_parts(parts: list[PoseSequence], starts: list[int]) -> PoseSequence:
    """One sequence from the parts of a recording (see the module docstring).

    parts[k]: part k's tracked frames over [starts[k] - overlap, starts[k+1] + overlap), ids from 0, bones not
    made rigid; starts[k]: the frame where part k's own frames begin (starts[0] = 0). Part k gives the frames
    with timestamps in [(starts[k] - 1/2) / fps, (starts[k+1] - 1/2) / fps), renumbered 0, 1, ... in order;
    trailing parts with no frame (they start past the real end of the recording) are dropped. Raises
    RuntimeError when a part does not reach back over its own start or when no frame is left. The joined bones
    have one length per bone and track over the recording; its metadata is part 0's less ``bones`` (its "raw").
    """
    while len(parts) > 1 and not parts[-1].frames:
        parts = parts[:-1]
    spec, fps = parts[0].skeleton, parts[0].fps
    sigmas = joint_sigmas(spec)
    tolerance = 0.5 / fps
    cuts = [-np.inf] + [(s - 0.5) / fps for s in starts[1:len(parts)]] + [np.inf]
    frames: list[PoseFrame] = []
    previous: list[PoseFrame] = []
    ids: dict[int, int] = {}  # the previous part's {own id: joined id}
    next_id = 0
    for k, part in enumerate(parts):
        own = part.frames
        if k > 0 and not (own and own[0].timestamp < cuts[k]):
            raise RuntimeError(f"part {k + 1} of {len(parts)} does not start before its frame {starts[k]}")
        same = match_tracks(previous, own, sigmas, tolerance, np.asarray(spec.mirror_index)) if k else {}
        own = align_sides(previous, own, same, spec, cuts[k], tolerance) if k else own
        new_ids: dict[int, int] = {}
        for tid in sorted({int(t) for f in own for t in f.track_ids if t >= 0}):
            if k == 0:
                new_ids[tid] = tid
            elif tid in same:
                new_ids[tid] = ids[same[tid]]
            else:
                new_ids[tid], next_id = next_id, next_id + 1
        next_id = max([next_id, *(i + 1 for i in new_ids.values())])
        frames += [_renamed(f, new_ids) for f in own if cuts[k] <= f.timestamp < cuts[k + 1]]
        previous, ids = own, new_ids
    if not frames:
        raise RuntimeError("no frame could be read")
    frames = [dataclasses.replace(f, index=i) for i, f in enumerate(frames)]
    meta = {k: v for k, v in parts[0].metadata.items() if k != "bones"}  # not "raw": rigid over the recording now
    return PoseSequence(rigid_tracks(frames, spec, on_rays=True), fps=fps, skeleton=spec, metadata=meta)


def _renamed(frame: PoseFrame, ids: dict[int, int]) -> PoseFrame:
    """``frame`` with each track id t >= 0 replaced by ``ids[t]``."""
    new = np.array([ids[int(t)] if t >= 0 else int(t) for t in frame.track_ids], np.int64)
    return dataclasses.replace(frame, track_ids=new)


__all__ = ["MIN_SIMILARITY", "align_sides", "common_frames", "join_parts", "match_tracks"]
