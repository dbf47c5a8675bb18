"""Pose-prior depth: each joint's depth relative to the hips, read from the person's 2-D pose.

A small network (:class:`posetracker.model.pose_prior.PosePriorNet`, run here in
numpy) sees one person's 2-D keypoints, centred on the hip midpoint and divided by
the torso's size in the image, and gives every joint's depth relative to the hip
midpoint. It is trained on 3-D poses seen by
random virtual cameras (``posetracker.train.pose_prior``: motion capture and the
3-D teacher's world poses), a source of depth independent of the depth head's
image features, so where the two disagree about which side is nearer, the mix
(:meth:`PosePrior.fuse`) is right more often than either alone. The prior also reads each pose mirrored
(x -> -x, left <-> right; trained so half the time) and averages the two readings, mirrored back, so that it reads
a pose and its mirror image alike; its share of the relative depth is ``UPPER_WEIGHT`` for the head, shoulders
and arms (where it reads better than the depth head) and ``weight`` for the hips, knees and ankles (more on the
hips slid stance feet)
(``studies/multiview-reference.md``, "The pose prior read mirrored").

Units: with ``s`` the torso's RMS distance (px) of shoulders and hips from the hip
midpoint, ``f`` the focal length (px) and ``Z`` the person's root depth (m),
the network's output ``y`` is relative depth / (Z s / f), i.e. in units of the
torso's size in metres, so ``dz = y Z s / f``.

Shapes: xy (P, K, 2) px, ok (P, K) bool, depth (P, K) m; inputs (P, (K - 1) * 3)
(per non-root joint: x, y, seen); outputs (P, K - 1).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from posetracker.skeletons import SkeletonSpec, load_skeleton
from posetracker.weights_file import MODELS_DIR, read_weights

FORMAT = "pose-prior-v1"
TORSO = ("left_shoulder", "right_shoulder", "left_hip", "right_hip")
LEGS = ("hip", "knee", "ankle")  # joint names ending so take ``weight``; the others ``UPPER_WEIGHT``
UPPER_WEIGHT = 0.7


class PosePriorError(RuntimeError):
    """A pose-prior weights file is missing, corrupt or does not fit the skeleton."""


def default_prior_path(skeleton: str = "human18") -> Path:
    return MODELS_DIR / f"pose-prior-{skeleton}.safetensors"


def has_torso(spec: SkeletonSpec) -> bool:
    return all(n in spec.joint_names for n in TORSO)


def prior_inputs(xy: np.ndarray, ok: np.ndarray, spec: SkeletonSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """xy (..., K, 2), ok (..., K) -> (inputs (..., (K-1)*3) float32, torso size s (...), torso seen (...)).

    Keypoints are centred on the hip midpoint and divided by ``s``; unseen joints read (0, 0, 0).
    Where the torso is not seen (any of its four joints), the inputs are meaningless (zeros).
    """
    ls, rs, lh, rh = (spec.index(n) for n in TORSO)
    torso = ok[..., [ls, rs, lh, rh]].all(-1)
    xy = np.where(ok[..., None], xy, 0.0).astype(np.float64)
    hip = 0.5 * (xy[..., lh, :] + xy[..., rh, :])
    s = np.sqrt(((xy[..., [ls, rs, lh, rh], :] - hip[..., None, :]) ** 2).sum(-1).mean(-1))
    torso &= s > 1e-6
    safe = np.where(torso, s, 1.0)
    z = (xy - hip[..., None, :]) / safe[..., None, None]
    z = np.where((ok & torso[..., None])[..., None], z, 0.0)
    seen = (ok & torso[..., None])[..., None].astype(np.float64)
    joints = [j for j in range(spec.num_joints) if j != spec.root]
    x = np.concatenate([z[..., joints, :], seen[..., joints, :]], -1)
    return x.reshape(*x.shape[:-2], -1).astype(np.float32), s, torso


def numpy_forward(state: dict[str, np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """The network of ``state`` (a PosePriorNet's state dict as numpy arrays) in eval mode as a numpy
    function: (P, (K-1)*3) float32 -> (P, K-1) float32. A missing layer raises KeyError."""
    p = {k: np.ascontiguousarray(v.T if k.endswith("weight") and v.ndim == 2 else v)
         for k, v in state.items()}  # Linear weights as (in, out)
    num_blocks = sum(1 for k in p if k.startswith("blocks.") and k.endswith(".0.weight"))
    blocks = [(p[f"blocks.{i}.0.weight"], p[f"blocks.{i}.0.bias"], p[f"blocks.{i}.1.weight"], p[f"blocks.{i}.1.bias"],
               p[f"blocks.{i}.4.weight"], p[f"blocks.{i}.4.bias"]) for i in range(num_blocks)]
    w_in, b_in, w_out, b_out = p["inp.weight"], p["inp.bias"], p["out.weight"], p["out.bias"]
    c = np.float32(np.sqrt(2.0 / np.pi))

    def forward(x: np.ndarray) -> np.ndarray:
        h = x @ w_in + b_in
        for g, b, w1, b1, w2, b2 in blocks:
            mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
            u = ((h - mu) / np.sqrt(var + 1e-5)) * g + b
            u = u @ w1 + b1
            u = 0.5 * u * (1.0 + np.tanh(c * (u + 0.044715 * u * u * u)))  # GELU, tanh form (as trained)
            h = h + (u @ w2 + b2)
        return h @ w_out + b_out

    return forward


class PosePrior:
    """A trained pose-prior network (its state dict as numpy arrays) and the mix of its depths with the
    depth head's."""

    def __init__(self, state: dict[str, np.ndarray], spec: SkeletonSpec, weight: float = 0.5,
                 min_confidence: float = 0.3, upper_weight: float = UPPER_WEIGHT, mirrored: bool = True):
        for w in (weight, upper_weight):
            if not 0.0 <= w <= 1.0:
                raise ValueError(f"pose prior weight must be in [0, 1], got {w}")
        n_in = (spec.num_joints - 1) * 3
        try:
            self.forward = numpy_forward(state)
            fits = has_torso(spec) and self.forward(np.zeros((1, n_in), np.float32)).shape == (1, spec.num_joints - 1)
        except (KeyError, ValueError) as exc:
            raise PosePriorError(f"the pose prior does not fit skeleton {spec.name}: {exc}") from None
        if not fits:
            raise PosePriorError(f"the pose prior does not fit skeleton {spec.name}")
        self.spec, self.min_confidence, self.mirrored = spec, min_confidence, mirrored
        legs = np.array([n.endswith(LEGS) for n in spec.joint_names])
        self.weight = np.where(legs, weight, upper_weight)  # (K,) the prior's share of each joint's relative depth
        self.mirror = np.asarray(spec.mirror_index)
        self.joints = [j for j in range(spec.num_joints) if j != spec.root]
        self.hips = [spec.index("left_hip"), spec.index("right_hip")]

    def relative_depth(self, xy: np.ndarray, ok: np.ndarray, root_depth: np.ndarray, focal: float) -> np.ndarray:
        """xy (P, K, 2) px, ok (P, K), root_depth (P,) m -> (P, K) m relative to the hip midpoint
        (root: 0); nan for people whose torso is not seen."""
        n = len(xy)
        if self.mirrored:  # and the mirror images (x -> -x, left <-> right), read in the same call
            xy = np.concatenate([xy, xy[:, self.mirror] * np.array([-1.0, 1.0])])
            ok = np.concatenate([ok, ok[:, self.mirror]])
        x, s, torso = prior_inputs(xy, ok, self.spec)
        s, torso = s[:n], torso[:n]
        out = np.full(ok[:n].shape, np.nan)
        if not torso.any():
            return out
        rows = np.flatnonzero(torso)
        y = np.zeros((len(rows), self.spec.num_joints))
        if self.mirrored:  # each joint's depth averaged with its mirror joint's in the mirror image
            both = self.forward(np.concatenate([x[:n][torso], x[n:][torso]]))
            y[:, self.joints] = both[:len(rows)]
            ym = np.zeros_like(y)
            ym[:, self.joints] = both[len(rows):]
            y = 0.5 * (y + ym[:, self.mirror])
        else:
            y[:, self.joints] = self.forward(x[torso])
        out[rows] = y * (root_depth[torso] * s[torso] / focal)[:, None]
        out[rows, self.spec.root] = 0.0
        return out

    def fuse(self, xy: np.ndarray, confidence: np.ndarray, depth: np.ndarray, focal: float,
             weight: np.ndarray | None = None) -> np.ndarray:
        """The depth head's depths (P, K) m -> the same with each joint's depth relative to the hip
        midpoint mixed with the prior's (``self.weight`` (K,) on the prior; ``weight`` (P, K) per joint where
        given); roots keep their depth, people whose torso is not seen are returned unchanged."""
        w = self.weight if weight is None else np.asarray(weight, np.float64)
        if len(depth) == 0 or (weight is None and not self.weight.any()):
            return depth
        root = depth[:, self.spec.root]
        prior = self.relative_depth(xy, confidence >= self.min_confidence, root, focal)
        hip = depth[:, self.hips].mean(1, keepdims=True)
        mixed = hip + (1.0 - w) * (depth - hip) + w * prior
        mixed[:, self.spec.root] = root
        return np.where(np.isfinite(prior), mixed, depth).astype(depth.dtype)


def load_pose_prior(path: str | Path | None = None, spec: SkeletonSpec | None = None, weight: float = 0.5) -> PosePrior:
    """The pose prior from its weights file (default: the shipped human18 one)."""
    path = Path(path) if path is not None else default_prior_path(spec.name if spec else "human18")
    meta, state = read_weights(path, PosePriorError, "pose prior weights", numpy=True)
    if meta.get("format") != FORMAT:
        raise PosePriorError(f"{path} is not a pose prior weights file (format {meta.get('format')!r})")
    spec = spec or load_skeleton(meta["skeleton"])
    if spec.name != meta["skeleton"]:
        raise PosePriorError(f"{path} is a {meta['skeleton']} pose prior; the model's skeleton is {spec.name}")
    return PosePrior(state, spec, weight)
