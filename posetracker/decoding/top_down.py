"""Top-down mode for small animals in large frames (a skeleton's ``top_down: {crop_px: ...}``).

A fly 135 px long in a 1024 px frame covers ~6 x 5 feature cells of the whole frame read at 256 px: enough
to find its centre, too few for 13 keypoints. So, as SLEAP and DeepLabCut do for such footage, each animal
the whole-frame pass finds is read again from a ``crop_px`` square of the full-resolution frame around its
centre, scaled to the network's input (192 px -> 256: 1.33x the source resolution instead of 0.25x). The
crops of a frame run as one batch; in each crop the animal whose centre is nearest the crop's centre
replaces the whole-frame reading (its keypoints and confidences; its score and depth reads stay).

Training samples cut the same crops around each labelled animal
(:func:`posetracker.train.detector_samples.crop_matrix`), so the network learns both scales.

Split models (``top_down: {crop_px, crop_weights}``), as SLEAP splits centroid and centred-instance models:
the mode's weights, trained on whole frames only (``samples: frames``), find the centres, and a crop model
of its own (``second_look.CropModel``, trained on crops whose targets are the centred animal only, ``samples:
centred``) reads each crop. Either way two readings of one animal (two centres on one fly give two crops
that read the same fly, perhaps shifted along it or turned end to end) are caught after the crops: the one
less sure of its joints is dropped (:func:`drop_repeats`). Two animals side by side with their centres
closer than about 0.2 x the crop (their points as sets then overlap, :func:`point_gaps`) are taken for one.

With a known number of animals N (``PeopleSettings.known_count``, ``--animals N``) the whole-frame pass looks
for 2N centres and the N readings surest of their joints are kept (:func:`most_confident`): where two flies
touch nose to tail the centre model puts a stronger peak between them than on one of the flies, so N centres
would drop that fly; its crop then reads a fly less surely than the crops around the real centres do.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np

from posetracker.decoding.people import DecodedPeople

REPEAT_FRAC = 0.1  # two readings whose joints lie a mean < this x the crop side apart are one animal
MAP_KEYS = ("heatmaps", "offsets", "vectors", "depth")
CROP_INPUT = 256  # the side crops are cut at: the network's input (model.preprocess.INPUT_SIZE; numpy only here)
UNSURE = 0.2  # search_unsure: a reading whose mean joint confidence is under this is searched around


@dataclass(frozen=True)
class CropReading:
    """How each animal's crop is read (:func:`read_crops`; a session's from its skeleton's ``top_down`` and its mode,
    ``session_config.top_down_reading``)."""

    turns: int = 1  # each crop also read turned by each multiple of 360 / turns degrees, the readings joined
    rounds: int = 1  # each round's crops centred on the last round's readings of the root
    search: float = 0.0  # > 0: an unsure animal read again from crops this fraction of the crop around it
    align: tuple[int, int] | None = None  # (front, back) joints of an aligned crop model (upright_turn)
    spread: float = 0.0  # > 0: the last round also reads each crop turned by -spread and +spread degrees
    mirror: tuple[int, ...] | None = None  # (K,) each joint's mirror: the last round also reads each crop mirrored

    def views(self, first: bool, last: bool) -> list[tuple[float, bool]]:
        """(degrees turned on top of the upright turn, mirrored) of each copy of a crop one round reads: the
        ``first`` round, and every round of an unaligned model, at ``turns`` turns, the ``last`` also at the
        spread and mirrored."""
        turns = self.turns if first or not self.align else 1
        spread = (-self.spread, 0.0, self.spread) if last and self.spread else (0.0,)
        angles = [360.0 * t / turns + d for t in range(turns) for d in spread]
        return [(a, m) for m in ((False, True) if last and self.mirror else (False,)) for a in angles]


def crop_window(centre: np.ndarray, crop_px: float) -> tuple[float, float, float]:
    """(x0, y0, side) of the ``crop_px`` square centred on ``centre`` (2,) source px (it may leave the frame)."""
    return float(centre[0]) - crop_px / 2, float(centre[1]) - crop_px / 2, float(crop_px)


def crop_affine(window: tuple[float, float, float], size: int, angle: float = 0.0,
                mirrored: bool = False) -> np.ndarray:
    """(2, 3) source px -> crop px of the ``window`` (x0, y0, side) scaled to size x size, turned by ``angle``
    degrees about the crop's centre (counter-clockwise on screen), then ``mirrored`` left to right about the
    crop's centre column."""
    x0, y0, side = window
    s = size / side
    m = np.array([[s, 0.0, -x0 * s], [0.0, s, -y0 * s], [0.0, 0.0, 1.0]], np.float64)
    if angle % 360.0:
        r = cv2.getRotationMatrix2D(((size - 1) / 2.0, (size - 1) / 2.0), angle, 1.0)
        m = np.vstack([r, [0.0, 0.0, 1.0]]) @ m
    if mirrored:
        m = np.array([[-1.0, 0.0, size - 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]) @ m
    return m[:2]


def upright_turn(points: np.ndarray, ends: tuple[int, int] | None) -> float:
    """Degrees counter-clockwise on screen that turn an animal's (K, 2) px ``points`` so its ``ends`` (front,
    back joints) line runs back to front straight up: an aligned crop model's crops (``top_down: {align:
    true}``) are cut so, in training around the labels and in reading around the last reading, as LEAP and
    DeepPoseKit align flies. 0 without ``ends`` or where either end is not read."""
    if ends is None:
        return 0.0
    axis = points[ends[0]].astype(np.float64) - points[ends[1]]
    if not np.isfinite(axis).all() or not axis.any():
        return 0.0
    return float(np.degrees(np.arctan2(axis[1], axis[0]))) + 90.0  # image y down: up is -90 degrees


def warp_crop(rgb: np.ndarray, affine: np.ndarray, size: int) -> np.ndarray:
    """(size, size, 3) crop of an (H, W, 3) uint8 frame through ``affine`` (2, 3) source -> crop px."""
    return cv2.warpAffine(rgb, affine, (size, size), flags=cv2.INTER_LINEAR, borderValue=(0, 0, 0))


def map_back(people: DecodedPeople, affine: np.ndarray, mirror: tuple[int, ...] | None = None) -> DecodedPeople:
    """People read in a crop's px mapped to source px by the inverse of ``affine`` (2, 3) source -> crop; a
    mirrored crop's (``mirror``: (K,) each joint's mirror) with each left and right joint given back its side."""
    inv = cv2.invertAffineTransform(affine)
    move = lambda xy: (xy.astype(np.float64) @ inv[:, :2].T + inv[:, 2]).astype(np.float32)  # noqa: E731
    if mirror is None:
        return DecodedPeople(move(people.keypoints), people.confidence, people.scores, people.depth_reads,
                             move(people.predicted))
    k = list(mirror)  # a mirrored crop's depth reads (per edge) are not mapped back: nan
    return DecodedPeople(move(people.keypoints[:, k]), people.confidence[:, k], people.scores,
                         np.full(people.depth_reads.shape, np.nan), move(people.predicted[:, k]))


def densest_median(points: np.ndarray, confidence: np.ndarray, radius: float) -> np.ndarray:
    """(N, 2) readings of one joint and their (N,) confidences in [0, 1] -> (2,) the median of the readings within
    ``radius`` of the reading that has the most others within it (a tie: the surer reading). Readings that split
    between two places give the larger group's place, where a coordinate-wise median of all of them could land
    between the two (half the turns on one leg, half on the next: a point in the background). Fewer than 3
    readings cannot outvote each other: their coordinate-wise median."""
    if len(points) < 3:
        return np.median(points, axis=0)
    near = np.linalg.norm(points[:, None] - points[None], axis=-1) < radius  # (N, N)
    centre = int(np.argmax(near.sum(1) + 1e-3 * confidence))
    return np.median(points[near[centre]], axis=0)


def agreeing_reads(reads: DecodedPeople, agree_px: float, min_confidence: float = 0.1) -> DecodedPeople:
    """One animal read from R turned crops (R readings in source px, e.g. one per eighth of a turn) -> one reading.

    A network that has not settled which end of an animal is its head reads some turns end to end; so the
    reading the most readings agree with wins (a tie: the side with the higher summed mean joint confidence),
    two readings agreeing where the median distance of their joints (confident in both) is under ``agree_px``.
    Each joint is then read where most agreeing readings put it (:func:`densest_median`), its confidence their
    mean: one turn that puts a leg tip on an eye does not move it, and turns that split between two places give
    one of them, never a point between two legs (``studies/fly13.md``). The score, depth reads and tree
    predictions are the winner's."""
    r = reads.num_people
    if r < 2:
        return reads
    xy = reads.keypoints.astype(np.float64)  # (R, K, 2)
    ok = (reads.confidence >= min_confidence) & np.isfinite(xy).all(-1)  # (R, K)
    both = ok[:, None] & ok[None]  # (R, R, K)
    d = np.where(both, np.linalg.norm(xy[:, None] - xy[None], axis=-1), np.nan)
    with warnings.catch_warnings():  # a pair with no joint seen in both: an all-nan slice, no agreement
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.where(both.any(-1), np.nanmedian(d, axis=-1), np.inf)  # (R, R)
    agree = (med < agree_px) | np.eye(r, dtype=bool)  # (R, R)
    sure = np.where(ok, reads.confidence, 0.0).mean(-1)  # (R,)
    best = int(np.argmax(agree.sum(-1) + (agree * sure[None]).sum(-1) / (r + 1)))  # votes; ties: surer side
    group = agree[best]
    kp = xy[best].copy()  # (K, 2); the winner's own where no agreeing reading sees a joint
    for j in range(xy.shape[1]):
        seen = group & ok[:, j]
        if seen.any():
            kp[j] = densest_median(xy[seen, j], reads.confidence[seen, j], agree_px / 2)
    conf = reads.confidence[group].mean(0)
    one = reads.take(np.array([best]))
    return DecodedPeople(kp[None].astype(np.float32), conf[None].astype(np.float32), one.scores,
                         one.depth_reads, one.predicted)


def centred_person(people: DecodedPeople, root: int, size: int, radius: float = 0.25) -> int:
    """Index of the person whose ``root`` joint lies nearest the centre of a size x size crop, within
    ``radius`` x size of it; -1 when none does (the animal was a false detection, or left the crop)."""
    if people.num_people == 0:
        return -1
    d = np.linalg.norm(people.keypoints[:, root] - size / 2.0, axis=-1)
    d = np.where(np.isfinite(d), d, np.inf)
    best = int(np.argmin(d))
    return best if d[best] <= radius * size else -1


def read_crops(people: DecodedPeople, rgb: np.ndarray, root: int, crop_px: float,
               read: Callable[[np.ndarray], list[DecodedPeople]], how: CropReading = CropReading(),
               size: int = CROP_INPUT, keep: int | None = None) -> DecodedPeople:
    """:func:`read_crops_once` ``how.rounds`` times, each round's crops centred on the last round's readings of the
    root: a crop model reads an animal best at the centre it was trained on, and its own reading of the root
    is nearer the truth than the whole-frame pass's (fly13 offline, held-out walking flies, every joint 11.56 px
    with one round, 9.77 with 2, 8.56 with 3; the thorax 10.7 -> 8.2 -> 6.9 px; studies/fly13.md).
    With ``how.search`` > 0, each round also reads an unsure animal again around its reading (:func:`search_unsure`).
    An aligned crop model (``how.align``) reads the first round at ``how.turns`` turns (the seeds' heading may be
    unknown: the centre model reads a fly's root, not which way it faces) and the later ones at one, cut upright by
    the last round's own reading. The last round also reads each crop at ``how.spread`` degrees either way and
    mirrored (``how.mirror``), all joined by :func:`agreeing_reads` (fly13 offline: walking flies 5.53 -> 4.93 px,
    the mid legs 11.3 / 7.8 -> 6.8 / 5.8; studies/fly13.md, "Each fly's last crop read 6 ways").
    """
    for r in range(how.rounds):
        first, last = r == 0, r == how.rounds - 1
        views = how.views(first, last)
        people = read_crops_once(people, rgb, root, crop_px, read, size, None if how.search else keep, views,
                                 how.align, how.mirror)
        if how.search:
            people = search_unsure(people, rgb, root, crop_px, read, size, how.views(first, False), how.search,
                                   align=how.align)
            people = people if keep is None or people.num_people <= keep else people.take(most_confident(people, keep))
    return people


def search_unsure(people: DecodedPeople, rgb: np.ndarray, root: int, crop_px: float,
                  read: Callable[[np.ndarray], list[DecodedPeople]], size: int, views: Sequence[tuple[float, bool]],
                  shift: float, unsure: float = UNSURE, align: tuple[int, int] | None = None) -> DecodedPeople:
    """Each animal read from a crop with a mean joint confidence under ``unsure`` read again from crops centred
    ``shift`` x ``crop_px`` from its root in 8 directions (each alone, at the turns of unmirrored ``views``, as
    :func:`read_crops_once`); the surest reading replaces it where it is surer, its root within 2 x ``shift`` x
    ``crop_px`` of the old one and not within a quarter crop of another animal's root (a crop that reached the
    neighbour).

    A crop model reads the animal centred in its crop; where the whole-frame pass puts an animal's centre on its
    head (the centre model on flies ~2.7x larger than it learnt: the centred-pair clip's 384 px frames), the
    crop's reading is unsure (mean joint confidence ~0.1) and stays there round after round; a crop on the body
    reads it surely, and the next round centres on that (studies/fly13.md, held-out walking flies found 90 ->
    100 %)."""
    sure = np.nan_to_num(people.confidence).mean(-1)  # (P,) as most_confident: a joint not read counts 0
    kp, conf, pred = people.keypoints.copy(), people.confidence.copy(), people.predicted.copy()
    turns_at = np.arange(8) * np.pi / 4
    steps = np.stack([np.cos(turns_at), np.sin(turns_at)], axis=1) * shift * crop_px  # (8, 2) px
    for p in np.flatnonzero(sure < unsure):
        start = people.keypoints[p, root].astype(np.float64)
        if not np.isfinite(start).all():
            continue
        others = np.delete(kp[:, root], p, axis=0).astype(np.float64)
        best, seed = sure[p], people.take(np.array([p]))
        for step in steps:
            moved = seed.keypoints.copy()
            moved[0, root] = start + step
            r = read_crops_once(replace(seed, keypoints=moved), rgb, root, crop_px, read, size, None, views, align)
            at = r.keypoints[0, root].astype(np.float64) if r.num_people else np.full(2, np.nan)
            if not np.isfinite(at).all() or np.linalg.norm(at - start) > 2 * shift * crop_px \
                    or (len(others) and np.nanmin(np.linalg.norm(others - at, axis=-1), initial=np.inf) < crop_px / 4):
                continue
            s = float(np.nan_to_num(r.confidence[0]).mean())
            if s > best:
                best, kp[p], conf[p], pred[p] = s, r.keypoints[0], r.confidence[0], r.predicted[0]
    return DecodedPeople(kp, conf, people.scores, people.depth_reads, pred)


def read_crops_once(people: DecodedPeople, rgb: np.ndarray, root: int, crop_px: float,
                    read: Callable[[np.ndarray], list[DecodedPeople]], size: int = CROP_INPUT,
                    keep: int | None = None, views: Sequence[tuple[float, bool]] = ((0.0, False),),
                    align: tuple[int, int] | None = None, mirror: tuple[int, ...] | None = None) -> DecodedPeople:
    """Each person of an (H, W, 3) frame (its pixels) read again from a ``crop_px`` crop around its ``root``.
    read: crops (N, size, size, 3) uint8 -> each crop's people in crop-input pixels (one batch). The person
    nearest a crop's centre replaces that person's keypoints and confidences; scores and depth reads stay.
    Each crop is read once per view (degrees turned, mirrored: :meth:`CropReading.views`; all in the one batch;
    a mirrored view only with ``mirror``, (K,) each joint's mirror) and the views' readings are joined by
    :func:`agreeing_reads`. With ``align`` (front, back joints: an aligned crop model) each crop is first turned
    so the animal's reading stands upright (:func:`upright_turn`). Then one reading per animal
    (:func:`drop_repeats`), and with ``keep`` (a known number of animals) the ``keep`` readings surest of
    their joints (:func:`most_confident`)."""
    chosen = [p for p in range(people.num_people) if np.isfinite(people.keypoints[p, root]).all()]
    if not chosen:
        return people
    views = [(a, m) for a, m in views if not m or mirror is not None]
    windows = [crop_window(people.keypoints[p, root], crop_px) for p in chosen]
    uprights = [upright_turn(people.keypoints[p], align) for p in chosen]
    affines = [[crop_affine(w, size, u + a, m) for a, m in views] for w, u in zip(windows, uprights)]
    found = read(np.stack([warp_crop(rgb, a, size) for row in affines for a in row]))
    kp, conf, pred = people.keypoints.copy(), people.confidence.copy(), people.predicted.copy()
    from_crop = np.zeros(people.num_people, bool)
    for i, p in enumerate(chosen):
        reads = []
        for v, (a, (_, mirrored)) in enumerate(zip(affines[i], views)):
            crop = found[i * len(views) + v]
            j = centred_person(crop, root, size)
            if j >= 0:
                reads.append(map_back(crop.take(np.array([j])), a, mirror if mirrored else None))
        if reads:
            one = agreeing_reads(DecodedPeople.concat(reads), REPEAT_FRAC * crop_px)
            kp[p], conf[p], pred[p] = one.keypoints[0], one.confidence[0], one.predicted[0]
            from_crop[p] = True
    out = DecodedPeople(kp, conf, people.scores, people.depth_reads, pred)
    out = out.take(drop_repeats(out, from_crop, crop_px, root=root))
    return out if keep is None or out.num_people <= keep else out.take(most_confident(out, keep))


def most_confident(people: DecodedPeople, n: int) -> np.ndarray:
    """Indices (ascending) of the ``n`` people with the highest mean joint confidence (a joint not read
    counts 0); ties keep the earlier (higher-scored) person."""
    sure = np.nan_to_num(people.confidence).mean(-1)  # (P,)
    return np.sort(np.argsort(-sure, kind="stable")[:n])


def point_gaps(xy: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """(P, P) how far apart two readings' points lie, whichever joint each point is: the mean of the two ways'
    median distance from a confident point of one to the nearest confident point of the other (inf where one
    has none). xy: (P, K, 2) px; ok: (P, K) bool. One animal read twice, shifted, turned end to end or with
    its legs named differently, gives a small gap; two animals touching, most of whose points lie apart, a
    large one."""
    n = xy.shape[0]
    gaps = np.full((n, n), np.inf)
    for i in range(n):
        for j in range(i + 1, n):
            if ok[i].any() and ok[j].any():
                d = np.linalg.norm(xy[i][ok[i]][:, None] - xy[j][ok[j]][None], axis=-1)
                gaps[i, j] = gaps[j, i] = (np.median(d.min(1)) + np.median(d.min(0))) / 2
    return gaps


def drop_repeats(people: DecodedPeople, from_crop: np.ndarray, crop_px: float, frac: float = REPEAT_FRAC,
                 min_confidence: float = 0.1, root: int | None = None) -> np.ndarray:
    """Indices (ascending) of the people to keep so that each animal is read once. people: (P, K, 2) source px;
    from_crop (P,) bool: read from a crop. Two people whose joints (confident in both) lie a mean under ``frac``
    x ``crop_px`` apart, i.e. under ``frac`` x the crop's side in crop space, are one animal, and so are two
    whose ``root`` joints (the body centres; None: not checked) lie that close whatever their other joints
    say (two readings of one fly, one of them shifted or turned, where two flies touch), or whose points,
    taken as a set, lie that close (:func:`point_gaps`; with ``root`` too): a crop's reading beats a
    whole-frame one, then the higher mean confidence wins."""
    n = people.num_people
    if n < 2:
        return np.arange(n)
    ok = (people.confidence >= min_confidence) & np.isfinite(people.keypoints).all(-1)  # (P, K)
    d = np.linalg.norm(people.keypoints[:, None].astype(np.float64) - people.keypoints[None], axis=-1)  # (P, P, K)
    both = ok[:, None] & ok[None]
    mean = np.where(both.any(-1), np.where(both, d, 0.0).sum(-1) / np.maximum(both.sum(-1), 1), np.inf)
    if root is not None:
        mean = np.minimum(mean, np.where(np.isfinite(d[..., root]), d[..., root], np.inf))
        mean = np.minimum(mean, point_gaps(people.keypoints[..., :2].astype(np.float64), ok))
    sure = np.where(ok, people.confidence, 0.0).mean(-1)
    keep: list[int] = []
    for i in sorted(range(n), key=lambda i: (not from_crop[i], -sure[i])):
        if all(mean[i, k] >= frac * crop_px for k in keep):
            keep.append(i)
    return np.array(sorted(keep), np.int64)


def with_missing(people: DecodedPeople, last_roots: np.ndarray | None, known_count: int | None, root: int,
                 crop_px: float) -> DecodedPeople:
    """``people`` (P, K) of a top-down frame plus, where a known number of animals has fewer readings, a place
    holder for each of the last frame's animals (``last_roots`` (Q, 2) px) with no reading within a quarter crop
    of it: all joints at its last root, confidence 0, so ``read_crops`` reads a crop there (an animal the
    whole-frame decoder missed, e.g. a fly walking fast); a place holder no crop finds an animal in keeps
    confidence 0 and is dropped by the caller."""
    if not known_count or last_roots is None or people.num_people >= known_count or not len(last_roots):
        return people
    now = people.keypoints[:, root].astype(np.float64)  # (P, 2)
    far = [r for r in last_roots if np.isfinite(r).all()
           and (not len(now) or np.nanmin(np.linalg.norm(now - r, axis=1)) > crop_px / 4)]
    if not far:
        return people
    k = people.confidence.shape[1]
    spots = np.repeat(np.asarray(far, np.float32)[:, None, :], k, axis=1)  # (M, K, 2)
    zero = np.zeros((len(far), k), np.float32)
    return DecodedPeople.concat([people, DecodedPeople(spots, zero, zero[:, 0], np.full((len(far), k), np.nan),
                                                       spots.copy())])


__all__ = ["CROP_INPUT", "CropReading", "agreeing_reads", "centred_person", "crop_affine", "crop_window",
           "drop_repeats", "map_back", "most_confident", "point_gaps", "read_crops", "upright_turn", "warp_crop",
           "with_missing"]
