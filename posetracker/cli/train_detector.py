"""``posetracker train detector|refiner|held-out-eval``: a skeleton's heads and refiners from labelled images.

    posetracker train detector --config configs/mouse4.yaml          # heads + GNN (method C), jointly
    posetracker train refiner --kind heatmap --config configs/mouse4.yaml   # method B, detector frozen
    posetracker train held-out-eval --config configs/mouse4.yaml [--refiners none heatmap graph heatmap+graph]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from pathlib import Path

from posetracker.defaults import DEFAULT_MAX_PEOPLE

TRAINABLE_REFINERS = ("heatmap", "graph")  # the refiner kinds ``train refiner`` has a loss and a config section for


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _setup(args: argparse.Namespace):
    from posetracker.train.detector_run import TrainingError, load_training

    try:
        return load_training(args.config, args.threads)
    except TrainingError as exc:
        raise SystemExit(f"error: {exc}") from None


def _samples(cfg, spec, net, items, cols):
    from tqdm import tqdm

    from posetracker.train.detector_run import detector_samples

    bar = tqdm(total=len(items) or None, desc="features", dynamic_ncols=True)
    update = lambda d, t: (setattr(bar, "total", t), bar.update(d - bar.n))  # noqa: E731
    try:
        return detector_samples(cfg, spec, net, items, cols, _log, update)
    finally:
        bar.close()


def cmd_detector(args: argparse.Namespace) -> int:
    from posetracker.train.detector_run import TrainingError, train_detector

    cfg, spec, train_items, val_items, cols = _setup(args)
    cfg = dataclasses.replace(cfg, **{k: v for k, v in (("batch", args.batch), ("resume", args.resume)) if v})
    if args.train_seed is not None:
        cfg = dataclasses.replace(cfg, train_seed=args.train_seed)
    try:
        run = train_detector(cfg, spec, train_items, val_items, cols, args.steps, args.out, _log,
                             samples=lambda net: _samples(cfg, spec, net, train_items, cols))
    except TrainingError as exc:
        raise SystemExit(f"error: {exc}") from None
    _write_log(run.weights.with_suffix(".losses.json") if args.log is None else Path(args.log), run.history)
    return 0


def cmd_refiner(args: argparse.Namespace) -> int:
    from posetracker.model.weights import load_posenet
    from posetracker.train.detector_run import TrainingError, train_refiner

    cfg, spec, train_items, val_items, cols = _setup(args)
    weights = Path(args.weights) if args.weights else cfg.out_path
    data = _samples(cfg, spec, load_posenet(weights, spec), train_items, cols)
    try:
        _, history = train_refiner(cfg, spec, weights, data, args.kind, args.steps, args.out, _log)
    except TrainingError as exc:
        raise SystemExit(f"error: {exc}") from None
    if args.log:
        _write_log(Path(args.log), history)
    return 0


def _write_log(path: Path, history: list[dict]) -> None:
    path.write_text(json.dumps(history))
    _log(f"loss log: {path}")


def cmd_held_out_eval(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from posetracker.evaluation.held_out import evaluate_items
    from posetracker.refiners import available_refiners, load_chain
    from posetracker.session import NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession

    cfg, spec, _, val_items, cols = _setup(args)
    if args.data:  # another labelled set, every frame of it held out (e.g. a session the config never saw)
        from posetracker.evaluation.datasets import LabelledSetError
        from posetracker.train.detector_samples import load_split

        try:
            _, val_items, cols = load_split(args.data, spec, 1.0)
        except (OSError, LabelledSetError) as exc:
            raise SystemExit(f"error: {args.data}: {exc}") from None
    elif args.extra_held_out:  # the held-out segments of the config's extra set (extra_data: held_out)
        from posetracker.train.detector_samples import extra_held_out

        sets = [e for e in cfg.extra_data if e.get("held_out")]
        if len(sets) != 1:
            raise SystemExit(f"error: --extra-held-out needs one extra_data set with held_out, {len(sets)} have it")
        val_items, cols = extra_held_out(str(cfg.path(cfg.data_root) / sets[0]["data"]), dict(sets[0].get("names", {})),
                                         sets[0]["held_out"], spec, args.animals)
    elif cfg.teacher_config:
        raise SystemExit("error: this config trains on teacher-labelled clips; score it with "
                         "posetracker eval --refiners ... (labelled sets) and train clip-eval --refiners ...")
    weights = Path(args.weights) if args.weights else cfg.out_path
    combos = args.refiners
    if combos is None:  # none, each refiner trained beside the detector (maps stage first), all of them together
        kinds = load_chain(available_refiners(spec.name, weights.parent), spec, weights.parent).names
        combos = ["none", *kinds] + (["+".join(kinds)] if len(kinds) > 1 else [])
    results = {}
    for combo in combos:
        kinds = () if combo == "none" else tuple(combo.split("+"))
        session = TrackingSession.open(spec, weights, SessionConfig(mode=args.mode,
                                                                    network=NetworkSettings(threads=args.threads),
                                                                    people=PeopleSettings(max_people=args.animals or args.max_people,
                                                                                          known_count=args.animals,
                                                                                          vote_radius=args.vote_radius),
                                                                    refine=RefineSettings(refiners=kinds)))
        bar = tqdm(total=len(val_items), desc=combo, dynamic_ncols=True)
        predict = session.process_image
        if args.sequence:  # the held-out frames' video as a stream, live or offline (evaluation.live_sequence)
            from posetracker.evaluation.live_sequence import live_poses_at, offline_poses_at, sequence_predictor

            poses_at = live_poses_at if args.mode == "live" else offline_poses_at
            predict = sequence_predictor(poses_at(session, val_items), val_items)
        r = evaluate_items(predict, val_items, cols, spec, lambda d, t: bar.update(d - bar.n))
        bar.close()
        results[combo] = r
        turned = f"  reversed {r['reversed']}/{r['oriented']}" if r["oriented"] else ""
        _log(f"{combo:15s} PCK@0.1 {r['pck@0.1']:.3f}  PCK@0.2 {r['pck@0.2']:.3f}  mean {r['mean_px']:.2f} px  "
             f"RMSE {r['rmse_px']:.2f} px  median {r['median_px']:.2f} px  found {r['found']}/{r['instances']}{turned}")
    if args.tracking:
        results["tracking"] = _tracking(args, cfg, spec, weights, cols)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


def _tracking(args: argparse.Namespace, cfg, spec, weights: Path, cols) -> dict:
    """Track the labelled set's video offline (the product's path) and count identity switches against its
    labelled tracks, over every labelled frame (training frames too: tracking is not trained)."""
    from posetracker.capture import open_source
    from posetracker.evaluation.datasets import load_labelled_set
    from posetracker.evaluation.held_out import identity_switches
    from posetracker.session import NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession

    items = [it for it in load_labelled_set(str(cfg.data_path)).items if it.video is not None]
    if not items:
        raise SystemExit("error: --tracking needs a labelled set of video frames")
    video = items[0].video
    items = [it for it in items if it.video == video]
    session = TrackingSession.open(spec, weights, SessionConfig(mode="offline",
                                                                network=NetworkSettings(threads=args.threads),
                                                                people=PeopleSettings(max_people=args.animals or args.max_people,
                                                                                      known_count=args.animals,
                                                                                      vote_radius=args.vote_radius),
                                                                refine=RefineSettings(refiners=())))
    last = max(it.frame_idx for it in items)  # frames after the last labelled one score nothing: not read
    with open_source(str(video)) as src:  # streamed: 1500 frames of 1024 x 1024 would hold 4.7 GB
        frames = itertools.islice(iter(src.read, None), last + 1)
        seq = session.run(frames, fps=src.fps, total=min(src.frame_count or last + 1, last + 1))
    r = identity_switches({p.index: p for p in seq.frames}, items, cols)
    _log(f"tracking {video.name}: {len(seq.frames)} frames, {r['switches']} identity switches over {r['frames']} "
         f"labelled frames ({r['matched']}/{r['track_frames']} labelled animals matched to a track)"
         + (f"; at frames {r['switch_frames'][:20]}" if r["switch_frames"] else ""))
    return r


def add_detector_parsers(tsub) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", required=True, help="configs/<skeleton>.yaml")
    common.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")

    d = tsub.add_parser("detector", parents=[common],
                        help="train a skeleton's heads and its graph refiner (method C) from labelled images")
    d.add_argument("--steps", type=int, help="override the config's steps")
    d.add_argument("--batch", type=int, help="override the config's batch")
    d.add_argument("--resume", help="go on from these weights of the same skeleton (override the config's resume)")
    d.add_argument("--out", help="detector weights (default: the config's out); the refiner goes beside it")
    d.add_argument("--train-seed", type=int, help="override the config's train_seed (new heads, batch order)")
    d.add_argument("--log", help="per-step losses as JSON (default: beside the weights, .losses.json)")
    d.set_defaults(func=cmd_detector)

    r = tsub.add_parser("refiner", parents=[common],
                        help="train a refiner (heatmap: method B; graph: method C as a plug-in) on a frozen detector")
    r.add_argument("--kind", default="heatmap", choices=TRAINABLE_REFINERS)
    r.add_argument("--weights", help="the frozen detector (default: the config's out)")
    r.add_argument("--steps", type=int, help="override the config's heatmap_steps / graph_steps")
    r.add_argument("--out", help="refiner weights (default: refiner-<kind>-<skeleton>.safetensors beside the detector)")
    r.add_argument("--log", help="per-step losses as JSON")
    r.set_defaults(func=cmd_refiner)

    e = tsub.add_parser("held-out-eval", parents=[common],
                        help="PCK and pixel error on the config's held-out images, per refiner combination")
    e.add_argument("--weights", help="detector weights (default: the config's out); refiners are read beside it")
    e.add_argument("--refiners", nargs="+", default=None, metavar="COMBO",
                   help="refiner combinations to score, e.g. none heatmap heatmap+graph (default: none, each refiner "
                        "trained beside the weights, and all of them together)")
    e.add_argument("--out", help="write the results as JSON")
    e.add_argument("--data", help="score on this labelled set (normalized.json schema), all of it, instead of the "
                   "config's held-out images (e.g. configs/heldout/mouse4-m3v1.json)")
    e.add_argument("--mode", choices=("live", "offline"), default="live",
                   help="the session's mode for the still frames (default live; a top-down mode reads its crops "
                        "at 8 turns offline, at most 2 live)")
    e.add_argument("--extra-held-out", action="store_true",
                   help="score on the held_out segments of the config's extra_data set instead (with --animals N "
                        "only their frames labelled with N animals)")
    e.add_argument("--sequence", action="store_true",
                   help="play the held-out frames' video to the session and score its output there, instead of "
                        "reading each frame as a still: live, frame by frame from 10 frames before each run of "
                        "held-out frames; offline, each run with 10 frames either side processed as a video (the "
                        "whole-file path: tracking, the motion solve)")
    e.add_argument("--tracking", action="store_true",
                   help="also track the labelled video offline and count identity switches against its labelled tracks")
    e.add_argument("--max-people", type=int, default=DEFAULT_MAX_PEOPLE,
                   help="most animals a frame (the scores and tracking; e.g. 2 for a pair without --animals)")
    e.add_argument("--animals", type=int, default=None, metavar="N",
                   help="exactly N animals in every frame, as posetracker process --animals N: the N strongest "
                        "readings are kept (scores and tracking)")
    e.add_argument("--vote-radius", type=int, default=None, metavar="CELLS",
                   help="cells around a keypoint peak whose offsets vote for its position (default: the decoder's; "
                        "0: the peak cell's own offset)")
    e.set_defaults(func=cmd_held_out_eval)
