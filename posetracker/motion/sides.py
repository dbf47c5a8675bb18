"""Left and right decided once: the facing's labels and one physical leg per leg label in the per-track motion.

Side views often name the *front* foot "left", so the labels swap when the feet pass
(:func:`posetracker.analysis.foot_contact.repair_swaps` finds where: one label stops standing
where the other goes on, at once). :func:`one_leg_each` exchanges the legs (knee, ankle and the
foot joints, and the hips unless they already lie as the shoulders do in 3-D: :func:`exchange_legs`)
of the track's frames from each swap on, in the PoseFrames themselves, so the gait table, the angles, the CSVs and the 3-D exports all read the
same legs; none of them repairs after the fact. The offline session runs it between two motion
solves (``TrackingSession._run_offline``: swaps found on the solved motion, the legs exchanged in
the readings, solved again, so the solve never smooths across a label swap); a live result gets
it once, when it is finished (``motion.finish``).

Steps in place look like swaps to the feet alone (a dancer shifting her weight:
7 found on the SLEAP dancer, none of them real). The trunk tells them apart where
the person faces the camera: the left hip lies on the same side of the body as
the left shoulder in the image. So each swap the feet found is kept only if the
trunk does not speak against it: over the frames it governs (up to the next
swap), among the frames where both the hips and the shoulders are at least
``min_width`` torso lengths apart in the image (a side view, where they overlap,
says nothing), the hips must be crossed against the shoulders *without* the swap
in at least half. A swap in a side view is kept as the feet found it. A swap found within
``min_edge_s`` of the end of the track is not undone: the stance that would show
it is cut off there (a shuffling walk's last step in motion capture read as a
swap 6 frames before the end). Near the start it is kept: which leg the track
first calls "left" is arbitrary, and dropping that swap would exchange every
later frame instead.

Seen from the front or from behind, the facing says on which side of the image each leg belongs, so a swap
the feet found is also dropped where, over its span, the knees (else the ankles) lie on the sides the
trunk's facing gives them without it (:func:`legs_against_facing`: the depth head's 3-D trunk turned at most
``FACING_DEG`` from the camera or from facing away; a model standing with her back to the camera shifting
her weight, hips too close together for the trunk check, read as a swap by the feet).

The facing also decides the arm and leg pairs of people seen from behind (:func:`facing_sides`, offline,
before the motion solve): the frames whose labels slid to the other side come from ``tracking.facing``
(the depth head's trunk yaw, its jumps over the motion, the face); there the head and shoulders are
exchanged, and each other pair (hips, elbows, wrists, knees, ankles, down the chain) is exchanged with them
unless, as read, it hangs from its already decided parent pair and joins the frames around better
(:func:`facing_orders`): the network may slide the trunk and arms while it reads the legs right (the SLEAP
dancer, frames 223-233), and a whole-body exchange crossed those legs.

Shapes: T = frames of a track (a track spans every frame of the sequence, absent ones nan:
``posetracker.tracks.person_tracks``), K = joints, S = swaps; P = people of a frame.
"""

from __future__ import annotations

import numpy as np

from posetracker.analysis.foot_contact import FOOT_JOINTS, LEG_JOINTS, ContactSettings, GaitError, foot_contacts
from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.facing import FacingSettings, applies, repair_states, trunk_yaw
from posetracker.tracking.mirror import permute_joints, reorder_rows, track_ids, track_rows
from posetracker.tracks import PersonTrack, TrackError, frame_time, person_tracks
from posetracker.types import PoseFrame, PoseSequence

#: hips and shoulders this many torso lengths apart in the image make a frame's trunk informative
MIN_WIDTH = 0.25
#: informative frames a swap's span needs before the trunk can veto it
MIN_INFORMATIVE = 2
#: seconds of track a swap needs after it
MIN_EDGE_S = 0.25
#: a trunk turned less than this (degrees) from the camera, or from facing away, tells which side is which
FACING_DEG = 60.0
#: the pairs a facing repair decides one by one, each from its parent pair (already decided), in this order
CHAIN = (("hip", "shoulder"), ("elbow", "shoulder"), ("wrist", "elbow"), ("knee", "hip"), ("ankle", "knee"))
#: a pair is left as read in a facing repair's run only where that costs this much less (torso lengths)
KEEP_MARGIN = 0.05


