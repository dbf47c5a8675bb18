"""Per-track bone lengths and rigid-length skeletons.

A skeleton's bones are its tree edges (``spec.edges``, parent -> child).
:class:`BoneLengthEstimator` keeps, per track, a ring buffer of the last
``window`` 3-D lengths of every bone measured from ``world`` (metres) and
estimates each length as the median of the valid samples (robust to up to
~50% outliers); a left bone and its right one (names differing only in
``left_`` / ``right_``) get one length, the median of both sides' samples. :func:`rigidify` rescales every bone of a pose to given
lengths along the tree, and :class:`BoneLengthSolver` applies both per track
as frames come (live); :func:`rigid_tracks` does it for a whole recording at
once (offline: one length per bone and track, from all its frames), and
:func:`settle_bones` gives a finished live result the same lengths before it
is written (an export is made after the fact, with every frame at hand).

Bones that leave a *virtual* joint (e.g. human18's body centre, the centre of
the keypoint box) are not anatomical: their length changes with the pose. By
default the estimator reports nan for them, so they are left as measured.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.ray_bones import rigid_on_rays
from posetracker.types import PoseFrame, PoseSequence


@lru_cache(maxsize=32)
def _levels(spec: SkeletonSpec) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]:
    """Edges grouped by tree depth of their child: (edge idx, parent idx, child idx) per level."""
    depth = {spec.root: 0}
    for j in spec.topo_order[1:]:
        depth[j] = depth[spec.parents[j]] + 1
    out = []
    for d in range(1, max(depth.values(), default=0) + 1):
        es = np.array([e for e, (_, c) in enumerate(spec.edges.tolist()) if depth[c] == d], np.int64)
        out.append((es, spec.edges[es, 0], spec.edges[es, 1]))
    return tuple(out)


@lru_cache(maxsize=32)
def _paths(spec: SkeletonSpec) -> np.ndarray:
    """(K, E) 1 where edge e lies on the path from the root to joint k."""
    a = np.zeros((spec.num_joints, spec.num_edges))
    for j in spec.topo_order[1:]:
        a[j] = a[spec.parents[j]]
        a[j, spec.edge_of_child[j]] = 1.0
    return a


@lru_cache(maxsize=32)
def _mirror_pairs(spec: SkeletonSpec) -> tuple[tuple[int, int], ...]:
    """(left edge, right edge) index pairs of bones whose joints' names differ only in left_ / right_."""
    names = spec.joint_names
    swap = lambda n: n.replace("left_", "\0").replace("right_", "left_").replace("\0", "right_")  # noqa: E731
    edges = {(names[a], names[b]): e for e, (a, b) in enumerate(spec.edges.tolist())}
    return tuple((e, edges[(swap(a), swap(b))]) for (a, b), e in edges.items()
                 if "left_" in a + b and (swap(a), swap(b)) in edges)


def bone_lengths(world: np.ndarray, spec: SkeletonSpec) -> np.ndarray:
    """(..., E) length of every bone of ``world`` (..., K, 3); nan where an end is nan."""
    w = np.asarray(world, np.float64)
    d = w[..., spec.edges[:, 1], :] - w[..., spec.edges[:, 0], :]
    return np.sqrt(np.add.reduce(d * d, axis=-1))


