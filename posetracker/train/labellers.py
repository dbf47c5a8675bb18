"""Label makers: our own pipeline, and the BlazePose + MoveNet Thunder ensemble.

- :class:`PipelineTeacher`: the shipped PoseNet through ``TrackingSession``
  (per frame, no tracking: :mod:`.clip_labels` tracks and smooths afterwards).
  2-D keypoints and the root depth from the person's scale; no world pose.
- :class:`TeacherEnsemble`: person boxes from the pipeline; 2-D from MoveNet
  Thunder on each box (kept when it agrees with the pipeline's person, OKS >=
  ``min_agreement``); depth and world from BlazePose GHUM on the same boxes.

Depth from BlazePose (:func:`solve_translation`): its world landmarks W_j
(metres, hip-centred, image-aligned axes: x right, y down, z away from the
camera) are a rigid copy of the person in camera space up to a translation
t. With a pinhole camera (focal f from the FOV across the long side, principal point
c = image centre) the landmark j at W_j + t projects to its 2-D landmark
(u_j, v_j), which is linear in t:

    f tx - (u_j - cx) tz = (u_j - cx) Z_j - f X_j
    f ty - (v_j - cy) tz = (v_j - cy) Z_j - f Y_j

weighted least squares over the 33 landmarks (weight = visibility) gives
t; joint depth = tz + Z_j (the person's metric size fixes tz).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
from torch import nn

from posetracker.decoding.encode import fill_virtual_joints
from posetracker.model.network import PoseNet
from posetracker.model.temporal import TemporalBlock
from posetracker.model.weights import weights_key
from posetracker.oks import joint_sigmas, keypoint_bbox_area, oks
from posetracker.session import (
    MotionSettings, NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession,
)
from posetracker.train.clip_labels import PersonLabel

THUNDER_JSON = Path(__file__).resolve().parents[3] / "shared" / "pretrained" / "movenet" / "movenet-thunder.json"


def focal_from_fov(long_side: int, fov_deg: float = 60.0) -> float:
    """Focal length in px of a camera with field of view ``fov_deg`` across the frame's long side (the
    product's convention, ``depth.lift``)."""
    return 0.5 * long_side / math.tan(math.radians(fov_deg) / 2.0)


def solve_translation(world: np.ndarray, xy: np.ndarray, weight: np.ndarray, focal: float,
                      centre: tuple[float, float], z_sign: float = 1.0) -> np.ndarray:
    """Camera-space translation (3,) of a root-relative skeleton so that it projects onto ``xy``.

    world: (J, 3) m; xy: (J, 2) px; weight: (J,) >= 0 (0 = ignore); z_sign flips the
    skeleton's z axis (+1: z away from the camera). nan where fewer than 3 usable points.
    """
    w = np.sqrt(np.clip(np.nan_to_num(weight), 0, None))
    ok = (w > 0) & np.isfinite(world).all(1) & np.isfinite(xy).all(1)
    if ok.sum() < 3:
        return np.full(3, np.nan)
    x, y, z = world[ok, 0], world[ok, 1], z_sign * world[ok, 2]
    du, dv = xy[ok, 0] - centre[0], xy[ok, 1] - centre[1]
    n = int(ok.sum())
    a = np.zeros((2 * n, 3))
    a[:n, 0], a[:n, 2] = focal, -du
    a[n:, 1], a[n:, 2] = focal, -dv
    b = np.concatenate([du * z - focal * x, dv * z - focal * y])
    ww = np.concatenate([w[ok], w[ok]])
    t, *_ = np.linalg.lstsq(a * ww[:, None], b * ww, rcond=None)
    return t


def project(points: np.ndarray, focal: float, centre: tuple[float, float]) -> np.ndarray:
    """(..., 3) camera-space m -> (..., 2) px."""
    return focal * points[..., :2] / points[..., 2:3] + np.asarray(centre)


class PipelineTeacher:
    """Labels from our own pipeline run as the image model: per frame, temporal block off.

    2-D + root depth (from the depth head when ``with_depth``, else NaN). The name, part of
    every label cache key, hashes only the weights the labels depend on (backbone, 2-D heads
    and, with depth, the depth head), so training the temporal block or shipping new weights
    with the same 2-D parts keeps the cache valid.
    """

    def __init__(self, net: PoseNet, min_confidence: float = 0.3, score_threshold: float = 0.2,
                 threads: int = 1, with_depth: bool = True):
        self.spec = net.spec
        self.with_depth = with_depth
        image_model = copy.deepcopy(net)
        image_model.temporal = TemporalBlock(image_model.temporal.channels)  # untrained: an exact pass-through
        used = nn.ModuleDict({"backbone": image_model.backbone, **{
            f"heads_{k}": m for k, m in image_model.heads.named_children() if with_depth or k != "depth"}})
        self.name = f"pipeline-{weights_key(used)[:10]}"
        # pinned: the bottom-up network alone, one read of the whole frame (not the offline defaults, which
        # add the precision stage and, for still images, tiles: labels must not move when those change)
        cfg = SessionConfig(mode="offline", network=NetworkSettings(threads=threads),
                            people=PeopleSettings(track=False, score_threshold=score_threshold),
                            refine=RefineSettings(refiners=(), tile_grid=1), motion=MotionSettings(smoothing=False))
        self.session = TrackingSession(image_model, cfg)
        self.min_confidence = min_confidence

    def label_frame(self, rgb: np.ndarray) -> list[PersonLabel]:
        pose = self.session.process_image(rgb)
        k, root = self.spec.num_joints, self.spec.root
        out = []
        for p in range(pose.num_people):
            conf = pose.confidence[p].astype(np.float64)
            depth = np.full(k, np.nan)
            if self.with_depth:
                depth[root] = pose.keypoints[p, root, 2]
            out.append(PersonLabel(pose.keypoints[p, :, :2].astype(np.float64), conf >= self.min_confidence,
                                   depth, np.full((k, 3), np.nan), conf))
        return out


