"""Offline top-down: an animal its track misses for a few frames between frames where it was read is searched
where the track says it is.

Offline, a top-down skeleton's frames are read one by one (the centre model finds each animal, the crop model
reads it from a crop: ``decoding.top_down``); where the centre model misses an animal (two flies touching, one
walking fast) its crop is never cut, and the frame lacks it. ``AnimalCrops`` already looks where the last frame
had it with a known number of animals (``decoding.top_down.with_missing``); this looks back from the frame where
a track is read again: :class:`TrackGaps` holds the last ``MAX_GAP`` + 1 tracked frames (their PoseFrames and
images, in the offline driver ``offline_run.run_offline`` between the tracker and the id backfill) and, where a
track id comes back after 1 .. ``MAX_GAP`` frames without it, reads a crop in each frame of the gap at the
track's pose interpolated between its two sides (``read_crops`` with the session's crop model, turns and
rounds, as the frame's own crops). A reading is kept (the track's id, a person added to that frame) where it
reads the animal surely (``tracked_crops.sure``: one animal, mean joint confidence >= ``MIN_CONFIDENCE``), its
root lies within a quarter crop of the interpolated root, and it is not one of the frame's people read again
(``drop_repeats``: two flies touching, the crop read the other one). The motion solve then sees the track
whole.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from posetracker.decoding import DecodedPeople
from posetracker.decoding.person_scores import calibrated, pose_scores
from posetracker.decoding.top_down import drop_repeats, read_crops
from posetracker.tracked_crops import MIN_CONFIDENCE, sure
from posetracker.types import PoseFrame

MAX_GAP = 8  # frames a track may miss and be searched in (longer: the animal left, or the track is another's)


def as_people(pose: PoseFrame) -> DecodedPeople:
    """A PoseFrame's people (P, K) as DecodedPeople in source px (no depth reads, predictions = keypoints)."""
    xy = pose.keypoints[..., :2].astype(np.float32)
    return DecodedPeople(xy, pose.confidence.astype(np.float32), pose.scores.astype(np.float32),
                         np.full(pose.confidence.shape, np.nan), xy.copy())


class TrackGaps:
    """The gap search of one offline run (see the module docstring). ``push(pose, rgb)`` a tracked PoseFrame and
    its (H, W, 3) uint8 frame, in order -> the PoseFrames leaving the window (oldest first, gaps filled);
    ``flush()`` -> the rest. ``searched`` / ``filled``: frames of a gap read from a crop / given the animal."""

    def __init__(self, session, max_gap: int = MAX_GAP, min_confidence: float = MIN_CONFIDENCE):
        self.session, self.max_gap, self.min_confidence = session, max_gap, min_confidence
        self.window: deque[tuple[PoseFrame, np.ndarray]] = deque()
        self.searched = self.filled = 0

    def push(self, pose: PoseFrame, rgb: np.ndarray) -> list[PoseFrame]:
        self.window.append((pose, rgb))
        for tid in pose.track_ids[pose.track_ids >= 0].tolist():
            self._fill(int(tid))
        out = []
        while len(self.window) > self.max_gap + 1:
            out.append(self.window.popleft()[0])
        return out

    def flush(self) -> list[PoseFrame]:
        out = [p for p, _ in self.window]
        self.window.clear()
        return out

    def _fill(self, tid: int) -> None:
        """Track ``tid``, read in the window's newest frame: where it was read last before (within the window)
        with frames between without it, each of them searched at the interpolated pose."""
        frames = [p for p, _ in self.window]
        has = [bool((p.track_ids == tid).any()) for p in frames]
        last = next((i for i in range(len(frames) - 2, -1, -1) if has[i]), None)
        if last is None or last == len(frames) - 2:
            return
        a = frames[last].keypoints[frames[last].track_ids == tid][0, :, :2]  # (K, 2) px
        b = frames[-1].keypoints[frames[-1].track_ids == tid][0, :, :2]
        span = frames[-1].index - frames[last].index
        for i in range(last + 1, len(frames) - 1):
            f = (frames[i].index - frames[last].index) / max(span, 1)
            pose, rgb = self.window[i]
            if rgb is not None:
                self.window[i] = (self._search(pose, rgb, tid, (1 - f) * a + f * b, frames[last]), rgb)

    def _search(self, pose: PoseFrame, rgb: np.ndarray, tid: int, guess: np.ndarray, near: PoseFrame) -> PoseFrame:
        """``pose`` with track ``tid`` added where a crop at ``guess`` (K, 2) px reads it surely (see the module
        docstring); its depth column and world are those of ``near`` (the track's last frame before)."""
        session = self.session
        spec, crop_px = session.spec, float(session.spec.top_down["crop_px"])
        k = guess.shape[0]
        seed = DecodedPeople(guess[None].astype(np.float32), np.zeros((1, k), np.float32), np.zeros(1, np.float32),
                             np.full((1, k), np.nan), guess[None].astype(np.float32))
        self.searched += 1
        read = read_crops(seed, rgb, spec.root, crop_px, session._crop_people, session.crop_reading)
        if not sure(read, 1, self.min_confidence) \
                or not np.linalg.norm(read.keypoints[0, spec.root] - guess[spec.root]) <= crop_px / 4:
            return pose
        mine = [j for j in range(pose.num_people) if self._repeats(pose, j, read)]
        if any(pose.track_ids[j] >= 0 for j in mine):  # another track's animal read again (two flies touching)
            return pose
        if mine:  # the animal was read but not linked to a track (id -1, left out at the end): it is this one
            pose = pose.select(~np.isin(np.arange(pose.num_people), mine))
        self.filled += 1
        j = int(np.flatnonzero(near.track_ids == tid)[0])
        xy, conf = read.keypoints[0].astype(np.float32), read.confidence[0].astype(np.float32)  # (K, 2), (K,)
        depth = near.keypoints[j, :, 2:]  # (K, 1)
        score = calibrated(pose_scores(conf[None].astype(np.float64), spec.root), spec.score_calibration)
        world = None if pose.world is None or near.world is None else \
            np.concatenate([pose.world, near.world[j : j + 1]]).astype(pose.world.dtype)
        return PoseFrame(pose.index, pose.timestamp,
                         np.concatenate([pose.keypoints, np.concatenate([xy, depth], -1)[None]]).astype(np.float32),
                         np.concatenate([pose.confidence, conf[None]]).astype(np.float32),
                         np.concatenate([pose.scores, np.asarray(score, pose.scores.dtype).reshape(1)]),
                         np.concatenate([pose.track_ids, np.array([tid], pose.track_ids.dtype)]),
                         pose.image_size, world)

    def _repeats(self, pose: PoseFrame, j: int, read: DecodedPeople) -> bool:
        """Person ``j`` of ``pose`` and the crop's reading (1, K) are one animal (``drop_repeats``)."""
        spec = self.session.spec
        both = DecodedPeople.concat([as_people(pose).take(np.array([j])), read])
        return len(drop_repeats(both, np.array([True, False]), float(spec.top_down["crop_px"]), root=spec.root)) == 1


def wanted(session) -> bool:
    """A top-down skeleton's offline run with tracking: the gaps are searched."""
    return bool(session.spec.top_down) and bool(session.config.people.track)


__all__ = ["MAX_GAP", "TrackGaps", "as_people", "wanted"]
