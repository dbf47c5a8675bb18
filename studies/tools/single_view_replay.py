"""Single-view 3-D variants on the 4-view trial without running the network again (studies/multiview-reference.md).

    python studies/tools/single_view_replay.py record DIR                  # posetracker process cam01-04 -> DIR
    python studies/tools/single_view_replay.py replay DIR OUT VARIANT ...  # OUT/VARIANT/camN.json
    python studies/tools/single_view_replay.py replay DIR OUT --calibration VARIANT ...  # process --calibration

``record`` runs ``posetracker process $D/cam0N.mp4 --out DIR/camN.json`` (N = 1..4, the offline defaults) and keeps
each frame's readings as the depth stage got them (final joints, confidences, the depth head's reads, the joints
the network found, and the bottom-up joints the tracker links by) in ``DIR/camN.pkl``. ``replay`` feeds those
readings through today's depth stage, tracking, motion solve and finishing step (the ``process`` command, its
network and refiners replaced by the recording) with a variant of the code applied, one child process per
variant; ``none`` reproduces ``record``'s JSON byte for byte. ``--calibration``: every variant runs ``process
--calibration $D/calibration.qca.txt`` (the calibrated focal length, floor and gravity). Variants (monkeypatches,
for measuring only):

    none                  the code as it is
    prior:W               the pose prior's default share of each joint's relative depth W (shipped 0.5)
    upper:W               the joints above the knees (head, arms, hips) at least W
    shin_from_head        each ankle's depth: its knee's plus the depth head's knee -> ankle difference
    leg_from_head         the same for the knees from their hips, then the ankles
    depth_cutoff:HZ       the motion solve's depth and world channels smoothed with a HZ cutoff (2-D: 4 Hz)
    depth_robust:M        the depth and world channels fitted with a Cauchy loss of scale M metres on the depth
    no_rays               rigid bones along their measured directions (no camera-ray path)
    long_on_rays          bones read longer than their length also put on their camera ray
    no_feet               without the finishing step's standing feet (motion.feet)
    prior_weights:PATH    PATH as the pose prior
    level:PATH            the level-camera pose prior at PATH reads the 2-D turned level by the camera's gravity
                          (studies/tools/level_prior.py): the calibration's (with --calibration)
    floor_down:DIR+level:PATH  the gravity from the floor DIR/camN.json's finishing step fitted (a second pass;
                          its normal_camera) instead, no calibration needed
    prior_deroll:AXIS[,F] the pose prior reads each pose turned upright in the image (AXIS torso or body), F degrees of
                          lean left as read
    prior_legs:E1,E2,...  the joints whose names end so take the prior's leg share (shipped: knee,ankle)
    prior_single          the pose prior reads each pose once, not also mirrored (PosePrior.mirrored, before 2026-12-07)
    prior_mirror[:M]      the pose prior's mirrored reading as measured before it shipped; M: each joint's prior
                          share also scaled by exp(-0.5 (d / M)^2), d (m) the two readings' difference
    legs_only+level:PATH  the level prior for the hips, knees and ankles only, the other joints the shipped prior
    A+B                   variants A and B together (OUT/A_B: every character other than letters, digits,
                          "." and "-" as "_")

Run from the repository root, one thread (``OMP_NUM_THREADS=1``).
"""

from __future__ import annotations

import os
import pickle
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

D = Path("../shared/data/video/multiview_pose2sim_multiperson")
LEGS = [("left_hip", "left_knee"), ("right_hip", "right_knee"), ("left_knee", "left_ankle"),
        ("right_knee", "right_ankle")]


def _names():
    from posetracker.skeletons import load_skeleton

    return load_skeleton("human18").joint_names


def _prior_weight(w: float) -> None:
    from posetracker.depth import pose_prior

    init = pose_prior.PosePrior.__init__
    pose_prior.PosePrior.__init__ = lambda self, state, spec, weight=0.5, min_confidence=0.3: init(
        self, state, spec, w, min_confidence)


def _upper(w: float) -> None:
    from posetracker.depth import estimator

    names = _names()
    joints = [i for i, n in enumerate(names) if not n.endswith(("knee", "ankle")) and n != "centre"]
    orig = estimator.moved_prior_weight

    def moved(xy, read_xy, weight, full=estimator.MOVED_PRIOR_WEIGHT, fraction=estimator.MOVED_FRACTION):
        out = orig(xy, read_xy, weight, full, fraction)
        out[:, joints] = np.maximum(out[:, joints], w)
        return out

    estimator.moved_prior_weight = moved


