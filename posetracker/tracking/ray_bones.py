"""Rigid bones for one camera: a bone read much shorter than it is gets its length in depth, its joint kept on
its camera ray.

A single camera sees a bone's image direction well and its depth poorly. Where a bone points nearly along the
camera's ray (an upper arm swung towards or away from the camera) its image is short and the network's depth
difference between its ends is often far too small (the sample dancer's elbow read 2 cm in front of the
shoulder while the arm pointed at the camera): the bone is read a fraction of its length.
:func:`~posetracker.tracking.bones.rigidify` stretches it to its length along the measured 3-D direction, which
is then mostly sideways: the joint leaves its image position by tens of pixels and the bone swings by 90 degrees
in a frame as it passes the ray. Here, per bone (parents first) and over the whole track at once, a path of
directions on the child's ray is solved first: in the plane of the parent and the child's ray, ``cos(phi) a +
sin(phi) ray`` (``a``: from the parent square onto the ray), minimising

    sum_t (off_t / (RAY_SCALE L))^2 + (deep_t / (s_t L))^2 + REACH_COST reach_t
        +  sum_t (turn(bone_t, bone_{t-1}) / TURN_SCALE)^2

with ``off_t`` the child's distance from its ray, ``deep_t`` its depth along the ray against the measured bone's,
L the bone's length and ``s_t = DEPTH_SCALE + (1 - measured length / L)`` (a bone read short: its depth unsure);
``reach_t`` (upper arms only, :func:`past_reach`) how far the direction lies past the shoulder's reach: behind the
trunk and not hanging down, where an arm swung along the ray cannot be (the sample dancer, seen from behind, drops
her raised arm in front of her; the network's depth put it behind her back, a 90-degree hyperextension, and the
arm jumped half a turn where it met its reading in front again).
Two directions put the child on its ray (nearer the camera than the parent's foot on the ray, or farther; they
meet where the bone lies across the image); the measured depth says which where it is sure, and the turn term
keeps a bone on one side while it points along the ray, passing to the other where the two meet (or through a
few frames off the ray) rather than by a jump. Solved by Viterbi over the two points and BINS directions round
the circle, then refined continuously (each frame against its neighbours). Where the ray passes out of reach
the child goes to the point of the bone's length nearest it.

Then each frame's bone takes that path's direction where it was read short (measured length under READ_SHORT[0]
of L), its measured direction, as ``rigidify`` does, where it was read near its length (from READ_SHORT[1]),
and a blend between, eased over EASE frames before and after (a bone stepping from its misread direction onto
the path in one frame would jump by what the misreading was worth): a bone read whole keeps its measured depth (against the 4-view reference of
studies/multiview-reference.md, placing every bone on its ray made the joint angles worse: the 2-D
and the bone lengths disagree by a few per cent everywhere, which the rays turn into tilts). A bone whose depth
the readings never say (its measured depth difference under FLAT_SHARE of its length in most frames: a flat
reading) is scaled along its measured direction throughout.

Shapes: T frames of one track, K joints, E bones; world (T, K, 3) camera-space metres (the camera at the origin),
nan where unread; lengths (E,) metres, nan for a bone left as measured.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import minimum_filter1d, uniform_filter1d

from posetracker.skeletons import SkeletonSpec

X, Y = np.eye(3)[:2]

RAY_SCALE = 0.05  # a child this share of its bone's length off its ray costs as much as ...
TURN_SCALE = np.radians(20.0)  # ... a bone turning this far in a frame, and as ...
DEPTH_SCALE = 0.15  # ... its depth along the ray this share of L off the measured one (at least)
BINS = 36  # bone directions tried besides the two points on the ray (every 10 degrees round the circle)
READ_SHORT = (0.5, 0.8)  # measured length / L: under the first the bone lies on its ray path, from the second
# along its measured direction
EASE = 9  # frames (0.3 s at 30 fps) over which a bone eases onto its ray path before it is read short, and off after
FLAT_SHARE = 0.05  # a bone whose measured depth difference stays under this share of its length: flat reading
#: an upper arm pointing behind the trunk (its backward share from the first to the second of BEHIND) while
#: not hanging down (its upward share from the first to the second of RAISED) is past the shoulder's reach
BEHIND, RAISED = (0.75, 0.95), (-0.6, -0.2)
WIDE = (0.5, 0.8)  # shoulder line against its median over the track: from short (facing unknown) to whole
REACH_COST = 25.0  # a frame past the shoulder's reach costs as much as a bone turning 100 degrees in a frame
#: (elbow, the shoulder it hangs from): the bones whose ray path keeps to the shoulder's reach
UPPER_ARMS = (("left_elbow", "left_shoulder"), ("right_elbow", "right_shoulder"))


def _smoothstep(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    s = np.clip((np.nan_to_num(x) - lo) / (hi - lo), 0.0, 1.0)
    return s * s * (3 - 2 * s)


def _trunk_axes(placed: np.ndarray, spec: SkeletonSpec) -> tuple[np.ndarray, np.ndarray] | None:
    """(up (T, 3), forward (T, 3)) unit axes of the trunk from the placed shoulders and hips (T, K, 3): up from
    mid-hip to mid-shoulder, forward square to it and to the shoulder line (right to left shoulder), the way the
    person faces, scaled down to 0 as the shoulder line is read short against its median (WIDE); nan where
    unread. None for a skeleton without shoulders and hips."""
    names = ("left_shoulder", "right_shoulder", "left_hip", "right_hip")
    if not set(names) <= set(spec.joint_names):
        return None
    ls, rs, lh, rh = (placed[:, spec.index(n)] for n in names)
    with np.errstate(invalid="ignore", divide="ignore"):
        up = (ls + rs) / 2 - (lh + rh) / 2
        up = up / np.linalg.norm(up, axis=-1, keepdims=True)
        side = ls - rs
        side = side - np.sum(side * up, axis=-1, keepdims=True) * up
        width = np.linalg.norm(side, axis=-1)
        forward = np.cross(side, up) / width[:, None]
        seen = np.isfinite(width) & (width > 0)
        ref = np.median(width[seen]) if seen.any() else np.nan
        # a shoulder line read short (a side view, a collapsed depth) does not say which way the trunk faces
        return up, forward * _smoothstep(width / ref, *WIDE)[:, None]


def past_reach(dirs: np.ndarray, up: np.ndarray, forward: np.ndarray) -> np.ndarray:
    """(T, S) in [0, 1]: how far upper-arm directions ``dirs`` (T, S, 3) unit lie past the shoulder's reach, given
    the trunk's ``up`` (T, 3) unit and ``forward`` (T, 3), unit or shorter where unsure (:func:`_trunk_axes`;
    nan: 0): 1 pointing straight back (more than about 70 degrees behind the trunk's plane), level or raised (the
    arm dropped behind the back, which a shoulder cannot reach), 0 in front, to the side, up to about 50 degrees
    behind, or hanging down."""
    with np.errstate(invalid="ignore"):
        behind = -np.sum(dirs * forward[:, None, :], axis=-1)
        raised = np.sum(dirs * up[:, None, :], axis=-1)
    return np.nan_to_num(_smoothstep(behind, *BEHIND) * _smoothstep(raised, *RAISED))


def _plane(parent: np.ndarray, ray: np.ndarray, measured: np.ndarray, length: float) -> tuple[np.ndarray, np.ndarray]:
    """(a (T, 3) unit, dist (T,)): in the plane of the parent (T, 3) and the child's unit ray (T, 3) from the
    camera, the direction from the parent square onto the ray and the parent's distance from it (where the
    parent lies on the ray: the measured bone (T, 3) made square to it)."""
    foot = np.sum(parent * ray, axis=-1, keepdims=True) * ray
    off = foot - parent
    dist = np.linalg.norm(off, axis=-1)
    side = measured - np.sum(measured * ray, axis=-1, keepdims=True) * ray
    a = np.where((dist > 1e-6 * length)[:, None], off, side)
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12), dist


def _cost(phi: np.ndarray, a: np.ndarray, ray: np.ndarray, dist: np.ndarray, depth: np.ndarray, sure: np.ndarray,
          length: float) -> tuple[np.ndarray, np.ndarray]:
    """Bone directions ``cos(phi) a + sin(phi) ray`` for angles ``phi`` (T, S) -> (directions (T, S, 3), each
    frame's own cost (T, S): the child's distance off its ray over RAY_SCALE and its depth along the ray off the
    measured bone's ``depth`` (T,) over DEPTH_SCALE, both as shares of ``length``, squared)."""
    dirs = np.cos(phi)[..., None] * a[:, None, :] + np.sin(phi)[..., None] * ray[:, None, :]
    miss = (dist[:, None] / length - np.cos(phi)) / RAY_SCALE
    deep = (np.sin(phi) - depth[:, None]) / sure[:, None]
    return dirs, miss * miss + deep * deep


def _refine(phi: np.ndarray, a: np.ndarray, ray: np.ndarray, dist: np.ndarray, depth: np.ndarray, sure: np.ndarray,
            length: float, ok: np.ndarray, passes: int = 4) -> np.ndarray:
    """(T,) the chosen angles ``phi`` (T,) moved each to the best within half a bin of it, its neighbours held
    (even frames, then odd ones; ``passes`` times, the later ones on finer steps): the Viterbi's bins made
    continuous."""
    phi = phi.copy()
    offsets = np.linspace(-0.5, 0.5, 11) * (2 * np.pi / BINS)
    dirs = _cost(phi[:, None], a, ray, dist, depth, sure, length)[0][:, 0]
    for k in range(passes):
        offsets_k = offsets * 0.2 ** max(0, k - 1)  # two passes at the bin's width, then finer
        for parity in (0, 1):
            t = np.flatnonzero(ok & (np.arange(len(phi)) % 2 == parity))
            if not t.size:
                continue
            trial = phi[t, None] + offsets_k[None, :]
            d, cost = _cost(trial, a[t], ray[t], dist[t], depth[t], sure[t], length)
            for k in (-1, 1):
                nb = np.clip(t + k, 0, len(phi) - 1)
                has = ok[nb] & (nb != t)
                turn2 = 2.0 * (1.0 - np.sum(d * dirs[nb][:, None, :], -1))
                cost = cost + has[:, None] * turn2 / TURN_SCALE**2
            best = np.argmin(cost, axis=1)
            phi[t] = trial[np.arange(len(t)), best]
            dirs[t] = d[np.arange(len(t)), best]
    return phi


def _choose(dirs: np.ndarray, cost: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """(T,) the state of each frame minimising ``cost`` (T, S) plus the turns between frames ((turn /
    TURN_SCALE)^2, directions ``dirs`` (T, S, 3)): Viterbi; frames not ``ok`` (T,) break the chain."""
    n, m = cost.shape
    pick = np.zeros(n, np.int64)
    t = 0
    while t < n:
        if not ok[t]:
            t += 1
            continue
        end = t
        while end < n and ok[end]:
            end += 1
        total = cost[t].copy()
        back = np.zeros((end - t, m), np.int64)
        for i in range(t + 1, end):
            turn2 = 2.0 * (1.0 - dirs[i] @ dirs[i - 1].T)  # (S now, S before): the turn squared, ~
            step = total[None, :] + turn2 / TURN_SCALE**2
            back[i - t] = np.argmin(step, axis=1)
            total = step[np.arange(m), back[i - t]] + cost[i]
        s = int(np.argmin(total))
        for i in range(end - 1, t - 1, -1):
            pick[i] = s
            s = back[i - t, s]
        t = end
    return pick


def rigid_on_rays(world: np.ndarray, lengths: np.ndarray, spec: SkeletonSpec) -> np.ndarray:
    """One track's joints (T, K, 3) with each bone of its length ``lengths`` (E,) and each child on its camera
    ray (module docstring); the root stays. A bone with a nan length, a joint with a nan end or a bone measured
    ~0 long keeps its measured vector from its placed parent (a nan parent: the measured position), as
    :func:`~posetracker.tracking.bones.rigidify` does. Same dtype as ``world``."""
    w = np.asarray(world)
    src = w.astype(np.float64)
    out = src.copy()
    order = sorted(range(spec.num_edges), key=lambda e: spec.topo_order.index(int(spec.edges[e, 1])))
    arms = {spec.index(c): spec.index(p) for c, p in UPPER_ARMS if c in spec.joint_names and p in spec.joint_names}
    for e in order:
        p, c = int(spec.edges[e, 0]), int(spec.edges[e, 1])
        parent, child = out[:, p], src[:, c]
        measured = child - src[:, p]
        norm = np.linalg.norm(measured, axis=-1)
        length = float(lengths[e])
        ok = np.isfinite(parent).all(-1) & np.isfinite(measured).all(-1) & (norm > 1e-9)
        kept = np.where(np.isfinite(parent).all(-1)[:, None], parent + measured, child)
        if not np.isfinite(length) or not ok.any():
            out[:, c] = kept
            continue
        ray = child / np.maximum(np.linalg.norm(child, axis=-1, keepdims=True), 1e-12)
        if np.median(np.abs(measured[ok, 2]) / norm[ok]) < FLAT_SHARE:  # no depth read for this bone: along its measured direction
            scaled = parent + measured * (length / np.maximum(norm, 1e-12))[:, None]
            out[:, c] = np.where(ok[:, None], scaled, kept)
            continue
        safe = ok[:, None]
        a, dist = _plane(np.where(safe, parent, 0.0), np.where(safe, ray, X), np.where(safe, measured, Y), length)
        depth = np.where(ok, np.sum(measured * ray, axis=-1), 0.0) / length  # the measured bone along the ray
        sure = DEPTH_SCALE + np.maximum(1.0 - np.where(ok, norm, 0.0) / length, 0.0)  # read short: its depth unsure
        root = np.arccos(np.clip(dist / length, 0.0, 1.0))  # the child on its ray nearer / farther: -/+ root
        phi = np.concatenate([-root[:, None], root[:, None],
                              np.broadcast_to(np.linspace(-np.pi, np.pi, BINS, endpoint=False), (len(a), BINS))], 1)
        dirs, cost = _cost(phi, a, np.where(safe, ray, X), dist, depth, sure, length)
        axes = _trunk_axes(out, spec) if arms.get(c) == p else None
        if axes is not None:  # a shoulder does not reach behind the back: the side of the ray that it can
            cost = cost + REACH_COST * past_reach(dirs, *axes)
        chosen = phi[np.arange(len(phi)), _choose(dirs, cost, ok)]
        chosen = _refine(chosen, a, np.where(safe, ray, X), dist, depth, sure, length, ok)
        on_ray = _cost(chosen[:, None], a, ray, dist, depth, sure, length)[0][:, 0]
        # only a bone read much shorter than it is (its depth read too small) leaves its measured direction
        share = _smoothstep(np.where(ok, norm, length) / length, *READ_SHORT)
        if EASE > 1:  # the path taken a few frames before a bone is read short and left a few frames after, gradually
            share = uniform_filter1d(minimum_filter1d(share, EASE, mode="nearest"), EASE, mode="nearest")
        share = share[:, None]
        way = share * measured / np.maximum(norm, 1e-12)[:, None] + (1.0 - share) * on_ray
        placed = parent + length * way / np.maximum(np.linalg.norm(way, axis=-1, keepdims=True), 1e-12)
        out[:, c] = np.where(safe, placed, kept)
    return out.astype(w.dtype if w.dtype.kind == "f" else np.float64, copy=False)


__all__ = ["rigid_on_rays"]
