"""Foot locking for the humanoid BVH rig: during each stance phase the ankle stands still on the floor.

Input: the solved motion in the floor frame (Y up, metres, before the origin shift), its
world rotations, and the stance phases (:mod:`posetracker.analysis.stance`) in its frames.

Per phase of one foot (frames [s, e)), locked when its median ankle height is within
``max_height_m`` (15 cm) of the person's standing height (floor + ankle height; a foot on
a stair step, about 17 cm, or held still in the air is not; at 10 cm, 4 of the 68 stance
phases of the three clips of ``docs/experiments/floor-and-feet.md`` stayed unlocked,
feet that stand on the floor in the video with the 3-D 11-14 cm off): the *target* is the median of the ankle's position
(the rig's forward kinematics) over the phase, at floor + ankle height. The foot's
weight ``w`` is 1 in the phase and eases in and out (smoothstep) over ``blend`` frames
before and after it, at most half the swing to the same foot's neighbouring phase, never
past the clip's ends nor across a swap of the track's left and right labels (the
ankle after it is the other foot); 0 elsewhere.

1. Root. The body moves so that the standing feet stand: with ``c_f = target_f - ankle_f``,
   ``r = sum w_f c_f / sum w_f`` where the weights sum to at least 1 (one foot standing lands
   exactly; with two the root takes their mean and the legs the rest); where they sum to
   ``W < 1`` (a foot easing in or out with no other standing, a flight phase),
   ``r = sum w_f c_f + (1 - W) r_fill``, ``r_fill`` the linear interpolation of ``r`` between the
   nearest fully supported frames (held before the first and after the last), so the
   root never jumps. The whole body, rotations unchanged, moves by ``r``.
2. Legs. Where ``w_f > 0``: two-bone IK from the rig's hip (moved with the root) to the
   target: thigh and shin keep the rig's lengths and the knee its hinge axis (the
   thigh's X axis, made normal to the new hip -> ankle line), so it bends in the plane
   it bent in, forwards (a knee read bent backwards bends forwards once locked). The
   thigh and shin then turn ``w_f`` of the way from their own rotation to the IK's (an
   ease in rotation, so a knee that changes side swings over the ease instead of
   jumping). A target out of reach straightens the leg towards it, and the root then
   moves by the mean of what the fully locked feet miss (``rounds`` times at most, until
   they miss less than 0.01 mm): two feet that stand farther apart than the legs reach
   lower the hips. Where ``w_f = 0`` the leg's rotations are left exactly as they were.
3. Swing (:func:`clamp_swing`). Outside a full lock, an ankle the motion puts below standing
   height (a swinging foot through the floor) is raised there by the same IK, eased in and out.

Shapes: T frames, J rig joints (:data:`~posetracker.export.bvh_rig.HUMANOID`), F = 2 feet
(left, right), P phases; positions in metres.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.ndimage import gaussian_filter1d
from scipy.spatial.transform import Rotation

from posetracker.analysis.stance import ContactPhase, slide
from posetracker.export.bvh_rig import Rig
from posetracker.export.bvh_solve import frame_from

X, Y, Z = np.eye(3)
SIDES = ("Left", "Right")


@dataclass(frozen=True)
class LockSettings:
    """blend_s: ease in / out of a lock (seconds); max_height_m: a phase whose median ankle is farther than this
    from floor + ankle height is not locked."""

    blend_s: float = 0.1
    max_height_m: float = 0.15
    rounds: int = 6
    root_smooth_s: float = 0.1

    def check(self) -> None:
        if not self.blend_s >= 0:
            raise ValueError(f"blend_s must be >= 0, got {self.blend_s}")
        if not self.max_height_m > 0:
            raise ValueError(f"max_height_m must be positive, got {self.max_height_m}")


@dataclass
class LockResult:
    """world: (T, J, 3, 3) rotations; root: (T, 3); shift: (T, 3) the root correction r; weight: (T, F);
    ankles_before / ankles_after: (T, F, 3) the rig's ankles; phases: one report dict per input phase."""

    world: np.ndarray
    root: np.ndarray
    shift: np.ndarray
    weight: np.ndarray
    ankles_before: np.ndarray
    ankles_after: np.ndarray
    phases: list[dict[str, Any]]


def _legs(rig: Rig) -> list[tuple[int, int, int]]:
    """(UpLeg, Leg, Foot) joint indices of the left and right legs."""
    return [tuple(rig.names.index(f"{s}{b}") for b in ("UpLeg", "Leg", "Foot")) for s in SIDES]  # type: ignore[misc]


