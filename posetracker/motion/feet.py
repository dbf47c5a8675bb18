"""Standing feet in the motion itself: each person's stance feet held still on the floor, for every output.

The per-track solve (:mod:`posetracker.motion.solve`) fits each joint to its readings; a monocular depth that
wanders moves the whole body along the camera's rays, and with it the standing foot (the older woman's walk:
23 cm per stance phase, median). This step, once the camera and the people's heights are known
(:func:`posetracker.motion.finish.finish_sequence`), fits one floor to everyone's stance feet
(:func:`posetracker.analysis.ground.ground_from_sequence`: one normal, a floor per person, the stance phases of
each ankle on still ground from the 2-D foot contact) and then, per person, in the floor frame (Y up from the
person's own floor):

1. **Body.** The whole body moved by r_t (T, 3), mostly along the camera's ray through it, and per stance phase p
   the point a_p where its ankle stands (Y: the person's floor plus their ankle height; X, Z free) minimise

       sum_t sum_f w_tf |A_tf + r_t - a_p(t, f)|^2  +  lam * sum_t |r_{t-1} - 2 r_t + r_{t+1}|^2
           +  across * sum_t |(I - u_t u_t^T) r_t|^2  +  eps * sum_t |r_t|^2

   with A_tf the solved ankle of foot f, u_t the unit ray from the camera to the body's centre, w_tf 1 during a
   stance phase and easing in and out over ``blend_s`` either side (smoothstep, at most half the swing to the
   same foot's next phase), ``lam`` from ``cutoff_hz`` and ``eps`` small (:mod:`posetracker.motion.ray_shift`).
   One camera sees where a person is and not how far: the depth that wandered is moved back freely, the
   body only a little across the ray (a translation free in X and Z let the side-view walk's body slide off its
   image, world joints a median 19 % of her height off the 2-D, up to 59 %; with ``across`` 0.3, 4 %).
   A translation changes no joint angle and no bone, and the 2-D readings are not touched.
2. **Pelvis, then legs.** What the body leaves (two standing ankles read at different heights, a swinging ankle
   under the floor) the pelvis takes first, as far as the knees' read bend asks it to
   (:mod:`posetracker.motion.stance_pelvis`: its height and its roll about the mid-hip, each leg moved with its
   hip; no knee angle changes); what it leaves (and a foot that rolls) the legs take: each ankle
   moved by d_tf minimising ``sum w_tf |A'_tf + d_tf - a'_p|^2 + leg_weight * (1 - w_tf) |d_tf|^2`` plus the
   same smoothness prior (a'_p: the phase's mean ankle after step 1, at standing height), so it is pulled onto
   its phase's point while it stands and eases back to as solved when it swings; a swinging ankle that is
   then under standing height is lifted to it. The knee moves the least that keeps the thigh and shin their
   lengths (the nearest point of the circle of such knees: it stays in the plane it bent in); where it must bend
   out farther than it was bent, that plane turns at most ``TURN_DEG`` a frame (a near-straight leg's plane is
   noise: on the side-view walk a swinging ankle 4.7 cm under standing height on a leg 0.3 cm short of straight
   was lifted, its knee put 10-14 cm out along a plane read 3.3-4.2 cm out that turned up to 75 degrees a frame,
   then snapped straight: 23.8 cm in one frame); a point farther
   from the hip than thigh plus shin is reached as far as the straight leg goes (the shin used to stretch to it,
   up to 2.8 cm on the walk, and a rig of constant bones, the BVH's, then missed the held ankle).
3. **Again.** The floor and the stance phases are fitted again to the result (``rounds`` at most, until they
   no longer change), each round's phases kept within the first round's (eased): a foot held in the air that a
   round put at standing height is then no higher than the other, and ``ground.drop_raised`` would read it as
   standing.

What is decided here is decided once: the floor the motion was planted on, each person's stance phases and the
point each phase's ankle is held on go into ``metadata["feet"]`` (:mod:`posetracker.analysis.held_ground`), and
every output (BVH, TRC) reads them instead of fitting the floor and the phases again to the result (where a fit
at export found phases the motion does not hold, the BVH's legs reached for an ankle that was not held, and
slid with it).

On the 4-view trial (``studies/floor-and-feet.md``) step 2 costs the walker's knees -0.2 to 1.2 degrees a view with
the pelvis first (0.8-3.6 with the hips fixed) and PA-MPJPE moves by under 1 mm.

Stance phases come from :mod:`posetracker.analysis.stance` as the floor fit finds them (the raised foot of a
person balancing on the other is not standing, ``ground.drop_raised``), less those whose ankle is more than
``max_height_m`` (15 cm) from standing height (a foot held up while the other swings, a stair step). Where no floor is fitted (too few stance
frames, not one plane, an animal without ankles) nothing moves and the report says why.

Shapes: T frames of a track (the sequence's frames), K joints, F = 2 feet (left, right), P stance phases.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import solve_banded
from scipy.ndimage import gaussian_filter1d

from posetracker.analysis.held_ground import floor_as_dict, phase_as_dict
from posetracker.analysis.stance import ContactPhase
from posetracker.motion.ray_shift import body_rays, ray_path
from posetracker.motion.solve import _prior_bands
from posetracker.motion.stance_pelvis import stance_pelvis
from posetracker.types import PoseSequence

FEET = ("left", "right")
SIDE_SMOOTH_FRAMES = 2.0  # Gaussian sigma (frames) of the direction a moved knee bends out to
STRAIGHT_M = 0.02  # a knee within this of the hip -> ankle line bends out the way the frames around it do
TURN_DEG = 30.0  # the most a knee bent farther than it was read turns its bend plane a frame (about the leg)


@dataclass(frozen=True)
class FeetSettings:
    """blend_s: ease of a stance phase's weight in and out (s); cutoff_hz: the body translation's smoothness
    (the frequency its prior halves at unit weight); eps: weight keeping the translation near 0 where the feet
    leave it free; across: weight of the translation across the camera ray through the body (step 1,
    :mod:`motion.ray_shift`: the camera sees where a person is, not how far); max_gap_s: a track unseen for longer is solved in separate runs; leg_weight: how strongly an
    ankle out of stance goes back to as solved (step 2); rounds: the most times the floor is fitted (step 3);
    max_height_m: a phase whose ankle is farther from standing height (median) is no stance (a foot held up, a
    stair step)."""

    blend_s: float = 0.1
    cutoff_hz: float = 8.0
    eps: float = 1e-4
    across: float = 0.3
    max_gap_s: float = 0.5
    leg_weight: float = 1.0
    rounds: int = 4
    max_height_m: float = 0.15

    def smoothness(self, frame_s: float) -> float:
        w = 2.0 * math.sin(math.pi * min(self.cutoff_hz * frame_s, 0.5))
        return 1.0 / w**4


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def stance_weights(phases: list[ContactPhase], num_frames: int, blend: int) -> tuple[np.ndarray, np.ndarray]:
    """(T, F) weights (1 in a phase, easing to 0 over ``blend`` frames either side, at most half the swing to the
    same foot's neighbouring phase) and (T, F) int the phase each weight belongs to (-1: none)."""
    w = np.zeros((num_frames, 2))
    owner = np.full((num_frames, 2), -1, np.int64)
    for f in range(2):
        mine = sorted((p.start, p.stop, i) for i, p in enumerate(phases) if p.foot == f)
        for j, (s, e, i) in enumerate(mine):
            before = s if j == 0 else (s - mine[j - 1][1]) // 2
            after = num_frames - e if j == len(mine) - 1 else (mine[j + 1][0] - e) // 2
            w[s:e, f], owner[s:e, f] = 1.0, i
            for k in range(1, min(blend, before) + 1):
                w[s - k, f], owner[s - k, f] = _smoothstep(np.array(1 - k / (min(blend, before) + 1))), i
            for k in range(1, min(blend, after) + 1):
                w[e - 1 + k, f], owner[e - 1 + k, f] = _smoothstep(np.array(1 - k / (min(blend, after) + 1))), i
    return w, owner


def _runs(present: np.ndarray, max_gap: int) -> list[tuple[int, int]]:
    """[(start, stop)) runs of the (T,) bool ``present`` joined across gaps of at most ``max_gap`` frames."""
    idx = np.flatnonzero(present)
    if not len(idx):
        return []
    cuts = np.flatnonzero(np.diff(idx) > max_gap + 1)
    starts = np.concatenate([[idx[0]], idx[cuts + 1]])
    stops = np.concatenate([idx[cuts] + 1, [idx[-1] + 1]])
    return list(zip(starts.tolist(), stops.tolist()))


def plant_feet(seq: PoseSequence, settings: FeetSettings | None = None) -> tuple[PoseSequence, dict[str, Any]]:
    """``seq`` with every person's stance feet held on the floor (module docstring) -> (sequence, report).

    Done ``settings.rounds`` times, the floor and the stance phases fitted again each time to the motion the
    round before gave (a foot read higher than the standing one is no stance, ``ground.drop_raised``, and
    planted it may be). The report, also the returned sequence's ``metadata["feet"]``: whether a floor was fitted
    (or why not), per person the largest body translation and the stance phases held, and what every output
    reads instead of fitting again (:mod:`posetracker.analysis.held_ground`): the floor the motion was planted
    on (``floor``, the level-camera fallback where none was fitted), ``num_frames`` and per person ``phases``
    ([start, stop) in positions of the sequence's frames, the foot, the point its ankle is held on). The input
    is not changed; 2-D keypoints and confidences are kept.
    """
    s = settings or FeetSettings()
    out, report, phases = _plant_once(seq, s, None)
    allowed = {tid: _near(ph, len(seq.frames), s.blend_s * seq.fps) for tid, ph in phases.items()}
    rounds = 1
    while report.get("planted") and rounds < s.rounds:
        again, more, found = _plant_once(out, s, allowed)
        if found == phases or not more.get("planted"):  # the feet it planted found again (done), or no floor
            break
        out, phases, rounds = again, found, rounds + 1
        report["floor_pitch_deg"], report["floor_roll_deg"] = more["floor_pitch_deg"], more["floor_roll_deg"]
        report["floor"] = more["floor"]  # the floor this round planted on
        for tid, person in more.get("people", {}).items():
            first = report["people"].setdefault(tid, {"stance_phases": 0, "largest_shift_m": 0.0})
            first["stance_phases"], first["phases"] = person["stance_phases"], person["phases"]
            first["largest_shift_m"] = max(first["largest_shift_m"], person["largest_shift_m"])
    if report.get("planted"):
        report["rounds"] = rounds
    return dataclasses.replace(out, metadata={**(seq.metadata or {}), "feet": report}), report


def _on_floor(heights: np.ndarray, stand: float, most: float) -> bool:
    """Whether a phase's (N,) ankle heights (m, nan unknown) lie within ``most`` of standing height (median)."""
    h = heights[np.isfinite(heights)]
    return bool(len(h)) and abs(float(np.median(h)) - stand) <= most


def _near(phases: list[ContactPhase], num_frames: int, frames: float) -> np.ndarray:
    """(T, F) bool: the frames of ``phases`` and the ``frames`` either side of each."""
    out = np.zeros((num_frames, 2), bool)
    pad = int(round(frames))
    for p in phases:
        out[max(0, p.start - pad):p.stop + pad, p.foot] = True
    return out


def _within(phases: list[ContactPhase], mask: np.ndarray, min_len: int) -> list[ContactPhase]:
    """The parts of ``phases`` inside the (T, F) bool ``mask``, at least ``min_len`` frames long (the floor fit's
    own shortest phase: a shorter part is no stance, and held it slid 2 cm on the walk)."""
    out = []
    for p in phases:
        keep = np.concatenate([[False], mask[p.start:p.stop, p.foot], [False]])
        edges = np.flatnonzero(np.diff(keep.astype(np.int8)))
        out += [ContactPhase(p.foot, p.start + int(a), p.start + int(b)) for a, b in zip(edges[::2], edges[1::2])
                if b - a >= min_len]
    return out


def _plant_once(seq: PoseSequence, s: FeetSettings, allowed: dict[int, np.ndarray] | None
                ) -> tuple[PoseSequence, dict[str, Any], dict[int, list]]:
    """One round of :func:`plant_feet` -> (sequence, report, {track id: the stance phases planted}). allowed:
    {track id: (T, F) bool} the frames where a stance phase may lie (None: anywhere): a later round fits the
    floor again, and a foot held in the air that the round before put at standing height would read as
    standing (``ground.drop_raised`` finds it no higher than the other), so only the first round's stance
    (eased) counts."""
    from posetracker.analysis.foot_contact import ContactSettings, GaitError
    from posetracker.analysis.ground import ground_from_sequence
    from posetracker.tracks import TrackError, frame_time, person_tracks

    spec = seq.skeleton
    try:
        tracks = person_tracks(seq)
        ground = ground_from_sequence(seq)
    except (KeyError, TrackError, GaitError) as exc:
        return seq, {"planted": False, "reason": str(exc)}, {}
    frame = ground.frame
    decided = {"floor": floor_as_dict(frame), "num_frames": len(seq.frames)}  # what every output reads
    try:
        ankles = [spec.index(f"{side}_ankle") for side in FEET]
        legs = [(spec.index(f"{side}_hip"), spec.index(f"{side}_knee"), spec.index(f"{side}_ankle")) for side in FEET]
    except KeyError as exc:  # an animal without ankles
        return seq, {"planted": False, "reason": str(exc), **decided}, {}
    if not frame.fitted:
        return seq, {"planted": False, "reason": str(frame.report.get("reason", "no floor")), **decided}, {}
    dt = frame_time(next(iter(tracks.values())).times, seq.fps)
    lam = s.smoothness(dt)
    blend = int(round(s.blend_s / dt))
    max_gap = int(round(s.max_gap_s / dt))
    min_len = max(2, int(round(ContactSettings().min_contact_s / dt)))  # as analysis.ground finds phases
    new_world: dict[int, np.ndarray] = {}
    people: dict[str, Any] = {}
    planted: dict[int, list[ContactPhase]] = {}
    for tid, tr in tracks.items():
        phases = ground.phases.get(tid, [])
        if allowed is not None:
            phases = _within(phases, allowed.get(tid, np.zeros((tr.num_frames, 2), bool)), min_len)
        stand = frame.ankle_height.get(tid, 0.0)
        pts = frame.to_person_floor(tr.world, tid)  # (T, K, 3)
        camera = frame.to_person_floor(np.zeros(3), tid)  # (3,) the camera centre in the person's floor frame
        feet = pts[:, ankles].copy()  # (T, F, 3)
        feet[~tr.valid_world(0.2)[:, ankles]] = np.nan
        phases = [p for p in phases if _on_floor(feet[p.start:p.stop, p.foot, 1], stand, s.max_height_m)]
        if not phases:
            continue
        planted[tid] = phases
        shift = np.zeros((tr.num_frames, 3))
        for a, b in _runs(tr.present & np.isfinite(pts).all(-1).any(-1), max_gap):
            mine = [ContactPhase(p.foot, p.start - a, p.stop - a) for p in phases if a <= p.start and p.stop <= b]
            if not mine:
                continue
            w, owner = stance_weights(mine, b - a, blend)
            rays = body_rays(pts[a:b], camera)
            shift[a:b], _ = ray_path(feet[a:b], rays, w, owner, len(mine), stand, lam, s.eps, s.across)
        w, owner = stance_weights(phases, tr.num_frames, blend)
        moved, _, roll = stance_pelvis(pts + shift[:, None, :], spec.parents, legs, phases, w, owner, stand,
                                       tr.valid_world(0.2), lam)
        points = _points(moved[:, ankles], phases, stand)
        moved = _legs(moved, legs, phases, points, stand, tr.valid_world(0.2), blend, lam, s.leg_weight)
        new_world[tid] = (moved - frame.to_person_floor(np.zeros(3), tid)) @ frame.rotation  # back to camera space
        people[str(tid)] = {"stance_phases": len(phases),
                            "largest_shift_m": round(float(np.linalg.norm(shift, axis=1).max()), 4),
                            "largest_hip_rise_m": round(float(np.abs(roll).max()), 4),
                            "phases": [phase_as_dict(p, q) for p, q in zip(phases, points)]}
    frames = []
    for i, f in enumerate(seq.frames):
        if f.world is None or not any(int(t) in new_world for t in f.track_ids):
            frames.append(f)
            continue
        world = f.world.copy()
        for p, t in enumerate(f.track_ids.tolist()):
            if t in new_world:
                keep = np.isfinite(world[p])
                world[p] = np.where(keep, new_world[t][i], world[p])
        frames.append(dataclasses.replace(f, world=world.astype(f.world.dtype)))
    report = {"planted": True, "floor_pitch_deg": frame.report.get("pitch_deg"),
              "floor_roll_deg": frame.report.get("roll_deg"), **decided, "people": people}
    return dataclasses.replace(seq, frames=frames), report, planted


def _points(feet: np.ndarray, phases: list[ContactPhase], stand: float) -> np.ndarray:
    """(P, 3) the point each stance phase's ankle is held on: its mean over the phase after step 1 (``feet`` (T, F,
    3) floor-frame m, nan unknown), at standing height ``stand``; nan where the phase has no known ankle."""
    out = np.full((len(phases), 3), np.nan)
    for i, p in enumerate(phases):
        seg = feet[p.start:p.stop, p.foot]
        seg = seg[np.isfinite(seg).all(1)]
        if len(seg):
            out[i] = seg.mean(0)
            out[i, 1] = stand
    return out


def _legs(pts: np.ndarray, legs: list[tuple[int, int, int]], phases: list[ContactPhase], points: np.ndarray,
          stand: float, valid: np.ndarray, blend: int, lam: float, rest: float) -> np.ndarray:
    """Step 2 of the module docstring on one person's floor-frame points (T, K, 3) -> new points. legs: (hip,
    knee, ankle) joint indices of the left and right leg; points: (P, 3) where each phase's ankle is held
    (:func:`_points`); valid: (T, K) bool; rest: the weight pulling an ankle back to where it was out of stance
    (with the stance weight easing out)."""
    out = pts.copy()
    t = len(pts)
    w, owner = stance_weights(phases, t, blend)
    for f, (hip, knee, ankle) in enumerate(legs):
        a = pts[:, ankle]
        ok = valid[:, ankle] & np.isfinite(a).all(1)
        if not ok.any():
            continue
        goal = np.zeros((t, 3))  # how far the ankle is from its phase's point
        for i, p in enumerate(phases):
            if p.foot == f and np.isfinite(points[i]).all():
                rows = owner[:, f] == i
                goal[rows] = points[i] - a[rows]
        goal = np.nan_to_num(goal)
        wf = np.where(ok, w[:, f], 0.0)
        ab = _prior_bands(t, lam)
        ab[2] += wf + rest * (1.0 - wf) + 1e-6
        new_a = a + solve_banded((2, 2), ab, wf[:, None] * goal)
        below = stand - new_a[:, 1]  # a swinging ankle under standing height: lifted to it
        new_a[:, 1] += np.where(np.isfinite(below) & (below > 0), below, 0.0)
        known = np.isfinite(a).all(1)  # moved wherever it is known (an unsure reading too: no step at its frame)
        if not np.abs(np.where(known[:, None], new_a - a, 0.0)).max() > 1e-9:
            continue
        new_a = np.where(known[:, None], new_a, a)
        moved = np.linalg.norm(np.nan_to_num(new_a - a), axis=1) > 1e-6  # elsewhere the leg is left exactly
        knee_at, ankle_at = _knee(pts[:, hip], pts[:, knee], new_a, a)
        out[:, knee] = np.where(moved[:, None], knee_at, pts[:, knee])
        out[:, ankle] = np.where(moved[:, None], ankle_at, new_a)
    return out


def _knee(hip: np.ndarray, knee: np.ndarray, ankle: np.ndarray, old_ankle: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    """(knee (T, 3), ankle (T, 3)): the knee nearest ``knee`` that keeps the thigh |knee - hip| and shin
    |old_ankle - knee| lengths with the ankle at ``ankle`` (the circle of such knees), out from the hip -> ankle
    line the way the knee bent, that way taken over a few frames (a straight leg's is noise, and a knee that took
    it frame by frame would flip sides); where it must go farther out than it was, that way turns at most
    ``TURN_DEG`` a frame (:func:`_turn_limited`); an ``ankle`` out of reach is moved to where the straight leg's end
    points at it, so that both bones keep their lengths."""
    l1 = np.linalg.norm(knee - hip, axis=1)
    l2 = np.linalg.norm(old_ankle - knee, axis=1)
    v = ankle - hip
    dist = np.linalg.norm(v, axis=1)
    u = v / np.maximum(dist, 1e-12)[:, None]
    reach = np.clip(dist, np.abs(l1 - l2) + 1e-9, (l1 + l2) * (1 - 1e-9))
    ankle = np.where((dist > reach)[:, None], hip + reach[:, None] * u, ankle)  # out of reach: the straight leg's end
    along = (l1**2 + reach**2 - l2**2) / (2 * np.maximum(reach, 1e-12))
    radius = np.sqrt(np.maximum(l1**2 - along**2, 0.0))
    side = knee - hip - ((knee - hip) * u).sum(1, keepdims=True) * u  # the knee's way out from the line
    # a near-straight leg's way out is noise: there, taken from the frames around (weighted by how far out the
    # knee is); a bent leg keeps its own
    out = np.linalg.norm(side, axis=1, keepdims=True)
    around = gaussian_filter1d(np.nan_to_num(side), SIDE_SMOOTH_FRAMES, axis=0, mode="nearest")
    around = around / np.maximum(np.linalg.norm(around, axis=1, keepdims=True), 1e-12)
    straight = 1.0 - np.clip((np.nan_to_num(out) - STRAIGHT_M) / STRAIGHT_M, 0.0, 1.0)  # 1 within STRAIGHT_M
    side = np.nan_to_num(side) + straight * STRAIGHT_M * around
    side = side - (side * u).sum(1, keepdims=True) * u
    n = np.linalg.norm(side, axis=1, keepdims=True)
    side = np.where(n > 1e-9, side / np.maximum(n, 1e-12), 0.0)
    farther = radius - np.nan_to_num(out[:, 0]) > 1e-3  # bent more than 1 mm farther out than it was read
    side = _turn_limited(side, np.nan_to_num(u), farther, math.radians(TURN_DEG))
    new = hip + along[:, None] * u + radius[:, None] * side
    ok = np.isfinite(new).all(1) & np.isfinite(knee).all(1)
    return np.where(ok[:, None], new, knee), ankle


def _turn_limited(side: np.ndarray, line: np.ndarray, limit: np.ndarray, step: float) -> np.ndarray:
    """(T, 3) the unit ways out ``side`` (across the unit lines ``line`` (T, 3); 0: none), each frame where ``limit``
    (T,) is set turned at most ``step`` radians from the frame before's (put across its own line), in time order
    and against it; the order that limits fewer frames is kept (as ``motion.rotations.limit_speed`` does)."""

    def one_way(way: np.ndarray, axis: np.ndarray, where: np.ndarray) -> tuple[np.ndarray, int]:
        out, limited = way.copy(), 0
        for t in np.flatnonzero(where[1:]) + 1:
            prev = out[t - 1] - np.dot(out[t - 1], axis[t]) * axis[t]
            size = np.linalg.norm(prev)
            if size < 1e-9 or np.linalg.norm(out[t]) < 1e-9:
                continue
            prev = prev / size
            cos = float(np.clip(np.dot(prev, out[t]), -1.0, 1.0))
            if math.acos(cos) <= step:
                continue
            across = out[t] - cos * prev  # towards the way read, within the plane across the line
            size = np.linalg.norm(across)
            out[t] = prev if size < 1e-9 else math.cos(step) * prev + math.sin(step) * across / size
            limited += 1
        return out, limited

    forward, n_f = one_way(side, line, limit)
    if n_f == 0:
        return forward
    backward, n_b = one_way(side[::-1], line[::-1], limit[::-1])
    return forward if n_f <= n_b else backward[::-1].copy()


__all__ = ["FeetSettings", "plant_feet", "stance_weights"]
