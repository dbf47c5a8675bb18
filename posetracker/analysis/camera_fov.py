"""The camera's field of view from the people of an offline clip, where the file does not say it.

What the people can tell. The depth head reads each person's distance as the network's
60-degree camera would see them (their apparent size) and the joints' depths relative to
the root in metres (:mod:`posetracker.depth.lift`). Another field of view moves everyone
nearer or farther; it changes neither their metric size nor their bone lengths (on the
three clips of ``studies/camera-fov.md`` stature moves 1-5 % and bone-length CV
under 0.01 over 30-100 degrees): size and rigidity cannot find the camera.

What can: upright people are parallel. A standing person's body axis (mid-ankles to
mid-shoulders) points along gravity wherever they are in the image. Lifted with the wrong
focal length f' instead of f, a body whose head is nearer the camera than its feet by
``dz`` (a camera looking down at them) leans sideways by ``u dz (1/f' - 1/f)`` at image
offset ``u`` from the centre (and likewise up / down): the axes fan out across the image.
The estimate is the field of view on a grid (default 30-100 degrees, every 2) that makes
the body axes of upright person-frames most parallel: the least spherical variance
``1 - |mean of the unit axes|``.

It needs a camera that looks down or up at the people (with a level camera ``dz`` is 0 and
every field of view fits) and people seen across the image. Whether the clip fixes it is
tested, not assumed: person-frames are resampled in blocks of ``block`` frames (bootstrap)
and the estimate is used only if the optimum is inside the grid and the central 90 % of
the resampled optima spans at most ``max_interval_deg``; otherwise the field of view is
the default, 60 degrees, with the reason. The person-frames used are chosen in the image
(ankles, hips and shoulders sure, the 2-D axis within ``max_image_tilt_deg`` of vertical,
shoulders above hips above ankles), so the selection does not depend on the candidate.

Shapes: T frames, K joints, M person-frames, G grid points, B bootstrap draws.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from posetracker.depth.camera_meta import CameraFov
from posetracker.depth.lift import NETWORK_FOV_DEG, Camera, camera_depths, depth_scale
from posetracker.skeletons import SkeletonSpec
from posetracker.tracks import PersonTrack, person_tracks
from posetracker.types import PoseSequence

DEFAULT_FOV_DEG = NETWORK_FOV_DEG


class FovError(ValueError):
    """Input the field-of-view estimate cannot use (bad settings, shapes or image size)."""


@dataclass(frozen=True)
class FovSettings:
    """grid: candidate fields of view (degrees across the long side); the rest: see the module docstring."""

    grid: tuple[float, ...] = tuple(float(v) for v in range(30, 101, 2))
    min_confidence: float = 0.5
    max_image_tilt_deg: float = 25.0
    min_person_frames: int = 60
    block: int = 15
    draws: int = 200
    max_interval_deg: float = 12.0
    seed: int = 0

    def check(self) -> None:
        g = np.asarray(self.grid, np.float64)
        if g.ndim != 1 or len(g) < 3 or not np.all(np.diff(g) > 0) or g[0] <= 0 or g[-1] >= 180:
            raise FovError(f"grid must be >= 3 increasing values in (0, 180), got {self.grid}")
        if self.block < 1 or self.draws < 10 or self.min_person_frames < 2:
            raise FovError("block >= 1, draws >= 10 and min_person_frames >= 2 are needed")


@dataclass
class FovEstimate:
    """fov_deg: the estimate, or DEFAULT_FOV_DEG when not ``estimated`` (``reason`` says why); interval: (lo, hi)
    degrees, the central 90 % of the bootstrap optima; grid (G,) and cost (G,): the spherical variance of the
    body axes at each candidate; person_frames: M."""

    fov_deg: float
    estimated: bool
    reason: str
    interval: tuple[float, float] = (float("nan"), float("nan"))
    grid: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cost: np.ndarray = field(default_factory=lambda: np.zeros(0))
    person_frames: int = 0

    def camera_fov(self) -> CameraFov:
        if self.estimated:
            lo, hi = self.interval
            return CameraFov(self.fov_deg, "estimated", f"upright people parallel: {self.fov_deg:g} deg, 90 % "
                             f"interval {lo:g}-{hi:g} over {self.person_frames} person-frames")
        return CameraFov(DEFAULT_FOV_DEG, "default", f"not estimated: {self.reason}")


def relift(keypoints: np.ndarray, root: int, image_size: tuple[int, int], fov_from: float, fov_to: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """Joints lifted with ``fov_from`` -> as lifted with ``fov_to`` (the root's distance scales, the relief stays).

    keypoints: (..., K, 3) x, y px and depth m -> (depth (..., K), world (..., K, 3) camera-space m), float64.
    """
    kp = np.asarray(keypoints, np.float64)
    depth = camera_depths(kp[..., 2], root, depth_scale(fov_to) / depth_scale(fov_from))
    return depth, Camera(*image_size, fov_deg=fov_to).to_camera(kp[..., :2], depth)


def _joints(spec: SkeletonSpec) -> tuple[list[int], list[int], list[int]]:
    try:
        return ([spec.index(f"{s}_ankle") for s in ("left", "right")], [spec.index(f"{s}_hip") for s in ("left", "right")],
                [spec.index(f"{s}_shoulder") for s in ("left", "right")])
    except KeyError:
        raise FovError(f"skeleton {spec.name!r} has no ankles, hips and shoulders (upright people fix it)") from None


def upright_frames(track: PersonTrack, spec: SkeletonSpec, settings: FovSettings) -> np.ndarray:
    """(T,) bool: frames where the person stands upright in the image (see the module docstring)."""
    ankles, hips, shoulders = _joints(spec)
    conf = track.confidence[:, ankles + hips + shoulders]
    xy = track.keypoints[..., :2]
    ok = (conf >= settings.min_confidence).all(1) & np.isfinite(track.keypoints[:, ankles + hips + shoulders]).all((1, 2))
    a, h, s = (xy[:, j].mean(axis=1) for j in (ankles, hips, shoulders))  # nan where unknown: not ok
    up = s - a
    with np.errstate(invalid="ignore"):
        tilt = np.degrees(np.arctan2(np.abs(up[:, 0]), -up[:, 1]))
        order = (s[:, 1] < h[:, 1]) & (h[:, 1] < a[:, 1])
    return ok & order & (tilt <= settings.max_image_tilt_deg)


def _axes(kp: np.ndarray, root: int, image_size: tuple[int, int], fov_from: float, fov: float,
          ankles: list[int], shoulders: list[int]) -> np.ndarray:
    """kp (M, K, 3) -> (M, 3) unit body axes (mid-ankles -> mid-shoulders) lifted with ``fov``."""
    _, world = relift(kp, root, image_size, fov_from, fov)
    v = world[:, shoulders].mean(1) - world[:, ankles].mean(1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _cost(axes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """axes (G, M, 3), weights (..., M) -> (..., G) spherical variance 1 - |weighted mean axis|."""
    mean = np.einsum("...m,gmc->...gc", weights, axes) / weights.sum(-1)[..., None, None]
    return 1.0 - np.linalg.norm(mean, axis=-1)


def estimate_fov(tracks: dict[int, PersonTrack], spec: SkeletonSpec, image_size: tuple[int, int],
                 fov_used: float = DEFAULT_FOV_DEG, settings: FovSettings | None = None) -> FovEstimate:
    """The field of view (degrees across the long side) that makes the upright people parallel (module docstring).

    tracks: {id: PersonTrack} whose keypoints' depths were lifted with ``fov_used``; image_size: (W, H) px.
    Never raises for data that cannot give an estimate (the default is returned with the reason);
    raises FovError for bad settings, an image size that is not positive or a skeleton without the joints.
    """
    settings = settings or FovSettings()
    settings.check()
    w, h = image_size
    if w <= 0 or h <= 0:
        raise FovError(f"image size must be positive, got {image_size}")
    ankles, _, shoulders = _joints(spec)
    kps, blocks = [], []
    for tid, tr in tracks.items():
        rows = np.flatnonzero(upright_frames(tr, spec, settings))
        kps.append(tr.keypoints[rows])
        blocks.append(tid * 1_000_000 + rows // settings.block)
    grid = np.asarray(settings.grid, np.float64)
    kp = np.concatenate(kps) if kps else np.zeros((0, spec.num_joints, 3))
    m = len(kp)
    if m < settings.min_person_frames:
        return FovEstimate(DEFAULT_FOV_DEG, False, f"{m} upright person-frames with ankles, hips and shoulders sure "
                           f"(need {settings.min_person_frames})", grid=grid, person_frames=m)
    axes = np.stack([_axes(kp, spec.root, image_size, fov_used, g, ankles, shoulders) for g in grid])  # (G, M, 3)
    cost = _cost(axes, np.ones(m))
    best = int(np.argmin(cost))
    _, block_of = np.unique(np.concatenate(blocks), return_inverse=True)
    nb = int(block_of.max()) + 1
    rng = np.random.default_rng(settings.seed)
    counts = np.stack([np.bincount(rng.integers(0, nb, nb), minlength=nb) for _ in range(settings.draws)])  # (B, nb)
    optima = grid[np.argmin(_cost(axes, counts[:, block_of].astype(np.float64)), axis=1)]  # (B,)
    lo, hi = (float(v) for v in np.percentile(optima, [5, 95]))
    est = FovEstimate(float(grid[best]), True, "", (lo, hi), grid, cost, m)
    if best in (0, len(grid) - 1):
        est.reason = (f"the people fit best at the end of the {grid[0]:g}-{grid[-1]:g} degree grid ({grid[best]:g}): "
                      "no optimum inside it (a level camera, or people not upright)")
    elif hi - lo > settings.max_interval_deg:
        est.reason = (f"the people do not fix it: {grid[best]:g} deg but 90 % of resampled clips give {lo:g}-{hi:g} "
                      f"(at most {settings.max_interval_deg:g} deg wide)")
    if est.reason:
        est.estimated, est.fov_deg = False, DEFAULT_FOV_DEG
    return est


def relift_sequence(seq: PoseSequence, fov_from: float, fov_to: float) -> PoseSequence:
    """The sequence as lifted with ``fov_to`` instead of ``fov_from``: keypoints' depths and world recomputed
    (:func:`relift`; world was rigid per bone: call :func:`posetracker.tracking.bones.rigid_tracks` again)."""
    frames = []
    for f in seq.frames:
        if f.num_people == 0:
            frames.append(f)
            continue
        depth, world = relift(f.keypoints, seq.skeleton.root, f.image_size, fov_from, fov_to)
        kp = f.keypoints.copy()
        kp[..., 2] = depth
        frames.append(dataclasses.replace(f, keypoints=kp.astype(np.float32),
                                          world=None if f.world is None else world.astype(np.float32)))
    return dataclasses.replace(seq, frames=frames)


def estimate_from_sequence(seq: PoseSequence, fov_used: float = DEFAULT_FOV_DEG,
                           settings: FovSettings | None = None) -> FovEstimate:
    """:func:`estimate_fov` over every tracked person of ``seq`` (the default with the reason when there is none,
    or when the skeleton has no ankles, hips and shoulders: an animal's)."""
    from posetracker.tracks import TrackError

    try:
        _joints(seq.skeleton)
        tracks = person_tracks(seq)
    except (TrackError, FovError) as exc:
        return FovEstimate(DEFAULT_FOV_DEG, False, str(exc))
    return estimate_fov(tracks, seq.skeleton, seq.frames[0].image_size, fov_used, settings)


def fov_after_tracking(seq: PoseSequence, fov_used: float, rigid_bones: bool = True,
                       settings: FovSettings | None = None) -> tuple[PoseSequence, CameraFov]:
    """``--fov auto`` where the file has no tags: the people's estimate of a sequence tracked with ``fov_used``.
    Returns the sequence re-lifted with the estimate (bones made rigid again when ``rigid_bones``) and its
    :class:`CameraFov`; the sequence unchanged and ``fov_used`` as the default with the reason when the
    people do not fix it."""
    from posetracker.tracking.bones import rigid_tracks

    est = estimate_from_sequence(seq, fov_used, settings)
    if not est.estimated:
        return seq, CameraFov(fov_used, "default", f"not estimated: {est.reason}")
    if est.fov_deg != fov_used:
        seq = relift_sequence(seq, fov_used, est.fov_deg)
        if rigid_bones:
            seq = dataclasses.replace(seq, frames=rigid_tracks(seq.frames, seq.skeleton, on_rays=True))
    return seq, est.camera_fov()


__all__ = ["DEFAULT_FOV_DEG", "FovError", "FovEstimate", "FovSettings", "estimate_fov", "estimate_from_sequence",
           "fov_after_tracking",
           "relift", "relift_sequence", "upright_frames"]