def _prior_deroll(axis: str, free_deg: float = 0.0) -> None:
    """The pose prior reads each 2-D pose turned in the image plane about its hip midpoint so that its body axis
    (``torso``: hip midpoint -> shoulder midpoint; ``body``: ankle midpoint -> shoulder midpoint) is vertical, leaving
    ``free_deg`` of lean unturned (a rotation about the camera's axis leaves depths as they are)."""
    from posetracker.depth import pose_prior

    inputs = pose_prior.prior_inputs
    names = _names()
    ls, rs, lh, rh = (names.index(n) for n in pose_prior.TORSO)
    la, ra = names.index("left_ankle"), names.index("right_ankle")

    def turned(xy, ok, spec):
        xy = np.asarray(xy, np.float64)
        hip = 0.5 * (xy[..., lh, :] + xy[..., rh, :])
        low = hip if axis == "torso" else 0.5 * (xy[..., la, :] + xy[..., ra, :])
        up = 0.5 * (xy[..., ls, :] + xy[..., rs, :]) - low
        a = np.arctan2(up[..., 0], -up[..., 1])  # lean from the image's up, clockwise positive
        if axis == "body":
            a = np.where(ok[..., la] & ok[..., ra], a, 0.0)
        free = np.radians(free_deg)
        a = np.sign(a) * np.maximum(np.abs(a) - free, 0.0)
        c, s = np.cos(a)[..., None], np.sin(a)[..., None]
        d = xy - hip[..., None, :]
        rot = np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], -1)
        return inputs(np.nan_to_num(rot) + hip[..., None, :], ok, spec)

    pose_prior.prior_inputs = turned


def _prior_legs(endings: str) -> None:
    """The joints whose names end with one of ``endings`` (comma-separated) take the prior's leg share."""
    from posetracker.depth import pose_prior

    pose_prior.LEGS = tuple(endings.split(","))


def _prior_single() -> None:
    from posetracker.depth import pose_prior

    init = pose_prior.PosePrior.__init__
    pose_prior.PosePrior.__init__ = lambda self, *a, **kw: init(self, *a, **{**kw, "mirrored": False})


def _prior_mirror(sigma_m: float | None = None) -> None:
    """The pose prior also reads the mirrored pose (x -> -x, left <-> right) and its depths, mirrored back, are
    averaged with the first reading's; with ``sigma_m`` each joint's prior share is also scaled by
    exp(-0.5 (d / sigma_m)^2), d the two readings' difference (m)."""
    from posetracker.depth import pose_prior

    def relative_depth(self, xy, ok, root_depth, focal):
        x, s, torso = pose_prior.prior_inputs(xy, ok, self.spec)
        out = np.full(ok.shape, np.nan)
        self._disagree = np.zeros(ok.shape)
        if not torso.any():
            return out
        m = np.asarray(self.spec.mirror_index)
        y = np.zeros((int(torso.sum()), self.spec.num_joints))
        y[:, self.joints] = self.forward(x[torso])
        xm, _, _ = pose_prior.prior_inputs(xy[torso][:, m] * np.array([-1.0, 1.0]), ok[torso][:, m], self.spec)
        ym = np.zeros_like(y)
        ym[:, self.joints] = self.forward(xm)
        ym = ym[:, m]
        unit = (root_depth[torso] * s[torso] / focal)[:, None]
        rows = np.flatnonzero(torso)
        out[rows] = 0.5 * (y + ym) * unit
        self._disagree[rows] = np.abs(y - ym) * unit
        out[rows, self.spec.root] = 0.0
        return out

    pose_prior.PosePrior.relative_depth = relative_depth
    if sigma_m is None:
        return
    fuse = pose_prior.PosePrior.fuse

    def gated(self, xy, confidence, depth, focal, weight=None):
        w = np.broadcast_to(self.weight if weight is None else np.asarray(weight, np.float64), depth.shape)
        self.relative_depth(xy, confidence >= self.min_confidence, depth[:, self.spec.root], focal)
        return fuse(self, xy, confidence, depth, focal, w * np.exp(-0.5 * (self._disagree / sigma_m) ** 2))

    pose_prior.PosePrior.fuse = gated


def _from_head(pairs) -> None:
    from posetracker.depth import pose_prior

    names = _names()
    edges = [(names.index(p), names.index(c)) for p, c in pairs]
    fuse = pose_prior.PosePrior.fuse

    def fused(self, xy, confidence, depth, focal, weight=None):
        mixed = fuse(self, xy, confidence, depth, focal, weight)
        out = mixed.copy()
        for p, c in edges:  # parents first
            out[:, c] = out[:, p] + (depth[:, c] - depth[:, p])
        return np.where(np.isfinite(out), out, mixed).astype(mixed.dtype)

    pose_prior.PosePrior.fuse = fused


