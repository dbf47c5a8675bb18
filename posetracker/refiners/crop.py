"""The precision stage (``crop``): a top-down single-person network on a crop around each person.

The bottom-up network finds everyone at once at 256 px for the whole frame, so a
person 100 px tall in a 1080p frame spans ~6 feature cells. This stage cuts a
square crop around each person it found, from the full-resolution frame, and
runs MoveNet SinglePose Thunder (:mod:`posetracker.model.thunder`) on it:

1. box = the person's joints with confidence >= ``box_confidence`` (all joints
   if fewer than ``min_joints``), as decoded in source pixels;
2. crop = that box's centre, side ``expand`` x its longer side, zero-padded
   outside the frame, resized to 256 x 256 (``crop_around_box``);
3. Thunder's own decode gives (x, y, score) per COCO-17 joint, mapped back to
   source pixels;
4. agreement: Thunder reads the most central person of the crop; in a crowd that
   can be a neighbour. Where the two readings share at least ``min_joints_agree``
   joints confident (>= 0.3) in both and their OKS over those is below
   ``min_agreement`` (0.1: only a reading of someone else; 0.3 also refused
   good corrections, AP 0.705 -> 0.695 on the labelled photos, 0.1 gives 0.706),
   the person keeps the bottom-up joints (as the teacher ensemble does,
   ``train.labellers``), so their joints do not jump to a neighbour. (Tracks
   link people by their bottom-up joints either way: ``TrackingSession._track``.)
5. fusion: those joints are replaced by Thunder's, with Thunder's score as their
   confidence (replacing measured better than keeping the more confident of the
   two or averaging them by confidence: ``studies/crop-stage.md``);
   joints Thunder does not predict (the body centre) keep theirs, and so does a
   joint Thunder scores below ``keep_below`` (0.05: it does not see it) where the
   bottom-up network is more confident (CrowdPose: knees Thunder reads at
   0.01-0.04 far from the right place).

All the people of a frame go through the network as one batch. A per-frame time
budget (``budget_ms``, given by the session in live mode) limits how many people
are refined: as many as the running cost per crop allows, at least one; people
never refined first, then the longest since their last refinement, then the
least certain (lowest mean joint confidence).

Carried corrections (live, with a budget): the stage corrects the bottom-up
joints rather than replacing them, and each person's correction is carried
between frames and low-passed. Each person leaves an entry (its box, the
correction ``refined - bottom-up`` per joint in units of the box side, the
refined confidences); a person of a later frame whose box overlaps an entry's
(IoU >= ``carry_iou``, best first, one entry per person) continues it:

- refined again: correction = ``carry_smoothing`` x the carried one +
  (1 - ``carry_smoothing``) x this frame's (confidences likewise), except a
  joint whose correction jumps by more than ``apart`` (0.1) box sides: that
  one takes this frame's as it is;
- not refined this frame: the carried correction, for at most
  ``carry_frames`` frames since the last refinement.

Its joints are its bottom-up joints (smooth over time: the temporal stage)
plus the correction scaled to its box, each joint by its share of the two
confidences (``live_fusion="weighted"``), except where the two readings stand
more than ``apart`` box sides apart: they are then two places (in a side view
the bottom-up network can put both ankles on the standing foot while the crop
reads the swinging one), and the joint takes whichever reading lies nearer its
last output, whole. Averaged, such a joint sat between the feet; taken by
confidence, it jumped between them (15 + 8 held-out clips:
``studies/crop-stage-live.md``). Replacing the joints outright, live,
doubled the keypoint jitter on held-out clips (a single-frame network's
reading is noisier than the temporal stage's); and a person refined every
third frame would jump between the two readings.

Weights: ``models/refiner-crop-human18.safetensors``, Thunder converted from the
TF.js files (``posetracker.model.convert.thunder``), fp16 as published.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from posetracker.model.runtime import accelerate_thunder
from posetracker.model.thunder import COCO17, ThunderNet, centre_weight, crop_around_box, decode_thunder, to_source
from posetracker.oks import joint_sigmas, keypoint_bbox_area, oks
from posetracker.refiners.base import Refiner, RefinerError, register_refiner
from posetracker.skeletons import SkeletonSpec


# test-time readings of each crop: the crop alone; with its mirror image (left/right swapped back); with that and
# crops of the same centre at READING_SCALES x the box. Each joint: the mean of the readings within ``apart`` box
# sides of the crop's own.
READINGS = ("one", "flip", "flip+scales")
READING_SCALES = (1.05, 1.5)


@register_refiner("crop")
class CropRefiner(Refiner):
    """Thunder on person crops; see the module docstring. Works on any skeleton with the COCO-17 joints."""

    kind = "crop"
    label = "Precision stage (Thunder on crops)"
    variant = "thunder"  # the MoveNet SinglePose it runs (model.thunder.VARIANTS)
    default_ms_per_crop = 30.0  # first guess of a crop's cost before any is timed (one thread here)

    def __init__(self, spec: SkeletonSpec, expand: float = 1.25, box_confidence: float = 0.1, min_joints: int = 2,
                 carry_frames: int = 30, carry_iou: float = 0.3, carry_smoothing: float = 0.6,
                 live_fusion: str = "weighted", min_agreement: float = 0.1, min_joints_agree: int = 3,
                 keep_below: float = 0.05, apart: float = 0.1, readings: str = "one"):
        super().__init__(spec)
        missing = [n for n in COCO17 if n not in spec.joint_names]
        if missing:
            raise RefinerError(f"the crop refiner needs the COCO-17 joints; {spec.name} lacks {', '.join(missing)}")
        self.joints = np.asarray([spec.index(n) for n in COCO17], dtype=np.int64)  # (17,) skeleton index per Thunder joint
        self.expand, self.box_confidence, self.min_joints = expand, box_confidence, min_joints
        self.net = ThunderNet(self.variant)
        grid = self.net.input_size // 4
        self.register_buffer("centre_weight", torch.zeros(grid, grid))  # the graph's centre prior (see model.thunder)
        self.ms_per_crop = self.default_ms_per_crop  # running estimate, updated after every batch
        self.last_refined = 0  # people refined in the last frame
        if live_fusion not in ("weighted", "replace"):
            raise RefinerError(f"live_fusion must be 'weighted' or 'replace', not {live_fusion!r}")
        self.carry_frames, self.carry_iou, self.carry_smoothing = carry_frames, carry_iou, carry_smoothing
        self.live_fusion = live_fusion
        self.min_agreement, self.min_joints_agree = min_agreement, min_joints_agree
        self.keep_below = keep_below  # fusion step 5; not in live mode, whose weighted fusion already does it
        self.apart = apart  # live: box sides between two readings of a joint that are two places (the docstring)
        if readings not in READINGS:
            raise RefinerError(f"readings must be one of {', '.join(READINGS)}, not {readings!r}")
        self.readings = readings  # test-time readings of each crop (READINGS)
        self.sigmas = joint_sigmas(spec)[self.joints]  # (17,) OKS sigmas of Thunder's joints
        self.last_disagreed = 0  # people of the last frame whose reading stayed the bottom-up one
        self.reset()

    def reset(self) -> None:
        """Forget the carried corrections (a seek, a new source)."""
        self._carried: list[_Carried] = []

    @classmethod
    def from_tfjs(cls, json_path: str | Path, spec: SkeletonSpec) -> CropRefiner:
        """The refiner with the weights converted from the TF.js files (``movenet-thunder.json`` + ``.bin``,
        or ``movenet-lightning.*`` for ``crop-fast``)."""
        refiner = cls(spec)
        refiner.net.load_state_dict(ThunderNet.from_tfjs(json_path).state_dict())
        refiner.centre_weight.copy_(torch.from_numpy(centre_weight(json_path)))
        return refiner.eval()

    def accelerate(self, threads: int = 1) -> None:
        """Run Thunder in ONNX Runtime from now on (``model.runtime.accelerate_thunder``; ~28 against
        ~48-70 ms a crop in torch eager on one thread here)."""
        object.__setattr__(self, "_runner", accelerate_thunder(self.net, threads))  # not a submodule: no state

    def boxes(self, xy: np.ndarray, confidence: np.ndarray) -> np.ndarray:
        """xy (P, K, 2) px, confidence (P, K) -> (P, 4) boxes (x1, y1, x2, y2) px; nan where none fits."""
        out = np.full((len(xy), 4), np.nan)
        for p in range(len(xy)):
            ok = confidence[p, self.joints] >= self.box_confidence
            pts = xy[p, self.joints][ok] if ok.sum() >= self.min_joints else xy[p, self.joints]
            pts = pts[np.isfinite(pts).all(axis=1)]
            if len(pts):
                (x1, y1), (x2, y2) = pts.min(axis=0), pts.max(axis=0)
                if x2 - x1 >= 2 or y2 - y1 >= 2:
                    out[p] = (x1, y1, max(x2, x1 + 2), max(y2, y1 + 2))
        return out

    def choose(self, confidence: np.ndarray, ok: np.ndarray, budget_ms: float | None = None,
               since: np.ndarray | None = None) -> np.ndarray:
        """Indices of the people to refine this frame: all (no budget), or within ``budget_ms`` at least one:
        the longest since their last refinement first (``since`` (P,) frames, inf = never; None: all never),
        then the least certain."""
        people = np.flatnonzero(ok)
        if budget_ms is None or len(people) == 0:
            return people
        n = max(1, int(budget_ms // max(self.ms_per_crop, 1e-3)))
        wait = np.full(len(confidence), np.inf) if since is None else since
        order = np.lexsort((confidence[people][:, self.joints].mean(axis=1), -wait[people]))
        return np.sort(people[order[:n]])

    @torch.no_grad()
    def refine_frame(self, xy: np.ndarray, confidence: np.ndarray, rgb: np.ndarray,
                     budget_ms: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """xy (P, K, 2) source px, confidence (P, K), rgb (H, W, 3) uint8 the source frame
        -> (xy, confidence) with the chosen people's COCO-17 joints replaced by Thunder's (and, with a
        budget, the others' carried corrections applied)."""
        boxes = self.boxes(xy, confidence)
        ok = np.isfinite(boxes).all(axis=1)
        carried = self._match(boxes, ok) if budget_ms is not None else [None] * len(xy)
        since = np.array([np.inf if c is None else c.age + 1 for c in carried], dtype=np.float64)
        chosen = self.choose(confidence, ok, budget_ms, since)
        self.last_refined = len(chosen)
        raw_xy, raw_conf = xy, confidence
        xy, confidence = xy.copy(), confidence.copy()
        if len(chosen):
            self._refine(xy, confidence, rgb, boxes, chosen, keep_below=self.keep_below if budget_ms is None else 0.0)
        if budget_ms is None:
            return xy, confidence
        memory = []
        k, j = self.carry_smoothing, self.joints
        for p in range(len(xy)):
            side, c = _side(boxes[p]), carried[p]
            if p in chosen:
                delta, conf = (xy[p, j] - raw_xy[p, j]) / side, confidence[p, j].copy()
                if c is not None:  # low-passed, but a correction that jumps by more than ``apart`` is taken as it is
                    held = (np.linalg.norm(delta - c.delta, axis=1) <= self.apart)[:, None]  # (17, 1)
                    delta = np.where(held, k * c.delta + (1 - k) * delta, delta)
                    conf = np.where(held[:, 0], k * c.confidence + (1 - k) * conf, conf)
                entry = _Carried(boxes[p], delta, conf, 0)
            elif c is not None and c.age < self.carry_frames:
                entry = _Carried(boxes[p], c.delta, c.confidence, c.age + 1)
            else:
                continue
            # weighted: each joint moves by its share of the two confidences (a joint the bottom-up network
            # already sees well keeps most of its smooth reading), except where the two readings are two places;
            # replace: the whole correction
            w = entry.confidence / np.maximum(entry.confidence + raw_conf[p, j], 1e-6) \
                if self.live_fusion == "weighted" else np.ones(len(j))
            if self.live_fusion == "weighted" and c is not None and c.out is not None:
                w = self._continue(w, raw_xy[p, j], entry.delta * side, c.out, self.apart * side)
            xy[p, j] = raw_xy[p, j] + w[:, None] * entry.delta * side
            confidence[p, j] = w * entry.confidence + (1 - w) * raw_conf[p, j]
            memory.append(replace(entry, out=xy[p, j].copy()))
        self._carried = memory
        return xy, confidence

    @staticmethod
    def _continue(w: np.ndarray, raw: np.ndarray, correction: np.ndarray, last: np.ndarray, apart: float) -> np.ndarray:
        """Fusion weights (17,) with the joints whose two readings stand more than ``apart`` px apart set to 1
        (the refined one) or 0 (the bottom-up one), whichever lies nearer the joint's last output: a point
        between two feet is neither foot. raw, correction, last: (17, 2) px."""
        far = np.linalg.norm(correction, axis=1) > apart
        nearer = np.linalg.norm(raw + correction - last, axis=1) <= np.linalg.norm(raw - last, axis=1)
        return np.where(far, nearer.astype(np.float64), w)

    def agrees(self, xy: np.ndarray, confidence: np.ndarray, found: np.ndarray, found_confidence: np.ndarray,
               sure: float = 0.3) -> bool:
        """Do the bottom-up reading xy (17, 2) / confidence (17,) and the crop's found (17, 2) /
        found_confidence (17,) read the same person (see the module docstring, step 4)?"""
        both = (confidence >= sure) & (found_confidence >= sure) & np.isfinite(xy).all(1) & np.isfinite(found).all(1)
        if both.sum() < self.min_joints_agree:
            return True  # too little seen in common to tell: the crop's reading stands
        area = max(float(keypoint_bbox_area(xy[None], (confidence >= sure)[None])[0]), 32.0**2)
        d2 = ((xy - found) ** 2).sum(axis=1)
        return float(oks(np.where(both, d2, 0.0), area, self.sigmas, both)) >= self.min_agreement

    def _match(self, boxes: np.ndarray, ok: np.ndarray) -> list[_Carried | None]:
        """Each person's carried entry (or None): greedy on box IoU >= ``carry_iou``, best pair first."""
        out: list[_Carried | None] = [None] * len(boxes)
        if not self._carried or not ok.any():
            return out
        iou = box_iou(np.where(ok[:, None], boxes, 0.0), np.stack([c.box for c in self._carried]))
        iou[~ok] = 0.0
        while True:
            p, m = np.unravel_index(int(np.argmax(iou)), iou.shape)
            if iou[p, m] < self.carry_iou:
                return out
            out[p] = self._carried[m]
            iou[p, :], iou[:, m] = 0.0, 0.0

    def _refine(self, xy: np.ndarray, confidence: np.ndarray, rgb: np.ndarray, boxes: np.ndarray,
                chosen: np.ndarray, keep_below: float = 0.0) -> None:
        """Thunder on the chosen people's crops, as one batch; writes their COCO-17 joints into xy and
        confidence (in place; a joint Thunder scores below ``keep_below`` under the bottom-up confidence is
        left as it is) and updates the running cost per crop."""
        t0 = time.perf_counter()
        size = self.net.input_size
        expands = (self.expand,) + (READING_SCALES if self.readings == "flip+scales" else ())
        cuts = [(crop_around_box(rgb, boxes[p], size=size, expand=e), False) for p in chosen for e in expands]
        if self.readings != "one":  # the crop at the product's expand, mirrored
            cuts += [((np.ascontiguousarray(c[:, ::-1]), w), True) for (c, w), _ in cuts[::len(expands)]]
        batch = torch.from_numpy(np.stack([c for (c, _), _ in cuts])).permute(0, 3, 1, 2).float()  # (N, 3, S, S)
        runner = self.__dict__.get("_runner", self.net)
        heads = {k: v.permute(0, 2, 3, 1).numpy() for k, v in runner(batch).items()}  # (N, S/4, S/4, C) each
        weight = self.centre_weight.numpy()
        read = [to_source(decode_thunder(heads["centre"][i], heads["heatmap"][i], heads["regress"][i],
                                         heads["offset"][i], weight), w, size, mirrored)
                for i, ((_, w), mirrored) in enumerate(cuts)]  # (17, 3) x, y px, score each
        n, m = len(chosen), len(expands)
        self.last_disagreed = 0
        for i, p in enumerate(chosen):
            extra = [read[i * m + e] for e in range(1, m)] + ([read[n * m + i]] if self.readings != "one" else [])
            kp = _agreeing_mean(read[i * m], extra, self.apart * _side(boxes[p]))
            found = kp[:, :2]  # (17, 2) source px
            if not self.agrees(xy[p, self.joints], confidence[p, self.joints], found, kp[:, 2]):
                self.last_disagreed += 1
                continue
            take = ~((kp[:, 2] < keep_below) & (confidence[p, self.joints] > kp[:, 2]))  # (17,)
            xy[p, self.joints[take]] = found[take]
            confidence[p, self.joints[take]] = kp[take, 2]
        ms = (time.perf_counter() - t0) * 1000 / len(chosen)
        self.ms_per_crop = 0.8 * self.ms_per_crop + 0.2 * ms


@dataclass(frozen=True)
class _Carried:
    """One person's correction, carried to later frames: box (4,) x1 y1 x2 y2 px (this frame's); delta
    (17, 2) refined - bottom-up per COCO-17 joint, in box sides, low-passed; confidence (17,) the refined
    confidences, low-passed; age: frames since the last refinement; out: the fused joints given out."""

    box: np.ndarray
    delta: np.ndarray
    confidence: np.ndarray
    age: int
    out: np.ndarray | None = None  # (17, 2) px the joints given out this frame


def _agreeing_mean(first: np.ndarray, others: list[np.ndarray], tol: float) -> np.ndarray:
    """A crop's reading first (17, 3) x, y px, score, averaged per joint with the other readings (17, 3) of the
    same person that lie within ``tol`` px of it (test-time flips and scales)."""
    if not others:
        return first
    stack = np.stack([first, *others])  # (R, 17, 3)
    near = np.linalg.norm(stack[:, :, :2] - first[None, :, :2], axis=2) <= tol  # (R, 17)
    return (stack * near[..., None]).sum(0) / near.sum(0)[:, None]


def _side(box: np.ndarray) -> float:
    """The longer side of a box (x1, y1, x2, y2), at least 1 px."""
    return float(max(box[2] - box[0], box[3] - box[1], 1.0))


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a (N, 4), b (M, 4) boxes x1 y1 x2 y2 -> (N, M) intersection over union (0 for empty boxes)."""
    lo, hi = np.maximum(a[:, None, :2], b[None, :, :2]), np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(hi - lo, 0, None).prod(axis=2)
    area = lambda x: np.clip(x[:, 2:] - x[:, :2], 0, None).prod(axis=1)  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-9), 0.0)


@register_refiner("crop-fast")
class FastCropRefiner(CropRefiner):
    """The precision stage with MoveNet SinglePose Lightning (192 x 192 crops, width 1.0): about a third of
    Thunder's cost a crop, for live mode's per-frame budget. Same boxes, budget, carrying and fusion."""

    kind = "crop-fast"
    label = "Fast precision stage (Lightning on crops)"
    variant = "lightning"
    default_ms_per_crop = 10.0