def leg_points(world: np.ndarray, root: np.ndarray, rig: Rig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forward kinematics of both legs: (hips, knees, ankles), each (T, F, 3), from world rotations (T, J, 3, 3)
    and root positions (T, 3)."""
    hips, knees, ankles = [], [], []
    for up, leg, foot in _legs(rig):
        hip = root + world[:, 0] @ rig.offsets[up]
        knee = hip + world[:, up] @ rig.offsets[leg]
        hips.append(hip)
        knees.append(knee)
        ankles.append(knee + world[:, leg] @ rig.offsets[foot])
    return np.stack(hips, 1), np.stack(knees, 1), np.stack(ankles, 1)


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def lock_weights(phases: list[ContactPhase], num_frames: int, blend: int, cuts: list[int] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(T, F) weights and (T, F) int index into ``phases`` of the phase each weight belongs to (-1: none).
    ``cuts``: frames where the track's left and right labels swap; no easing crosses one (the ankle after it
    is the other foot)."""
    w = np.zeros((num_frames, 2))
    owner = np.full((num_frames, 2), -1, np.int64)
    cuts = sorted(int(c) for c in (cuts or []))
    for f in range(2):
        mine = sorted((p.start, p.stop, i) for i, p in enumerate(phases) if p.foot == f)
        for j, (s, e, i) in enumerate(mine):
            before = s if j == 0 else (s - mine[j - 1][1]) // 2
            after = num_frames - e if j == len(mine) - 1 else (mine[j + 1][0] - e) // 2
            before = min([before] + [s - c for c in cuts if c <= s])
            after = min([after] + [c - e for c in cuts if c >= e])
            b_in, b_out = min(blend, before), min(blend, after)
            w[s:e, f], owner[s:e, f] = 1.0, i
            for k in range(1, b_in + 1):
                w[s - k, f], owner[s - k, f] = _smoothstep(np.array(1 - k / (b_in + 1))), i
            for k in range(1, b_out + 1):
                w[e - 1 + k, f], owner[e - 1 + k, f] = _smoothstep(np.array(1 - k / (b_out + 1))), i
    return w, owner


def root_shift(weight: np.ndarray, correction: np.ndarray) -> np.ndarray:
    """(T, 3) root correction from (T, F) weights and (T, F, 3) per-foot corrections (module docstring, step 1)."""
    total = weight.sum(1)
    pulled = (weight[:, :, None] * np.nan_to_num(correction)).sum(1)  # (T, 3)
    full = total >= 1.0 - 1e-9
    if not full.any():
        return pulled
    mean = pulled / np.where(full, total, 1.0)[:, None]
    idx = np.arange(len(total), dtype=float)
    fill = np.stack([np.interp(idx, idx[full], mean[full, a]) for a in range(3)], axis=1)
    return np.where(full[:, None], mean, pulled + (1.0 - total)[:, None] * fill)


def two_bone(hip: np.ndarray, target: np.ndarray, hinge: np.ndarray, upper: float, lower: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two-bone IK: (thigh direction, shin direction, hinge axis), each (N, 3) unit, for a leg from ``hip`` (N, 3)
    towards ``target`` (N, 3) with segment lengths ``upper``, ``lower`` (m), the knee bending about ``hinge``
    (N, 3), made normal to the hip -> target line (thigh x shin points along it). Out of reach: straight
    towards the target."""
    d = target - hip
    dist = np.linalg.norm(d, axis=1)
    u = d / np.maximum(dist, 1e-12)[:, None]
    reach = np.clip(dist, abs(upper - lower) + 1e-6, (upper + lower) * (1 - 1e-9))
    h = hinge - np.sum(hinge * u, axis=1, keepdims=True) * u
    bad = np.linalg.norm(h, axis=1) < 1e-6
    if bad.any():  # hinge along the leg: any normal (never seen for a leg that bends about its thigh's X)
        alt = np.cross(u[bad], np.where(np.abs(u[bad, :1]) < 0.9, X, Y))
        h[bad] = alt
    h = h / np.linalg.norm(h, axis=1, keepdims=True)
    e = np.cross(u, h)
    cos_a = np.clip((upper ** 2 + reach ** 2 - lower ** 2) / (2 * upper * reach), -1.0, 1.0)
    d1 = cos_a[:, None] * u + np.sqrt(1 - cos_a ** 2)[:, None] * e
    d2 = (reach[:, None] * u - upper * d1) / lower
    d2 = d2 / np.linalg.norm(d2, axis=1, keepdims=True)
    return d1, d2, h


def blend_rotations(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations a fraction ``w`` (N,) of the way from ``a`` to ``b`` (N, 3, 3), along the shortest turn."""
    rel = Rotation.from_matrix(np.swapaxes(a, -1, -2) @ b).as_rotvec()
    return a @ Rotation.from_rotvec(w[:, None] * rel).as_matrix()


def _legs_to(world: np.ndarray, root: np.ndarray, rig: Rig, weight: np.ndarray, goal: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Where the weight (T, F) is positive: two-bone IK of the legs onto ``goal`` (T, F, 3), then the thigh and
    shin turned that fraction of the way from their rotation in ``world`` to the IK's. Returns (world
    rotations, (T, 3) the mean of what the IK misses of the goals of the fully locked feet)."""
    out = world.copy()
    hips, _, _ = leg_points(world, root, rig)
    miss = np.zeros((len(root), 3))
    for f, (up, leg, foot) in enumerate(_legs(rig)):
        rows = weight[:, f] > 0
        if not rows.any():
            continue
        w = weight[rows, f]
        upper, lower = float(np.linalg.norm(rig.offsets[leg])), float(np.linalg.norm(rig.offsets[foot]))
        d1, d2, h = two_bone(hips[rows, f], goal[rows, f], world[rows, up][:, :, 0], upper, lower)
        out[rows, up] = blend_rotations(world[rows, up], frame_from(d1, h, -Y, X), w)
        out[rows, leg] = blend_rotations(world[rows, leg], frame_from(d2, h, -Y, X), w)
        out[rows, foot] = out[rows, leg]
        full = w >= 1.0
        miss[np.flatnonzero(rows)[full]] += (goal[rows, f] - (hips[rows, f] + upper * d1 + lower * d2))[full]
    return out, miss / np.maximum((weight >= 1.0).sum(1), 1)[:, None]


def lock_feet(world: np.ndarray, root: np.ndarray, rig: Rig, phases: list[ContactPhase], stand_y: float,
              frame_time: float, settings: LockSettings | None = None, cuts: list[int] | None = None) -> LockResult:
    """Lock the feet of a humanoid motion during ``phases`` (module docstring).

    world: (T, J, 3, 3) world rotations; root: (T, 3) root positions (floor frame, m); phases: frames of this
    motion; stand_y: Y (m) of a standing ankle (the person's floor + ankle height); frame_time: seconds;
    cuts: frames where the track's foot labels swap (:func:`lock_weights`).
    Returns new arrays (the inputs are not changed).
    """
    settings = settings or LockSettings()
    settings.check()
    t = world.shape[0]
    if world.shape != (t, rig.num_joints, 3, 3) or root.shape != (t, 3):
        raise ValueError(f"world must be (T, {rig.num_joints}, 3, 3) and root (T, 3), got {world.shape}, {root.shape}")
    for p in phases:
        if not 0 <= p.start < p.stop <= t or p.foot not in (0, 1):
            raise ValueError(f"phase {p} outside the motion's {t} frames")
    _, _, before = leg_points(world, root, rig)
    reports: list[dict[str, Any]] = []
    locked: list[ContactPhase] = []
    targets: list[np.ndarray] = []
    for p in phases:
        seg = before[p.start:p.stop, p.foot]
        height = float(np.median(seg[:, 1])) - stand_y
        rep = {"foot": SIDES[p.foot].lower(), "frames": [p.start, p.stop], "height_before_m": height,
               "slide_before_m": slide(seg)}
        if abs(height) > settings.max_height_m:
            rep["locked"], rep["reason"] = False, f"ankle {100 * height:+.0f} cm from standing height"
        else:
            rep["locked"], rep["reason"] = True, ""
            target = np.median(seg, axis=0)
            target[1] = stand_y
            locked.append(p)
            targets.append(target)
        reports.append(rep)
    blend = int(round(settings.blend_s / frame_time)) if frame_time > 0 else 0
    weight, owner = lock_weights(locked, t, blend, cuts)
    goal = np.full((t, 2, 3), np.nan)
    for f in range(2):
        has = owner[:, f] >= 0
        if has.any():
            goal[has, f] = np.array(targets)[owner[has, f]]
    shift = root_shift(weight, goal - before) if locked else np.zeros((t, 3))
    if locked and settings.root_smooth_s > 0 and frame_time > 0:
        shift = gaussian_filter1d(shift, settings.root_smooth_s / frame_time, axis=0, mode="nearest")
    new_world = world.copy()
    for _ in range(settings.rounds if locked else 0):
        new_world, miss = _legs_to(world, root + shift, rig, weight, goal)
        if not np.abs(miss).max() > 1e-5:
            break
        shift = shift + miss
    new_root = root + shift
    _, _, after = leg_points(new_world, new_root, rig)
    for rep, p in zip(reports, phases):
        seg = after[p.start:p.stop, p.foot]
        rep["height_after_m"] = float(np.median(seg[:, 1])) - stand_y
        rep["slide_after_m"] = slide(seg)
    return LockResult(new_world, new_root, shift, weight, before, after, reports)


@dataclass(frozen=True)
class SwingSettings:
    """smooth_s: a swinging foot's lift is spread over about this much either side of where it dips (seconds);
    ramp_m: the lift over which the leg's IK fades in (a tiny dip turns the leg a little, never all at once);
    tolerance_m: an ankle this little below standing height is left where it is."""

    smooth_s: float = 0.1
    ramp_m: float = 0.01
    tolerance_m: float = 0.005


def clamp_swing(world: np.ndarray, root: np.ndarray, rig: Rig, stand_y: float, frame_time: float,
                locked: np.ndarray, settings: SwingSettings | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Keep swinging feet out of the floor: where an ankle dips more than ``tolerance_m`` below ``stand_y`` (a
    standing ankle's Y) outside a full lock, the leg is bent by two-bone IK to raise it there. The lift ``d`` (T, F) is the dip, spread by a
    maximum filter over ``smooth_s`` either side then smoothed (never below the dip itself), and the thigh and
    shin turn ``smoothstep(d / ramp_m)`` of the way to the IK's pose (hip and root unchanged), so a leg eases
    up and down; legs that never dip keep their rotations exactly.

    world: (T, J, 3, 3) world rotations; root: (T, 3) (floor frame, m); locked: (T, F) the lock's weights (1:
    standing, left alone). Returns (new world rotations, (T, F) the lift asked for, m).
    """
    from scipy.ndimage import maximum_filter1d

    settings = settings or SwingSettings()
    _, _, ankles = leg_points(world, root, rig)
    dip = np.where(locked >= 1.0, 0.0, np.maximum(0.0, stand_y - settings.tolerance_m - ankles[..., 1]))
    if not dip.any():
        return world, np.zeros_like(dip)
    n = max(1, int(round(settings.smooth_s / frame_time))) if frame_time > 0 else 1
    lift = gaussian_filter1d(maximum_filter1d(dip, size=2 * n + 1, axis=0, mode="nearest"), n / 2.0, axis=0,
                             mode="nearest")
    lift = np.where(locked >= 1.0, 0.0, np.maximum(lift, dip))
    weight = _smoothstep(lift / settings.ramp_m)
    goal = ankles + lift[..., None] * Y
    new_world, _ = _legs_to(world, root, rig, weight, goal)
    return new_world, lift


def motion_phases(phases: list[ContactPhase], slots: np.ndarray, first: int, ok: np.ndarray
                  ) -> tuple[list[ContactPhase], np.ndarray]:
    """Stance phases (track indices) -> phases over the M complete frames of a motion (cut where a frame is not
    complete), and (M,) the motion frame of each complete one. slots: (T,) motion frame of each track frame;
    first: the motion's first frame; ok: (N,) bool the motion's complete frames."""
    ids = np.full((len(ok), 2), -1, np.int64)
    for i, p in enumerate(phases):
        a, b = int(slots[p.start]) - first, int(slots[p.stop - 1]) - first + 1
        a, b = max(a, 0), min(b, len(ok))
        if a < b:
            ids[a:b, p.foot] = i
    grid = np.flatnonzero(ok)
    ids = ids[ok]
    out: list[ContactPhase] = []
    jump = np.concatenate([[False], np.diff(grid) != 1])  # a frame that is not complete lies before it
    for f in range(2):
        col = ids[:, f]
        edges = np.flatnonzero((np.diff(np.concatenate([[-1], col, [-1]])) != 0) | np.concatenate([jump, [False]]))
        for a, b in zip(edges[:-1], edges[1:]):
            if col[a] >= 0:
                out.append(ContactPhase(f, int(a), int(b)))
    out.sort(key=lambda p: (p.start, p.foot))
    return out, grid


def lock_report(result: LockResult, grid: np.ndarray, phases: list[ContactPhase], scale: float, ankle: float
                ) -> dict[str, Any]:
    """The BVH report's ``foot_lock`` (lengths times ``scale``: the file's units): per phase its frames (``grid``:
    the motion frame of each frame of the lock), locked or why not, median ankle height above standing and
    slide before and after; their medians and the largest slide of a locked phase."""
    rows = []
    for rep, p in zip(result.phases, phases):
        rows.append({"foot": rep["foot"], "bvh_frames": [int(grid[p.start]), int(grid[p.stop - 1]) + 1],
                     "locked": rep["locked"], "reason": rep["reason"],
                     "height_before": round(scale * rep["height_before_m"], 3),
                     "height_after": round(scale * rep["height_after_m"], 3),
                     "slide_before": round(scale * rep["slide_before_m"], 3),
                     "slide_after": round(scale * rep["slide_after_m"], 3)})
    locked = [r for r in rows if r["locked"]]
    med = lambda k, rs: round(float(np.median([r[k] for r in rs])), 3) if rs else None  # noqa: E731
    return {"phases": len(rows), "locked_phases": len(locked), "ankle_height": round(scale * ankle, 3),
            "slide_before_median": med("slide_before", rows), "slide_after_median": med("slide_after", rows),
            "slide_after_max": max((r["slide_after"] for r in locked), default=None), "stance_phases": rows}
