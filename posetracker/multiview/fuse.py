"""Several calibrated views' tracking results -> one tracked sequence in metres, for every output.

``posetracker process cam1.mp4 cam2.mp4 ... --calibration FILE`` tracks each view as a single-view run would,
then :func:`fuse_views`:

1. matches each person across the views, fits the pose of a view whose calibration disagrees with the others'
   to the people (:mod:`.adjust`) and triangulates them robustly (:func:`.reference.reconstruct_views`: a view
   that loses a joint or reads it wrong is dropped for that joint);
2. writes one PoseSequence in the *reference* camera's frame (the first view: camera-space metres, x right,
   y down, z forward, as a single view's; every output then works as for one view): ``world`` the triangulated
   joints, ``keypoints`` their projection into the reference view (x, y px) and their depth (m), confidence the
   mean of the views used (0 where no two views agree), one track id per matched person (0, 1, ... most present
   first); the skeleton's virtual joints (human18's centre) from the real ones, as the decoder makes them;
3. solves each person's motion over the clip (``motion.solve``) and gives them one length per bone
   (``tracking.bones.rigid_tracks``), as the offline session does after its own tracking.

``metadata["multiview"]`` holds the cameras, the reference view, the poses fitted (``pose_adjustments``) and, per
person, the triangulation's quality (:func:`.reference.quality`: reprojection error per view, joints
triangulated, bones and their spread);
``metadata["camera"]`` the reference camera's field of view from its calibration.

Shapes: V views, T frames (the same instants in every view), P people, K joints.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence

import numpy as np

from posetracker.decoding.encode import fill_virtual_joints
from posetracker.multiview.calibration import CameraCalibration
from posetracker.multiview.reference import quality, reconstruct_views
from posetracker.types import PoseFrame, PoseSequence


def calibrated_fov(camera: CameraCalibration) -> float:
    """Degrees across the long side of the image from the camera's focal length (what ``--fov`` means)."""
    w, h = camera.image_size
    f = camera.K[0, 0] if w >= h else camera.K[1, 1]
    return math.degrees(2 * math.atan(max(w, h) / (2 * f)))


def fuse_views(cameras: Sequence[CameraCalibration], sequences: Sequence[PoseSequence], *,
               max_error_px: float = 15.0, min_views: int = 2, solve: bool = True, adjust: bool = True) -> PoseSequence:
    """V views' tracked sequences (one per camera, in the same order, the same frames) -> one sequence of the
    people triangulated from them, in the first camera's frame (module docstring). ``solve``: the motion solve
    and rigid bones (False: the triangulated points as they are); ``adjust``: a view whose calibrated pose
    disagrees with the others' fitted to the people first (:mod:`.adjust`)."""
    from posetracker.motion.solve import solve_tracks
    from posetracker.tracking.bones import rigid_tracks

    ref_seq = sequences[0]
    spec = ref_seq.skeleton
    rec = reconstruct_views(cameras, sequences, max_error_px=max_error_px, min_views=min_views, adjust=adjust)
    people, ref_cam = rec.people, rec.cameras[0]  # the first camera is never adjusted
    k, v = spec.num_joints, len(cameras)
    frames = []
    for i, ref in enumerate(ref_seq.frames):
        rows = [n for n, person in enumerate(people) if np.isfinite(person.xyz[i]).all(-1).sum() >= 2]
        frames.append(fuse_frame(ref, ref_cam, spec, np.array([people[n].xyz[i] for n in rows]).reshape(-1, k, 3),
                                 np.array([people[n].triangulation.used[i] for n in rows]).reshape(-1, k, v),
                                 np.array([people[n].confidence[:, i] for n in rows]).reshape(-1, v, k), rows))
    if solve:
        frames = rigid_tracks(solve_tracks(frames), spec)
    names = [c.name for c in cameras]
    meta = {**(ref_seq.metadata or {}),
            "source": [str((s.metadata or {}).get("source", c.name)) for s, c in zip(sequences, cameras)],
            "multiview": {"cameras": names, "reference_view": names[0], "max_error_px": max_error_px,
                          "min_views": min_views, "people": [quality(p, spec, names) for p in people],
                          "pose_adjustments": [_adjustment(a, rec.cameras) for a in rec.adjustments]}}
    return PoseSequence(frames, ref_seq.fps, spec, meta)