def person_box(label: PersonLabel, margin: float = 0.1) -> np.ndarray | None:
    """(4,) xyxy px around the visible joints, grown by ``margin`` of its size per side; None if < 3 joints."""
    pts = label.xy[label.visible & np.isfinite(label.xy).all(1)]
    if len(pts) < 3:
        return None
    lo, hi = pts.min(0), pts.max(0)
    pad = margin * np.maximum(hi - lo, 16.0)
    return np.concatenate([lo - pad, hi + pad])


def _oks(a: np.ndarray, a_ok: np.ndarray, b: np.ndarray, b_ok: np.ndarray, sigmas: np.ndarray) -> float:
    """OKS of two (K, 2) people over the joints known in both; area: ``a``'s keypoint box, at least 32^2 px^2."""
    area = max(float(keypoint_bbox_area(a[None], a_ok[None])[0]), 32.0**2)
    return float(oks(((a - b) ** 2).sum(-1), area, sigmas, a_ok & b_ok))


class TeacherEnsemble:
    """Pipeline boxes -> Thunder 2-D + BlazePose depth/world; teachers that do not import are skipped."""

    def __init__(self, net: PoseNet, blazepose: str | None = "full", thunder_json: str | Path | None = THUNDER_JSON,
                 fov_deg: float = 60.0, min_agreement: float = 0.3, min_presence: float = 0.5, threads: int = 1):
        self.base = PipelineTeacher(net, threads=threads, with_depth=False)  # boxes and matching only
        self.spec = net.spec
        self.fov_deg, self.min_agreement, self.min_presence = fov_deg, min_agreement, min_presence
        self.sigmas = joint_sigmas(self.spec)
        self.blaze = _load_blazepose(blazepose) if blazepose else None
        self.thunder = _load_thunder(thunder_json) if thunder_json else None
        parts = [self.base.name] + ([f"blazepose-{blazepose}"] if self.blaze else []) + (["thunder"] if self.thunder else [])
        self.name = "+".join(parts) + f"-fov{fov_deg:g}long"  # across the long side (before: the width)

    def label_frame(self, rgb: np.ndarray) -> list[PersonLabel]:
        people = self.base.label_frame(rgb)
        boxes = [person_box(p) for p in people]
        keep = [i for i, b in enumerate(boxes) if b is not None]
        if self.thunder is not None:
            for i in keep:
                self._thunder_2d(rgb, people[i], boxes[i])
        if self.blaze is not None and keep:
            found = self.blaze.predict_crops(rgb, np.stack([boxes[i] for i in keep]), keep_absent=True)
            for i, bp in zip(keep, found):
                self._blaze_depth(rgb.shape, people[i], bp)
        return people

    def _thunder_2d(self, rgb: np.ndarray, person: PersonLabel, box: np.ndarray) -> None:
        kp = self.thunder.predict_person(rgb, box).astype(np.float64)  # (17, 3) x, y, score
        k = self.spec.num_joints
        xy = np.full((k, 2), np.nan)
        conf = np.zeros(k)
        xy[:17], conf[:17] = kp[:, :2], kp[:, 2]
        vis = conf >= self.base.min_confidence
        if _oks(xy, vis, person.xy, person.visible, self.sigmas) < self.min_agreement:
            return  # Thunder locked onto someone else in the crop: keep the pipeline's 2-D
        xy, _ = fill_virtual_joints(xy[None], self.spec, vis[None])
        root = self.spec.root
        conf[root], vis[root] = conf[:17].max(), vis.any()
        person.xy, person.confidence, person.visible = xy[0], conf, vis

    def _blaze_depth(self, shape: tuple[int, ...], person: PersonLabel, bp) -> None:
        from posetracker.train.teachers.mapping import blazepose_to_human18

        if bp.presence < self.min_presence:
            return
        h, w = shape[:2]
        focal, centre = focal_from_fov(max(w, h), self.fov_deg), (w / 2.0, h / 2.0)
        lm_vis = bp.landmarks[:, 3]
        t = solve_translation(bp.world, bp.landmarks[:, :2], lm_vis, focal, centre)
        if not np.isfinite(t).all() or t[2] <= 0.2:
            return
        xy_bp, vis_bp = blazepose_to_human18(bp.landmarks[:, :2], lm_vis, self.spec)
        if _oks(xy_bp, vis_bp >= 0.5, person.xy, person.visible, self.sigmas) < self.min_agreement:
            return  # BlazePose found a different person in the box
        world, _ = blazepose_to_human18(bp.world, lm_vis, self.spec)
        person.world = world
        person.depth_m = t[2] + world[:, 2]


def _load_blazepose(variant: str):
    try:
        from posetracker.train.teachers.blazepose import BlazePoseTeacher

        return BlazePoseTeacher(variant)
    except (ImportError, FileNotFoundError, OSError) as exc:
        print(f"BlazePose teacher unavailable ({exc}); depth from the pipeline only")
        return None


def _load_thunder(json_path: str | Path):
    try:
        from posetracker.train.teachers.movenet_thunder import ThunderTeacher

        return ThunderTeacher(json_path)
    except (ImportError, FileNotFoundError, OSError) as exc:
        print(f"Thunder teacher unavailable ({exc}); 2-D from the pipeline")
        return None
