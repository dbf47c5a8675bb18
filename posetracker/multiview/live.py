"""Several calibrated cameras, live: each instant's people triangulated as its frames come in.

What ``posetracker process SRC1 SRC2 --mode live --calibration FILE`` runs (sources: cameras, files, lavfi graphs).
:class:`LiveViews` holds one live :class:`~posetracker.session.TrackingSession` per view (its own network state,
tracker and ids, as a single live view; no 2-D smoothing there: the people are smoothed once, in 3-D) and, for
each set of frames of one instant (``live_sources.paired_frames``), in :meth:`LiveViews.step`:

1. each view's session steps its frame, the views in parallel threads (ONNX Runtime releases the GIL); out come
   the views' poses of the instant ``lookahead`` sets ago;
2. the views' tracks over the last ``window`` instants are matched into people (``match.match_tracks``: epipolar
   consistency, complete linkage), each person keeping its id while any of its tracks goes on (:class:`LiveIds`);
3. each person's joints of the instant are triangulated (``reference.triangulate_person``: a view that loses a
   joint or reads it wrong is dropped for that joint) and written in the first camera's frame
   (``fuse.fuse_frame``, as the offline fusion writes them);
4. the live motion solve and bone lengths of a single live view run on the fused people (``motion.live_solve``,
   ``tracking.bones``): every output reads them.

The offline fusion's camera-pose adjustment (``adjust``) and alignment by motion (``sync``) need the whole clip
and are not run: live sources are paired by their arrival time. :meth:`LiveViews.report` gives, per person, the
median reprojection error per view and the share of joints triangulated (``metadata["multiview"]["people"]``).

Shapes: V views, W instants of the matching window, P people, K joints.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from posetracker.multiview.calibration import CameraCalibration
from posetracker.multiview.fuse import fuse_frame
from posetracker.multiview.match import PersonMatch, ViewTrack, match_tracks, person_views
from posetracker.multiview.reference import triangulate_person
from posetracker.types import Frame, PoseFrame

WINDOW = 30  # instants of each view's tracks the matching looks at (0.5-1 s)
MIN_FRAMES = 3  # instants two tracks must share before they are matched
REACH = 1.2  # two joints farther apart than this times the bones between them: one is no reading of it
TOP_SPEED = 15.0  # m/s: no joint moves faster (a kicking foot's peak; a walking foot's is about 5)
REMATCH = 10  # instants after which the tracks are matched again even if the same ones are seen


def window_tracks(frames: Sequence[PoseFrame], view: int) -> dict[int, ViewTrack]:
    """{track id: ViewTrack (W, K)} of one view's last W poses (people with an id; nan / 0 where absent)."""
    ids = sorted({int(t) for f in frames for t in f.track_ids if t >= 0})
    if not ids:
        return {}
    k = frames[0].keypoints.shape[1]
    xy = np.full((len(ids), len(frames), k, 2), np.nan)
    conf = np.zeros((len(ids), len(frames), k))
    row = {t: n for n, t in enumerate(ids)}
    for i, f in enumerate(frames):
        for p, t in enumerate(f.track_ids.tolist()):
            if t >= 0:
                xy[row[t], i], conf[row[t], i] = f.keypoints[p, :, :2], f.confidence[p]
    return {t: ViewTrack(view, t, xy[n], conf[n]) for t, n in row.items()}


