"""Far people: move the depth head's body-centre depth towards the body-scale estimate, pooled per track.

The distilled depth head is accurate where it was trained (people 1.1-5.7 m
from the camera, 5th-95th percentile of the training clips) and compresses
distances beyond that: sprinters 12-13 m away come out at ~0.8x their depth.
The body-scale estimate (:mod:`.scale_depth`: torso length under a
pinhole) has no such bias but is noisy frame to frame (a 15 px torso that
varies by one pixel moves the person ~0.8 m at 12 m) and is worse close up.

So for each track this keeps the median log ratio of the scale estimate
(torso length only: shoulder and hip widths shrink when a person turns) to
the head's estimate over its last ``window`` frames, clipped to
``max_ratio``, and moves the head's root depth by that ratio with a weight
that rises from 0 at ``near_m`` to 1 at ``far_m`` (by the median of the
head's depths over the same frames, so that the weight does not follow the
head's frame-to-frame noise) and with the number of samples (full weight
after ``min_samples``). The person's joints keep their depths relative
to the root; world coordinates are lifted again. People nearer than
``near_m`` are left exactly as they were.
"""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np

from posetracker.depth.lift import Camera, lift_keypoints
from posetracker.depth.scale_depth import root_depth_from_scale
from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame


class FarDepthBlend:
    """Per-track blend of head depth and body-scale depth for far people; ``update`` each tracked frame in order."""

    def __init__(self, spec: SkeletonSpec, fov_deg: float, near_m: float = 4.5, far_m: float = 6.5,
                 window: int = 60, min_samples: int = 10, max_ratio: float = 1.5, forget_after: int = 300):
        if not 0 < near_m < far_m:
            raise ValueError(f"need 0 < near_m < far_m, got {near_m}, {far_m}")
        self.spec, self.fov_deg = spec, fov_deg
        self.near_m, self.far_m = near_m, far_m
        self.window, self.min_samples, self.forget_after = window, min_samples, forget_after
        self.max_log_ratio = float(np.log(max_ratio))
        self.reset()

    def reset(self) -> None:
        self._ratios: dict[int, deque[float]] = {}  # track id -> log(scale depth / head depth)
        self._heads: dict[int, deque[float]] = {}  # track id -> head root depths (m)
        self._last_seen: dict[int, int] = {}
        self._frame = 0

    def update(self, pose: PoseFrame) -> PoseFrame:
        """A tracked PoseFrame (depth from the head in keypoints[..., 2]) -> the same with far roots moved."""
        self._frame += 1
        if pose.num_people == 0:
            return pose
        w, h = pose.image_size
        camera = Camera(w, h, fov_deg=self.fov_deg)
        xy, z = pose.keypoints[..., :2].astype(np.float64), pose.keypoints[..., 2].astype(np.float64)
        root = self.spec.root
        z_scale, cue = root_depth_from_scale(xy, pose.confidence, self.spec, camera.focal)
        shift = np.zeros(pose.num_people)
        for p, tid in enumerate(pose.track_ids.tolist()):
            z_head = z[p, root]
            if tid < 0 or not np.isfinite(z_head) or z_head <= 0:
                continue
            ratios = self._ratios.setdefault(tid, deque(maxlen=self.window))
            heads = self._heads.setdefault(tid, deque(maxlen=self.window))
            heads.append(float(z_head))
            self._last_seen[tid] = self._frame
            if cue[p] == 0:
                ratios.append(min(max(float(np.log(z_scale[p] / z_head)), -self.max_log_ratio), self.max_log_ratio))
            if not ratios:
                continue
            weight = min(max((_median(heads) - self.near_m) / (self.far_m - self.near_m), 0.0), 1.0)
            weight *= min(1.0, len(ratios) / self.min_samples)
            shift[p] = z_head * (np.exp(weight * _median(ratios)) - 1.0)
        self._forget()
        if not shift.any():
            return pose
        depth = z + shift[:, None]
        keypoints = np.concatenate([xy, depth[..., None]], -1).astype(np.float32)
        return dataclasses.replace(pose, keypoints=keypoints, world=lift_keypoints(xy, depth, camera))

    def _forget(self) -> None:
        for tid in [t for t, seen in self._last_seen.items() if self._frame - seen > self.forget_after]:
            del self._ratios[tid], self._heads[tid], self._last_seen[tid]


def _median(values: deque[float]) -> float:
    """The median of finite ``values`` (as ``np.median``: the mean of the middle two of an even count), without
    numpy's cost on a few dozen numbers."""
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
