"""A pose prior trained with the camera's gravity as an input, run in the depth stage (study code).

studies/metres.md, "The pose prior trained with the camera's gravity as an input" (issues #46, #48). A prior trained
with ``gravity_dropout`` (``configs/pose_prior_gravity.yaml``; with ``level_view`` also the 2-D turned level,
``configs/pose_prior_gravity_view.yaml``) has a wider first layer: after the pose's inputs it reads
``posetracker.train.prior_gravity.camera_gravity_inputs`` (zeros: gravity unknown). :class:`GravityPosePrior` runs
it in numpy like the product's :class:`PosePrior`, :class:`GravityDepthEstimator` is the session's depth stage with
it, told the camera's down direction where known. ``single_view_replay.py`` (variant ``gravity:``) and
``single_view_compare.py --lifting --prior`` use them. Not in the product: against the shipped prior it made
PA-MPJPE worse in 2-4 of the 8 view-person cells of the 4-view trial, as a retrained prior without it does (the
page has the numbers).

Shapes: xy (P, K, 2) px, ok / confidence (P, K), depths (P, K) m; down (3,) camera axes (x right, y down, z forward);
gravity (P, extra_inputs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from posetracker.depth.estimator import DepthEstimator, moved_prior_weight
from posetracker.depth.lift import (
    NETWORK_FOV_DEG,
    Camera,
    camera_depths,
    joint_depths,
    lift_keypoints,
)
from posetracker.depth.pose_prior import (
    FORMAT,
    PosePrior,
    PosePriorError,
    numpy_forward,
    prior_inputs,
)
from posetracker.skeletons import SkeletonSpec
from posetracker.train.prior_gravity import GRAVITY_INPUTS, camera_gravity_inputs
from posetracker.weights_file import read_weights


class GravityPosePrior(PosePrior):
    """:class:`PosePrior` for a network that may take the gravity inputs after the pose's (``extra_inputs`` 0, 4, or
    4 + (K-1)*2 with the level view); ``gravity`` set before :meth:`fuse` is what it reads (None: unknown)."""

    def __init__(self, state: dict[str, np.ndarray], spec: SkeletonSpec, weight: float = 0.5,
                 min_confidence: float = 0.3):
        n_in = (spec.num_joints - 1) * 3
        self.extra_inputs = np.shape(state.get("inp.weight", (0, n_in)))[-1] - n_in
        if self.extra_inputs not in (0, GRAVITY_INPUTS, GRAVITY_INPUTS + (spec.num_joints - 1) * 2):
            raise PosePriorError(f"the pose prior's {self.extra_inputs} extra inputs are not the gravity's")
        self.takes_gravity, self.level_view = self.extra_inputs > 0, self.extra_inputs > GRAVITY_INPUTS
        # the base class checks the layers on the pose's inputs: its first layer cut to them
        super().__init__({**state, "inp.weight": state["inp.weight"][:, :n_in]}, spec, weight, min_confidence)
        self.forward_all = numpy_forward(state)
        self.gravity: np.ndarray | None = None

    def relative_depth(self, xy: np.ndarray, ok: np.ndarray, root_depth: np.ndarray, focal: float,
                       gravity: np.ndarray | None = None) -> np.ndarray:
        """:meth:`PosePrior.relative_depth` with the gravity inputs ``gravity`` (P, extra_inputs) (None:
        ``self.gravity``; where that is None too: unknown, zeros)."""
        g = self.gravity if gravity is None else gravity
        g = np.zeros((len(xy), self.extra_inputs), np.float32) if g is None else np.asarray(g, np.float32)
        x, s, torso = prior_inputs(xy, ok, self.spec)
        out = np.full(ok.shape, np.nan)
        if not torso.any():
            return out
        y = self.forward_all(np.concatenate([x, g], -1)[torso]).astype(np.float64)
        rows = np.flatnonzero(torso)
        out[rows[:, None], self.joints] = y * (root_depth[torso] * s[torso] / focal)[:, None]
        out[rows, self.spec.root] = 0.0
        return out


def load_gravity_prior(path: str | Path, spec: SkeletonSpec, weight: float = 0.5) -> GravityPosePrior:
    """A pose-prior weights file, with or without the gravity inputs."""
    meta, state = read_weights(Path(path), PosePriorError, "pose prior weights", numpy=True)
    if meta.get("format") != FORMAT or meta.get("skeleton") != spec.name:
        raise PosePriorError(f"{path} is not a {spec.name} pose prior")
    return GravityPosePrior(state, spec, weight)


class GravityDepthEstimator(DepthEstimator):
    """The session's depth stage (a trained depth head, :class:`DepthEstimator`) with ``prior`` told the camera's
    down direction ``down`` (3,) (None: unknown)."""

    def __init__(self, base: DepthEstimator, prior: GravityPosePrior, down: np.ndarray | None):
        self.__dict__.update(base.__dict__)
        self.prior, self.down = prior, None if down is None else np.asarray(down, np.float64)

    def estimate(self, xy: np.ndarray, confidence: np.ndarray, depth_reads: np.ndarray,
                 image_size: tuple[int, int], read_xy: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`DepthEstimator.estimate` (trained head, prior on) with the gravity inputs of each person."""
        camera = Camera(*image_size, fov_deg=self.fov_deg)
        depth = joint_depths(depth_reads, self.path)
        weight = None if read_xy is None else moved_prior_weight(xy, read_xy, self.prior.weight)
        self.prior.gravity = None
        if self.down is not None and self.prior.takes_gravity:
            self.prior.gravity = camera_gravity_inputs(xy, confidence >= self.prior.min_confidence, self.down,
                                                       camera.focal, camera.principal_point, self.spec,
                                                       self.prior.level_view)
        depth = self.prior.fuse(xy, confidence, depth, Camera(*image_size, fov_deg=NETWORK_FOV_DEG).focal, weight)
        depth = camera_depths(depth, self.spec.root, self.depth_scale)
        return depth, lift_keypoints(xy, depth, camera)
