"""People in 3-D from several calibrated views' tracking results: match the tracks, fit the pose of a camera that
disagrees with the others to the people (:mod:`.adjust`), triangulate each person.

Shapes: V views, T frames (the same instants in every view), K joints. The skeleton's virtual joints (human18's
``centre``, a 2-D box centre that is no 3-D point) are not triangulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from posetracker.multiview.adjust import PoseAdjustment, adjust_poses
from posetracker.multiview.calibration import CameraCalibration
from posetracker.multiview.match import PersonMatch, ViewTrack, match_tracks, person_views
from posetracker.multiview.triangulate import Triangulation, triangulate
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import person_tracks
from posetracker.types import PoseSequence


FACE_JOINTS = {"nose", "left_eye", "right_eye", "left_ear", "right_ear"}  # bones to them are not limb or trunk


@dataclass(frozen=True)
class PersonReference:
    """One person seen by several views.

    match:         which track of which view is this person
    xy:            (V, T, K, 2) px, the person's 2-D points in each view (nan where unseen)
    confidence:    (V, T, K)
    triangulation: (T, K) points in world metres, views used, reprojection errors
    """

    match: PersonMatch
    xy: np.ndarray
    confidence: np.ndarray
    triangulation: Triangulation

    @property
    def xyz(self) -> np.ndarray:
        """(T, K, 3) world metres."""
        return self.triangulation.xyz


def view_tracks(seq: PoseSequence, view: int) -> dict[int, ViewTrack]:
    """{track id: ViewTrack} of one view's sequence: image x, y (px) of every tracked person over all T frames."""
    out = {}
    if not seq.track_ids():  # nobody tracked in this view
        return out
    for tid, tr in person_tracks(seq).items():
        xy = np.where(tr.present[:, None, None], tr.keypoints[..., :2], np.nan)
        out[tid] = ViewTrack(view, tid, xy, np.where(tr.present[:, None], tr.confidence, 0.0))
    return out


@dataclass(frozen=True)
class Reconstruction:
    """The people of several views in 3-D: ``people`` (most present first), the ``cameras`` they were triangulated
    with (a view's pose adjusted to the people where its calibration disagreed: :mod:`.adjust`) and the
    ``adjustments`` tried."""

    people: list[PersonReference]
    cameras: list[CameraCalibration]
    adjustments: list[PoseAdjustment]


def reconstruct(cameras: Sequence[CameraCalibration], sequences: Sequence[PoseSequence], max_error_px: float = 15.0,
                min_confidence: float = 0.2, max_match_px: float = 60.0, min_views: int = 2,
                adjust: bool = True) -> list[PersonReference]:
    """The people of :func:`reconstruct_views` (the same arguments)."""
    return reconstruct_views(cameras, sequences, max_error_px, min_confidence, max_match_px, min_views, adjust).people


def reconstruct_views(cameras: Sequence[CameraCalibration], sequences: Sequence[PoseSequence],
                      max_error_px: float = 15.0, min_confidence: float = 0.2, max_match_px: float = 60.0,
                      min_views: int = 2, adjust: bool = True) -> Reconstruction:
    """Match the people of V views' sequences (one per camera, same frames) and triangulate each one seen in >= 2
    views; ``adjust``: first fit the pose of a view that disagrees with the others to the matched people
    (:func:`~posetracker.multiview.adjust.adjust_poses`).

    See :func:`~posetracker.multiview.match.match_tracks` and :func:`~posetracker.multiview.triangulate.triangulate`
    for the thresholds.
    """
    if len(cameras) != len(sequences) or not sequences:
        raise ValueError(f"one sequence per camera: {len(cameras)} cameras, {len(sequences)} sequences")
    lengths = {len(s) for s in sequences}
    if len(lengths) != 1:
        raise ValueError(f"the views' sequences differ in length ({sorted(lengths)} frames): not synchronised")
    spec = sequences[0].skeleton
    tracks = [view_tracks(seq, v) for v, seq in enumerate(sequences)]
    seen = [(match, *person_views(match, tracks)) for match in match_tracks(cameras, tracks, max_cost_px=max_match_px)]
    cams, adjustments = list(cameras), []
    if adjust and seen:
        xy = np.concatenate([p[1] for p in seen], axis=1)  # (V, P * T, K, 2): the people one after another
        xy[:, :, sorted(spec.virtual)] = np.nan
        cams, adjustments = adjust_poses(cams, xy, np.concatenate([p[2] for p in seen], axis=1), max_error_px)
    people = [PersonReference(match, xy, conf,
                              triangulate_person(cams, xy, conf, spec, max_error_px, min_confidence, min_views))
              for match, xy, conf in seen]
    return Reconstruction(people, cams, adjustments)


