"""3-D people (method A step 9): depth along the skeleton tree, then the pinhole lift; numpy only.

The session builds one :class:`DepthEstimator` from its config and calls it once per
frame (``estimate``) and once per tracked frame (``blend_tracks``)::

    DecodedPeople.depth_reads (P, 1+E) m      the depth head read by the decoder: root depth,
                                              then depth(child) - depth(parent) of each edge
      -> joint_depths                 (P, K) m     root + the differences along the path (core)
      -> [pose prior] PosePrior.fuse  (P, K) m     joint depths relative to the hips mixed with a
                                                   prior learnt from 3-D poses (``pose_prior``)
      -> lift_keypoints + Camera      (P, K, 3) m  camera-space xyz, with xy (P, K, 2) source px
      ... tracking (ids) ...
      -> [far people] FarDepthBlend   PoseFrame    root depth of far tracks moved towards their
                                                   body scale (``far_depth``)

Without a trained depth head the body-scale layer (:func:`depth_from_scale`) gives each
person the depth of its torso's size instead, and the two other layers are off. The
switches are ``DepthSettings.pose_prior``, ``far_depth`` and ``fov_deg`` (the camera).

- :mod:`.lift`        the core: :func:`joint_depths`, :class:`Camera`, :func:`lift_keypoints`
- :mod:`.pose_prior`  the pose-prior layer (numpy forward of ``model.pose_prior.PosePriorNet``)
- :mod:`.far_depth`   the far-people layer, per track
- :mod:`.scale_depth` the body-scale layer (root depth from the torso under a pinhole)
- :mod:`.estimator`   :class:`DepthEstimator`, the layers put together
"""

from posetracker.depth.estimator import DepthEstimator
from posetracker.depth.far_depth import FarDepthBlend
from posetracker.depth.lift import Camera, joint_depths, lift_keypoints
from posetracker.depth.pose_prior import (
    PosePrior,
    PosePriorError,
    default_prior_path,
    has_torso,
    load_pose_prior,
    prior_inputs,
)
from posetracker.depth.scale_depth import depth_from_scale, root_depth_from_scale

__all__ = [
    "Camera",
    "DepthEstimator",
    "FarDepthBlend",
    "PosePrior",
    "PosePriorError",
    "default_prior_path",
    "depth_from_scale",
    "has_torso",
    "joint_depths",
    "lift_keypoints",
    "load_pose_prior",
    "prior_inputs",
    "root_depth_from_scale",
]
