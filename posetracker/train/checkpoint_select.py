"""Checkpoint selection on a validation split (``select_every`` in a detector config).

Validation frames train nothing and are no held-out measurement: the main set's ``select_val`` segments
([[first, end), ...] of frame indices, item indices for stills, inside its training part) and each extra set's
``val`` segments (outside its ``held_out`` segments; the entry's ``gap`` frames either side of them do not train
either). Training samples are first made as without selection (so the frozen body's cached features are reused),
then the samples of the validation items are dropped (:func:`drop_items`: each item gave a known number of warps).

Every ``select_every`` steps (and after the last) :class:`Selector` reads the validation crops (one plain crop
at each labelled instance, as :func:`~.detector_samples.prepare_samples` makes them without augmentation) with
the detector's heads: each joint at its heatmap's peak plus the offset there, its error against the label in
input px. The score is the mean over the sets of each set's mean joint error; the FPN, heads and graph refiner of
the best-scoring step are kept and put back at the end.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from posetracker.evaluation.datasets import item_points, load_labelled_set
from posetracker.train.detector import first_features
from posetracker.train.detector_samples import (
    LabelledSamples,
    extra_columns,
    instance_centres,
    prepare_samples,
    segment_flags,
)

VAL_EVERY = 2  # every 2nd validation frame is read (neighbouring frames add little)


def warp_counts(items, cols: np.ndarray, spec, variants: int, samples: str) -> np.ndarray:
    """(N,) the number of samples each item gave :func:`~.detector_samples.sample_warps` (``variants`` per
    whole frame and per crop around each instance with a centre, as ``samples`` asks)."""
    out = []
    for it in items:
        n = 0 if samples == "centred" else variants
        if spec.top_down and samples != "frames":
            n += variants * int(np.isfinite(instance_centres(item_points(it, cols), spec.root)).all(-1).sum())
        out.append(n)
    return np.array(out, int)


def drop_items(data: LabelledSamples, counts: np.ndarray, drop: np.ndarray) -> LabelledSamples:
    """``data`` without the samples of the items flagged in ``drop`` (N,) bool; ``counts`` (N,) samples per item."""
    keep = np.repeat(~drop, counts)
    return LabelledSamples({k: v[keep] for k, v in data.taps.items()}, data.images[keep], data.points[keep],
                           None if data.labelled is None else data.labelled[keep])


def extra_items(path: str, every: int, held_out, gap: int) -> list:
    """The items an extra set trains on (as :func:`~.detector_samples.extra_samples` picks them)."""
    items = list(load_labelled_set(path).items)
    return [it for it, out in zip(items, segment_flags(items, held_out, gap)) if not out][:: max(1, every)]


@torch.no_grad()
def peak_points(net, taps: dict[str, np.ndarray], body_from: str = "") -> np.ndarray:
    """Cached body outputs (:mod:`.detector_samples` ``taps``, B samples) -> (B, K, 2) input px: each joint at
    its heatmap's highest cell plus the offset there (``body_from``: as :func:`.detector.first_features`)."""
    t = {k: torch.from_numpy(np.asarray(v, np.float32)) for k, v in taps.items()}
    target, _ = net.temporal(first_features(net, t, False, body_from)[:, None])
    out = net.decode_heads(target)
    logits, offsets = out["heatmap_logits"][:, 0], out["offsets"][:, 0]  # (B, K, h, w), (B, 2K, h, w)
    w = logits.shape[-1]
    peak = logits.flatten(2).argmax(-1)  # (B, K)
    off = offsets.flatten(2)  # (B, 2K, h * w)
    ox = torch.gather(off[:, 0::2], 2, peak[..., None])[..., 0]
    oy = torch.gather(off[:, 1::2], 2, peak[..., None])[..., 0]
    return torch.stack([peak % w + ox, peak // w + oy], -1).numpy() * 4.0  # stride-4 cells -> input px


class Selector:
    """Scores the detector on the validation crops and keeps the best state (module docstring).

    ``sets``: [(name, LabelledSamples of plain crops, (M, P, K, 2) input px points)]."""

    def __init__(self, sets: list[tuple[str, LabelledSamples]], log: Callable[[str], None], batch: int = 32,
                 body_from: str = ""):
        self.sets, self.log, self.batch, self.body_from = sets, log, batch, body_from
        self.best: tuple[float, int] | None = None
        self.state: dict | None = None
        self.scores: list[dict[str, float]] = []

    def set_error(self, net, data: LabelledSamples) -> float:
        """Mean joint error (input px) of :func:`peak_points` against the centred instance's labelled points."""
        errs = []
        for i in range(0, len(data), self.batch):
            pred = peak_points(net, {k: v[i : i + self.batch] for k, v in data.taps.items()}, self.body_from)
            d = np.linalg.norm(pred - data.points[i : i + self.batch, 0], axis=-1)  # (B, K)
            errs.append(d[np.isfinite(d)])
        return float(np.concatenate(errs).mean())

    def __call__(self, step: int, net, graph) -> None:
        was = net.training
        net.eval()
        errs = {name: self.set_error(net, data) for name, data in self.sets}
        net.train(was)
        score = float(np.mean(list(errs.values())))
        self.scores.append({"step": step, "score": score, **errs})
        better = self.best is None or score < self.best[0]
        if better:
            self.best = (score, step)
            self.state = {"net": copy.deepcopy(net.state_dict()), "graph": copy.deepcopy(graph.state_dict())}
        self.log(f"validation after step {step}: {score:.2f} px (" + ", ".join(f"{k} {v:.2f}" for k, v in errs.items())
                 + f"){' best' if better else ''}")

    def restore(self, net, graph) -> int:
        """Put the best state back into ``net`` and ``graph``; returns its step."""
        net.load_state_dict(self.state["net"])
        graph.load_state_dict(self.state["graph"])
        self.log(f"kept the weights after step {self.best[1]} (validation {self.best[0]:.2f} px)")
        return self.best[1]


def split_for_selection(cfg, spec, net, train_items, cols, data: LabelledSamples,
                        log: Callable[[str], None]) -> tuple[LabelledSamples, Selector]:
    """(training samples ``data`` of a config, main set then extra sets, without the validation items' samples;
    the :class:`Selector` of those items' plain crops, every ``VAL_EVERY``-th validation frame)."""
    if cfg.samples != "centred":
        raise ValueError("checkpoint selection (select_every) reads centred crops: it needs samples: centred")
    sources = [(str(cfg.data_path), list(train_items), cols, cfg.augment.variants, cfg.select_val, 0, "main")]
    for e in cfg.extra_data:
        path = str(cfg.path(cfg.data_root) / e["data"])
        ecols = extra_columns(list(load_labelled_set(path).keypoint_names), dict(e.get("names", {})), spec, path)
        gap = int(e.get("gap", 0))
        sources.append((path, extra_items(path, int(e.get("every", 1)), e.get("held_out", ()), gap), ecols,
                        int(e.get("variants") or cfg.augment.variants), e.get("val", ()), gap, Path(e["data"]).parent.name))
    counts = [warp_counts(items, c, spec, variants, cfg.samples) for _, items, c, variants, *_ in sources]
    if sum(int(n.sum()) for n in counts) != len(data):
        raise ValueError(f"checkpoint selection: {sum(int(n.sum()) for n in counts)} samples expected, {len(data)} made")
    drops = [segment_flags(items, val, gap) if val else np.zeros(len(items), bool)
             for _, items, _, _, val, gap, _ in sources]
    kept = drop_items(data, np.concatenate(counts), np.concatenate(drops))
    val_sets = []
    for (path, items, c, _, val, _, name), n, d in zip(sources, counts, drops):
        if not val:
            continue
        every = list(train_items) if name == "main" else list(load_labelled_set(path).items)  # not only every n-th
        chosen = [it for it, f in zip(every, segment_flags(every, val)) if f][::VAL_EVERY]
        if not chosen:
            raise ValueError(f"checkpoint selection: no frames of {name} in {val} (the main set's must be in its "
                             "training part, before its held-out last val_fraction)")
        plain = prepare_samples(path, chosen, c, spec, net, None, cfg.seed, f"select-{val}-{sorted(map(str, c))}", None, "centred")
        val_sets.append((name, plain))
        log(f"checkpoint selection: {name} frames {val}: {len(plain)} validation crops of {len(chosen)} frames; "
            f"{int(n[d].sum())} training samples dropped")
    if not val_sets:
        raise ValueError("checkpoint selection (select_every) needs validation frames: select_val or an extra set's val")
    return kept, Selector(val_sets, log, body_from=cfg.train_body)