def unreachable(xyz: np.ndarray, spec, lengths: np.ndarray, *, stretch: float = REACH, noise_m: float = 0.1,
                shortest_m: float = 0.15) -> np.ndarray:
    """(K,) bool: the joints of one person's triangulated ``xyz`` (K, 3) m (nan where not found) that the person's
    bones cannot reach from the other joints found. ``lengths`` (E,) m: their bone lengths so far (nan: not known
    yet; its mirror's taken, else no check along it). Two found joints disagree where they lie farther apart than
    ``stretch`` times the bones between them in the skeleton plus ``noise_m`` (the ends of a short bone are a few
    cm off), or, one the other's parent by a bone of at least ``shortest_m``, nearer than that bone less
    ``stretch - 1`` of it and ``noise_m``; the joint that disagrees with the most others is dropped (all of them
    on a tie) until none disagree.
    Two views cannot vote a view out: a 2-D point read on another limb near the epipolar line triangulates within
    the reprojection limit, far from the person (the man's right ankle 1.3 m from where the 4-view result has it,
    34 cm under the floor: ``studies/metres.md``); offline, more views and the motion solve over the whole clip
    keep such points out, live nothing else would."""
    k = spec.num_joints
    mirror = [spec.edge_of_child[spec.mirror_index[spec.edges[e, 1]]] for e in range(spec.num_edges)]
    lengths = np.where(np.isfinite(lengths), lengths, np.asarray(lengths)[mirror])  # a bone as long as its mirror
    path = np.zeros((k, spec.num_edges), bool)  # (K, E) the bones from the root to each joint
    for j in spec.topo_order[1:]:
        path[j] = path[spec.parents[j]]
        path[j, spec.edge_of_child[j]] = True
    between = path[:, None] ^ path[None]  # (K, K, E) the bones between two joints
    reach = np.where(between, np.where(np.isfinite(lengths), lengths, np.inf), 0.0).sum(-1)  # (K, K) m
    bone = np.zeros((k, k), bool)
    for j, parent in enumerate(spec.parents):
        if parent >= 0:
            bone[j, parent] = bone[parent, j] = True
    d = np.linalg.norm(xyz[:, None] - xyz[None], axis=-1)  # (K, K) m, nan where either is not found
    with np.errstate(invalid="ignore"):
        short = bone & np.isfinite(reach) & (reach >= shortest_m) & (d < (2.0 - stretch) * reach - noise_m)
        apart = (d > stretch * reach + noise_m) | short
    bad = np.zeros(k, bool)
    while (count := (apart & ~bad[None]).sum(1) * ~bad).any():
        bad |= count == count.max()
    return bad


def too_fast(xyz: np.ndarray, last: np.ndarray, dt: np.ndarray, *, speed: float = TOP_SPEED,
             noise_m: float = 0.1) -> np.ndarray:
    """(K,) bool: the joints of one person's triangulated ``xyz`` (K, 3) m that lie farther from where they were
    last kept, ``last`` (K, 3) m (nan: never), ``dt`` (K,) s ago, than ``noise_m`` plus ``speed`` m/s for that
    time: a point read on another limb (the man's standing foot 56 cm up for one instant at 60 fps, 34 m/s, in
    cam01's pixels where it stood: its stance was held on it). A joint kept out is compared again at the next
    instant with the time since grown, so a joint that did move is taken back within a few instants."""
    d = np.linalg.norm(xyz - last, axis=-1)
    with np.errstate(invalid="ignore"):
        return d > noise_m + speed * np.asarray(dt)


class LiveIds:
    """One id per person over time: a matched group of tracks takes the id most of its tracks had (among those
    not taken by a group more present this instant), else a new one."""

    def __init__(self) -> None:
        self.of_track: dict[tuple[int, int], int] = {}  # (view, track id) -> person id
        self.next_id = 0

    def assign(self, matches: Sequence[PersonMatch]) -> list[int]:
        """Person ids of ``matches`` (most present first), in order."""
        taken: set[int] = set()
        out = []
        for m in matches:
            votes = Counter(self.of_track[t] for t in m.tracks if t in self.of_track and self.of_track[t] not in taken)
            if votes:
                pid = votes.most_common(1)[0][0]
            else:
                pid, self.next_id = self.next_id, self.next_id + 1
            taken.add(pid)
            out.append(pid)
            self.of_track.update({t: pid for t in m.tracks})
        return out


