"""Run a human18 predictor over labelled sets and score it.

``predict(rgb)`` gets one ``(H, W, 3)`` uint8 RGB image (a still or a decoded
video frame, at the source size) and returns a human18 :class:`PoseFrame` whose
keypoints are in that image's pixels. Predictions and ground truth are compared
on the joints the set's layout maps to human18 (see :mod:`.mapping`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from posetracker.evaluation.datasets import FrameCache, LabelledItem, LabelledSet, load_labelled_set, read_image
from posetracker.evaluation.mapping import HUMAN18_JOINTS, get_layout, detect_layout
from posetracker.evaluation.metrics import ImageEval, summarize
from posetracker.evaluation.people_sets import people_set_metrics
from posetracker.types import PoseFrame

__all__ = ["Predictor", "evaluate_paths", "evaluate_set", "human18_sigmas", "prediction_record"]

Predictor = Callable[[np.ndarray], PoseFrame]
Progress = Callable[[int, int], None]


@lru_cache(maxsize=1)
def human18_sigmas() -> np.ndarray:
    """(18,) float64 COCO OKS sigmas from human18.yaml (nan for the centre)."""
    from posetracker.skeletons import load_skeleton

    sk = load_skeleton("human18")
    if tuple(sk.joint_names) != HUMAN18_JOINTS or sk.sigmas is None:
        raise RuntimeError("human18.yaml does not match posetracker.evaluation.mapping.HUMAN18_JOINTS")
    out = np.asarray(sk.sigmas, dtype=np.float64)
    out.setflags(write=False)
    return out


def _num(v: float) -> float | None:
    return float(v) if math.isfinite(float(v)) else None


def prediction_record(item: LabelledItem, frame: PoseFrame) -> dict[str, Any]:
    """JSON-ready ``{"image", ["video", "frame_idx"], "people": [{"keypoints" (18, 3), "confidence" (18,), "score"}]}``.

    Non-finite numbers (e.g. unknown depth) are written as null.
    """
    rec: dict[str, Any] = {"image": item.file}
    if item.video is not None:
        rec["video"] = str(item.video)
        rec["frame_idx"] = item.frame_idx
    rec["people"] = [
        {
            "keypoints": [[_num(v) for v in row] for row in frame.keypoints[p].tolist()],
            "confidence": [_num(v) for v in frame.confidence[p].tolist()],
            "score": _num(frame.scores[p]),
        }
        for p in range(frame.num_people)
    ]
    return rec


def evaluate_set(
    labelled_set: LabelledSet,
    predict: Predictor,
    progress: Progress | None = None,
    *,
    reader: Callable[[LabelledItem], np.ndarray] | None = None,
    layout: str | None = None,
    area_factor: float = 1.0,
    pck_alphas: Sequence[float] = (0.1, 0.2),
    keep_predictions: bool = True,
    keep_images: bool = False,
) -> dict[str, Any]:
    """Run ``predict`` on every item of ``labelled_set`` and score it.

    reader:   item -> RGB image; default :func:`read_image` with one shared
              :class:`FrameCache` (so each clip is decoded once)
    progress: called as ``progress(done, total)`` after each item
    layout:   registered layout name; found from the set's keypoint_names if None

    Returns ``{"pck@0.1", "pck@0.2", "ap", "ap50", "ap75", "ap_per_threshold", "recall", "pck_first@0.1",
    "pck_first@0.2", "duplicates", "found_first", "sure_share", "weak_skeletons" (:mod:`.people_sets`),
    "images", "people", "ignored_people", "labelled_joints", "predicted_people",
    "mapped_joints" (human18 names), "set", "layout", "every_person_labelled" (False where some image labels
    one person at a time: AP there leaves out predictions on other people, ``ImageEval``), "predictions"}``;
    ``predictions`` (list of :func:`prediction_record`, empty unless
    ``keep_predictions``) is what ``--predictions-out`` writes; with ``keep_images``
    also ``"image_evals"``: the :class:`ImageEval` of each item, with ``"sigmas"`` (K,)
    of the evaluated joints (``posetracker train score-calibration`` labels each prediction with them).
    Raises ValueError when an image's size differs from the json's or the
    predictor does not return an 18-joint PoseFrame.
    """
    lay = get_layout(layout) if layout is not None else detect_layout(labelled_set.keypoint_names)
    if lay.keypoint_names != labelled_set.keypoint_names:
        raise ValueError(f"layout {lay.name!r} does not match the keypoint_names of {labelled_set.name!r}")
    h_idx, s_idx = lay.indices()
    sigmas = human18_sigmas()[h_idx]
    images: list[ImageEval] = []
    records: list[dict[str, Any]] = []
    total = len(labelled_set.items)
    cache = FrameCache() if reader is None else None
    try:
        for n, item in enumerate(labelled_set.items, 1):
            rgb = read_image(item, cache) if reader is None else reader(item)
            if rgb.shape[:2] != (item.height, item.width):
                raise ValueError(f"{labelled_set.name}: {item.key}: image is {rgb.shape[1]}x{rgb.shape[0]} but the "
                                 f"labels are for {item.width}x{item.height}")
            boxes = np.array([inst.box() if inst.box() is not None else (0, 0, 0, 0) for inst in item.instances],
                             np.float64).reshape(-1, 4)
            frame = predict(rgb, boxes) if getattr(predict, "wants_boxes", False) else predict(rgb)  # a teacher
            if not isinstance(frame, PoseFrame) or frame.num_joints != len(HUMAN18_JOINTS):
                got = frame.num_joints if isinstance(frame, PoseFrame) else type(frame).__name__
                raise ValueError(f"predict must return a human18 PoseFrame (18 joints), got {got}")
            gt = np.zeros((len(item.instances), len(s_idx), 3), dtype=np.float64)
            boxes = np.zeros((len(item.instances), 4), dtype=np.float64)
            for g, inst in enumerate(item.instances):
                gt[g] = inst.keypoints[s_idx]
                box = inst.box()  # annotation bbox, else bbox of every labelled joint of the set's layout
                if box is not None:
                    boxes[g] = box
            images.append(ImageEval(
                pred=np.asarray(frame.keypoints[:, h_idx, :2], dtype=np.float64),
                pred_conf=np.asarray(frame.confidence[:, h_idx], dtype=np.float64),
                scores=np.asarray(frame.scores, dtype=np.float64),
                gt=gt, boxes=boxes, image_height=float(item.height),
                every_person_labelled=item.every_person_labelled,
            ))
            if keep_predictions:
                records.append(prediction_record(item, frame))
            if progress is not None:
                progress(n, total)
    finally:
        if cache is not None:
            cache.close()
    result: dict[str, Any] = summarize(images, sigmas, pck_alphas=pck_alphas, area_factor=area_factor)
    result.update(people_set_metrics(images, sigmas, pck_alphas, area_factor))
    result["mapped_joints"] = [HUMAN18_JOINTS[i] for i in h_idx]
    result["set"] = labelled_set.name
    result["layout"] = lay.name
    result["every_person_labelled"] = all(it.every_person_labelled for it in labelled_set.items)
    result["predictions"] = records
    if keep_images:
        result["image_evals"], result["sigmas"] = images, sigmas
    return result


def evaluate_paths(
    paths: Iterable[str | os.PathLike[str]],
    predict: Predictor,
    progress: Callable[[str, int, int], None] | None = None,
    **kwargs: Any,
) -> dict[str, dict[str, Any]]:
    """:func:`evaluate_set` on each ``normalized*.json`` in ``paths``.

    Returns ``{key: result}`` with key = the set's name (``name/file-stem`` when
    two files share a name); ``progress(key, done, total)`` is called per item.
    """
    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        ls = load_labelled_set(path)
        key = ls.name if ls.name not in out else f"{ls.name}/{Path(path).stem}"
        cb = None if progress is None else (lambda d, t, k=key: progress(k, d, t))
        out[key] = evaluate_set(ls, predict, cb, **kwargs)
    return out
