"""Teacher keypoint layouts -> our skeletons.

BlazePose's 33 landmarks (MediaPipe pose_landmark_topology) map onto human18
(COCO-17 + a body centre) through one table; the centre is not a BlazePose
landmark but the skeleton's virtual joint, computed by its own rule
(human18: ``bbox_centre`` of the visible mapped joints), exactly as labels
from annotated data get it.
"""

from __future__ import annotations

import numpy as np

from posetracker.decoding.encode import fill_virtual_joints
from posetracker.skeletons import SkeletonSpec, load_skeleton

BLAZEPOSE_33 = (
    "nose", "left_eye_inner", "left_eye", "left_eye_outer", "right_eye_inner", "right_eye",
    "right_eye_outer", "left_ear", "right_ear", "mouth_left", "mouth_right", "left_shoulder",
    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_pinky",
    "right_pinky", "left_index", "right_index", "left_thumb", "right_thumb", "left_hip", "right_hip",
    "left_knee", "right_knee", "left_ankle", "right_ankle", "left_heel", "right_heel",
    "left_foot_index", "right_foot_index",
)

# human18 joint name -> BlazePose landmark index (the only table; the centre is virtual).
BLAZEPOSE_TO_HUMAN18: dict[str, int] = {
    "nose": 0,
    "left_eye": 2, "right_eye": 5,
    "left_ear": 7, "right_ear": 8,
    "left_shoulder": 11, "right_shoulder": 12,
    "left_elbow": 13, "right_elbow": 14,
    "left_wrist": 15, "right_wrist": 16,
    "left_hip": 23, "right_hip": 24,
    "left_knee": 25, "right_knee": 26,
    "left_ankle": 27, "right_ankle": 28,
}


def blazepose_to_human18(points: np.ndarray, visibility: np.ndarray | None = None,
                         spec: SkeletonSpec | None = None,
                         min_visibility: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """BlazePose points -> human18 points and visibility scores.

    points: (33, D) or (P, 33, D) with D = 2 (image px) or 3 (x, y, depth or world metres);
    visibility: (33,) / (P, 33) sigmoid scores or None (= all 1).
    Returns points (P, 18, D) float64 and visibility (P, 18) float64 (leading P dropped when the
    input had none). The centre is the skeleton's virtual rule over the mapped joints whose
    visibility is >= ``min_visibility``; its score is the best score among them (0 when none,
    and its coordinates are then nan).
    """
    spec = spec if spec is not None else load_skeleton("human18")
    pts = np.asarray(points, np.float64)
    single = pts.ndim == 2
    if single:
        pts = pts[None]
    if pts.ndim != 3 or pts.shape[1] != len(BLAZEPOSE_33) or pts.shape[2] not in (2, 3):
        raise ValueError(f"expected (P, 33, 2|3) BlazePose points, got {np.shape(points)}")
    vis = np.ones(pts.shape[:2]) if visibility is None else np.asarray(visibility, np.float64).reshape(pts.shape[:2])
    k = spec.num_joints
    out = np.full((pts.shape[0], k, pts.shape[2]), np.nan)
    out_vis = np.zeros((pts.shape[0], k))
    for j, name in enumerate(spec.joint_names):
        if j in spec.virtual:
            continue
        if name not in BLAZEPOSE_TO_HUMAN18:
            raise ValueError(f"skeleton {spec.name!r}: no BlazePose landmark for joint {name!r}")
        out[:, j] = pts[:, BLAZEPOSE_TO_HUMAN18[name]]
        out_vis[:, j] = vis[:, BLAZEPOSE_TO_HUMAN18[name]]
    seen = out_vis >= min_visibility
    depth = out[..., 2] if out.shape[2] == 3 else None
    xy, z = fill_virtual_joints(out[..., :2], spec, seen, depth)
    out[..., :2] = xy
    if z is not None:
        out[..., 2] = z
    labelled = list(spec.labelled_joints)
    for j in spec.virtual:
        masked = np.where(seen[:, labelled], out_vis[:, labelled], 0.0)
        out_vis[:, j] = masked.max(axis=1)
    return (out[0], out_vis[0]) if single else (out, out_vis)
