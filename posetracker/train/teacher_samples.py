"""Labelled samples from teacher-labelled clips (for refiners of the human model).

The human labelled sets under ../shared are evaluation sets (a few images each),
so the human refiners learn from the distillation clips' cached teacher labels
instead: every ``clip_every``-th labelled frame of each *training* clip of a
distill config (held-out clips never), at most ``clip_max`` per clip, with the
joints the teacher saw (``visible``); hidden joints are left unlabelled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from posetracker.model.network import PoseNet
from posetracker.skeletons import SkeletonSpec
from posetracker.train.cache import combine_key, file_hash
from posetracker.train.labelled import AugmentConfig, LabelledSamples, warp_and_extract


def teacher_samples(config_path: str, spec: SkeletonSpec, net: PoseNet, aug: AugmentConfig, seed: int,
                    every: int, most_per_clip: int, log: Callable[[str], None],
                    progress: Callable[[int, int], None] | None = None) -> LabelledSamples:
    from posetracker.train.clips import list_clips, split_clips
    from posetracker.train.config import load_config
    from posetracker.train.features import iter_frames
    from posetracker.train.labels import cached_clip_labels
    from posetracker.train.prepare import make_teacher, selection_for

    cfg = load_config(config_path)
    clips, _ = split_clips(list_clips(cfg.data_path, cfg.min_frames), list(cfg.val),
                           None if cfg.train is None else list(cfg.train), list(cfg.exclude))
    teacher = make_teacher(cfg)
    chosen: list[tuple[str, object, list[int]]] = []
    for rel in clips:
        path = cfg.data_path / rel
        sel = selection_for(path, cfg)
        labels = cached_clip_labels(teacher, path, spec, sel.key(), lambda: iter_frames(path, sel))
        rows = [t for t in range(0, labels.num_frames, every) if labels.present()[t].any()][:most_per_clip]
        chosen.append((rel, (path, sel, labels), rows))
    n = sum(len(r) for _, _, r in chosen)
    most = max(int(c[1][2].present().sum(1).max()) for c in chosen)
    log(f"teacher samples: {n} frames from {len(chosen)} training clips (held out: {list(cfg.val)})")

    def pairs() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for _, (path, sel, labels), rows in chosen:
            want = set(rows)
            for t, frame in enumerate(iter_frames(path, sel)):
                if t in want:
                    xy = np.where(labels.visible[t][..., None], labels.xy[t], np.nan)
                    present = np.isfinite(xy).all(-1).any(-1)
                    yield frame.image, xy[present]

    key = combine_key("teacher-samples-v1", [file_hash(c[1][0]) for c in chosen], teacher.name, every, most_per_clip,
                      seed)
    return warp_and_extract(pairs(), n, most, key, spec, net, aug, seed, progress)
