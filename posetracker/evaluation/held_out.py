"""Score any skeleton's session on held-out labelled images (animal modes, refiners on/off).

Each image goes through ``TrackingSession.process_image`` (the product's path,
refiners included). Predicted people are matched to labelled instances greedily
by mean distance over the instance's labelled joints. Per labelled joint
(virtual joints excluded): the pixel error, and a hit when it is within
``alpha`` x the longer side of the instance's labelled-joint box (PCK@alpha);
a joint of an unmatched instance is a miss with no error.

Orientation (a skeleton's ``orientation: [front, back]``, e.g. a fly's head and abdomen): a found instance
is *reversed* when its predicted front joint lies nearer the labelled back than the labelled front.

Returns ``{"pck@0.1", "pck@0.2", "rmse_px", "mean_px", "median_px", "instances", "found", "joints",
"per_joint_pck@0.1", "per_joint_mean_px", "per_instance", "reversed", "oriented"}`` (per_instance: each labelled
instance's frame and per-joint errors, offsets (the reading minus the label, x, y px) and labelled points, None =
unlabelled or not found; reversed of oriented: the found instances with both
orientation joints labelled; 0 of 0 without ``orientation``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from posetracker.evaluation.datasets import FrameCache, LabelledItem, item_points, read_image
from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseFrame


def match_instances(pred: np.ndarray, gt: np.ndarray) -> list[tuple[int, int]]:
    """pred (P, K, 2), gt (G, K, 2) with nan = unlabelled -> [(gt index, pred index)], greedy by mean distance."""
    if len(pred) == 0 or len(gt) == 0:
        return []
    d = np.linalg.norm(pred[None] - gt[:, None], axis=-1)  # (G, P, K)
    cost = np.nanmean(np.where(np.isfinite(d), d, np.nan), axis=-1)
    cost = np.where(np.isfinite(cost), cost, np.inf)
    pairs, used_g, used_p = [], set(), set()
    for flat in np.argsort(cost, axis=None):
        g, p = divmod(int(flat), cost.shape[1])
        if g in used_g or p in used_p or not np.isfinite(cost[g, p]):
            continue
        pairs.append((g, p))
        used_g.add(g)
        used_p.add(p)
    return pairs


def evaluate_items(predict: Callable[[np.ndarray], PoseFrame], items: list[LabelledItem], cols: np.ndarray,
                   spec: SkeletonSpec, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    real = np.array([k not in spec.virtual for k in range(spec.num_joints)])
    errors, hits1, hits2, per_joint, instances, found = [], 0, 0, np.zeros((2, spec.num_joints)), 0, 0
    reversed_, oriented, per_instance = 0, 0, []
    cache = FrameCache()
    try:
        for n, item in enumerate(items, 1):
            gt = item_points(item, cols)
            gt[:, ~real] = np.nan
            frame = predict(read_image(item, cache))
            pairs = dict(match_instances(frame.keypoints[:, :, :2].astype(np.float64), gt))
            for g in range(len(gt)):
                lab = np.isfinite(gt[g]).all(-1)
                if not lab.any():
                    continue
                instances += 1
                side = float(np.ptp(gt[g][lab], axis=0).max()) or 1.0
                per_joint[1] += lab
                frame_no = n - 1 if getattr(item, "frame_idx", None) is None else item.frame_idx
                if g not in pairs:
                    per_instance.append({"frame": frame_no, "errors": [None] * spec.num_joints})
                    continue
                found += 1
                every = np.linalg.norm(frame.keypoints[pairs[g], :, :2] - gt[g], axis=-1)
                moved = frame.keypoints[pairs[g], :, :2] - gt[g]
                per_instance.append({"frame": frame_no, "side": side,
                                     "errors": [float(v) if ok else None for v, ok in zip(every, lab)],
                                     "offsets": [[round(float(d[0]), 3), round(float(d[1]), 3)] if ok else None
                                                 for d, ok in zip(moved, lab)],
                                     "labelled": [[round(float(q[0]), 2), round(float(q[1]), 2)] if ok else None
                                                  for q, ok in zip(gt[g], lab)]})
                err = every[lab]
                errors.extend(err.tolist())
                hits1 += int((err <= 0.1 * side).sum())
                hits2 += int((err <= 0.2 * side).sum())
                per_joint[0][lab] += err <= 0.1 * side
                if spec.orientation is not None:
                    front, back = spec.orientation
                    if lab[front] and lab[back] and np.isfinite(frame.keypoints[pairs[g], front, :2]).all():
                        oriented += 1
                        p = frame.keypoints[pairs[g], front, :2]
                        reversed_ += int(np.linalg.norm(p - gt[g, back]) < np.linalg.norm(p - gt[g, front]))
            if progress:
                progress(n, len(items))
    finally:
        cache.close()
    total = max(int(per_joint[1].sum()), 1)
    e = np.asarray(errors)
    return {
        "pck@0.1": hits1 / total, "pck@0.2": hits2 / total,
        "rmse_px": float(np.sqrt((e**2).mean())) if len(e) else float("nan"),
        "mean_px": float(e.mean()) if len(e) else float("nan"),
        "median_px": float(np.median(e)) if len(e) else float("nan"),
        "reversed": reversed_, "oriented": oriented,
        "instances": instances, "found": found, "joints": int(per_joint[1].sum()),
        "per_joint_pck@0.1": {spec.joint_names[k]: float(per_joint[0][k] / per_joint[1][k])
                              for k in range(spec.num_joints) if per_joint[1][k]},
        "per_joint_mean_px": joint_means(per_instance, spec),
        "per_instance": per_instance,
    }


def joint_means(per_instance: list[dict], spec: SkeletonSpec) -> dict[str, float]:
    """Mean pixel error per joint over the found instances of ``evaluate_items``' ``per_instance``."""
    e = np.array([[np.nan if v is None else v for v in r["errors"]] for r in per_instance], np.float64)
    e = e.reshape(-1, spec.num_joints)
    return {spec.joint_names[k]: float(np.nanmean(e[:, k])) for k in range(spec.num_joints) if np.isfinite(e[:, k]).any()}


