"""The detector training of ``posetracker train detector`` and the held-out report of ``train held-out-eval``,
shared by the command line and the app's user modes (:mod:`.user_mode`): load a config, make its samples,
train the FPN, heads and graph refiner jointly (with progress and cancel), score the held-out items."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Progress = Callable[[int, int, str], None]  # (done, total: 0 = unknown, what is being done)
Cancel = Callable[[], bool]
Log = Callable[[str], None]

REPORT_REFINERS = ("none", "graph", "heatmap", "heatmap+graph")  # the held-out report's refiner combinations


class TrainingCancelled(Exception):
    """``cancel()`` returned True: training stopped between two steps; no weights were written."""


class TrainingError(ValueError):
    """Something the user can fix (a name taken, too few labelled frames, a missing file); the message says what."""


@dataclass
class DetectorRun:
    """What :func:`train_detector` wrote and how long it took."""

    weights: Path
    refiner: Path
    history: list[dict[str, float]]
    minutes: float
    train_items: int
    val_items: int
    samples: int


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_training(config_path: str | Path, threads: int = 1):
    """(cfg, spec, train items, held-out items, joint columns) of a ``train detector`` config; sets torch's
    threads and seed as ``posetracker train detector`` does. TrainingError when the labelled set is missing."""
    import torch

    from posetracker.train.detector import config_spec, load_detector_config
    from posetracker.train.detector_samples import load_split

    torch.set_num_threads(max(1, threads))
    torch.manual_seed(0)
    cfg = load_detector_config(config_path)
    spec = config_spec(cfg)
    if cfg.teacher_config:
        return cfg, spec, [], [], None
    if not cfg.data_path.is_file():
        raise TrainingError(f"labelled set not found: {cfg.data_path}")
    train_items, val_items, cols = load_split(str(cfg.data_path), spec, cfg.val_fraction)
    return cfg, spec, train_items, val_items, cols


def detector_samples(cfg, spec, net, items, cols, log: Log = _stderr,
                     update: Callable[[int, int], None] | None = None):
    """The training samples of a config (warped labelled frames, or teacher-labelled clip frames) with the
    frozen body's cached outputs; ``update(done, total)`` per frame read."""
    from posetracker.train.detector_samples import extra_samples, join_samples, prepare_samples, teacher_samples

    if cfg.teacher_config:
        return teacher_samples(str(cfg.path(cfg.teacher_config)), spec, net, cfg.augment, cfg.seed,
                               cfg.clip_every, cfg.clip_max, log, update)
    own = prepare_samples(str(cfg.data_path), items, cols, spec, net, cfg.augment, cfg.seed, "train", update,
                          cfg.samples)
    extra = []
    for e in cfg.extra_data:
        path = cfg.path(cfg.data_root) / e["data"]
        if not path.is_file():
            raise TrainingError(f"extra labelled set not found: {path}")
        extra.append(extra_samples(str(path), dict(e.get("names", {})), int(e.get("every", 1)), spec, net,
                                   cfg.augment, cfg.seed, update, cfg.samples, e.get("held_out", ()),
                                   int(e.get("gap", 0)), e.get("variants")))
        log(f"extra set {e['data']}: {len(extra[-1])} samples")
    return join_samples([own, *extra])


