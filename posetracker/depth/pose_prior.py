"""Pose-prior depth: each joint's depth relative to the hips, read from the person's 2-D pose.

A small network (:class:`posetracker.model.pose_prior.PosePriorNet`, run here in
numpy) sees one person's 2-D keypoints, centred on the hip midpoint and divided by
the torso's size in the image, and gives every joint's depth relative to the hip
midpoint. It is trained on 3-D poses seen by
random virtual cameras (``posetracker.train.pose_prior``: motion capture and the
3-D teacher's world poses), a source of depth independent of the depth head's
image features, so where the two disagree about which side is nearer, the mix
(:meth:`PosePrior.fuse`) is right more often than either alone.

Units: with ``s`` the torso's RMS distance (px) of shoulders and hips from the hip
midpoint, ``f`` the focal length (px) and ``Z`` the person's root depth (m),
the network's output ``y`` is relative depth / (Z s / f), i.e. in units of the
torso's size in metres, so ``dz = y Z s / f``.

A prior trained with the camera's gravity (``gravity_dropout`` in the recipe) takes
:data:`GRAVITY_INPUTS` more inputs after the pose's (:func:`gravity_inputs`): the world's down
direction in the frame of the camera turned to look along the ray to the person's hips, and a flag
that it is known (all four zero where it is not).

Shapes: xy (P, K, 2) px, ok (P, K) bool, depth (P, K) m; inputs (P, (K - 1) * 3), or
(P, (K - 1) * 3 + 4) with the gravity (per non-root joint: x, y, seen); outputs (P, K - 1).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from posetracker.skeletons import SkeletonSpec, load_skeleton
from posetracker.weights_file import MODELS_DIR, read_weights

FORMAT = "pose-prior-v1"
TORSO = ("left_shoulder", "right_shoulder", "left_hip", "right_hip")
GRAVITY_INPUTS = 4  # the down direction seen along the ray to the person (3), known (1)


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


def gravity_inputs(down: np.ndarray | None, ray: np.ndarray) -> np.ndarray:
    """The camera's gravity as the prior's extra inputs: down (P, 3) the world's down direction in camera axes
    (x right, y down, z forward; any length; a row of nan, or None, where it is not known), ray (P, 3) the
    direction from the camera to the person's hip midpoint -> (P, 4) float32: ``down`` turned by the smallest
    rotation taking ``ray`` onto +z (the camera looking straight at the person: its pitch and roll there), then
    1; zeros where unknown."""
    ray = np.asarray(ray, np.float64)
    out = np.zeros((len(ray), GRAVITY_INPUTS), np.float32)
    if down is None:
        return out
    down = np.broadcast_to(np.asarray(down, np.float64), ray.shape)
    a = ray / np.linalg.norm(ray, axis=-1, keepdims=True)
    g = down / np.linalg.norm(down, axis=-1, keepdims=True)
    v = np.stack([a[:, 1], -a[:, 0], np.zeros(len(a))], -1)  # a x (0, 0, 1)
    c = a[:, 2:3]
    # Rodrigues: R g = g c' + (v x g) + v (v . g) / (1 + c), the rotation about v taking a onto +z
    turned = g * c + np.cross(v, g) + v * (v * g).sum(-1, keepdims=True) / (1.0 + c)
    known = np.isfinite(turned).all(-1) & (c[:, 0] > -1.0 + 1e-9)
    out[known, :3] = turned[known]
    out[known, 3] = 1.0
    return out


def level_view_inputs(xy: np.ndarray, ok: np.ndarray, down: np.ndarray | None, spec: SkeletonSpec) -> np.ndarray:
    """xy (P, K, 2) image points in focal-length units about the principal point, ok (P, K), down (P, 3) as in
    :func:`gravity_inputs` -> (P, (K-1)*2) float32: the pose as the camera turned level about its centre (pitch and
    roll undone, no yaw) sees it, centred and scaled as :func:`prior_inputs` does (its x, y); zeros where the
    gravity is unknown or the torso not seen there."""
    xy = np.asarray(xy, np.float64)
    out = np.zeros((len(xy), (spec.num_joints - 1) * 2), np.float32)
    if down is None or not len(xy):
        return out
    g = np.broadcast_to(np.asarray(down, np.float64), (len(xy), 3))
    g = g / np.linalg.norm(g, axis=-1, keepdims=True)
    v = np.stack([-g[:, 2], np.zeros(len(g)), g[:, 0]], -1)[:, None]  # g x (0, 1, 0)
    c = g[:, 1, None, None]
    rays = np.concatenate([xy, np.ones(xy.shape[:-1] + (1,))], -1)
    with np.errstate(invalid="ignore", divide="ignore"):  # Rodrigues, the turn taking g onto +y
        turned = rays * c + np.cross(v, rays) + v * (v * rays).sum(-1, keepdims=True) / (1.0 + c)
        level = turned[..., :2] / turned[..., 2:3]
    seen = ok & np.isfinite(level).all(-1) & (turned[..., 2] > 1e-6)
    x, _, torso = prior_inputs(np.where(seen[..., None], level, 0.0), seen, spec)
    x = x.reshape(len(x), -1, 3)[..., :2].reshape(len(x), -1)
    known = torso & np.isfinite(g).all(-1)
    out[known] = x[known]
    return out


def camera_gravity_inputs(xy: np.ndarray, ok: np.ndarray, down: np.ndarray | None, focal: float,
                          centre: tuple[float, float], spec: SkeletonSpec, level_view: bool) -> np.ndarray:
    """The extra inputs of a prior trained with the camera's gravity for people at xy (P, K, 2) px seen ok (P, K)
    by a camera of ``focal`` px and principal point ``centre`` px: :func:`gravity_inputs` (P, 4) along the ray to
    the root joint, then with ``level_view`` :func:`level_view_inputs` (P, (K-1)*2); down (P, 3) or (3,) or None."""
    xn = (np.asarray(xy, np.float64) - np.asarray(centre, np.float64)) / focal
    d = None if down is None else np.broadcast_to(np.asarray(down, np.float64), (len(xn), 3))
    ray = np.concatenate([xn[:, spec.root], np.ones((len(xn), 1))], -1)
    g = gravity_inputs(d, ray)
    return np.concatenate([g, level_view_inputs(xn, ok, d, spec)], -1) if level_view else g


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
                 min_confidence: float = 0.3):
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"pose prior weight must be in [0, 1], got {weight}")
        n_in = (spec.num_joints - 1) * 3
        #: the network's inputs after the pose's: 0, the camera's gravity (:func:`gravity_inputs`), or that and
        #: the level camera's view (:func:`level_view_inputs`)
        width = np.shape(state.get("inp.weight", (0, n_in)))[-1] - n_in
        self.extra_inputs = width if width in (GRAVITY_INPUTS, GRAVITY_INPUTS + (spec.num_joints - 1) * 2) else 0
        self.takes_gravity, self.level_view = self.extra_inputs > 0, self.extra_inputs > GRAVITY_INPUTS
        n_in += self.extra_inputs
        try:
            self.forward = numpy_forward(state)
            fits = has_torso(spec) and self.forward(np.zeros((1, n_in), np.float32)).shape == (1, spec.num_joints - 1)
        except (KeyError, ValueError) as exc:
            raise PosePriorError(f"the pose prior does not fit skeleton {spec.name}: {exc}") from None
        if not fits:
            raise PosePriorError(f"the pose prior does not fit skeleton {spec.name}")
        self.spec = spec
        self.weight, self.min_confidence = weight, min_confidence
        self.joints = [j for j in range(spec.num_joints) if j != spec.root]
        self.hips = [spec.index("left_hip"), spec.index("right_hip")]

    def relative_depth(self, xy: np.ndarray, ok: np.ndarray, root_depth: np.ndarray, focal: float,
                       gravity: np.ndarray | None = None) -> np.ndarray:
        """xy (P, K, 2) px, ok (P, K), root_depth (P,) m -> (P, K) m relative to the hip midpoint
        (root: 0); nan for people whose torso is not seen. gravity: (P, extra_inputs)
        :func:`camera_gravity_inputs`, read by a prior that takes them (None: not known)."""
        x, s, torso = prior_inputs(xy, ok, self.spec)
        out = np.full(ok.shape, np.nan)
        if not torso.any():
            return out
        if self.takes_gravity:
            g = np.zeros((len(x), self.extra_inputs), np.float32) if gravity is None else np.asarray(gravity, np.float32)
            x = np.concatenate([x, g], -1)
        y = self.forward(x[torso]).astype(np.float64)
        rows = np.flatnonzero(torso)
        out[rows[:, None], self.joints] = y * (root_depth[torso] * s[torso] / focal)[:, None]
        out[rows, self.spec.root] = 0.0
        return out

    def fuse(self, xy: np.ndarray, confidence: np.ndarray, depth: np.ndarray, focal: float,
             weight: np.ndarray | None = None, gravity: np.ndarray | None = None) -> np.ndarray:
        """The depth head's depths (P, K) m -> the same with each joint's depth relative to the hip
        midpoint mixed with the prior's (``weight`` on the prior; ``weight`` (P, K) per joint where given);
        roots keep their depth, people whose torso is not seen are returned unchanged. gravity: as in
        :meth:`relative_depth`."""
        w = self.weight if weight is None else np.asarray(weight, np.float64)
        if len(depth) == 0 or (weight is None and self.weight == 0.0):
            return depth
        root = depth[:, self.spec.root]
        prior = self.relative_depth(xy, confidence >= self.min_confidence, root, focal, gravity)
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
