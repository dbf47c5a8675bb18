"""Left/right consistency over time: a person's left and right joints do not trade places between frames.

A bottom-up network reads left and right from appearance, frame by frame; in a side
view (the clinical gait view) or with loose clothing it sometimes labels the two
knees, ankles or shoulders the other way round for a frame or two. The body itself
turns smoothly, so a real change of which side is nearer shows in the track's motion
first, while a misread appears as a jump of both joints of a mirror pair onto each
other's predicted places.

For a mirror pair (a, b) of a detection matched to a track, with both joints seen
and both predicted (px):

    straight = |d_a - p_a| + |d_b - p_b|,   crossed = |d_a - p_b| + |d_b - p_a|

The pair is swapped back when ``crossed < ratio * straight`` and the gain
``straight - crossed`` exceeds ``min_gain`` of the person's size (sqrt of its
keypoint box area): two joints close together (eyes, a side-on pair of hips) never
trade on noise, and a real crossing of two limbs (legs passing in a stride) follows
the prediction's velocities, so it is not crossed against it.

:func:`count_swaps` is the matching measure on finished tracks: the frames where a
mirror pair of a track sits crossed against the track's frame before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from posetracker.oks import keypoint_bbox_area
from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame


def mirror_pairs(spec: SkeletonSpec) -> np.ndarray:
    """(M, 2) int64 joint indices (a < b) of the skeleton's left/right pairs."""
    pairs = [(a, b) for a, b in enumerate(spec.mirror_index) if a < b]
    return np.asarray(pairs, np.int64).reshape(-1, 2)


def crossed_pairs(det: np.ndarray, det_ok: np.ndarray, ref: np.ndarray, ref_ok: np.ndarray, pairs: np.ndarray,
                  ratio: float = 0.5, min_gain: float = 0.1) -> np.ndarray:
    """Which mirror pairs of each person sit crossed against a reference pose.

    det, ref: (N, K, 2) px (the detection, and its track's prediction or previous frame);
    det_ok, ref_ok: (N, K) bool; pairs: (M, 2). Returns (N, M) bool.
    """
    a, b = pairs[:, 0], pairs[:, 1]
    m = len(a)
    ok = det_ok[:, a] & det_ok[:, b] & ref_ok[:, a] & ref_ok[:, b]
    size = np.sqrt(keypoint_bbox_area(det, det_ok))  # (N,)
    with np.errstate(invalid="ignore"):  # a nan distance compares False: never crossed
        d = det[:, np.concatenate([a, b, a, b])] - ref[:, np.concatenate([a, b, b, a])]  # (N, 4M, 2)
        dist = np.sqrt(np.add.reduce(d * d, axis=-1))  # (N, 4M): a-a, b-b, a-b, b-a
        straight = dist[:, :m] + dist[:, m:2 * m]
        crossed = dist[:, 2 * m:3 * m] + dist[:, 3 * m:]
        return ok & (crossed < ratio * straight) & (straight - crossed > min_gain * size[:, None])


def swap_permutation(crossed: np.ndarray, pairs: np.ndarray, num_joints: int) -> np.ndarray:
    """(N, K) int64 joint order per person that swaps its crossed pairs back. crossed: (N, M) bool."""
    perm = np.tile(np.arange(num_joints), (crossed.shape[0], 1))
    n, m = np.nonzero(crossed)
    perm[n, pairs[m, 0]], perm[n, pairs[m, 1]] = pairs[m, 1], pairs[m, 0]
    return perm


def count_swaps(xy: np.ndarray, ok: np.ndarray, pairs: np.ndarray) -> tuple[int, int]:
    """(swap events, person-frames) of dense tracks: xy (T, N, K, 2) px, ok (T, N, K) bool (e.g.
    ``posetracker.train.metrics.sequence_tracks``). A swap event is a frame where at least one mirror pair
    of a track sits crossed against the same track's frame before; person-frames count (t, n) with any joint."""
    seen = ok.any(-1)  # (T, N)
    swaps = 0
    for t in range(1, xy.shape[0]):
        both = seen[t] & seen[t - 1]
        if both.any():
            swaps += int(crossed_pairs(xy[t][both], ok[t][both], xy[t - 1][both], ok[t - 1][both], pairs).any(-1).sum())
    return swaps, int(seen.sum())




