"""Evaluation of human18 predictors on hand-labelled sets (``normalized*.json``).

- :mod:`.datasets`: load a labelled set, read its images / video frames
- :mod:`.mapping`:  per-layout joint tables to human18
- :mod:`.metrics`:  OKS, Hungarian person matching, PCK, COCO keypoint AP, recall
- :mod:`.runner`:   run a predictor over sets and collect metrics + predictions
"""

from __future__ import annotations

from posetracker.evaluation.datasets import (
    FrameCache,
    Instance,
    LabelledItem,
    LabelledSet,
    LabelledSetError,
    keypoint_bbox,
    load_labelled_set,
    read_image,
)
from posetracker.evaluation.mapping import (
    HUMAN18_JOINTS,
    LAYOUTS,
    Layout,
    UnknownLayoutError,
    detect_layout,
    get_layout,
    human18_from_set,
    register_layout,
    to_human18,
)
from posetracker.evaluation.metrics import (
    COCO_OKS_THRESHOLDS,
    ImageEval,
    PeopleMatch,
    coco_ap,
    match_people,
    oks_matrix,
    pck_counts,
    people_recall,
    summarize,
)
from posetracker.evaluation.runner import (
    Predictor,
    evaluate_paths,
    evaluate_set,
    human18_sigmas,
    prediction_record,
)

__all__ = [
    "COCO_OKS_THRESHOLDS",
    "FrameCache",
    "HUMAN18_JOINTS",
    "ImageEval",
    "Instance",
    "LAYOUTS",
    "LabelledItem",
    "LabelledSet",
    "LabelledSetError",
    "Layout",
    "PeopleMatch",
    "Predictor",
    "UnknownLayoutError",
    "coco_ap",
    "detect_layout",
    "evaluate_paths",
    "evaluate_set",
    "get_layout",
    "human18_from_set",
    "human18_sigmas",
    "keypoint_bbox",
    "load_labelled_set",
    "match_people",
    "oks_matrix",
    "pck_counts",
    "people_recall",
    "prediction_record",
    "read_image",
    "register_layout",
    "summarize",
    "to_human18",
]
