"""Single-view 3-D scored against a metric reference triangulated from calibrated views (issue #46).

Shapes: T frames, K joints (human18), A = 6 joint angles, V views.

For each view and each person matched across the views (:mod:`posetracker.multiview`), a single-view reading
(our ``frame.world``, camera metres, or a peer's, e.g. MediaPipe Pose's hip-centred world landmarks) is
compared frame by frame with the person's triangulated reference on the joints both have:

- PA-MPJPE (mm): mean joint distance after the best similarity transform (rotation, translation, scale) per
  frame, over the real joints known in both (at least ``MIN_JOINTS``);
- joint-angle error (degrees): |angle(reading) - angle(reference)| of the 3-D angles in :data:`ANGLES`
  (knee: hip-knee-ankle; hip: between the trunk, mid-hip to mid-shoulder, and the thigh; elbow:
  shoulder-elbow-wrist), left and right;
- size (:func:`size_agreement`): our stature and bone lengths against the reference's, as read and with the
  height set from the reference (what ``--height`` gives);
- ours - peer on the frames both read, with a 95 % bootstrap interval over blocks of consecutive frames
  (:func:`block_bootstrap`; neighbouring frames of a 60 fps clip are not independent).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Sequence

import numpy as np

from posetracker.multiview.calibration import CameraCalibration
from posetracker.multiview.reference import quality, reconstruct_views, triangulate_person
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import person_tracks
from posetracker.types import PoseSequence

MIN_JOINTS = 8
BLOCK_FRAMES = 10
_MID_HIP, _MID_SHOULDER = ("left_hip", "right_hip"), ("left_shoulder", "right_shoulder")
# angle name -> (vector 1 from, to), (vector 2 from, to); each end the mean of the named joints
ANGLES: dict[str, tuple[tuple[tuple[str, ...], tuple[str, ...]], tuple[tuple[str, ...], tuple[str, ...]]]] = {}
for _s in ("left", "right"):
    ANGLES[f"{_s}_knee"] = (((f"{_s}_knee",), (f"{_s}_hip",)), ((f"{_s}_knee",), (f"{_s}_ankle",)))
    ANGLES[f"{_s}_hip"] = ((_MID_HIP, _MID_SHOULDER), ((f"{_s}_hip",), (f"{_s}_knee",)))
    ANGLES[f"{_s}_elbow"] = (((f"{_s}_elbow",), (f"{_s}_shoulder",)), ((f"{_s}_elbow",), (f"{_s}_wrist",)))
ANGLE_GROUPS = ("knee", "hip", "elbow")
LIMB_ENDS = ("elbow", "wrist", "knee", "ankle")  # a bone ending at one of these is a limb (size_agreement)


def joint_angles(xyz: np.ndarray, joint_names: Sequence[str]) -> np.ndarray:
    """(..., K, 3) points -> (..., A) angles in degrees, in :data:`ANGLES` order (nan where a joint is missing)."""
    index = {n: i for i, n in enumerate(joint_names)}
    end = lambda names: xyz[..., [index[n] for n in names], :].mean(axis=-2)  # noqa: E731
    out = []
    for (a0, a1), (b0, b1) in ANGLES.values():
        u, v = end(a1) - end(a0), end(b1) - end(b0)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = (u * v).sum(-1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1))
        out.append(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))
    return np.stack(out, axis=-1)


def pa_per_frame(pred: np.ndarray, ref: np.ndarray, joints: np.ndarray, min_joints: int = MIN_JOINTS) -> np.ndarray:
    """pred, ref (T, K, 3) m; joints (K,) bool joints to score -> (T,) PA-MPJPE mm (nan: < min_joints in both)."""
    from posetracker.train.metrics import procrustes_align  # (imports the tracking package: only when scoring)

    ok = np.isfinite(pred).all(-1) & np.isfinite(ref).all(-1) & joints[None]
    out = np.full(len(pred), np.nan)
    for t in np.flatnonzero(ok.sum(axis=1) >= min_joints):
        p, r = pred[t, ok[t]], ref[t, ok[t]]
        out[t] = np.linalg.norm(procrustes_align(p, r) - r, axis=-1).mean() * 1000
    return out


def block_bootstrap(values: np.ndarray, block: int = BLOCK_FRAMES, resamples: int = 10_000,
                    seed: int = 0) -> tuple[float, float, float]:
    """(T,) per-frame values (nan = not compared) -> (mean, 2.5 %, 97.5 %) of the mean, resampling blocks of
    ``block`` consecutive frames with replacement (each block weighted by its compared frames)."""
    values = np.asarray(values, np.float64)
    ok = np.isfinite(values)
    if not ok.any():
        return float("nan"), float("nan"), float("nan")
    starts = range(0, len(values), block)
    sums = np.array([np.nansum(values[s:s + block]) for s in starts])
    counts = np.array([ok[s:s + block].sum() for s in starts], np.float64)
    sums, counts = sums[counts > 0], counts[counts > 0]
    pick = np.random.default_rng(seed).integers(0, len(sums), (resamples, len(sums)))
    means = sums[pick].sum(axis=1) / counts[pick].sum(axis=1)
    return float(sums.sum() / counts.sum()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def frame_errors(pred: np.ndarray, ref: np.ndarray, spec: SkeletonSpec) -> dict[str, np.ndarray]:
    """Per-frame errors of a reading against the reference: {"pa_mm": (T,), "angles": (T, A) absolute degrees}."""
    joints = np.array([j not in spec.virtual for j in range(spec.num_joints)])
    angles = np.abs(joint_angles(pred, spec.joint_names) - joint_angles(ref, spec.joint_names))
    return {"pa_mm": pa_per_frame(pred, ref, joints), "angles": angles}


def _per_metric(err: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{"pa_mm", "knee", "hip", "elbow", "mean_angle"}: (T,) per-frame values (angle groups: mean over sides)."""
    names = list(ANGLES)
    out = {"pa_mm": err["pa_mm"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-nan rows: nan
        for g in ANGLE_GROUPS:
            out[g] = np.nanmean(err["angles"][:, [i for i, n in enumerate(names) if n.endswith(g)]], axis=1)
        out["mean_angle"] = np.nanmean(err["angles"], axis=1)
    return out


def size_agreement(ours: np.ndarray, ref: np.ndarray, spec: SkeletonSpec) -> dict:
    """A single view's size against the reference (both (T, K, 3) m, nan where absent) -> {"stature_ref_m",
    "stature_ours_m" (``analysis.stature``), "bones_as_read_pct" and "bones_height_given_pct": the median over
    bones of |our median length / the reference's - 1| in %, as read and with our reading scaled to the
    reference's stature (``posetracker process --height`` given the 4-view result, ``motion.heights``), and the
    same over the limbs only ("limbs_...": upper arms, forearms, thighs, shanks; the face's 4-5 cm bones are
    off by a centimetre in the reference itself)}."""
    from posetracker.analysis.stature import stature
    from posetracker.tracking.bones import bone_lengths

    def st(xyz: np.ndarray) -> float:
        return stature(xyz, np.isfinite(xyz).all(-1), spec)

    s_ref, s_ours = st(ref), st(ours)
    anatomical = [e for e, (a, b) in enumerate(spec.edges.tolist()) if a not in spec.virtual and b not in spec.virtual]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a bone never seen: nan
        ratio = np.nanmedian(bone_lengths(ours, spec), 0)[anatomical] / np.nanmedian(bone_lengths(ref, spec), 0)[anatomical]
    names = spec.joint_names
    limb = np.array([names[b].split("_")[-1] in LIMB_ENDS for a, b in spec.edges[anatomical].tolist()])
    seen = np.isfinite(ratio)
    out = {"stature_ref_m": s_ref, "stature_ours_m": s_ours}
    for key, pick in (("bones", seen), ("limbs", seen & limb)):
        r = ratio[pick]
        ok = r.size and np.isfinite(s_ref) and np.isfinite(s_ours)
        out[f"{key}_as_read_pct"] = float(np.median(np.abs(r - 1)) * 100) if ok else float("nan")
        out[f"{key}_height_given_pct"] = float(np.median(np.abs(r * s_ref / s_ours - 1)) * 100) if ok else float("nan")
    return out


def compare(ref: np.ndarray, ours: np.ndarray, peer: np.ndarray | None, spec: SkeletonSpec,
            block: int = BLOCK_FRAMES) -> dict:
    """Score ours (and a peer) against the reference, all (T, K, 3), nan where absent.

    Returns {"ours": {metric: mean over its own frames}, "frames_ours": n, "size": :func:`size_agreement` of ours,
    and with a peer: "peer", "frames_peer",
    "frames_both", "both_ours" / "both_peer" (means on the frames both read), "difference": {metric:
    [ours - peer, low, high]} over those frames (block bootstrap)}. Metrics: pa_mm, knee, hip, elbow,
    mean_angle."""
    mine = _per_metric(frame_errors(ours, ref, spec))
    mean = lambda a: float(np.nanmean(a)) if np.isfinite(a).any() else float("nan")  # noqa: E731
    out = {"frames_ours": int(np.isfinite(mine["pa_mm"]).sum()), "ours": {m: mean(v) for m, v in mine.items()},
           "size": size_agreement(ours, ref, spec)}
    if peer is None:
        return out
    theirs = _per_metric(frame_errors(peer, ref, spec))
    both = np.isfinite(mine["pa_mm"]) & np.isfinite(theirs["pa_mm"])
    out.update(frames_peer=int(np.isfinite(theirs["pa_mm"]).sum()), frames_both=int(both.sum()),
               peer={m: mean(v) for m, v in theirs.items()})
    out["both_ours"] = {m: mean(np.where(both, v, np.nan)) for m, v in mine.items()}
    out["both_peer"] = {m: mean(np.where(both, v, np.nan)) for m, v in theirs.items()}
    out["difference"] = {m: list(block_bootstrap(np.where(both, mine[m] - theirs[m], np.nan), block))
                         for m in mine}
    return out


def peer_person(readings: dict, track_ids: Sequence[int], num_frames: int,
                spec: SkeletonSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One person's readings from a ``mediapipe-pose-readings`` JSON (studies/tools/mediapipe_world.py) of one view, the
    33 BlazePose landmarks mapped to the skeleton's joints by name.

    Returns world (T, K, 3) m, image xy (T, K, 2) px, visibility (T, K); nan / 0 where not read (the first of
    ``track_ids`` read in a frame wins)."""
    from posetracker.train.teachers.mapping import BLAZEPOSE_TO_HUMAN18

    k = spec.num_joints
    world, xy, vis = np.full((num_frames, k, 3), np.nan), np.full((num_frames, k, 2), np.nan), np.zeros((num_frames, k))
    ours = [spec.joint_names.index(n) for n in BLAZEPOSE_TO_HUMAN18]
    theirs = list(BLAZEPOSE_TO_HUMAN18.values())
    for tid in track_ids:
        rec = readings.get("tracks", {}).get(str(tid))
        for pos, w, im in zip(rec["frames"], rec["world"], rec["image"]) if rec else ():
            if w is None or im is None or np.isfinite(world[pos]).any():
                continue
            w, im = np.asarray(w, np.float64), np.asarray(im, np.float64)
            world[pos, ours], xy[pos, ours], vis[pos, ours] = w[theirs], im[theirs, :2], im[theirs, 3]
    return world, xy, vis


def _world_of(tracks: dict, ids: Sequence[int], num_frames: int, num_joints: int) -> np.ndarray:
    """(T, K, 3) camera metres of one person's tracks ``ids`` in one view (nan where absent)."""
    out = np.full((num_frames, num_joints, 3), np.nan)
    for tid in ids:
        tr = tracks[tid]
        out[tr.present] = tr.world[tr.present]
    return out


def evaluate_views(cameras: Sequence[CameraCalibration], sequences: Sequence[PoseSequence],
                   peers: Sequence[dict] | None = None, max_error_px: float = 15.0, block: int = BLOCK_FRAMES,
                   min_views: int = 2, adjust: bool = True) -> dict:
    """The whole study: reference people from V views' sequences (one per camera, same frames), its quality, and
    each view's single-view reading of each person (P1, P2, ... most present first) scored against it, ours and
    (``peers``: one readings JSON per view, or None) the peer's. With peers, everything is scored a second time
    against references triangulated from the peer's own 2-D landmarks ("peer_reference"): the check that the
    reference does not favour the 2-D points it was built from. ``adjust``: a view whose calibrated pose
    disagrees with the others' is fitted to the people first (``multiview.adjust``; "pose_adjustments").
    """
    names = [c.name for c in cameras]
    spec, t = sequences[0].skeleton, len(sequences[0])
    rec = reconstruct_views(cameras, sequences, max_error_px=max_error_px, min_views=min_views, adjust=adjust)
    people, cameras = rec.people, rec.cameras
    tracks = [person_tracks(seq) for seq in sequences]
    out: dict = {"cameras": names, "frames": t, "max_error_px": max_error_px, "min_views": min_views,
                 "block_frames": block, "people": [quality(p, spec, names) for p in people], "views": {},
                 "pose_adjustments": [a.as_dict() for a in rec.adjustments],
                 "peer_reference": None}
    if peers is not None:
        out["peer_reference"] = {"people": [], "views": {}}
    for n, person in enumerate(people):
        readings = [peer_person(peers[v], person.match.track_ids(v), t, spec) for v in range(len(names))] \
            if peers is not None else None
        refs = [("views", person.xyz)]
        if readings is not None:
            xy, vis = np.stack([r[1] for r in readings]), np.stack([r[2] for r in readings])
            tri = triangulate_person(cameras, xy, vis, spec, max_error_px, min_views=min_views)
            out["peer_reference"]["people"].append(
                quality(replace(person, xy=xy, confidence=vis, triangulation=tri), spec, names))
            refs.append(("peer_reference", tri.xyz))
        for v, name in enumerate(names):
            ids = person.match.track_ids(v)
            if not ids:
                continue
            ours = _world_of(tracks[v], ids, t, spec.num_joints)
            peer = readings[v][0] if readings is not None else None
            for key, ref in refs:
                table = out[key] if key == "views" else out[key]["views"]
                table.setdefault(name, {})[f"P{n + 1}"] = compare(ref, ours, peer, spec, block)
    return out
