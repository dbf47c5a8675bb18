"""Multi-person tracking by OKS matching of constant-velocity predictions.

Per frame (:meth:`PoseTracker.update`):

1. Confirmed tracks unmatched for more than ``max_age`` **seconds** (frame
   timestamps, not frame counts) are retired; their ids are never handed out again.
2. Every track predicts its joints to the frame time with constant velocity,
   ``dt = t - t_last``. Velocities come from the track's last two matched
   observations: per joint ``v_j = (x_j - x_j') / dt'``; the body velocity
   ``v_b`` is their median (joints not seen in both move with it). The
   prediction is ``x_j + v_b dt + (v_j - v_b) min(dt, joint_horizon)``: for a
   normal frame gap that is plain per-joint constant velocity; over a longer
   occlusion only the body keeps moving, since limbs swing back and forth and
   a per-joint velocity from two noisy observations drifts fast.
3. Detections are matched to predictions by OKS (:mod:`.similarity`) with the
   Hungarian method (``scipy.optimize.linear_sum_assignment``) maximising the
   total similarity of the pairs at or above ``oks_threshold``; pairs below it
   are never matched.
   A matched detection whose left/right mirror pair sits crossed against the
   track's prediction (a misread side, :mod:`.mirror`) has that pair swapped back
   (``fix_swaps``), in the output and in the track.
4. Unmatched detections with at least ``min_joints`` confident joints start
   *tentative* tracks. A tentative track becomes *confirmed* once seen in
   ``min_hits`` consecutive frames (its first included) and then takes the
   next unused id; a tentative track missing one frame is dropped. Until confirmed, its person
   is output with id -1, so a detection that lasts fewer than ``min_hits``
   frames (a false positive) never shows an id and uses none up.
5. Confirmed tracks without a detection are kept (not output) and can be
   matched again until they are retired.

Ids are non-negative integers counted up from 0 and unique within a recording:
a new person never gets an id someone else had, so every per-person export
(BVH, TRC, angle summaries) holds one person. The result depends only on the
input frames: tracks confirmed in the same frame take ids in creation order,
new tracks are created in detection order.

A timestamp earlier than the previous frame's (a seek, a new video) resets
the tracker first: ids start again at 0.

Track state is held in stacked arrays (N tracks), so a frame costs a fixed
number of numpy calls whatever the number of people.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment

from posetracker.oks import joint_sigmas, keypoint_bbox_area
from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.mirror import crossed_pairs, mirror_pairs, permute_joints, swap_permutation
from posetracker.tracking.similarity import oks_matrix
from posetracker.types import PoseFrame, ShapeError

#: one subject (``max_jump``): how far a body may move per second beyond the jump, in its own sizes (a sprinter
#: covers ~5 m/s, three statures a second)
BODY_SPEED = 4.0
#: the session's ``max_jump`` for one subject: half its size in one frame, on top of BODY_SPEED
ONE_SUBJECT_JUMP = 0.5

_FIELDS = ("xy", "known", "observed", "vel", "vbody", "t", "area", "hits", "ids")


def median_over_joints(v: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """(M, 2) median over the ``ok`` joints of v (M, K, 2); nan where none."""
    s = np.sort(np.where(ok[..., None], v, np.nan), axis=1)  # nan sorts last
    n = ok.sum(axis=1)
    rows = np.arange(len(n))
    med = 0.5 * (s[rows, np.maximum((n - 1) // 2, 0)] + s[rows, np.maximum(n // 2, 0)])  # (M, 2)
    return np.where((n > 0)[:, None], med, np.nan)


class PoseTracker:
    """Assigns persistent track ids to the people of successive PoseFrames.

    spec:          the skeleton of the frames (K joints, OKS sigmas).
    max_age:       seconds a confirmed track survives without a detection
                   (1 s: someone walking behind another person; 30 frames at 30 fps).
    min_hits:      consecutive matched frames before a track gets an id (3:
                   0.07 s of latency at 30 fps; one- or two-frame false
                   positives never get one). 1 = ids at once.
    oks_threshold: minimum OKS for a detection to continue a track (0.2: the
                   same person a frame later scores > 0.8, someone a body
                   width away < 0.05; a track back from an occlusion with a
                   drifted prediction still clears it). 0: any detection
                   continues a live track (one subject, max people 1: a
                   misread frame must not start a second id).
    max_jump:      with ``oks_threshold`` 0 (one subject), a detection whose centre (the mean of the joints seen
                   in both) lies farther from both a track's prediction's and its last position's than its size (the
                   square root of its keypoint-box area) x (``max_jump`` + ``BODY_SPEED`` x the seconds since its last
                   match) does not continue it (an animal read end to end keeps its centre, and its track):
                   the subject the detector picked changed (max people 1 on a clip with two people), and gliding
                   one track from one person to the other is no motion. None: no such limit.
    min_confidence: joints below it are ignored (not used for matching/motion).
    min_joints:    confident joints a detection needs to start a track.
    joint_horizon: seconds the per-joint part of the velocity is extrapolated
                   (0.1 s, 3 frames at 30 fps); beyond, only the body velocity.
    min_area:      floor of the OKS area, px^2.
    fix_swaps:     swap back left/right pairs crossed against the track's prediction (:mod:`.mirror`).
    """

    def __init__(
        self,
        spec: SkeletonSpec,
        max_age: float = 1.0,
        min_hits: int = 3,
        oks_threshold: float = 0.2,
        *,
        max_jump: float | None = None,
        min_confidence: float = 0.3,
        min_joints: int = 3,
        joint_horizon: float = 0.1,
        min_area: float = 32.0**2,
        fix_swaps: bool = True,
    ) -> None:
        if max_age < 0 or min_hits < 1 or not 0 <= oks_threshold <= 1 or joint_horizon < 0:
            raise ValueError("PoseTracker: need max_age >= 0, min_hits >= 1, 0 <= oks_threshold <= 1, joint_horizon >= 0")
        self.spec = spec
        self.max_age = float(max_age)
        self.min_hits = int(min_hits)
        self.oks_threshold = float(oks_threshold)
        self.max_jump = None if max_jump is None else float(max_jump)
        self.min_confidence = float(min_confidence)
        self.min_joints = int(min_joints)
        self.joint_horizon = float(joint_horizon)
        self.min_area = float(min_area)
        self.fix_swaps = bool(fix_swaps)
        self.pairs = mirror_pairs(spec)
        self.sigmas = joint_sigmas(spec)
        self.reset()

    @classmethod
    def one_subject(cls, spec: SkeletonSpec, **kwargs) -> PoseTracker:
        """A tracker for one subject (max people 1): any detection within a body's reach (``ONE_SUBJECT_JUMP``)
        continues the track, so a misread frame starts no second id, and one out of reach (the detector picked
        another person) starts a new one."""
        return cls(spec, oks_threshold=0.0, max_jump=ONE_SUBJECT_JUMP, **kwargs)

    def reset(self, first_id: int = 0) -> None:
        """Drop every track; new ids start at ``first_id``."""
        k = self.spec.num_joints
        self.xy = np.zeros((0, k, 2))  # (N, K, 2) px at time t (observed or carried), nan = unknown
        self.known = np.zeros((0, k), bool)  # (N, K) ever observed
        self.observed = np.zeros((0, k), bool)  # (N, K) observed at the last match
        self.vel = np.zeros((0, k, 2))  # (N, K, 2) px/s per joint
        self.vbody = np.zeros((0, 2))  # (N, 2) px/s
        self.t = np.zeros(0)  # (N,) time of the last match, s
        self.area = np.zeros(0)  # (N,) keypoint bbox area, px^2
        self.hits = np.zeros(0, np.int64)  # (N,) matched frames (consecutive while tentative)
        self.ids = np.zeros(0, np.int64)  # (N,) track id, -1 = tentative
        self.last_retired: tuple[int, ...] = ()  # ids retired by the last update
        self._next_id = int(first_id)  # the next id to hand out
        self.swaps_fixed = 0
        self._last_t = -np.inf

    @property
    def ids_handed_out(self) -> int:
        """One more than the highest id handed out (the first id of a reset that keeps ids unique)."""
        return self._next_id

    @property
    def num_tracks(self) -> int:
        """Tracks alive, tentative ones included."""
        return int(self.ids.shape[0])

    @property
    def active_ids(self) -> list[int]:
        """Sorted ids of the confirmed tracks alive (visible or occluded)."""
        return sorted(int(i) for i in self.ids if i >= 0)

    def predict(self, t: float) -> np.ndarray:
        """(N, K, 2) joint positions of every track predicted to time ``t`` (nan = unknown)."""
        dt = (t - self.t)[:, None, None]
        h = np.minimum(dt, self.joint_horizon)
        vb = self.vbody[:, None, :]
        return self.xy + vb * dt + (self.vel - vb) * h

    def _keep(self, mask: np.ndarray) -> None:
        for f in _FIELDS:
            setattr(self, f, getattr(self, f)[mask])

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def update(self, frame: PoseFrame) -> PoseFrame:
        """Track one frame; returns the same people with ``track_ids`` set (-1 = unconfirmed)."""
        k = self.spec.num_joints
        if frame.num_joints != k:
            raise ShapeError(f"PoseTracker.update: frame has K={frame.num_joints} joints, skeleton {self.spec.name!r} has {k}")
        t = float(frame.timestamp)
        if t < self._last_t:
            self.reset()
        self._last_t = t

        # 1. retire
        dead = (self.ids >= 0) & (t - self.t > self.max_age)
        self.last_retired = tuple(self.ids[dead].tolist())
        if dead.any():
            self._keep(~dead)

        # 2-3. predict and match
        det_xy = frame.keypoints[..., :2].astype(np.float64)
        det_ok = (frame.confidence >= self.min_confidence) & np.isfinite(det_xy).all(axis=-1)
        det_area = keypoint_bbox_area(det_xy, det_ok)
        n_det = det_xy.shape[0]
        rows = cols = np.zeros(0, np.int64)
        if n_det and self.num_tracks:
            pred = self.predict(t)
            # Similarity to the constant-velocity prediction or to the last position, whichever
            # is higher: one bad match (a wrong velocity) then cannot lose the track.
            n = self.num_tracks
            both = oks_matrix(np.concatenate([pred, self.xy]), np.concatenate([self.known, self.known]),
                              np.concatenate([self.area, self.area]), det_xy, det_ok, det_area, self.sigmas,
                              self.min_area)  # (2N, D): the predictions' rows, then the last positions'
            sim = np.maximum(both[:n], both[n:])
            if self.max_jump is not None:
                sim = np.where(self._within_reach(pred, det_xy, det_ok, t), sim, -1.0)
            rows, cols = self._match(sim)
            if rows.size and self.fix_swaps and self.pairs.size:
                frame, det_xy, det_ok = self._unswap(frame, rows, cols, pred, det_xy, det_ok)
            if rows.size:
                self._correct(rows, det_xy[cols], det_ok[cols], pred[rows], t)

        # 4. confirm, drop unmatched tentative tracks, start new ones
        matched = np.zeros(self.num_tracks, bool)
        matched[rows] = True
        for r in np.flatnonzero(matched & (self.ids < 0) & (self.hits >= self.min_hits)):
            self.ids[r] = self._new_id()
        out = np.full(n_det, -1, np.int64)
        out[cols] = self.ids[rows]
        keep = (self.ids >= 0) | matched
        if not keep.all():
            self._keep(keep)
        new = np.ones(n_det, bool)
        new[cols] = False
        new &= det_ok.sum(axis=1) >= self.min_joints
        if new.any():
            first = self.num_tracks
            self._start(det_xy[new], det_ok[new], det_area[new], t)
            if self.min_hits <= 1:
                for r in range(first, self.num_tracks):
                    self.ids[r] = self._new_id()
            out[new] = self.ids[first:]
        return dataclasses.replace(frame, track_ids=out)

    __call__ = update

    def _within_reach(self, pred: np.ndarray, det_xy: np.ndarray, det_ok: np.ndarray, t: float) -> np.ndarray:
        """(N, D) bool: detection d's centre lies within track n's reach (``max_jump``) of its prediction's ``pred``
        (N, K, 2) or of its last position's, each centre the mean of the joints seen in both; a pair with no joint
        seen in both is within reach (nothing says otherwise)."""
        reach = np.sqrt(np.maximum(self.area, self.min_area)) * (self.max_jump + BODY_SPEED * np.maximum(t - self.t, 0.0))
        near = np.zeros((self.num_tracks, det_xy.shape[0]), bool)
        for at in (pred, self.xy):
            both = (self.known[:, None] & det_ok[None] & np.isfinite(at).all(-1)[:, None])[..., None]  # (N, D, K, 1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # no joint in both: an all-nan slice
                gap = np.nanmean(np.where(both, det_xy[None] - at[:, None], np.nan), axis=2)  # (N, D, 2)
            near |= ~(np.linalg.norm(gap, axis=-1) > reach[:, None])  # nan (nothing to compare) counts as near
        return near

    def _match(self, sim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hungarian matching, confirmed tracks first: a tentative track (e.g. a duplicate
        detection of a tracked person) can never take a detection a confirmed track wants.
        sim: (N tracks, D detections). Returns (rows ascending, cols)."""
        rows, cols = [], []
        free = np.ones(sim.shape[1], bool)
        for group in (np.flatnonzero(self.ids >= 0), np.flatnonzero(self.ids < 0)):
            dets = np.flatnonzero(free)
            if not group.size or not dets.size:
                continue
            s = sim[group[:, None], dets]
            r, c = linear_sum_assignment(np.where(s >= self.oks_threshold, s, 0.0), maximize=True)
            good = s[r, c] >= self.oks_threshold
            rows += group[r[good]].tolist()
            cols += dets[c[good]].tolist()
            free[dets[c[good]]] = False
        order = np.argsort(rows, kind="stable")
        return np.asarray(rows, np.int64)[order], np.asarray(cols, np.int64)[order]

    def _unswap(self, frame: PoseFrame, rows: np.ndarray, cols: np.ndarray, pred: np.ndarray, det_xy: np.ndarray,
                det_ok: np.ndarray) -> tuple[PoseFrame, np.ndarray, np.ndarray]:
        """Swap back the mirror pairs of matched detections ``cols`` that sit crossed against their tracks'
        predictions ``pred[rows]`` (N, K, 2). Returns the frame and its (D, K, 2) xy / (D, K) ok, swapped."""
        ref_ok = self.known[rows] & np.isfinite(pred[rows]).all(-1)
        crossed = crossed_pairs(det_xy[cols], det_ok[cols], pred[rows], ref_ok, self.pairs)
        if not crossed.any():
            return frame, det_xy, det_ok
        self.swaps_fixed += int(crossed.sum())
        perm = np.tile(np.arange(frame.num_joints), (frame.num_people, 1))
        perm[cols] = swap_permutation(crossed, self.pairs, frame.num_joints)
        take = lambda a: np.take_along_axis(a, perm.reshape(perm.shape + (1,) * (a.ndim - 2)), axis=1)  # noqa: E731
        return permute_joints(frame, perm), take(det_xy), take(det_ok)

    def _start(self, xy: np.ndarray, ok: np.ndarray, area: np.ndarray, t: float) -> None:
        m = xy.shape[0]
        add = {
            "xy": np.where(ok[..., None], xy, np.nan),
            "known": ok.copy(),
            "observed": ok.copy(),
            "vel": np.zeros_like(xy),
            "vbody": np.zeros((m, 2)),
            "t": np.full(m, t),
            "area": area,
            "hits": np.ones(m, np.int64),
            "ids": np.full(m, -1, np.int64),
        }
        for f in _FIELDS:
            setattr(self, f, np.concatenate([getattr(self, f), add[f]]))

    def _correct(self, rows: np.ndarray, xy: np.ndarray, ok: np.ndarray, pred: np.ndarray, t: float) -> None:
        """Update tracks ``rows`` (M,) with matched detections xy (M, K, 2), ok (M, K) at time t.

        pred: (M, K, 2) their predictions at t (kept for joints not observed now).
        """
        dt = t - self.t[rows]  # (M,)
        moving = dt > 0  # a repeated timestamp replaces the observation, keeps the motion
        both = ok & self.observed[rows] & moving[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            v = (xy - self.xy[rows]) / dt[:, None, None]
        vb = median_over_joints(v, both)
        vb = np.where(both.any(axis=1)[:, None], vb, self.vbody[rows])
        vj = np.where(both[..., None], v, vb[:, None, :])
        self.vel[rows] = np.where(moving[:, None, None], vj, self.vel[rows])
        self.vbody[rows] = vb
        new_xy = np.where(ok[..., None], xy, np.where(moving[:, None, None], pred, self.xy[rows]))
        self.xy[rows] = new_xy
        self.known[rows] |= ok
        self.observed[rows] = ok
        self.t[rows] = np.maximum(self.t[rows], t)
        self.area[rows] = keypoint_bbox_area(new_xy, self.known[rows])
        self.hits[rows] += 1