def identity_switches(frames: dict[int, PoseFrame], items: list[LabelledItem], cols: np.ndarray) -> dict[str, Any]:
    """Identity switches of tracked output against labelled tracks (e.g. SLEAP's "male" / "female").

    frames: {frame index: tracked PoseFrame} of one video; items: its labelled frames whose instances carry
    a ``track``. In each labelled frame the predictions are matched to the labelled instances
    (:func:`match_instances`); a switch is a labelled track matched to another predicted id than the last
    one it was matched to. Returns ``{"switches", "frames", "track_frames", "matched"}`` (track_frames:
    labelled instances with a track; matched: those matched to a tracked prediction), and ``"switch_frames"``
    (the frame indices of the switches, for a review)."""
    last: dict[Any, int] = {}
    switches, at, track_frames, matched, n = 0, [], 0, 0, 0
    for item in sorted(items, key=lambda it: it.frame_idx):
        pose = frames.get(item.frame_idx)
        if pose is None:
            continue
        n += 1
        gt = item_points(item, cols)
        pairs = dict(match_instances(pose.keypoints[:, :, :2].astype(np.float64), gt))
        for g, inst in enumerate(item.instances):
            if inst.track is None or not np.isfinite(gt[g]).any():
                continue
            track_frames += 1
            if g not in pairs or pose.track_ids[pairs[g]] < 0:
                continue
            matched += 1
            tid = int(pose.track_ids[pairs[g]])
            if inst.track in last and last[inst.track] != tid:
                switches += 1
                at.append(int(item.frame_idx))
            last[inst.track] = tid
    return {"switches": switches, "frames": n, "track_frames": track_frames, "matched": matched,
            "switch_frames": at}