class LiveViews:
    """Live frames of V calibrated cameras -> fused PoseFrames in the first camera's metres (module docstring).

    sessions: one live TrackingSession per view (any object with ``step(Frame) -> PoseFrame | None``,
              ``flush() -> list[PoseFrame]``, ``spec`` and, for :meth:`warm_up`, ``reset()``), in the cameras' order
    cameras:  (V,) the calibrated cameras; the first is the reference (its frame, its pixels)
    """

    def __init__(self, sessions: Sequence[Any], cameras: Sequence[CameraCalibration], *, max_error_px: float = 15.0,
                 max_match_px: float = 60.0, min_confidence: float = 0.2, min_views: int = 2, window: int = WINDOW,
                 smoothing: bool = True, rigid_bones: bool = True):
        from posetracker.motion.live_solve import LiveSolve
        from posetracker.session import LIVE_BONE_WINDOW
        from posetracker.tracking import BoneLengthSolver, PoseSmoother

        if len(sessions) != len(cameras) or len(cameras) < 2:
            raise ValueError(f"one session per camera and at least two: {len(sessions)} sessions, "
                             f"{len(cameras)} cameras")
        self.sessions, self.cameras = list(sessions), list(cameras)
        self.spec = self.sessions[0].spec
        self.max_error_px, self.max_match_px, self.min_confidence, self.min_views = (max_error_px, max_match_px,
                                                                                     min_confidence, min_views)
        self.recent: list[deque[PoseFrame]] = [deque(maxlen=window) for _ in cameras]
        self.ids = LiveIds()
        self.smoother = LiveSolve(PoseSmoother(self.spec, "live")) if smoothing else None
        self.bones = BoneLengthSolver(self.spec, rigidify=rigid_bones, window=LIVE_BONE_WINDOW)
        self._pool = ThreadPoolExecutor(len(cameras), thread_name_prefix="posetracker-view")
        self._errors: dict[int, list[list[np.ndarray]]] = {}  # person -> per view, (n,) px of its seen joints
        self._found: dict[int, list[int]] = {}  # person -> [real joints triangulated, real joints], summed
        self._last: list[PersonMatch] = []  # the last matching, its instant's tracks seen and instants since
        self._present: set[tuple[int, int]] = set()
        self._since = 0
        self._seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # person -> (K, 3) m last kept, (K,) s when

    def warm_up(self, sizes: Sequence[tuple[int, int]]) -> None:
        """Each session steps a black frame of its source's size (W, H) and forgets it (``reset``): the runtime's
        first-call costs are paid before live sources start delivering."""
        blank = [Frame(0, 0.0, np.zeros((h, w, 3), np.uint8)) for w, h in sizes]
        list(self._pool.map(lambda sf: sf[0].step(sf[1]), zip(self.sessions, blank)))
        for session in self.sessions:
            session.reset()

    def step(self, frames: Sequence[Frame]) -> PoseFrame | None:
        """One instant's frames (V,), one per view -> the fused people of the instant ``lookahead`` steps ago
        (None while the look-ahead fills)."""
        if len(frames) != len(self.sessions):
            raise ValueError(f"{len(frames)} frames for {len(self.sessions)} views")
        poses = list(self._pool.map(lambda sf: sf[0].step(sf[1]), zip(self.sessions, frames)))
        return None if any(p is None for p in poses) else self.fuse(poses)

    def flush(self) -> list[PoseFrame]:
        """The fused instants the look-ahead still holds back at the end of the streams."""
        held = [s.flush() for s in self.sessions]
        return [self.fuse(list(poses)) for poses in zip(*held)]

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def fuse(self, poses: Sequence[PoseFrame]) -> PoseFrame:
        """The V views' poses of one instant -> its fused people, ids kept over time, solved live."""
        for buf, pose in zip(self.recent, poses):
            buf.append(pose)
        tracks = [window_tracks(list(buf), v) for v, buf in enumerate(self.recent)]
        now = [m for m in self._matches(tracks) if sum(tracks[v][t].present[-1] for v, t in m.tracks) >= self.min_views]
        ids = self.ids.assign(now)
        k, v = self.spec.num_joints, len(self.cameras)
        if not now:
            return self.bones.update(self._solve(PoseFrame.empty(poses[0].index, poses[0].timestamp, k,
                                                                 poses[0].image_size)))
        xy, conf = np.full((v, len(now), k, 2), np.nan), np.zeros((v, len(now), k))
        for p, m in enumerate(now):
            xy_p, conf_p = person_views(m, tracks)  # (V, W, K, 2), (V, W, K)
            xy[:, p], conf[:, p] = xy_p[:, -1], conf_p[:, -1]
        tri = triangulate_person(self.cameras, xy, conf, self.spec, self.max_error_px, self.min_confidence,
                                 self.min_views)  # (P, K) points
        for p, pid in enumerate(ids):  # two rays that meet by chance: a joint its bones cannot reach or too fast
            last, when = self._seen.get(pid, (np.full((k, 3), np.nan), np.zeros(k)))
            far = unreachable(tri.xyz[p], self.spec, self.bones.estimator.lengths(pid)) | too_fast(
                tri.xyz[p], last, poses[0].timestamp - when)
            tri.xyz[p, far], tri.used[p, far] = np.nan, False
            kept = np.isfinite(tri.xyz[p]).all(-1)
            self._seen[pid] = (np.where(kept[:, None], tri.xyz[p], last), np.where(kept, poses[0].timestamp, when))
        self._score(ids, xy, conf, tri)
        rows = [p for p in range(len(now)) if tri.found[p].sum() >= 2]
        pose = fuse_frame(poses[0], self.cameras[0], self.spec, tri.xyz[rows], tri.used[rows],
                          np.moveaxis(conf[:, rows], 0, 1), [ids[p] for p in rows])
        return self.bones.update(self._solve(pose))

    def _matches(self, tracks: list[dict[int, ViewTrack]]) -> list[PersonMatch]:
        """The people as groups of tracks: matched again (``match.match_tracks`` over the window) when a track
        starts or stops being seen, every ``MIN_FRAMES`` instants while a track seen is in no group, and every
        ``REMATCH`` instants; else the last matching (its tracks still in the window)."""
        present = {(v, t) for v, view in enumerate(tracks) for t, tr in view.items() if tr.present[-1]}
        alone = present - {t for m in self._last for t in m.tracks}
        if present != self._present or self._since >= (MIN_FRAMES if alone else REMATCH):
            self._last = match_tracks(self.cameras, tracks, max_cost_px=self.max_match_px, min_frames=MIN_FRAMES) \
                if sum(bool(t) for t in tracks) >= self.min_views else []
            self._present, self._since = present, 0
        self._since += 1
        kept = [PersonMatch(tuple(t for t in m.tracks if t[1] in tracks[t[0]]), m.cost_px) for m in self._last]
        return [m for m in kept if m.tracks]

    def _solve(self, pose: PoseFrame) -> PoseFrame:
        return pose if self.smoother is None else self.smoother.update(pose)

    def _score(self, ids: list[int], xy: np.ndarray, conf: np.ndarray, tri) -> None:
        """Keep each person's reprojection errors per view and joints triangulated (``reference.quality``'s
        measures, over the instants so far). xy (V, P, K, 2), conf (V, P, K), tri of (P, K) points."""
        real = np.array([j not in self.spec.virtual for j in range(self.spec.num_joints)])
        seen = np.isfinite(xy).all(-1) & (conf >= self.min_confidence) & tri.found[None]  # (V, P, K)
        for p, pid in enumerate(ids):
            errors = self._errors.setdefault(pid, [[] for _ in self.cameras])
            for v in range(len(self.cameras)):
                errors[v].append(tri.error[p, :, v][seen[v, p] & real])
            found = self._found.setdefault(pid, [0, 0])
            found[0] += int(tri.found[p][real].sum())
            found[1] += int(real.sum())

    def report(self) -> list[dict]:
        """Per person seen so far (by id): ``reprojection_px`` {camera: median px over its seen, triangulated
        joints}, ``triangulated`` the share of real joints triangulated in the instants it was matched, and
        ``instants`` how many."""
        out = []
        for pid in sorted(self._errors):
            per_view = {}
            for cam, errs in zip(self.cameras, self._errors[pid]):
                e = np.concatenate(errs) if errs else np.zeros(0)
                per_view[cam.name] = float(np.median(e)) if e.size else float("nan")
            found, total = self._found[pid]
            out.append({"id": pid, "reprojection_px": per_view, "triangulated": found / max(total, 1),
                        "instants": len(self._errors[pid][0])})
        return out