def leg_pairs(spec: SkeletonSpec) -> list[tuple[int, int]]:
    """(left, right) joint index pairs of the legs and feet the skeleton has."""
    pairs = []
    for name in LEG_JOINTS + FOOT_JOINTS[1:]:
        left, right = name.format(s="left"), name.format(s="right")
        if left in spec.joint_names and right in spec.joint_names:
            pairs.append((spec.index(left), spec.index(right)))
    return pairs


def trunk_crossed(track: PersonTrack, spec: SkeletonSpec, min_width: float = MIN_WIDTH
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per frame, from the image x of hips and shoulders as named: (informative (T,) bool, crossed (T,) bool).

    informative: both pairs known and each at least ``min_width`` torso lengths (mid-shoulder to mid-hip) apart
    in x; crossed: the left hip on the other side than the left shoulder. Skeletons without hips and shoulders:
    never informative."""
    names = ("left_hip", "right_hip", "left_shoulder", "right_shoulder")
    t = track.num_frames
    if not set(names) <= set(spec.joint_names):
        return np.zeros(t, bool), np.zeros(t, bool)
    lh, rh, ls, rs = (track.keypoints[:, spec.index(n), :2] for n in names)  # (T, 2) each
    torso = np.linalg.norm((ls + rs) / 2 - (lh + rh) / 2, axis=-1)
    hip_dx, sh_dx = lh[:, 0] - rh[:, 0], ls[:, 0] - rs[:, 0]
    with np.errstate(invalid="ignore"):
        informative = (np.abs(hip_dx) >= min_width * torso) & (np.abs(sh_dx) >= min_width * torso) & (torso > 0)
    informative &= np.isfinite(hip_dx) & np.isfinite(sh_dx) & np.isfinite(torso)
    crossed = informative & (np.sign(hip_dx) != np.sign(sh_dx))
    return informative, crossed


def trunk_checked(swaps: np.ndarray, informative: np.ndarray, crossed: np.ndarray,
                  min_informative: int = MIN_INFORMATIVE) -> np.ndarray:
    """The swaps (S,) the trunk does not speak against (module docstring), in order. informative, crossed: (T,)
    as named (:func:`trunk_crossed`); each swap governs the frames up to the next swap found."""
    kept: list[int] = []
    ends = list(np.asarray(swaps, int)[1:]) + [len(crossed)]
    for start, end in zip(np.asarray(swaps, int), ends):
        flipped = len(kept) % 2 == 1  # the legs already exchanged here by the swaps kept
        span = informative[start:end]
        if span.sum() >= min_informative:
            crossed_without = crossed[start:end][span] != flipped  # as the kept swaps leave them
            if crossed_without.mean() < 0.5:  # exchanging the legs here would cross the hips: a step, not a swap
                continue
        kept.append(int(start))
    return np.asarray(kept, np.int64)


def track_swaps(track: PersonTrack, spec: SkeletonSpec, image_size: tuple[int, int] = (0, 0), fps: float = 30.0,
                settings: ContactSettings | None = None, min_edge_s: float = MIN_EDGE_S) -> np.ndarray:
    """(S,) int64 track indices from which one track's legs are to be exchanged: the feet's label swaps
    (:func:`~posetracker.analysis.foot_contact.foot_contacts`, with their ``repair_swaps``) less those within
    ``min_edge_s`` of the end and those the trunk or the facing speaks against (module docstring:
    :func:`trunk_crossed`, :func:`legs_against_facing`). A track whose feet give no
    contacts (no legs seen, too short, a skeleton without legs) has none. fps: only where the timestamps cannot
    give the frame time."""
    try:
        found = foot_contacts(track, spec, settings, image_size, fps).swaps
    except GaitError:
        return np.zeros(0, np.int64)
    edge = int(np.ceil(min_edge_s / frame_time(track.times, fps)))
    found = found[found <= track.num_frames - edge]
    if len(found):
        found = trunk_checked(found, *trunk_crossed(track, spec))
    if len(found):  # the facing speaks too: seen from the front or behind, the left leg is on a known side
        found = trunk_checked(found, *legs_against_facing(track, spec))
    return found


def track_facing(world: np.ndarray, seen: np.ndarray, spec: SkeletonSpec, within: float = FACING_DEG) -> np.ndarray:
    """(T,) +1 where the trunk (3-D, the depth head's; ``tracking.facing.trunk_yaw``) as labelled faces the camera
    within ``within`` degrees, -1 where it faces away within that, 0 elsewhere (a side view, a trunk not seen).
    world: (T, K, 3) m; seen: (T, K) bool."""
    if not applies(spec):
        return np.zeros(len(world), np.int8)
    yaw, readable = trunk_yaw(np.asarray(world, np.float64), seen, spec)
    with np.errstate(invalid="ignore"):
        turn = np.abs((yaw + 180.0) % 360.0 - 180.0)
        out = np.where(turn < within, 1, np.where(turn > 180.0 - within, -1, 0)).astype(np.int8)
    out[~readable] = 0
    return out


def legs_against_facing(track: PersonTrack, spec: SkeletonSpec, min_width: float = MIN_WIDTH,
                        min_confidence: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Per frame, (informative (T,) bool, against (T,) bool): informative where the trunk faces the camera or away
    (:func:`track_facing`) and the knees (else the ankles) are at least ``min_width`` torso lengths apart in the
    image; against where the left one is not on the side the facing puts it (facing the camera the person's left
    is on the image's right). A weight shift seen from behind, which the feet alone read as a swap, leaves the
    legs on their sides: :func:`trunk_checked` with these drops it. Skeletons without the joints: never."""
    t = track.num_frames
    names = ("left_knee", "right_knee", "left_ankle", "right_ankle", "left_shoulder", "right_shoulder",
             "left_hip", "right_hip")
    if not set(names) <= set(spec.joint_names):
        return np.zeros(t, bool), np.zeros(t, bool)
    seen = (track.confidence >= min_confidence) & np.isfinite(track.world).all(-1)
    facing = track_facing(track.world, seen, spec)
    xy = np.where(seen[..., None], track.keypoints[..., :2], np.nan)
    lk, rk, la, ra, ls, rs, lh, rh = (xy[:, spec.index(n)] for n in names)
    torso = np.linalg.norm((ls + rs) / 2 - (lh + rh) / 2, axis=-1)
    with np.errstate(invalid="ignore"):
        dx = np.where(np.abs(lk[:, 0] - rk[:, 0]) >= min_width * torso, lk[:, 0] - rk[:, 0], la[:, 0] - ra[:, 0])
        informative = (facing != 0) & (np.abs(dx) >= min_width * torso) & np.isfinite(dx)
    return informative, informative & (np.sign(dx) != facing)


def _parent_costs(xy: np.ndarray, ok: np.ndarray, pos: np.ndarray, pos_ok: np.ndarray, torso: np.ndarray,
                  pair: tuple[int, int], parent: tuple[int, int], run: tuple[int, int]) -> np.ndarray:
    """(2,) costs (torso lengths) of one pair over one run of frames, [with the body, as read]: each side's joint
    from its parent's decided point (the attachment), plus the step from the frame before the run and to the
    frame after it (the motion; outside the run the labels are as read). xy, ok: (T, K, 2), (T, K) as read;
    pos, pos_ok: the same as decided so far; torso: (T,) px."""
    i, j = pair
    a, b = run
    cost = np.zeros(2)
    for h, (li, ri) in enumerate(((j, i), (i, j))):
        sl, both = slice(a, b), ok[a:b, i] & ok[a:b, j] & pos_ok[a:b, parent[0]] & pos_ok[a:b, parent[1]]
        d = (np.linalg.norm(xy[sl, li] - pos[sl, parent[0]], axis=-1)
             + np.linalg.norm(xy[sl, ri] - pos[sl, parent[1]], axis=-1)) / torso[sl]
        cost[h] += np.nansum(np.where(both, d, 0.0))
        for inside, outside in ((a, a - 1), (b - 1, b)):
            if 0 <= outside < len(xy) and ok[inside, i] & ok[inside, j] & ok[outside, i] & ok[outside, j]:
                step = (np.linalg.norm(xy[inside, li] - xy[outside, i]) + np.linalg.norm(xy[inside, ri] - xy[outside, j]))
                cost[h] += step / max(torso[inside], 1e-6) if np.isfinite(step) else 0.0
    return cost


def facing_orders(xy: np.ndarray, seen: np.ndarray, state: np.ndarray, spec: SkeletonSpec,
                  margin: float = KEEP_MARGIN) -> np.ndarray:
    """(T, K) joint order per frame of one track from its facing repair's ``state`` (T,) bool (the frames whose
    labels slid to the other side, ``tracking.facing.repair_states``): in those frames the head and shoulders
    are exchanged; each pair of :data:`CHAIN` is exchanged with them over a run of such frames unless, as read,
    it hangs from its (decided) parent pair and joins the frames around the run better by ``margin`` torso
    lengths a frame (:func:`_parent_costs`): the network may slide the trunk's labels while it reads the legs
    right. xy: (T, K, 2) px; seen: (T, K) bool."""
    k = spec.num_joints
    order = np.tile(np.arange(k), (len(xy), 1))
    order[state] = np.asarray(spec.mirror_index)
    edges = np.flatnonzero(np.diff(np.r_[0, state.astype(np.int8), 0]))
    runs = list(zip(edges[::2], edges[1::2]))
    pos = np.take_along_axis(xy, order[..., None], axis=1)
    pos_ok = np.take_along_axis(seen, order, axis=1)
    idx = lambda n: (spec.index(f"left_{n}"), spec.index(f"right_{n}"))  # noqa: E731
    sh, hp = idx("shoulder"), idx("hip")
    torso = np.linalg.norm(xy[:, list(sh)].mean(1) - xy[:, list(hp)].mean(1), axis=-1)
    for name, parent in CHAIN:
        pair, par = idx(name), idx(parent)
        for a, b in runs:
            with_body, as_read = _parent_costs(xy, seen, pos, pos_ok, torso, pair, par, (a, b))
            if as_read + margin * (b - a) < with_body:
                order[a:b, pair[0]], order[a:b, pair[1]] = pair
                pos[a:b, pair[0]], pos[a:b, pair[1]] = xy[a:b, pair[0]], xy[a:b, pair[1]]
                pos_ok[a:b, pair[0]], pos_ok[a:b, pair[1]] = seen[a:b, pair[0]], seen[a:b, pair[1]]
    return order


def facing_sides(frames: list[PoseFrame], spec: SkeletonSpec, settings: FacingSettings | None = None,
                 min_frames: int = 3) -> tuple[list[PoseFrame], dict[int, int]]:
    """Left and right of people seen from behind, decided by their facing (offline, whole tracks): per track the
    frames whose labels slid to the other side (``tracking.facing.repair_states``: the depth head's trunk yaw,
    its jumps over the motion, the face), and in them each pair's labels as :func:`facing_orders` decides.
    frames: T tracked PoseFrames with world coordinates (people with id -1, frames without world, and tracks in
    fewer than ``min_frames`` frames pass through) -> (new frames, {track id: frames changed}); the input is not
    changed."""
    out = list(frames)
    report: dict[int, int] = {}
    if not frames or not applies(spec):
        return out, report
    s = settings or FacingSettings()
    for tid in track_ids(frames):
        rows = track_rows(frames, tid, with_world=True)
        if len(rows) < min_frames:
            continue
        xy = np.stack([frames[t].keypoints[p, :, :2] for t, p in rows]).astype(np.float64)
        conf = np.stack([frames[t].confidence[p] for t, p in rows]).astype(np.float64)
        world = np.stack([frames[t].world[p] for t, p in rows]).astype(np.float64)
        state = repair_states(world, conf, np.array([frames[t].timestamp for t, _ in rows], np.float64), spec, s)
        if not state.any():
            continue
        orders = facing_orders(xy, (conf >= s.min_confidence) & np.isfinite(xy).all(-1), state, spec)
        report[tid] = reorder_rows(out, rows, orders)
    return out, report


def feet_swaps(frames: list[PoseFrame], spec: SkeletonSpec, fps: float = 30.0,
               settings: ContactSettings | None = None) -> dict[int, list[int]]:
    """{track id: source frame indices (``PoseFrame.index``) from which its legs are to be exchanged}
    (:func:`track_swaps` per track; tracks with none are left out). frames: T tracked PoseFrames, in order
    (people with id -1 are not read)."""
    if not frames or not leg_pairs(spec):
        return {}
    try:
        tracks = person_tracks(PoseSequence(list(frames), fps if fps > 0 else 30.0, spec))
    except TrackError:  # no tracked person
        return {}
    out: dict[int, list[int]] = {}
    for tid, track in tracks.items():
        swaps = track_swaps(track, spec, frames[0].image_size, fps)
        if len(swaps):
            out[tid] = [int(track.frames[i]) for i in swaps]
    return out


def _hips_agree(frames: list[PoseFrame], spec: SkeletonSpec, tid: int, span: range) -> bool:
    """Over the frames ``span`` the track's hips lie as its shoulders do in 3-D (the left hip on the left
    shoulder's side: the dot product of the hip and shoulder lines, left minus right, positive in most frames
    with world coordinates), so its feet's labels swapped without the hips'. False without the joints or world."""
    names = ("left_hip", "right_hip", "left_shoulder", "right_shoulder")
    if not all(n in spec.joint_names for n in names):
        return False
    lh, rh, ls, rs = (spec.index(n) for n in names)
    votes = []
    for t in span:
        f = frames[t]
        hit = np.flatnonzero(f.track_ids == tid)
        if f.world is None or hit.size == 0:
            continue
        w = f.world[int(hit[0])]
        d = float(np.dot(w[lh] - w[rh], w[ls] - w[rs]))
        if np.isfinite(d):
            votes.append(d > 0)
    return bool(votes) and float(np.mean(votes)) > 0.5


def exchange_legs(frames: list[PoseFrame], spec: SkeletonSpec, swaps: dict[int, list[int]]) -> list[PoseFrame]:
    """``frames`` (T PoseFrames, in order) with each track's left and right legs (:func:`leg_pairs`: keypoints,
    confidence, world) exchanged in the frames after an odd number of its ``swaps`` ({track id: source frame
    indices}, :func:`feet_swaps`); new frames where changed, the input is not. Where, over such a stretch, the
    hips already lie as the shoulders do in 3-D (:func:`_hips_agree`: only the feet's labels swapped, as a side
    view names the front foot "left"), the hips stay and the knees, ankles and feet are exchanged: exchanging
    them would turn the pelvis by half a turn against the chest."""
    if not swaps:
        return list(frames)
    perm = np.arange(spec.num_joints)
    for left, right in leg_pairs(spec):
        perm[left], perm[right] = right, left
    below = perm.copy()  # the legs below the hips
    for name in ("left_hip", "right_hip"):
        if name in spec.joint_names:
            below[spec.index(name)] = spec.index(name)
    position = {int(f.index): t for t, f in enumerate(frames)}
    orders: dict[int, list[np.ndarray | None]] = {}  # track id -> per frame the joint order of its legs, or None
    for tid, indices in swaps.items():
        starts = sorted(position[int(i)] for i in indices) + [len(frames)]
        per_frame: list[np.ndarray | None] = [None] * len(frames)
        for k in range(0, len(starts) - 1, 2):  # after an odd number of swaps: [s1, s2), [s3, s4), ...
            span = range(starts[k], starts[k + 1])
            order = below if _hips_agree(frames, spec, int(tid), span) else perm
            for t in span:
                per_frame[t] = order
        orders[int(tid)] = per_frame
    out = list(frames)
    for t, f in enumerate(frames):
        rows = [(p, orders[int(tid)][t]) for p, tid in enumerate(f.track_ids)
                if int(tid) in orders and orders[int(tid)][t] is not None]
        if rows:
            order = np.tile(np.arange(f.num_joints), (f.num_people, 1))  # (P, K)
            for p, o in rows:
                order[p] = o
            out[t] = permute_joints(f, order)
    return out


def one_leg_each(frames: list[PoseFrame], spec: SkeletonSpec, fps: float = 30.0,
                 settings: ContactSettings | None = None) -> tuple[list[PoseFrame], dict[int, list[int]]]:
    """Each track's legs exchanged back from every left / right label swap of its feet that the trunk does not
    contradict (module docstring): (frames, {track id: source frame indices of the swaps undone}). frames: T
    tracked PoseFrames in order (keypoints (P, K, 3), confidence (P, K), world (P, K, 3) or None); the input
    is not changed. fps: only where the timestamps cannot give the frame time."""
    swaps = feet_swaps(frames, spec, fps, settings)
    return exchange_legs(frames, spec, swaps), swaps


__all__ = ["exchange_legs", "facing_orders", "facing_sides", "feet_swaps", "leg_pairs", "legs_against_facing",
           "one_leg_each", "track_facing", "track_swaps", "trunk_checked", "trunk_crossed"]