def triangulate_person(cameras: Sequence[CameraCalibration], xy: np.ndarray, confidence: np.ndarray,
                       spec: SkeletonSpec, max_error_px: float = 15.0, min_confidence: float = 0.2,
                       min_views: int = 2) -> Triangulation:
    """xy (V, T, K, 2) px, confidence (V, T, K) -> Triangulation with the skeleton's virtual joints left nan."""
    xy = np.array(xy, np.float64)
    xy[:, :, sorted(spec.virtual)] = np.nan
    return triangulate(cameras, xy, confidence, max_error_px=max_error_px, min_views=min_views,
                       min_confidence=min_confidence)


def bone_lengths(xyz: np.ndarray, spec: SkeletonSpec) -> dict[str, np.ndarray]:
    """{"parent-child": (T,) length m} for the tree's bones between real joints and the drawn extra edges
    (shoulders, hips, trunk sides); nan where an end is missing."""
    pairs = [tuple(e) for e in spec.edges if not ({int(e[0]), int(e[1])} & set(spec.virtual))]
    extra = spec.extra_edges if spec.extra_edges is not None else np.zeros((0, 2), int)
    pairs += [tuple(e) for e in np.asarray(extra).reshape(-1, 2)]
    names = spec.joint_names
    return {f"{names[a]}-{names[b]}": np.linalg.norm(xyz[:, a] - xyz[:, b], axis=-1) for a, b in pairs}


def quality(person: PersonReference, spec: SkeletonSpec, camera_names: Sequence[str],
            min_confidence: float = 0.2) -> dict:
    """How good a person's triangulation is.

    reprojection_px:  {view: median px over the view's confident points (used or dropped) against the 3-D point}
    used_share:       {view: share of those points the solution kept}
    triangulated:     share of real joints triangulated over the frames where >= 2 views see the person
    views_used:       {n: share of the triangulated real joints solved from n views}
    bones:            {bone: {"median_m", "std_mm", "iqr_mm", "frames"}}
    body_spread_pct:  {"iqr", "std"}: the median over the limb and trunk bones (no face joint) of their IQR and
                      std over the frames in % of their median length (a rigid body: 0)
    """
    tri = person.triangulation
    real = np.array([j not in spec.virtual for j in range(spec.num_joints)])
    seen = np.isfinite(person.xy).all(-1) & (person.confidence >= min_confidence)  # (V, T, K)
    seen &= np.isfinite(tri.xyz).all(-1)[None]
    reproj, used = {}, {}
    for v, name in enumerate(camera_names):
        pts = seen[v][:, real]
        err = tri.error[..., v][:, real][pts]
        reproj[name] = float(np.median(err)) if err.size else float("nan")
        used[name] = float(tri.used[..., v][:, real][pts].mean()) if err.size else float("nan")
    frames = (np.isfinite(person.xy).all(-1).any(-1)).sum(axis=0) >= 2  # (T,)
    share = float(tri.found[frames][:, real].mean()) if frames.any() else float("nan")
    nv = tri.used.sum(-1)[tri.found & real[None]]
    views_used = {int(n): float((nv == n).mean()) for n in range(2, tri.used.shape[-1] + 1)} if nv.size else {}
    bones = {}
    for name, length in bone_lengths(tri.xyz, spec).items():
        ok = np.isfinite(length)
        if ok.sum() >= 2:
            q1, q3 = np.percentile(length[ok], [25, 75])
            bones[name] = {"median_m": float(np.median(length[ok])), "std_mm": float(length[ok].std() * 1000),
                           "iqr_mm": float((q3 - q1) * 1000), "frames": int(ok.sum())}
    body = [b for b in bones if not set(b.split("-")) & FACE_JOINTS]
    spread = {key: float(np.median([bones[b][f"{key}_mm"] / 10 / bones[b]["median_m"] for b in body])) if body
              else float("nan") for key in ("iqr", "std")}
    return {"tracks": [[camera_names[v], tid] for v, tid in person.match.tracks], "match_cost_px": person.match.cost_px,
            "frames_in_2_views": int(frames.sum()), "reprojection_px": reproj, "used_share": used,
            "triangulated": share, "views_used": views_used, "bones": bones,
            "body_spread_pct": spread}