def run_live_views(views: LiveViews, pairs, cancel: Callable[[], bool] | None = None,
                   on_pose: Callable[[PoseFrame], None] | None = None) -> list[PoseFrame]:
    """Every fused PoseFrame of ``pairs`` (an iterable of (V,) frame lists, ``live_sources.paired_frames``), in
    order, then the look-ahead's; ``cancel()`` True stops after the instant in hand; ``on_pose`` is called with
    each as it comes."""
    out: list[PoseFrame] = []

    def keep(pose: PoseFrame | None) -> None:
        if pose is not None:
            out.append(pose)
            if on_pose is not None:
                on_pose(pose)

    try:
        for frames in pairs:
            keep(views.step(frames))
            if cancel is not None and cancel():
                break
        for pose in views.flush():
            keep(pose)
    finally:
        views.close()
    return out


def live_sequence(poses: list[PoseFrame], views: LiveViews, *, fps: float, sources: Sequence[str],
                  calibration_name: str, pairing: dict, rigid_bones: bool = True, heights=None,
                  repair_swaps: bool = False) -> tuple[Any, list[str]]:
    """The fused live ``poses`` as a finished sequence, as ``multiview.process.process_views`` finishes the
    offline one (the calibration's floor, the first camera's field of view, ``motion.finish``) -> (PoseSequence,
    warnings). ``metadata["multiview"]``: the cameras, ``people`` (:meth:`LiveViews.report`), ``live`` the
    ``pairing`` (``live_sources.PairStats`` as a dict)."""
    from posetracker.depth.camera_meta import CameraFov
    from posetracker.motion.finish import finish_sequence
    from posetracker.multiview.calibration import calibration_floor
    from posetracker.multiview.fuse import calibrated_fov
    from posetracker.types import PoseSequence

    names = [c.name for c in views.cameras]
    meta = {"mode": "live", "skeleton": views.spec.name, "source": list(map(str, sources)),
            "multiview": {"cameras": names, "reference_view": names[0], "max_error_px": views.max_error_px,
                          "min_views": views.min_views, "people": views.report(), "live": pairing}}
    floor = calibration_floor(views.cameras, f"calibration {calibration_name}", people_on_it=True, on_floor_m=0.0)
    if floor is not None:  # the people are in the calibration's metres, each on the floor their stance feet give
        meta["floor"] = floor
    seq = PoseSequence(poses, fps, views.spec, meta)
    camera = CameraFov(calibrated_fov(views.cameras[0]), "user",
                       f"calibration {calibration_name}, camera {views.cameras[0].name}")
    return finish_sequence(seq, camera, rigid_bones=rigid_bones, heights=heights, repair_swaps=repair_swaps)


def describe_live(people: list[dict]) -> list[str]:
    """Console lines: per person, joints triangulated and the median reprojection px per view."""
    return [f"person {p['id']}: {p['triangulated']:.0%} of joints triangulated over {p['instants']} instants; "
            "median reprojection px: " + ", ".join(f"{v} {e:.1f}" for v, e in p["reprojection_px"].items())
            for p in people]


__all__ = ["LiveIds", "LiveViews", "describe_live", "live_sequence", "run_live_views", "too_fast", "unreachable",
           "window_tracks"]
