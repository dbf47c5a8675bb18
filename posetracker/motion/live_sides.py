"""Left and right of people seen from behind, live: a causal facing per track, then the offline per-pair decisions.

Offline, the frames whose labels slid to the other side (the network reading a person seen from behind as if
she faced the camera) are found over the whole track: jumps of the depth head's trunk yaw, the face choosing
each stretch's start (``tracking.facing.repair_states``). Live, neither works: a slide is known only when the
turn is over, and on the live readings the depth head slides with the labels (the SLEAP dancer's trunk, read
from behind at -154 degrees, is read at -26 the next frame, a 128 degree jump the offline step calls unsure).
What stays is the face: the network sees less of it from behind whatever it calls left (the dancer's nose and
eyes' mean confidence 0.80 +- 0.02 facing the camera, 0.61 +- 0.03 from behind, slid frames alike). So,
per track, one frame at a time (:class:`LiveSides`; the session's look-ahead is the network's one frame):

1. the face's level facing the camera: the face confidence's running top (it rises at once, sinks by
   ``REF_RATE`` a frame towards lower readings while the track is not judged from behind);
2. seen from behind: ``ENTER`` frames in a row with the face ``FACE_DROP`` below that level; facing the camera
   again: ``ENTER`` frames in a row within half of it (hysteresis: a frame or two of either changes nothing);
3. slid: seen from behind while the labels, having put the trunk facing away, jump to put it facing the camera
   (the depth head's 3-D shoulders and hips as labelled within ``FACING_DEG`` of the camera, ``tracking.facing.
   trunk_yaw``) within ``SLIDE_FRAMES`` frames and with no readable side view between (a slide is a jump between
   two frames, or across 1-2 where the trunk collapses to a point; a real turn passes through a side view or takes
   longer: the man of the four-view trial, read facing away, 5 frames not read, then facing cam02, his labels
   right). It stays slid while the trunk is read facing the camera or not read, and ends where the labels put it
   facing away again or the track is no longer seen from behind. The face alone mirrors no one: the same man
   faces cam01 with his face blurred and turned away (its confidence 0.69 -> 0.56) and is never read facing away;
4. in a slid frame the head and shoulders are exchanged and each pair down the chain (hips, elbows, wrists,
   knees, ankles) with them unless, as read, it hangs from its decided parent pair better
   (``motion.sides.facing_orders`` on the one frame: its attachment costs; the offline form also weighs the steps
   into the frames around a run, which live would be only the frame before: on the dancer that kept her legs
   as read, crossed, through a whole slide once its first frame had kept them).

A person facing the camera (the face at its level) is never touched. It runs in the session's live path before
the smoothing (``TrackingSession._post_live``), so the CLI's live mode, the app and batch runs all get it;
``config.motion.fix_facing`` turns it off with the offline repair. Numbers: ``studies/back-views.md``.
Shapes: P people, K joints.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posetracker.motion.sides import CHAIN, FACING_DEG, facing_orders
from posetracker.skeletons import SkeletonSpec
from posetracker.tracking.facing import FACE, applies, trunk_yaw
from posetracker.tracking.mirror import permute_joints
from posetracker.types import PoseFrame

#: the face's mean confidence this far below its level facing the camera reads as seen from behind
FACE_DROP = 0.1
#: frames in a row a change of the facing needs (either way)
ENTER = 3
#: the face's level sinks this share of the way to a lower reading a frame (not while seen from behind)
REF_RATE = 0.02
#: joints below this confidence are not seen
MIN_CONFIDENCE = 0.3
#: frames at most from the labels' trunk facing away to facing the camera for a slide
SLIDE_FRAMES = 3
#: seconds after which a track's state is forgotten
FORGET_S = 1.0


@dataclass
class _Track:
    """One track's live facing state (module docstring, steps 1-3)."""

    level: float  # the face's confidence facing the camera
    behind: bool = False  # seen from behind
    run: int = 0  # frames in a row that speak for the other facing
    slid: bool = False  # the last frame's verdict
    away_ago: int = SLIDE_FRAMES + 1  # frames since the labels put the trunk facing away (a side view: never)
    last_t: float = -np.inf  # the track's last frame (s)

    def facing(self, face: float) -> None:
        """Steps 1-2 with one frame's face confidence."""
        low, high = face < self.level - FACE_DROP, face > self.level - FACE_DROP / 2
        self.run = self.run + 1 if (low if not self.behind else high) else 0
        if self.run >= ENTER:
            self.behind, self.run = not self.behind, 0
        if face >= self.level:
            self.level = face
        elif not self.behind:
            self.level += REF_RATE * (face - self.level)


