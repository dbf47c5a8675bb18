"""From the config to training entries: teacher labels and backbone features for every clip variant.

Everything expensive is cached (:mod:`.cache`), so a second run (or a
resumed one) only reads files. For each clip: the frames kept (every n-th
to get ~``target_fps``, at most ``max_frames``) are labelled once by the
teacher; each variant (orig, flip, aug<seed>...) gets its own features and
its labels moved by the same augmentation. Stills become virtual-camera
clips (:func:`.clips.virtual_camera_clip`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from posetracker.capture import VideoFileSource
from posetracker.model.network import PoseNet
from posetracker.skeletons import SkeletonSpec
from posetracker.train.augment import ClipAugment
from posetracker.train.cache import combine_key, entry_path, file_hash, load_npz, save_npz
from posetracker.train.clip_labels import ClipLabels, LabelTeacher, augment_labels, cached_clip_labels
from posetracker.train.clips import list_clips, list_stills, read_still, split_clips, still_labels, virtual_camera_clip
from posetracker.train.config import DistillConfig
from posetracker.train.dataset import ClipEntry
from posetracker.train.features import FeatureExtractor, FrameSelection, frame_step_for, iter_frames

Log = Callable[[str], None]


def make_teacher(cfg: DistillConfig) -> LabelTeacher:
    """The config's teacher (``ensemble`` falls back per teacher when a module does not import).

    Its pipeline part runs ``cfg.teacher_weights`` (default: the shipped model), never the network
    being trained, so the label cache stays valid whatever the training starts from.
    """
    from posetracker.model.weights import load_posenet
    from posetracker.train.config import resolve
    from posetracker.train.labellers import PipelineTeacher, TeacherEnsemble

    net = load_posenet(None if cfg.teacher_weights is None else resolve(cfg.teacher_weights))

    if cfg.teacher == "pipeline":
        return PipelineTeacher(net, threads=cfg.threads)
    if cfg.teacher == "ensemble":
        return TeacherEnsemble(net, blazepose=cfg.blazepose, fov_deg=cfg.fov_deg, threads=cfg.threads)
    raise ValueError(f"unknown teacher {cfg.teacher!r}; choices: ensemble, pipeline")


def selection_for(path, cfg: DistillConfig) -> FrameSelection:
    with VideoFileSource(path) as src:
        fps = src.fps
    return FrameSelection(frame_step_for(fps, cfg.target_fps), cfg.max_frames)


def clip_entries(cfg: DistillConfig, rel: str, extractor: FeatureExtractor, teacher: LabelTeacher,
                 variants: tuple[str, ...], spec: SkeletonSpec) -> list[ClipEntry]:
    """One entry per variant of the clip ``rel`` (relative to the data root)."""
    path = cfg.data_path / rel
    sel = selection_for(path, cfg)
    labels = cached_clip_labels(teacher, path, spec, sel.key(), lambda: iter_frames(path, sel))
    out = []
    for v in variants:
        feats = extractor.clip_features(path, v, sel, labels.num_frames)
        aug = ClipAugment.parse(v)
        lab = labels if aug.is_identity else augment_labels(labels, aug.plan(len(feats), labels.size, file_hash(path)), spec)
        out.append(ClipEntry(f"{rel}#{v}", feats, lab))
    return out


def still_entries(cfg: DistillConfig, rel: str, extractor: FeatureExtractor, teacher: LabelTeacher,
                  spec: SkeletonSpec) -> list[ClipEntry]:
    """``cfg.stills.per_image`` virtual-camera clips of one still image."""
    path = cfg.data_path / rel
    image = None
    out = []
    for i in range(cfg.stills.per_image):
        key = combine_key("virtual-v1", file_hash(path), teacher.name, cfg.stills.frames, i, extractor.weights_key)
        lab_path = entry_path("labels", key, ".npz")
        hit = load_npz(lab_path)
        if hit is not None and (feats := _cached_feats(key)) is not None:
            out.append(ClipEntry(f"{rel}#virtual{i}", feats, ClipLabels.from_npz(hit)))
            continue
        image = read_still(path) if image is None else image
        h, w = image.shape[:2]
        people = still_labels(teacher.label_frame(image), spec.num_joints, (w, h))
        rng = np.random.default_rng([cfg.seed, i, int(file_hash(path)[:8], 16)])
        frames, labels = virtual_camera_clip(image, people, cfg.stills.frames, rng, spec)
        feats = extractor.frames_features(key, frames)
        save_npz(lab_path, **labels.to_npz())
        out.append(ClipEntry(f"{rel}#virtual{i}", feats, labels))
    return out


def _cached_feats(key: str):
    from posetracker.train.features import load_features

    return load_features(key)


def build_entries(cfg: DistillConfig, net: PoseNet, log: Log = lambda s: print(s, file=sys.stderr),
                  only: list[str] | None = None) -> tuple[list[ClipEntry], list[ClipEntry]]:
    """(train entries, val entries) for the config; ``only`` restricts to those clips (names as in the config)."""
    spec = net.spec
    all_clips = list_clips(cfg.data_path, cfg.min_frames)
    train, val = split_clips(all_clips, list(cfg.val), None if cfg.train is None else list(cfg.train), list(cfg.exclude))
    if only:
        train, val = [c for c in train if c in only], [c for c in val if c in only]
    extractor = FeatureExtractor(net, threads=cfg.threads)
    teacher = make_teacher(cfg)
    log(f"teacher {teacher.name}; backbone runtime {extractor.runtime}; {len(train)} train / {len(val)} val clips")
    tr_entries: list[ClipEntry] = []
    va_entries: list[ClipEntry] = []
    for n, rel in enumerate(train + val, 1):
        is_val = rel in val
        log(f"[{n}/{len(train) + len(val)}] {rel} ({'val' if is_val else 'train'})")
        entries = clip_entries(cfg, rel, extractor, teacher, cfg.val_variants if is_val else cfg.variants, spec)
        (va_entries if is_val else tr_entries).extend(entries)
    for rel in list_stills(cfg.data_path, list(cfg.stills.patterns)) if not only else []:
        tr_entries.extend(still_entries(cfg, rel, extractor, teacher, spec))
    return tr_entries, va_entries