def rigidify(
    world: np.ndarray,
    lengths: np.ndarray,
    spec: SkeletonSpec,
    confidence: np.ndarray | None = None,
    *,
    min_confidence: float = 0.0,
) -> np.ndarray:
    """Rescale each bone of ``world`` (..., K, 3) to ``lengths`` (..., E) -> (..., K, 3).

    Walks the tree from the root (which stays put): each child is placed at
    its parent's *corrected* position plus the measured bone direction times
    the target length, so every subtree moves with its parent. A bone keeps
    its measured vector (translated with its parent) where its length is nan,
    its measured length is ~0, or (with ``confidence`` (..., K)) its child's
    confidence is below ``min_confidence``. A joint with a nan parent keeps its
    measured position. Same dtype as ``world``.
    """
    w = np.asarray(world)
    src = w.astype(np.float64)
    ps, cs = spec.edges[:, 0], spec.edges[:, 1]
    vec = src[..., cs, :] - src[..., ps, :]  # (..., E, 3) measured bones
    norm = np.sqrt(np.add.reduce(vec * vec, axis=-1))
    length = np.asarray(lengths, np.float64)
    use = np.isfinite(length) & (norm > 1e-9)
    if confidence is not None:
        use &= np.asarray(confidence)[..., cs] >= min_confidence
    scale = np.ones(use.shape)
    np.divide(length, norm, out=scale, where=use)
    vec *= scale[..., None]
    root = src[..., spec.root : spec.root + 1, :]
    if np.isfinite(vec).all():  # every joint = root + its corrected bones down the path
        out = root + _paths(spec) @ vec
    else:  # a joint with a nan parent starts over from its measured position
        out = src.copy()
        for es, ps_l, cs_l in _levels(spec):
            v = vec[..., es, :]
            out[..., cs_l, :] = np.where(np.isfinite(v), out[..., ps_l, :] + v, src[..., cs_l, :])
    return out.astype(w.dtype if w.dtype.kind == "f" else np.float64, copy=False)


@dataclass
class _Buffer:
    samples: np.ndarray  # (window, E) lengths, nan = no sample
    count: int = 0  # samples written so far
    last_seen: float = 0.0
    since_refresh: int = 0
    cached: np.ndarray | None = None


