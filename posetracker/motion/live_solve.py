"""The motion solve, live: each reading weighed against the track's recent motion before it is smoothed.

Live, a frame's readings come out of the network with its one frame of look-ahead (the backward GRU) and are
shown at once: the stage after it is causal. :class:`LiveSolve` runs per track and joint, before the One Euro
filter (:class:`~posetracker.tracking.smoothing.PoseSmoother`), and gives each reading a robust weight that
lowers its pull on the filter where it is an outlier against the track's motion:

    prediction  p = x_hat + b        x_hat: the joint's last smoothed position (px);
                                     b: the body's motion since the track's last frame, the median over the
                                     joints read (confidence >= ``min_confidence``) in both frames of their
                                     readings' displacement (at least ``MIN_BODY_JOINTS`` joints, else 0)
    residual    r = |y - p| / (OUTLIER_SCALE x size)      y: the reading; size: the keypoint box's diagonal
    weight      w = 1 / (1 + max(r - 1, 0)^2)             1 within the scale, Cauchy-like beyond it

The filter then takes x_hat + w (y - x_hat) (image x, y, depth and world alike), so a reading far from where
the body's motion puts the joint (an elbow read 100-165 px away on the back of the dancer's head while she
stands still; a foot read on the other foot) moves the joint by a fraction of its jump, and a reading that
stays there is followed over a few frames as the residual shrinks: never a hard cut, nothing is stuck. A
body that moves as a whole (a pan, a jump, a fall of the trunk) moves b and is not an outlier.

Only large people are weighed (the ramp of the smoother's large parameters, ``LARGE_PERSON_PX``: full from
350 px, none under 250 px): on small people the readings' noise is large against the scale and weighing them
cost accuracy on the held-out clips. Numbers and what was tried: ``studies/live-smoothing.md``.
The offline form, over the whole track in both directions, is ``motion.solve``.
"""

from __future__ import annotations

import numpy as np

from posetracker.motion.live_hinges import LiveHinges
from posetracker.tracking.smoothing import (
    LARGE_PERSON_PX,
    PoseSmoother,
    first_of_tracks,
    person_size,
)
from posetracker.tracking.tracker import median_over_joints
from posetracker.types import PoseFrame

#: Residuals up to this share of the person's size (keypoint-box diagonal) keep their full weight
OUTLIER_SCALE = 0.15
#: Fewest joints read in two frames in a row for the body's motion (fewer: the body is taken as still)
MIN_BODY_JOINTS = 3


def robust_weights(xy: np.ndarray, ok: np.ndarray, smoothed: np.ndarray, previous: np.ndarray,
                   scale: float = OUTLIER_SCALE, min_body_joints: int = MIN_BODY_JOINTS,
                   large_px: tuple[float, float] = LARGE_PERSON_PX) -> np.ndarray:
    """Each reading's weight against its track's motion (see the module docstring).

    xy: (M, K, 2) readings, px; ok: (M, K) bool, read surely enough to be weighed; smoothed: (M, K, 2) the
    joints' last smoothed positions (nan: none yet); previous: (M, K, 2) the track's readings at its last
    frame (nan where not read then). Returns (M, K) weights in (0, 1]; 1 where not weighed.
    """
    size = person_size(np.where(np.isfinite(xy), xy, np.nan))  # (M,) px, nan without joints
    lo, hi = large_px
    large = np.minimum(np.maximum((np.where(np.isnan(size), 0.0, size) - lo) / (hi - lo), 0.0), 1.0)  # (M,) 0..1
    both = ok & np.isfinite(previous).all(-1)
    moving = (both.sum(-1) >= min_body_joints) & (large > 0)  # small people: weight 1 anyway
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        predicted = smoothed
        if moving.any():  # (M, 2) the median displacement of the joints read in both frames
            predicted = smoothed + np.where(moving[:, None], median_over_joints(xy - previous, both), 0.0)[:, None]
        weighed = ok & np.isfinite(predicted).all(-1) & np.isfinite(size)[:, None]
        d = xy - predicted
        r = np.sqrt(np.add.reduce(d * d, axis=-1)) / (scale * size[:, None])
        # where not weighed (r may be nan there) the weight is 1
        w = np.where(weighed, 1.0 / (1.0 + np.maximum(r - 1.0, 0.0) ** 2), 1.0)
    return 1.0 - large[:, None] * (1.0 - w)


class LiveSolve:
    """The live per-frame stage: robust weights (:func:`robust_weights`), then ``smoother`` with them, then the
    limits of the body's joints on the smoothed 3-D (:class:`~posetracker.motion.live_hinges.LiveHinges`: knees
    and elbows bend the body's way and keep their side, heads turn at most a quarter turn from the shoulders;
    depth and world only).

    smoother: the One Euro smoother it feeds (its ``min_confidence`` decides which readings are weighed,
    its ``drop_after`` when a track's last readings are forgotten). ``update`` takes and returns PoseFrames
    as :meth:`PoseSmoother.update` does; people with id -1 pass through.
    """

    def __init__(self, smoother: PoseSmoother, scale: float = OUTLIER_SCALE):
        self.smoother = smoother
        self.scale = float(scale)
        self.hinges = LiveHinges(smoother.spec, smoother.drop_after)
        self.reset()

    def reset(self) -> None:
        """Forget every track (the smoother's filters and the hinges' sides too)."""
        self.smoother.reset()
        self.hinges.reset()
        self._previous: dict[int, tuple[float, np.ndarray]] = {}  # track id -> (time, (K, 2) readings, nan unread)
        self._last_t = -np.inf

    def update(self, frame: PoseFrame) -> PoseFrame:
        t = float(frame.timestamp)
        if t < self._last_t:  # a seek: the smoother resets itself
            self._previous.clear()
        self._last_t = t
        drop = self.smoother.drop_after
        self._previous = {i: v for i, v in self._previous.items() if t - v[0] <= drop}
        ids = frame.track_ids
        people = first_of_tracks(ids)  # (M,) one person per track id, as the smoother takes them
        if people.size == 0:
            return self.hinges.update(self.smoother.update(frame))
        k = frame.num_joints
        xy = frame.keypoints[people, :, :2].astype(np.float64)
        ok = (frame.confidence[people] >= self.smoother.min_confidence) & np.isfinite(xy).all(-1)
        tids = [int(ids[p]) for p in people]
        nan = np.full((k, 2), np.nan)
        previous = np.stack([self._previous.get(i, (t, nan))[1] for i in tids])
        w = robust_weights(xy, ok, self.smoother.last_xy(tids), previous, self.scale)
        now = np.where(ok[..., None], xy, np.nan)  # (M, K, 2)
        for i, tid in enumerate(tids):
            self._previous[tid] = (t, now[i])
        if (w == 1.0).all():  # nothing weighed (small people, nothing far): the smoother's own path
            return self.hinges.update(self.smoother.update(frame))
        weight = np.ones(frame.confidence.shape)
        weight[people] = w
        return self.hinges.update(self.smoother.update(frame, weight))

    __call__ = update