def _depth_channels(cutoff_hz: float | None = None, robust_m: float | None = None) -> None:
    from posetracker.motion import solve

    orig = solve.fit_path

    def fit_path(values, weight, lam, scale, iterations):
        out, robust = orig(values, weight, lam, scale, iterations)
        if values.shape[1] <= 2:
            return out, robust
        lam_d = solve.SolveSettings(cutoff_hz=cutoff_hz).smoothness(1 / 60) if cutoff_hz else lam
        finite = np.isfinite(values)
        y = np.where(finite, values, 0.0)
        c = np.where(finite[:, :2].all(-1), weight, 0.0) * robust
        rest = np.arange(2, values.shape[1])
        fin = finite[:, rest].all(-1)
        prior = solve._prior_bands(len(values), lam_d)

        def fit(w, rhs):
            ab = prior.copy()
            ab[2] += w + 1e-9
            return solve.solve_banded((2, 2), ab, w[:, None] * rhs)

        rd = np.ones(len(values))
        for _ in range(iterations if robust_m else 1):
            z = fit(c * rd * fin, y[:, rest])
            if robust_m:
                e = np.where(fin, np.abs(z[:, 0] - y[:, 2]), 0.0) / robust_m
                rd = 1.0 / (1.0 + e * e)
        for ch in rest:
            w = c * rd * finite[:, ch]
            out[:, ch] = fit(w, y[:, ch:ch + 1])[:, 0] if w.sum() > 0 else np.nan
        return out, robust

    solve.fit_path = fit_path


def _rays(on_rays: bool = True, long_too: bool = False) -> None:
    import inspect

    from posetracker.motion import whole_track
    from posetracker.tracking import bones, ray_bones

    if long_too:
        old = "share = _smoothstep(np.where(ok, norm, length) / length, *READ_SHORT)"
        new = ("r_ = np.where(ok, norm, length) / length; "
               "share = _smoothstep(r_, *READ_SHORT) * (1.0 - _smoothstep(r_, 1.0, 1.3))")
        src = inspect.getsource(ray_bones.rigid_on_rays)
        namespace = dict(vars(ray_bones))
        exec(src.replace(old, new), namespace)  # noqa: S102 (a measuring variant of the shipped function)
        bones.rigid_on_rays = namespace["rigid_on_rays"]
    if not on_rays:
        orig = bones.rigid_tracks
        whole_track.rigid_tracks = lambda frames, spec, min_confidence=0.5, min_samples=5, on_rays=False: orig(
            frames, spec, min_confidence, min_samples, False)


def _no_feet() -> None:
    from posetracker.motion import finish

    finish._feet = lambda seq: seq


def _weights(path: str) -> None:
    from posetracker import session

    session.default_prior_path = lambda skeleton="human18": Path(path)


def _level(path: str) -> None:
    """Each view's session reads its depths with the level prior at ``path`` (studies/tools/level_prior.py),
    turned by the view's gravity: the calibration's (``--calibration``) or ``CURRENT["down_from"]``'s floor."""
    import json

    sys.path.insert(0, str(Path(__file__).resolve().parent))  # level_prior.py beside this file
    from level_prior import LevelDepthEstimator

    from posetracker import session
    from posetracker.depth.pose_prior import load_pose_prior
    from posetracker.multiview.calibration import camera_named, read_calibrations

    opened = session.TrackingSession.open.__func__

    def open_level(cls, *args, **kw):
        s = opened(cls, *args, **kw)
        base = s.__dict__.setdefault("_base_depth", s.depth)
        v = CURRENT["view"]
        if CURRENT.get("down_from"):
            floor = json.loads((Path(CURRENT["down_from"]) / f"cam{v}.json").read_text())["metadata"]["feet"]["floor"]
            down = -np.asarray(floor["report"]["normal_camera"], float)
        else:  # Z up in the calibration's world
            down = camera_named(read_calibrations([str(D / "calibration.qca.txt")]), f"cam0{v}").R @ [0.0, 0.0, -1.0]
        s.depth = LevelDepthEstimator(base, load_pose_prior(path, s.spec), down, CURRENT.get("legs_only", False))
        return s

    session.TrackingSession.open = classmethod(open_level)


CURRENT: dict = {}