class LiveSides:
    """Per track, the causal facing repair (module docstring). ``update(frame)`` takes a tracked PoseFrame
    (keypoints (P, K, 3), confidence (P, K), world (P, K, 3) m or None) and returns it with the slid tracks'
    pairs exchanged (a new frame where changed); people with id -1 and frames without world pass through."""

    def __init__(self, spec: SkeletonSpec):
        self.spec = spec
        names = set(spec.joint_names)
        self.active = applies(spec) and all(f"{s}_{n}" in names for pair in CHAIN for n in pair
                                            for s in ("left", "right"))
        self._face = [spec.index(n) for n in FACE] if self.active else []
        self.reset()

    def reset(self) -> None:
        """Forget every track."""
        self._tracks: dict[int, _Track] = {}
        self._last_t = -np.inf

    def _slid(self, tr: _Track, world: np.ndarray, conf: np.ndarray, seen: np.ndarray) -> bool:
        """Step 3 for one track's person (after steps 1-2): whether its labels are slid now. world: (K, 3) m;
        conf: (K,); seen: (K,) bool."""
        tr.facing(float(conf[self._face].mean()))
        yaw, readable = trunk_yaw(world[None], seen[None], self.spec)
        tr.away_ago += 1
        if not readable[0]:
            return tr.slid and tr.behind
        turn = abs((float(yaw[0]) + 180.0) % 360.0 - 180.0)  # 0: the trunk as labelled faces the camera
        front, away = turn < FACING_DEG, turn > 180.0 - FACING_DEG
        slid = tr.behind and front and (tr.slid or tr.away_ago <= SLIDE_FRAMES)
        tr.away_ago = 0 if away else SLIDE_FRAMES + 1
        return slid

    def update(self, frame: PoseFrame) -> PoseFrame:
        if not self.active or frame.world is None or frame.num_people == 0:
            return frame
        t = float(frame.timestamp)
        if t < self._last_t:  # a seek
            self._tracks.clear()
        self._last_t = t
        self._tracks = {i: tr for i, tr in self._tracks.items() if t - tr.last_t <= FORGET_S}
        orders: dict[int, np.ndarray] = {}
        done: set[int] = set()
        for p, tid in enumerate(frame.track_ids.tolist()):
            if tid < 0 or tid in done:
                continue
            done.add(tid)
            conf = frame.confidence[p].astype(np.float64)
            xy = frame.keypoints[p, :, :2].astype(np.float64)
            world = frame.world[p].astype(np.float64)
            seen = (conf >= MIN_CONFIDENCE) & np.isfinite(xy).all(-1) & np.isfinite(world).all(-1)
            tr = self._tracks.get(tid)
            if tr is None:
                tr = self._tracks[tid] = _Track(float(conf[self._face].mean()))
            tr.slid = self._slid(tr, world, conf, seen)
            if tr.slid:  # (1, K) the one frame's joint order
                orders[p] = facing_orders(xy[None], seen[None], np.ones(1, bool), self.spec)[0]
            tr.last_t = t
        if not orders:
            return frame
        perm = np.tile(np.arange(frame.num_joints), (frame.num_people, 1))  # (P, K)
        for p, order in orders.items():
            perm[p] = order
        return permute_joints(frame, perm)

    __call__ = update


__all__ = ["LiveSides"]