def train_detector(cfg, spec, train_items, val_items, cols, steps: int | None = None, out: str | Path | None = None,
                   log: Log = _stderr, samples: Callable[[Any], Any] | None = None,
                   step_progress: Callable[[int, int, dict[str, float]], None] | None = None,
                   cancel: Cancel | None = None) -> DetectorRun:
    """``posetracker train detector``: a new detector for ``spec`` from ``cfg.init_weights``, its FPN, heads
    and graph refiner trained jointly for ``steps`` (default ``cfg.steps``), saved to ``out`` (default
    ``cfg.out_path``) with the refiner beside it. Both files are written only when training finished
    (each atomically); ``cancel()`` True between steps raises :class:`TrainingCancelled` before that.
    ``samples(net)``: the training samples (default :func:`detector_samples` without progress);
    ``step_progress(done, steps, losses)`` after every step."""
    import torch

    from posetracker.model.weights import load_posenet, save_posenet
    from posetracker.refiners import build_refiner, refiner_path, save_refiner
    from posetracker.train.detector import detector_loss, first_features, new_detector, run_training

    if not train_items and not cfg.teacher_config:
        raise TrainingError("no labelled frames left to train on (the project needs at least 2 labelled frames: "
                            "the last fifth is held out)")
    if cfg.train_seed is not None:
        torch.manual_seed(cfg.train_seed)
    net = new_detector(spec, load_posenet(cfg.path(cfg.init_weights)))
    t0 = time.time()
    data = samples(net) if samples is not None else detector_samples(cfg, spec, net, train_items, cols, log)
    selector = None
    if cfg.select_every:
        from posetracker.train.checkpoint_select import split_for_selection

        data, selector = split_for_selection(cfg, spec, net, train_items, cols, data, log)
    log(f"{len(train_items)} training items x {cfg.augment.variants} variants = {len(data)} samples "
        f"({time.time() - t0:.0f} s); {len(val_items)} held out")
    if cancel is not None and cancel():
        raise TrainingCancelled("training cancelled")
    if cfg.resume:  # after the samples: they are cached under the frozen body's key, which resuming keeps
        net = resume_detector(net, load_posenet(cfg.path(cfg.resume), spec), cfg.resume)
    graph = build_refiner("graph", spec, **cfg.graph)
    net.train()
    groups = [{"params": list(net.heads.parameters()) + list(graph.parameters()), "lr": cfg.lr}]
    if cfg.train_fpn:
        groups.append({"params": list(net.backbone.fpn.parameters()), "lr": cfg.fpn_lr})
    if cfg.train_body:
        groups.append({"params": net.backbone.body.parameters_after(cfg.train_body), "lr": cfg.body_lr})
    gen = torch.Generator().manual_seed(cfg.heads_seed)
    t1 = time.time()

    def loss(b):
        return detector_loss(net, graph, first_features(net, b["taps"], cfg.train_fpn, cfg.train_body), b["tgt"],
                             cfg, gen)

    steps = steps or cfg.steps
    check = None if selector is None else (lambda step: selector(step, net, graph))
    history = run_training(loss, groups, data, spec, cfg, steps, log, "detector+graph", step_progress, cancel, check)
    if len(history) < steps:
        raise TrainingCancelled(f"training cancelled after {len(history)} of {steps} steps")
    kept = steps if selector is None else selector.restore(net, graph)
    minutes = (time.time() - t1) / 60
    net.eval()
    out = Path(out) if out else cfg.out_path
    body = f", body past {cfg.train_body}" if cfg.train_body else ""
    src = (f"backbone: {Path(cfg.init_weights).name}; heads{body} and graph refiner trained jointly by posetracker train "
           f"detector on {cfg.data} ({len(train_items)} items, {len(data)} samples, {len(history)} steps, "
           f"{minutes:.1f} min" + (f"; kept step {kept}, best on the validation frames" if selector else "") + ")")
    gpath = refiner_path("graph", spec.name, out.parent)
    save_refiner(graph.eval(), gpath, cfg.graph, detector=out.name)  # the refiner first: the weights mark a whole run
    save_posenet(net, out, source=src, trained="heads,body" if cfg.train_body else "heads")
    log(f"wrote {out} and {gpath} ({minutes:.1f} min of training)")
    return DetectorRun(out, gpath, history, minutes, len(train_items), len(val_items), len(data))


