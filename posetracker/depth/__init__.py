"""3-D people (method A step 9): the pinhole lift and the depth layers; numpy only.

- :mod:`.lift`        :class:`Camera`, :func:`lift_keypoints`
- :mod:`.pose_prior`  the pose-prior mix (numpy forward of ``model.pose_prior.PosePriorNet``)
- :mod:`.far_depth`   the far-people blend, per track
- :mod:`.scale_depth` root depth from body scale (the torso under a pinhole)
"""

from posetracker.depth.far_depth import FarDepthBlend
from posetracker.depth.lift import Camera, lift_keypoints
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
    "FarDepthBlend",
    "PosePrior",
    "PosePriorError",
    "default_prior_path",
    "depth_from_scale",
    "has_torso",
    "lift_keypoints",
    "load_pose_prior",
    "prior_inputs",
    "root_depth_from_scale",
]
