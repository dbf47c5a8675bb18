"""DepthEstimator: method A step 9 for one model, built once per session, called once per frame."""

from __future__ import annotations

import numpy as np

from posetracker.decoding.tree import path_matrix
from posetracker.depth.far_depth import FarDepthBlend
from posetracker.depth.lift import NETWORK_FOV_DEG, Camera, camera_depths, depth_scale, joint_depths, lift_keypoints
from posetracker.depth.pose_prior import PosePrior
from posetracker.depth.scale_depth import depth_from_scale
from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame


#: the pose prior's share of a joint's depth once the refiners moved it ``MOVED_FRACTION`` of the person's size
MOVED_PRIOR_WEIGHT = 0.75
MOVED_FRACTION = 0.05


def moved_prior_weight(xy: np.ndarray, read_xy: np.ndarray, weight: np.ndarray, full: float = MOVED_PRIOR_WEIGHT,
                       fraction: float = MOVED_FRACTION) -> np.ndarray:
    """(P, K) the pose prior's share of each joint's relative depth: ``weight`` (K,) where the refiners left the joint
    where the network found it (``read_xy`` (P, K, 2) px; ``xy`` (P, K, 2) the final joints), rising linearly to
    ``full`` where they moved it ``fraction`` of the person's keypoint-box diagonal or more. The depth head's
    difference belongs to the joint the network found; the prior reads the final 2-D pose (issue #47,
    ``studies/refined-depth.md``)."""
    xy, read_xy = np.asarray(xy, np.float64), np.asarray(read_xy, np.float64)
    with np.errstate(invalid="ignore"):
        box = np.nanmax(xy, axis=1) - np.nanmin(xy, axis=1)  # (P, 2)
    diag = np.maximum(np.nan_to_num(np.hypot(box[:, 0], box[:, 1])), 1.0)
    move = np.nan_to_num(np.linalg.norm(xy - read_xy, axis=-1)) / diag[:, None]
    return weight + (full - weight) * np.clip(move / fraction, 0.0, 1.0)


class DepthEstimator:
    """People of one frame -> joint depths and metric xyz; tracked frames -> far people's depth blended.

    fov_deg: field of view of the source camera across the frame's long side (the network's root depths
    are those of a 60 degree camera; another camera scales them, ``lift.depth_scale``; the joints' depths
    relative to the root are metric and stay, :func:`lift.camera_depths`). trained: the model's depth
    head is trained; if not, the body-scale layer replaces it (each person flat at the
    depth of its torso's size, :func:`depth_from_scale`) and the two layers below are off.
    prior: the pose-prior layer (:meth:`PosePrior.fuse`), None for off. far_depth: the
    far-people layer (:class:`FarDepthBlend`, per track: :meth:`blend_tracks`).
    """

    def __init__(self, spec: SkeletonSpec, fov_deg: float = 60.0, trained: bool = True,
                 prior: PosePrior | None = None, far_depth: bool = True):
        self.spec, self.fov_deg, self.trained = spec, fov_deg, trained
        self.depth_scale = np.float32(depth_scale(fov_deg))  # the source camera's against the network's
        self.prior = prior if trained else None
        self.far = FarDepthBlend(spec, fov_deg) if trained and far_depth else None
        self.path = path_matrix(spec)  # (E, K)

    def reset(self) -> None:
        """Forget the tracks of the far-people blend (a new source, a seek)."""
        if self.far is not None:
            self.far.reset()

    def estimate(self, xy: np.ndarray, confidence: np.ndarray, depth_reads: np.ndarray,
                 image_size: tuple[int, int], read_xy: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """xy: (P, K, 2) source pixels, the final joints (after the refiners); confidence: (P, K); depth_reads:
        (P, 1+E) the decoder's; image_size: (W, H); read_xy: (P, K, 2) source pixels where the network found the
        joints, whose depths the head read (None: ``xy``) -> (depth (P, K) float32 m, world (P, K, 3) float32
        camera-space m). A joint the refiners moved takes more of its depth from the pose prior, which reads the
        final joints (:func:`moved_prior_weight`)."""
        camera = Camera(*image_size, fov_deg=self.fov_deg)
        if self.trained:  # the head's depths are the network camera's; the source camera moves them
            depth = joint_depths(depth_reads, self.path)
            if self.prior is not None:  # numpy, ~0.4 ms for one person
                weight = moved_prior_weight(xy, xy if read_xy is None else read_xy, self.prior.weight)
                depth = self.prior.fuse(xy, confidence, depth, Camera(*image_size, fov_deg=NETWORK_FOV_DEG).focal,
                                        weight)
            depth = camera_depths(depth, self.spec.root, self.depth_scale)
        else:
            depth = depth_from_scale(xy, confidence, self.spec, camera.focal)
        return depth, lift_keypoints(xy, depth, camera)

    def blend_tracks(self, pose: PoseFrame) -> PoseFrame:
        """A tracked frame (each tracked frame in order) -> far people's root depth moved towards their
        body scale (:class:`FarDepthBlend`); the same frame when that layer is off."""
        return pose if self.far is None else self.far.update(pose)