def train_refiner(cfg, spec, weights: Path, data, kind: str, steps: int | None = None, out: str | Path | None = None,
                  log: Log = _stderr, step_progress: Callable[[int, int, dict[str, float]], None] | None = None,
                  cancel: Cancel | None = None) -> tuple[Path, list[dict[str, float]]]:
    """``posetracker train refiner``: a ``kind`` refiner ("heatmap": method B; "graph": method C as a plug-in)
    trained on the frozen detector ``weights`` for ``steps`` (default ``cfg.heatmap_steps`` / ``cfg.graph_steps``)
    on ``data`` (:func:`detector_samples` of that detector's body), saved to ``out`` (default
    ``refiner-<kind>-<skeleton>.safetensors`` beside ``weights``) only when every step ran -> (path, per-step
    losses). TrainingError when the refiner would break its size budget beside the detector; ``cancel()`` True
    between steps raises :class:`TrainingCancelled`."""
    import torch

    from posetracker.model.weights import load_posenet
    from posetracker.refiners import RefinerError, build_refiner, refiner_path, save_refiner
    from posetracker.train.detector import first_features, graph_refiner_loss, heatmap_refiner_loss, run_training

    net = load_posenet(weights, spec).eval()
    params = cfg.heatmap if kind == "heatmap" else cfg.graph
    refiner = build_refiner(kind, spec, **params)
    try:
        refiner.check_budget(net)  # method B step 5: detector and refiner together stay small
    except RefinerError as exc:
        raise TrainingError(str(exc)) from None
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    t1 = time.time()

    def loss(b):
        feats = first_features(net, b["taps"], train=False)
        if kind == "heatmap":
            return heatmap_refiner_loss(net, refiner, feats, b["images"], b["tgt"], cfg, gen)
        return graph_refiner_loss(net, refiner, feats, b["tgt"], cfg, gen)

    steps = steps or (cfg.heatmap_steps if kind == "heatmap" else cfg.graph_steps)
    history = run_training(loss, [{"params": list(refiner.parameters()), "lr": cfg.lr}], data, spec, cfg, steps,
                           log, kind, step_progress, cancel)
    if len(history) < steps:
        raise TrainingCancelled(f"{kind} refiner training cancelled after {len(history)} of {steps} steps")
    path = Path(out) if out else refiner_path(kind, spec.name, Path(weights).parent)
    save_refiner(refiner.eval(), path, params, detector=Path(weights).name)
    log(f"wrote {path} ({(time.time() - t1) / 60:.1f} min of training)")
    return path, history


def helping_refiners(scores: dict[str, dict]) -> tuple[str, ...]:
    """The refiners a trained mode runs by default, from :func:`held_out_report`'s ``scores``: of the
    combinations that read the held-out frames better than none (PCK@0.1 not lower, as many animals found, mean
    error lower), the one with the lowest mean error; () where none does (or nothing was scored)."""
    base = scores.get("none")
    if not base:
        return ()

    def better(r: dict) -> bool:
        try:
            return (r["found"] >= base["found"] and r["pck@0.1"] >= base["pck@0.1"]
                    and r["mean_px"] < base["mean_px"])
        except (KeyError, TypeError):  # a score missing (None: nothing found)
            return False

    helping = [(r["mean_px"], combo) for combo, r in scores.items() if combo != "none" and better(r)]
    return tuple(min(helping)[1].split("+")) if helping else ()


def resume_detector(net, done, name: str):
    """``net`` (a new detector) with the FPN and heads of ``done``, a trained detector of the same skeleton
    whose frozen MobileNetV2 body must equal ``net``'s (the cached samples are that body's outputs)."""
    from posetracker.model.weights import weights_key

    if weights_key(done.backbone.body) != weights_key(net.backbone.body):
        raise TrainingError(f"resume: {name} has another backbone body than init_weights")
    net.load_state_dict(done.state_dict(), strict=False)
    return net


def held_out_report(spec, weights: Path, val_items, cols, combos=REPORT_REFINERS, threads: int = 1,
                    progress: Progress | None = None, cancel: Cancel | None = None, log: Log = _stderr) -> dict:
    """``posetracker train held-out-eval``'s scores of ``weights`` (refiners read beside it) on the held-out
    items, per refiner combination: {combo: evaluate_items' dict (pck@0.1, pck@0.2, mean_px, median_px,
    found, instances, ...)}."""
    from posetracker.evaluation.held_out import evaluate_items
    from posetracker.session import NetworkSettings, RefineSettings, SessionConfig, TrackingSession

    results = {}
    for combo in combos:
        kinds = () if combo == "none" else tuple(combo.split("+"))
        session = TrackingSession.open(spec, weights, SessionConfig(network=NetworkSettings(threads=threads),
                                                                    refine=RefineSettings(refiners=kinds)))
        what = "no refiner" if combo == "none" else f"{combo} refiner"

        def update(done: int, total: int, what=what) -> None:
            if cancel is not None and cancel():
                raise TrainingCancelled("cancelled while scoring the held-out frames")
            if progress is not None:
                progress(done, total, f"Scoring the held-out frames ({what}): {done} / {total}")

        update(0, len(val_items))
        r = evaluate_items(session.process_image, val_items, cols, spec, update)
        results[combo] = r
        log(f"{combo:15s} PCK@0.1 {r['pck@0.1']:.3f}  PCK@0.2 {r['pck@0.2']:.3f}  mean {r['mean_px']:.2f} px  "
            f"median {r['median_px']:.2f} px  found {r['found']}/{r['instances']}")
    return results
