"""Left/right depth order on the held-out clips: the model and BlazePose full against BlazePose heavy.

The tables of ``posetracker depth-order`` (the model card's depth-order numbers). For each validation
clip of a distillation config and each minimum gap (pairs whose sides the heavy teacher sees closer than
the gap, or where a teacher does not see both joints, are skipped), :func:`val_rows` gives the fraction of
left/right joint pairs whose nearer side agrees with BlazePose heavy: for the model (offline, no smoothing,
pose prior on unless switched off) and for BlazePose full, the training teacher. The second is the
reference's own noise level: where the two BlazePose variants disagree, the model cannot agree with both;
the last columns count only the pair-frames where they agree (the order both teachers settle). With
``per_pair`` it adds a table per left/right pair at the smallest gap (model vs heavy, full vs heavy,
model vs full).

:func:`held_out_rows` runs every clip under the data root that the config does not train on
(:func:`held_out_clips`: its validation clips and all the others), one row per clip at the smallest gap,
then the pair-frames pooled over them at each gap; its "one order" column is the best score of a model that
gives each pair one order through the clip (heavy's majority side), i.e. how much the clip tests anything
beyond which way the body is turned; the last four columns count the limbs only (elbows, wrists, knees,
ankles). Labels come from the cache that ``posetracker train clip-eval`` fills (computed on first use).

Depths are (T, N, K) arrays: frames, label tracks, joints; nan where unmatched or unseen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from posetracker.skeletons import SkeletonSpec
from posetracker.train.clips import list_clips
from posetracker.train.config import DistillConfig
from posetracker.train.features import iter_frames
from posetracker.train.clip_labels import cached_clip_labels
from posetracker.train.metrics import depth_order_agreement, depth_order_counts, one_order_counts, run_clip
from posetracker.train.prepare import selection_for

LIMBS = ("elbow", "wrist", "knee", "ankle")  # the arms' and legs' joints (not eyes, ears, shoulders, hips)
ClipDepths = Callable[[str], tuple[np.ndarray, np.ndarray | None, np.ndarray]]


def visible_depth(labels):
    """labels with depth (T, N, K) nan where the teacher does not see the joint."""
    return replace(labels, depth=np.where(labels.visible, labels.depth, np.nan))


def pair_gaps(depth, pairs):
    """depth (T, N, K) -> (T, N, M) z_left - z_right of each pair."""
    return depth[..., pairs[:, 0]] - depth[..., pairs[:, 1]]


def fractions(rows):
    """(S, 3, 2) (agree, counted) per pair set -> table cells: counted, then the three fractions, per set."""
    return " | ".join(f"{r[0, 1]} | " + " | ".join(f"{a / n:.2f}" if n else "-" for a, n in r) for r in rows)


def clip_depths(session, cfg: DistillConfig, teachers: tuple, rel: str, reference: str = "heavy"):
    """(model, other teacher, reference) depths (T, N, K) of one clip (default: full, heavy), nan where
    unmatched or unseen; the second is None where the two label runs track different people.

    session: a TrackingSession (offline); teachers: (BlazePose full, BlazePose heavy) label teachers."""
    path = cfg.data_path / rel
    sel = selection_for(path, cfg)
    frames = lambda: iter_frames(path, sel)  # noqa: E731
    # a joint counts only where that teacher sees it (like PCK and PA-MPJPE): the order of
    # limbs outside the frame (a webcam's knees) is a guess, not a reference
    lab_full, lab_heavy = (visible_depth(cached_clip_labels(t, path, session.spec, sel.key(), frames)) for t in teachers)
    if reference == "full":  # swap the roles: full is the reference, heavy the other teacher
        lab_full, lab_heavy = lab_heavy, lab_full
    run = run_clip(session, path, lab_heavy)
    model = np.where(run["matched_ok"], run["matched_depth"], np.nan)
    same_tracks = lab_full.depth.shape == lab_heavy.depth.shape  # both label runs track the same people
    return model, (lab_full.depth if same_tracks else None), lab_heavy.depth


def held_out_clips(cfg: DistillConfig) -> list[str]:
    """Every clip under the config's data root that it does not train on, sorted."""
    train = {str(c) for c in cfg.train}
    return sorted(str(c) for c in list_clips(cfg.data_path, cfg.min_frames) if str(c) not in train)