class BoneLengthEstimator:
    """Running per-track median of each bone's 3-D length (metres).

    window:         ring-buffer size in frames (300: 10 s at 30 fps).
    min_samples:    valid samples a bone needs before it gets a length (else nan).
    min_confidence: both ends of a bone must be at least this confident.
    include_virtual: also estimate bones that leave a virtual joint.
    refresh_every:  recompute the medians every n updates of a track (the
                    median of 300 frames moves slowly; a recompute costs ~70 us).
    drop_after:     seconds after which an unseen track's buffer is dropped
                    (1 s = the tracker's default ``max_age``).
    """

    def __init__(
        self,
        spec: SkeletonSpec,
        window: int = 300,
        min_samples: int = 20,
        min_confidence: float = 0.5,
        *,
        include_virtual: bool = False,
        refresh_every: int = 5,
        drop_after: float = 1.0,
    ) -> None:
        if window < 1 or min_samples < 1 or refresh_every < 1:
            raise ValueError("BoneLengthEstimator: window, min_samples and refresh_every must be >= 1")
        self.spec = spec
        self.window, self.min_samples = int(window), int(min_samples)
        self.min_confidence = float(min_confidence)
        self.refresh_every = int(refresh_every)
        self.drop_after = float(drop_after)
        virtual = set(spec.virtual)
        self._measured = np.array([include_virtual or (p not in virtual and c not in virtual) for p, c in spec.edges.tolist()], bool)
        self._buffers: dict[int, _Buffer] = {}
        self._last_t = -np.inf

    @property
    def track_ids(self) -> list[int]:
        return sorted(self._buffers)

    def reset(self) -> None:
        self._buffers.clear()
        self._last_t = -np.inf

    def forget(self, track_id: int) -> None:
        self._buffers.pop(int(track_id), None)

    def _valid(self, world: np.ndarray, confidence: np.ndarray | None) -> np.ndarray:
        """(..., E) bone lengths of world (..., K, 3), nan where not a valid sample."""
        lengths = bone_lengths(world, self.spec)
        ok = np.broadcast_to(self._measured, lengths.shape)
        if confidence is not None:
            good = np.asarray(confidence) >= self.min_confidence
            ok = ok & good[..., self.spec.edges[:, 0]] & good[..., self.spec.edges[:, 1]]
        return np.where(ok, lengths, np.nan)

    def _add(self, track_id: int, sample: np.ndarray, timestamp: float) -> None:
        tid = int(track_id)
        buf = self._buffers.get(tid)
        if buf is None:  # stagger the median refreshes of tracks starting together
            buf = _Buffer(np.full((self.window, self.spec.num_edges), np.nan), since_refresh=tid % self.refresh_every)
            self._buffers[tid] = buf
        buf.samples[buf.count % self.window] = sample
        buf.count += 1
        buf.last_seen = float(timestamp)
        buf.since_refresh += 1

    def update(self, track_id: int, world: np.ndarray, confidence: np.ndarray | None = None, timestamp: float = 0.0) -> None:
        """Add one observation: world (K, 3) metres, confidence (K,) or None (all confident)."""
        self._add(track_id, self._valid(world, confidence), timestamp)

    def update_frame(self, frame: PoseFrame) -> None:
        """Add every tracked person (id >= 0) of ``frame``; drops tracks unseen for ``drop_after`` s.

        A timestamp earlier than the previous frame's (a seek) resets every track.
        """
        t = float(frame.timestamp)
        if t < self._last_t:
            self.reset()
        self._last_t = t
        for tid in [i for i, b in self._buffers.items() if t - b.last_seen > self.drop_after]:
            self.forget(tid)
        if frame.world is None:
            return
        samples = self._valid(frame.world, frame.confidence)  # (P, E)
        for p, tid in enumerate(frame.track_ids.tolist()):
            if tid >= 0:
                self._add(tid, samples[p], t)

    def lengths(self, track_id: int) -> np.ndarray:
        """(E,) median length per bone in metres; nan for bones with < min_samples valid samples."""
        buf = self._buffers.get(int(track_id))
        if buf is None:
            return np.full(self.spec.num_edges, np.nan)
        if buf.cached is None or buf.since_refresh >= self.refresh_every:
            filled = buf.samples[: min(buf.count, self.window)]
            s = np.sort(filled, axis=0)  # nan sorts last
            n = np.add.reduce(~np.isnan(filled), axis=0)
            cols = np.arange(s.shape[1])
            lo, hi = np.maximum((n - 1) // 2, 0), np.maximum(n // 2, 0)
            med = 0.5 * (s[lo, cols] + s[hi, cols])
            pairs = _mirror_pairs(self.spec)
            if pairs:  # a left bone is as long as its right one: the median of both sides' samples, per pair
                es, ms = np.array(pairs).T  # (B,) each
                both = np.sort(np.concatenate([filled[:, es], filled[:, ms]]), axis=0)  # (2 samples, B)
                nb = n[es] + n[ms]
                pair = 0.5 * (both[np.maximum((nb - 1) // 2, 0), np.arange(len(es))] + both[nb // 2, np.arange(len(es))])
                sure = (n[es] >= self.min_samples) & (n[ms] >= self.min_samples)
                med[es[sure]] = pair[sure]
                med[ms[sure]] = pair[sure]
            buf.cached = np.where(n >= self.min_samples, med, np.nan)
            buf.since_refresh = 0
        return buf.cached.copy()


class BoneLengthSolver:
    """Estimates bone lengths per track and, with ``rigidify=True``, enforces them.

    :meth:`update` feeds the estimator with the raw ``world`` of every tracked
    person and returns the frame with each tracked person's ``world`` rescaled
    to its track's lengths (bones without an estimate are left unchanged).
    ``rigid_min_confidence`` is passed to :func:`rigidify` (0: rescale every
    bone with a length, even those of unsure joints, so limbs never stretch).
    Other keyword arguments go to :class:`BoneLengthEstimator`.
    """

    def __init__(self, spec: SkeletonSpec, rigidify: bool = True, *, rigid_min_confidence: float = 0.0, **estimator_kwargs) -> None:
        self.spec = spec
        self.rigidify = bool(rigidify)
        self.rigid_min_confidence = float(rigid_min_confidence)
        self.estimator = BoneLengthEstimator(spec, **estimator_kwargs)

    def update(self, frame: PoseFrame) -> PoseFrame:
        self.estimator.update_frame(frame)
        if not self.rigidify or frame.world is None:
            return frame
        people = [p for p, tid in enumerate(frame.track_ids.tolist()) if tid >= 0]
        if not people:
            return frame
        lengths = np.stack([self.estimator.lengths(int(frame.track_ids[p])) for p in people])  # (M, E)
        world = frame.world.copy()
        world[people] = rigidify(
            frame.world[people], lengths, self.spec, frame.confidence[people], min_confidence=self.rigid_min_confidence
        )
        return dataclasses.replace(frame, world=world)

    __call__ = update


def rigid_tracks(frames: list[PoseFrame], spec: SkeletonSpec, min_confidence: float = 0.5,
                 min_samples: int = 5, on_rays: bool = False) -> list[PoseFrame]:
    """Every tracked person's ``world`` rescaled to one length per bone for the whole recording: the median
    over all the track's frames where both ends are at least ``min_confidence`` (bones with fewer than
    ``min_samples`` such frames, and untracked people, stay as measured). ``on_rays`` (one camera's readings,
    ``world`` in its frame): a bone read much shorter than it is takes its length in depth, its joint kept on
    its camera ray, chosen over each whole track (:func:`posetracker.tracking.ray_bones.rigid_on_rays`); else,
    and for bones read near their length, each bone is scaled along its measured direction (:func:`rigidify`;
    without ``on_rays`` for triangulated points, whose depth is as sure as the rest)."""
    if not frames:
        return frames
    est = BoneLengthEstimator(spec, window=len(frames), min_samples=min_samples, min_confidence=min_confidence,
                              refresh_every=1, drop_after=np.inf)
    for f in frames:
        est.update_frame(f)
    lengths = {tid: est.lengths(tid) for tid in est.track_ids}
    if on_rays:
        return _rigid_tracks_on_rays(frames, spec, lengths)
    out = []
    for f in frames:
        people = [p for p, tid in enumerate(f.track_ids.tolist()) if tid in lengths]
        if f.world is None or not people:
            out.append(f)
            continue
        world = f.world.copy()
        world[people] = rigidify(f.world[people], np.stack([lengths[int(f.track_ids[p])] for p in people]), spec)
        out.append(dataclasses.replace(f, world=world))
    return out


def _rigid_tracks_on_rays(frames: list[PoseFrame], spec: SkeletonSpec, lengths: dict[int, np.ndarray]) -> list[PoseFrame]:
    """:func:`rigid_tracks` with each track's bones placed by :func:`rigid_on_rays` over the whole track."""
    worlds = [None if f.world is None else f.world.copy() for f in frames]
    for tid, length in lengths.items():
        rows = [(t, p) for t, f in enumerate(frames) if f.world is not None
                for p in np.flatnonzero(f.track_ids == tid).tolist()]
        if not rows:
            continue
        placed = rigid_on_rays(np.stack([frames[t].world[p] for t, p in rows]), length, spec)
        for (t, p), w in zip(rows, placed):
            worlds[t][p] = w
    return [f if w is None else dataclasses.replace(f, world=w) for f, w in zip(frames, worlds)]


def settle_bones(seq: PoseSequence) -> PoseSequence:
    """A live result (``metadata["mode"] == "live"``: each track's bones were a running median while it ran)
    with one length per bone and track over the whole recording (:func:`rigid_tracks`), marked
    ``metadata["bones"] = "recording"``. Anything else (offline results are so already; ``metadata["bones"]
    == "raw"``: the user asked for the lengths as estimated) is returned as it is."""
    meta = seq.metadata or {}
    if meta.get("mode") != "live" or meta.get("bones") in ("raw", "recording"):
        return seq
    return dataclasses.replace(seq, frames=rigid_tracks(seq.frames, seq.skeleton),
                               metadata={**meta, "bones": "recording"})
