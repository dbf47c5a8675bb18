"""AngleHistory: a rolling window of joint angles per track, fed one PoseFrame at a time.

The angles are those of the one angle table (:mod:`posetracker.analysis.joint_angles`),
measured per frame with :func:`~posetracker.analysis.joint_angles.frame_angles`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

import numpy as np

from posetracker.analysis.joint_angles import AngleKey, check_angle_names, frame_angles
from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame


class AngleHistory:
    """Angles (degrees) of every confirmed track over the last ``seconds`` of source time.

    names: the (angle, side) pairs kept, in column order (default: all that ``spec``
    can measure, :func:`~posetracker.analysis.joint_angles.angle_names`;
    one it cannot measure raises ValueError). A timestamp earlier than the previous one
    (a seek, a new source) clears the history.
    """

    def __init__(self, spec: SkeletonSpec, names: Iterable[AngleKey] | None = None, seconds: float = 60.0,
                 min_confidence: float = 0.2):
        self.spec = spec
        self.names: tuple[AngleKey, ...] = tuple(check_angle_names(spec, names))
        self.seconds, self.min_confidence = seconds, min_confidence
        self._tracks: dict[int, deque[tuple[float, np.ndarray]]] = {}
        self.latest_time: float | None = None
        self.latest_ids: list[int] = []  # confirmed tracks in the newest frame

    def clear(self) -> None:
        self._tracks.clear()
        self.latest_time = None
        self.latest_ids = []

    def column(self, name: str, side: str) -> int:
        """Column of ``(name, side)`` in :meth:`series`' angles."""
        return self.names.index((name, side))

    def add(self, pose: PoseFrame) -> None:
        """One pose: its confirmed tracks' angles at its timestamp."""
        self.add_many([pose])

    def add_many(self, poses: Sequence[PoseFrame]) -> None:
        """Poses in the order they came (one earlier than the one before, a seek, clears the history first).
        Each run of them between seeks, with one image size and depth in all or none, is measured in one
        :func:`frame_angles` call, with the same angles as one by one: the GUI feeds the poses that arrived
        since its last refresh at once instead of paying the measurement's fixed cost per pose."""
        run: list[PoseFrame] = []
        for pose in poses:
            if run and (float(pose.timestamp) < float(run[-1].timestamp) - 1e-6 or pose.image_size != run[0].image_size
                        or (pose.world is None) != (run[0].world is None)):
                self._add_run(run)
                run = []
            run.append(pose)
        if run:
            self._add_run(run)

    def _add_run(self, poses: list[PoseFrame]) -> None:
        t = float(poses[0].timestamp)
        if self.latest_time is not None and t < self.latest_time - 1e-6:
            self.clear()
        last = poses[-1]
        self.latest_time = float(last.timestamp)
        self.latest_ids = sorted(int(i) for i in last.track_ids if i >= 0)
        rows = [p for p in poses if p.num_people]
        if rows and self.names:
            world = None if rows[0].world is None else np.concatenate([p.world for p in rows])
            joined = PoseFrame(last.index, self.latest_time, np.concatenate([p.keypoints for p in rows]),
                               np.concatenate([p.confidence for p in rows]), np.concatenate([p.scores for p in rows]),
                               np.concatenate([p.track_ids for p in rows]), last.image_size, world)
            measured = frame_angles(joined, self.spec, self.names, self.min_confidence)
            angles = np.stack([measured[k] for k in self.names], axis=1)  # (sum of P, A)
            start = 0
            for pose in rows:
                for p, tid in enumerate(pose.track_ids.tolist()):
                    if tid >= 0:
                        self._tracks.setdefault(tid, deque()).append((float(pose.timestamp), angles[start + p]))
                start += pose.num_people
        self._prune(self.latest_time)

    def _prune(self, t: float) -> None:
        for tid in list(self._tracks):
            rows = self._tracks[tid]
            while rows and rows[0][0] < t - self.seconds:
                rows.popleft()
            if not rows:
                del self._tracks[tid]

    def track_ids(self) -> list[int]:
        return sorted(self._tracks)

    def series(self, track_id: int, seconds: float | None = None,
               break_gaps: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(times (N,), angles (N, A))`` of one track over the last ``seconds``; columns follow :attr:`names`.

        break_gaps: where the track was not seen for longer than :func:`gap_seconds` of its
        samples, insert one row of nan angles (midway in time), so a plot drawn with
        ``connect="finite"`` breaks its lines there instead of joining across the gap."""
        rows = self._tracks.get(track_id)
        empty = np.zeros(0), np.zeros((0, len(self.names)))
        if not rows or self.latest_time is None:
            return empty
        start = self.latest_time - (seconds if seconds is not None else self.seconds)
        kept = [(t, a) for t, a in rows if t >= start]
        if not kept:
            return empty
        times, angles = np.array([t for t, _ in kept]), np.stack([a for _, a in kept])
        return break_at_gaps(times, angles) if break_gaps else (times, angles)


def gap_seconds(times: np.ndarray) -> float:
    """The longest step between samples (N,) s that is not a gap: 3 median steps, at least 0.25 s."""
    steps = np.diff(times)
    return max(0.25, 3.0 * float(np.median(steps))) if steps.size else np.inf


def break_at_gaps(times: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """times (N,), values (N, A) -> the same with a nan row inserted in every gap (see :func:`gap_seconds`)."""
    gaps = np.flatnonzero(np.diff(times) > gap_seconds(times))
    if gaps.size == 0:
        return times, values
    mid = 0.5 * (times[gaps] + times[gaps + 1])
    nan_rows = np.full((gaps.size, values.shape[1]), np.nan)
    return np.insert(times, gaps + 1, mid), np.insert(values, gaps + 1, nan_rows, axis=0)