def held_out_rows(depths: ClipDepths, rels: Sequence[str], spec: SkeletonSpec, pairs: np.ndarray,
                  gaps: Sequence[float], ref: str, other: str) -> Iterator[str]:
    """The held-out table (markdown lines): one row per clip at the smallest gap, then the pooled rows per gap."""
    gap = min(gaps)
    limbs = pairs[[spec.joint_names[a].split("_")[-1] in LIMBS for a in pairs[:, 0]]]
    cols = f"model vs {ref} | {other} vs {ref} | one order"
    yield f"| clip (gap >= {gap:.2f} m) | pairs ({ref}) | {cols} | limb pairs | {cols} |"
    yield "|---|---|---|---|---|---|---|---|---|"

    def counts(model, zf, zh, gap):
        """(2, 3, 2): (all pairs / limbs, model / full / one order, (agree, counted))."""
        return np.array([[depth_order_counts(model, zh, p, gap),
                          depth_order_counts(zf, zh, p, gap) if zf is not None else (0, 0),
                          one_order_counts(zh, p, gap)] for p in (pairs, limbs)])

    clips = []
    for rel in rels:
        clips.append(depths(rel))
        yield f"| {rel} | {fractions(counts(*clips[-1], gap))} |"
    for g in gaps:
        total = sum(counts(*c, g) for c in clips)
        yield f"| all {len(rels)} clips, gap >= {g:.2f} m | {fractions(total)} |"


def val_rows(depths: ClipDepths, rels: Sequence[str], spec: SkeletonSpec, pairs: np.ndarray, gaps: Sequence[float],
             ref: str, other: str, per_pair: bool = False) -> Iterator[str]:
    """The validation table (markdown lines): per clip and gap; with ``per_pair`` then the table per pair."""
    yield (f"| clip | min gap m | pairs ({ref}) | model vs {ref} | BlazePose {other} vs {ref} "
           "| pairs both agree on | model vs both |")
    yield "|---|---|---|---|---|---|---|"
    by_pair = []
    for rel in rels:
        model, zf, zh = depths(rel)
        name = Path(rel).name
        for gap in gaps:
            ours = depth_order_agreement(model, zh, pairs, min_gap_m=gap)
            theirs = depth_order_agreement(zf, zh, pairs, min_gap_m=gap) if zf is not None else float("nan")
            diffs = pair_gaps(zh, pairs)
            counted = int((np.abs(np.nan_to_num(diffs)) >= gap).sum())  # pairs-frames the heavy teacher separates
            both, settled = float("nan"), 0
            if zf is not None:
                agree = np.sign(pair_gaps(zf, pairs)) == np.sign(diffs)  # (T, N, M): both teachers put the same side nearer
                settled = int((agree & (np.abs(np.nan_to_num(diffs)) >= gap)).sum())
                both = depth_order_agreement(model, zh, pairs, min_gap_m=gap, keep=agree)
            yield f"| {name} | {gap:.2f} | {counted} | {ours:.2f} | {theirs:.2f} | {settled} | {both:.2f} |"
        gap = min(gaps)
        for a, b in pairs:
            one = np.array([[a, b]])
            n = int((np.abs(np.nan_to_num(zh[..., a] - zh[..., b])) >= gap).sum())
            scores = [depth_order_agreement(model, zh, one, min_gap_m=gap)]
            scores += [depth_order_agreement(x, y, one, min_gap_m=gap) if zf is not None else float("nan")
                       for x, y in ((zf, zh), (model, zf))]
            by_pair.append(f"| {name} | {spec.joint_names[a].removeprefix('left_')} | {n} | "
                           + " | ".join(f"{v:.2f}" for v in scores) + " |")
    if per_pair:
        yield (f"\n| clip | pair (gap >= {min(gaps):.2f} m) | pairs ({ref}) | model vs {ref} | {other} vs {ref} "
               f"| model vs {other} |")
        yield "|---|---|---|---|---|---|"
        yield "\n".join(by_pair)