def apply(variant: str) -> None:
    if "+" in variant:  # several at once
        for part in variant.split("+"):
            apply(part)
        return
    name, _, arg = variant.partition(":")
    actions = {"none": lambda: None, "prior": lambda: _prior_weight(float(arg)), "upper": lambda: _upper(float(arg)),
               "shin_from_head": lambda: _from_head(LEGS[2:]), "leg_from_head": lambda: _from_head(LEGS),
               "depth_cutoff": lambda: _depth_channels(cutoff_hz=float(arg)),
               "depth_robust": lambda: _depth_channels(robust_m=float(arg)),
               "no_rays": lambda: _rays(on_rays=False), "long_on_rays": lambda: _rays(long_too=True),
               "no_feet": _no_feet, "level": lambda: _level(arg),
               "prior_weights": lambda: _weights(arg), "floor_down": lambda: CURRENT.update(down_from=arg),
               "legs_only": lambda: CURRENT.update(legs_only=True), "prior_mirror": lambda: _prior_mirror(float(arg) if arg else None),
               "prior_single": _prior_single, "prior_legs": lambda: _prior_legs(arg),
               "prior_deroll": lambda: _prior_deroll(*(arg.split(",")[0], float(arg.split(",")[1]) if "," in arg else 0.0))}
    if name not in actions:
        raise SystemExit(f"unknown variant {variant!r}")
    actions[name]()


def record(out: Path) -> None:
    from posetracker import frame_people
    from posetracker.cli import main
    from posetracker.depth.estimator import DepthEstimator

    estimate, people = DepthEstimator.estimate, frame_people.FramePeople._people
    store: list = []
    last: dict = {}

    def estimate_kept(self, *args, **kw):
        last["args"] = args
        return estimate(self, *args, **kw)

    def people_kept(self, outputs, meta, budget_ms=None, tracked=True):
        pose = people(self, outputs, meta, budget_ms, tracked)
        store.append((pose, last.pop("args"), self._bottom_up.get(meta.index)))
        return pose

    DepthEstimator.estimate, frame_people.FramePeople._people = estimate_kept, people_kept
    out.mkdir(parents=True, exist_ok=True)
    for v in (1, 2, 3, 4):
        store.clear()
        if main(["process", str(D / f"cam0{v}.mp4"), "--out", str(out / f"cam{v}.json"), "--force"]):
            raise SystemExit(f"process cam0{v} failed")
        (out / f"cam{v}.pkl").write_bytes(pickle.dumps(store))


def replay(recorded: Path, out: Path, variants: list[str]) -> None:
    calibrated = variants[:1] == ["--calibration"]
    variants = variants[1:] if calibrated else variants
    extra = ["--calibration", str(D / "calibration.qca.txt")] if calibrated else []
    from posetracker import session as session_module
    from posetracker.cli import main
    from posetracker.motion.whole_track import whole_track_motion
    from posetracker.tracking.offline import backfill_ids

    current: dict = {}

    def run_offline(self, frames, total, progress, cancel, fps=30.0):
        raw = []
        for pose, args, bottom_up in current["store"]:
            if bottom_up is not None:
                self._bottom_up[pose.index] = bottom_up
            depth, world = self.depth.estimate(*args)
            raw.append(replace(pose, keypoints=np.concatenate([args[0], depth[..., None]], -1).astype(np.float32),
                               world=world))
        tracked, self.whole_track_report = whole_track_motion(
            backfill_ids([self._track(p) for p in raw], self.sigmas), self.spec, self.config, fps)
        return tracked

    session_module.TrackingSession._run_offline = run_offline
    opened = session_module.TrackingSession.open.__func__
    sessions: dict = {}

    def open_once(cls, *args, **kw):  # one session per settings: the four views share it
        key = repr((args, kw))
        if key not in sessions:
            sessions[key] = opened(cls, *args, **kw)
        return sessions[key]

    session_module.TrackingSession.open = classmethod(open_once)
    for variant in variants:
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)
            continue
        apply(variant)
        target = out / re.sub(r"[^\w.-]+", "_", variant)
        target.mkdir(parents=True, exist_ok=True)
        for v in (1, 2, 3, 4):
            current["store"] = pickle.loads((recorded / f"cam{v}.pkl").read_bytes())
            CURRENT["view"] = v
            main(["process", str(D / f"cam0{v}.mp4"), "--out", str(target / f"cam{v}.json"), "--force", *extra])
        os._exit(0)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        record(Path(sys.argv[2]))
    elif len(sys.argv) >= 5 and sys.argv[1] == "replay":
        replay(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
    else:
        raise SystemExit(__doc__)