def same_sides(pose: PoseFrame, reference: PoseFrame, pairs: np.ndarray, min_confidence: float = 0.3) -> PoseFrame:
    """``pose`` with each person's mirror pairs that sit crossed against the same person in ``reference`` (same
    people, same order: e.g. the precision stage's reading against the tracked bottom-up one) swapped back
    (keypoints, confidence, world). Joints below ``min_confidence`` in either are not compared."""
    if pose.num_people == 0 or pairs.size == 0:
        return pose
    det, ref = pose.keypoints[..., :2].astype(np.float64), reference.keypoints[..., :2].astype(np.float64)
    ok_d = (pose.confidence >= min_confidence) & np.isfinite(det).all(-1)
    ok_r = (reference.confidence >= min_confidence) & np.isfinite(ref).all(-1)
    crossed = crossed_pairs(det, ok_d, ref, ok_r, pairs)
    if not crossed.any():
        return pose
    return permute_joints(pose, swap_permutation(crossed, pairs, pose.num_joints))


def permute_joints(frame: PoseFrame, perm: np.ndarray) -> PoseFrame:
    """``frame`` with each person's joints reordered by ``perm`` (P, K) int (keypoints, confidence, world)."""
    take = lambda a: np.take_along_axis(a, perm.reshape(perm.shape + (1,) * (a.ndim - 2)), axis=1)  # noqa: E731
    return dataclasses.replace(frame, keypoints=take(frame.keypoints), confidence=take(frame.confidence),
                               world=None if frame.world is None else take(frame.world))


@dataclass(frozen=True)
class TrackArrays:
    """One track's frames that have 3-D, stacked: xy (T, K, 2) px, world (T, K, 3) m camera space,
    confidence (T, K), times (T,) s."""

    xy: np.ndarray
    world: np.ndarray
    confidence: np.ndarray
    times: np.ndarray


def permute_tracks(frames: list[PoseFrame], perm: np.ndarray, states: Callable[[TrackArrays], np.ndarray],
                   min_frames: int = 3) -> tuple[list[PoseFrame], dict[int, int]]:
    """The offline repairs' common step: per track (frames with world coordinates; people with id -1 pass
    through), ``states(track)`` -> (T,) bool frames whose joints are reordered by ``perm`` (K,) int (keypoints,
    confidence, world). Tracks seen in fewer than ``min_frames`` frames are left alone.
    Returns new frames and {track id: frames changed} for tracks with any."""
    out = list(frames)
    report: dict[int, int] = {}
    for tid in track_ids(frames):
        rows = track_rows(frames, tid, with_world=True)
        if len(rows) < min_frames:
            continue
        track = TrackArrays(np.stack([frames[t].keypoints[p, :, :2] for t, p in rows]).astype(np.float64),
                            np.stack([frames[t].world[p] for t, p in rows]).astype(np.float64),
                            np.stack([frames[t].confidence[p] for t, p in rows]).astype(np.float64),
                            np.array([frames[t].timestamp for t, _ in rows], np.float64))
        state = states(track)
        if not state.any():
            continue
        report[tid] = reorder_rows(out, rows, np.where(state[:, None], perm[None, :], np.arange(len(perm))[None, :]))
    return out, report


def track_ids(frames: list[PoseFrame]) -> list[int]:
    """Every track id of ``frames`` (people with id -1 left out), sorted."""
    return sorted({int(i) for f in frames for i in f.track_ids if i >= 0})


def track_rows(frames: list[PoseFrame], tid: int, with_world: bool = False) -> list[tuple[int, int]]:
    """(frame index, person index) of track ``tid`` in each frame that has it (``with_world``: and 3-D)."""
    return [(t, int(np.flatnonzero(f.track_ids == tid)[0])) for t, f in enumerate(frames)
            if tid in f.track_ids and (not with_world or f.world is not None)]


def reorder_rows(out: list[PoseFrame], rows: list[tuple[int, int]], orders: np.ndarray) -> int:
    """Reorders, in place in the list ``out``, the joints of person p of frame t by ``orders[i]`` for each row
    i = (t, p) of ``rows`` (orders (len(rows), K) int; identity rows left as they are). Returns the rows changed."""
    changed = 0
    for (t, p), o in zip(rows, orders):
        if (o != np.arange(len(o))).any():
            order = np.tile(np.arange(out[t].num_joints), (out[t].num_people, 1))
            order[p] = o
            out[t] = permute_joints(out[t], order)
            changed += 1
    return changed


__all__ = ["TrackArrays", "count_swaps", "crossed_pairs", "mirror_pairs", "permute_joints", "permute_tracks",
           "reorder_rows", "same_sides", "swap_permutation", "track_ids", "track_rows"]