def fuse_frame(ref: PoseFrame, ref_cam: CameraCalibration, spec, xyz: np.ndarray, used: np.ndarray,
               confidence: np.ndarray, ids: Sequence[int]) -> PoseFrame:
    """One frame of fused people in the reference camera's frame (module docstring, step 2).

    ref:        the reference view's frame of that instant (its index, timestamp and image size are kept)
    xyz:        (P, K, 3) world metres of the people triangulated in it (nan where not; virtual joints nan)
    used:       (P, K, V) bool, the views each joint was solved from
    confidence: (P, V, K) each view's confidence of the person's joints (nan or 0 where unseen)
    ids:        (P,) the people's track ids
    """
    k = spec.num_joints
    if not len(ids):
        return PoseFrame.empty(ref.index, ref.timestamp, k, ref.image_size)
    world = ref_cam.to_camera(xyz)  # (P, K, 3) camera metres
    xy = ref_cam.project(xyz)  # (P, K, 2) px
    conf_v = np.nan_to_num(confidence, nan=0.0)  # (P, V, K)
    weights = np.moveaxis(used, -1, 1)  # (P, V, K)
    conf = np.where(weights.any(1), (conf_v * weights).sum(1) / np.maximum(weights.sum(1), 1), 0.0)
    known = np.isfinite(world).all(-1)
    xy, depth = fill_virtual_joints(np.where(known[..., None], xy, np.nan), spec, known, world[..., 2])
    world = _virtual_world(world, spec, known)
    for j in spec.virtual:
        conf[:, j] = conf[:, list(spec.labelled_joints)].max(axis=1)
    keypoints = np.concatenate([xy, depth[..., None]], -1).astype(np.float32)
    return PoseFrame(ref.index, ref.timestamp, keypoints, conf.astype(np.float32), conf.mean(axis=1).astype(np.float32),
                     np.asarray(ids, np.int64), ref.image_size, world.astype(np.float32))


def _adjustment(adjustment, cameras: Sequence[CameraCalibration]) -> dict:
    """A PoseAdjustment as metadata, with the kept pose (R (3, 3), t (3,) m, world -> camera)."""
    out = adjustment.as_dict()
    if adjustment.kept:
        cam = next(c for c in cameras if c.name == adjustment.camera)
        out.update(R=cam.R.round(9).tolist(), t=cam.t.round(9).tolist())
    return out


def adjusted_cameras(cameras: Sequence[CameraCalibration], seq: PoseSequence) -> list[CameraCalibration]:
    """``cameras`` with the poses :func:`fuse_views` adjusted to the people (``metadata["multiview"]
    ["pose_adjustments"]``, the kept ones) put in: the cameras the fused people were triangulated with."""
    kept = {a["camera"]: a for a in (seq.metadata or {}).get("multiview", {}).get("pose_adjustments", []) if a["kept"]}
    return [dataclasses.replace(c, R=np.asarray(kept[c.name]["R"]), t=np.asarray(kept[c.name]["t"]))
            if c.name in kept else c for c in cameras]


def seen_from(seq: PoseSequence, cameras: Sequence[CameraCalibration], view: int,
              offsets: Sequence[int] | None = None) -> PoseSequence:
    """The fused ``seq`` (:func:`fuse_views`'s, the first camera's frame) as camera ``view`` sees it, to draw over
    that camera's video: each person's keypoints the projection of their ``world`` joints into it (x, y px; depth
    their z in that camera, m; a joint with no world point keeps its keypoint), frame indices that video's
    (``offsets[view]`` added: ``sync.frame_offsets``), ``image_size`` that camera's; world, confidence, scores
    and ids unchanged. ``view`` 0 gives ``seq``'s frames re-projected into the first camera."""
    ref, cam = cameras[0], cameras[view]
    shift = int(offsets[view]) if offsets is not None else 0
    frames = []
    for f in seq.frames:
        if f.world is None or not len(f.track_ids):
            frames.append(dataclasses.replace(f, index=f.index + shift, image_size=cam.image_size))
            continue
        xyz = (np.asarray(f.world, np.float64) - ref.t) @ ref.R  # (P, K, 3) the first camera's metres -> world
        xy, z = cam.project(xyz), cam.to_camera(xyz)[..., 2]  # (P, K, 2) px, (P, K) m
        ok = np.isfinite(xy).all(-1) & np.isfinite(z)
        ok[:, list(seq.skeleton.virtual)] = False  # virtual joints by their 2-D rule, as the decoder makes them
        xy, z = fill_virtual_joints(np.where(ok[..., None], xy, np.nan), seq.skeleton, ok, np.where(ok, z, np.nan))
        ok = np.isfinite(xy).all(-1) & np.isfinite(z)
        keypoints = np.array(f.keypoints, np.float32, copy=True)  # (P, K, 3) x, y px, depth m
        keypoints[ok] = np.concatenate([xy, z[..., None]], -1)[ok]
        frames.append(dataclasses.replace(f, index=f.index + shift, keypoints=keypoints, image_size=cam.image_size))
    return dataclasses.replace(seq, frames=frames)


def _virtual_world(world: np.ndarray, spec, known: np.ndarray) -> np.ndarray:
    """world (P, K, 3) with each virtual joint made by its rule from the known real joints, per axis."""
    out = world.copy()
    src = list(spec.labelled_joints)
    pts = np.where(known[:, src, None], world[:, src], np.nan)  # (P, S, 3)
    with warnings.catch_warnings():  # a person with no known joint: all-nan, stays nan
        warnings.simplefilter("ignore", RuntimeWarning)
        box_centre = 0.5 * (np.nanmin(pts, axis=1) + np.nanmax(pts, axis=1))
        mean = np.nanmean(pts, axis=1)
    for j, rule in spec.virtual.items():
        out[:, j] = box_centre if rule == "bbox_centre" else mean
    return out


__all__ = ["adjusted_cameras", "calibrated_fov", "fuse_frame", "fuse_views", "seen_from"]
