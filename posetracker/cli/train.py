"""``posetracker train ...``: distil the temporal block and the depth head from teachers.

    posetracker train distill --config configs/distill_quick.yaml [--resume | --fresh] [--stage depth|temporal|all]
                              [--max-minutes N] [--out PATH] [--clips CLIP ...] [--prepare-only]
    posetracker train clip-eval --config configs/distill_quick.yaml --weights A.safetensors [B ...] [--mode live|offline]
    posetracker train pose-prior --config configs/pose_prior.yaml --out models/pose-prior-human18.safetensors
    posetracker train keypoint-heads --config configs/keypoint_heads.yaml --out PATH
    posetracker train int8-calibrate | int8-qat ...   (the 8-bit companion: posetracker.cli.train_int8)

Labels and features are cached under ~/.cache/posetracker (POSETRACKER_CACHE);
a run's checkpoint and losses.csv under <cache>/train/<run>/.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from posetracker.cli.options import (add_crop_budget_argument, add_refiners_argument, add_tiles_argument,
                                     chosen_refiners, crop_budget)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _load(args: argparse.Namespace):
    import torch

    from posetracker.model.weights import load_posenet
    from posetracker.train.config import load_config

    torch.set_num_threads(max(1, args.threads))
    cfg = load_config(args.config)
    net = load_posenet(getattr(args, "init_weights", None) or cfg.weights_path)
    return cfg, net


def cmd_distill(args: argparse.Namespace) -> int:
    from posetracker.model.weights import save_posenet
    from posetracker.train.loop import STAGES, Trainer
    from posetracker.train.prepare import build_entries

    cfg, net = _load(args)
    name = args.run or cfg.run
    t0 = time.time()
    train, val = build_entries(cfg, net, _log, only=args.clips)
    frames = sum(len(e.feats) for e in train)
    _log(f"prepared {len(train)} train entries ({frames} frames), {len(val)} val entries in {time.time() - t0:.0f} s")
    if args.prepare_only:
        return 0
    deadline = None if args.max_minutes is None else time.time() + 60 * args.max_minutes
    trainer = Trainer(net, cfg, train, val, name=name, deadline=deadline)
    if trainer.checkpoint_path.exists() and not (args.resume or args.fresh):
        _log(f"error: run {name!r} already has a checkpoint ({trainer.checkpoint_path}); pass --resume or --fresh")
        return 2
    if args.fresh:
        for f in (trainer.checkpoint_path.name, "losses.csv"):
            (trainer.dir / f).unlink(missing_ok=True)
    elif args.resume and trainer.load_checkpoint():
        _log(f"resumed {name}: stage {trainer.state.stage}, epoch {trainer.state.epoch}, step {trainer.state.step}")
    stages = STAGES if args.stage == "all" else (args.stage,)
    state = trainer.run(stages)
    _log(json.dumps(state.history[-6:], indent=1))
    if args.out:
        before = {s for s in net.meta.get("trained", "").split(",") if s}  # parts the starting weights had
        parts = [s for s in ("depth", "temporal") if s in before or s in state.done or state.stage == s]
        parts += sorted(before - {"depth", "temporal"})  # parts trained by other commands (keypoint heads)
        trained = ",".join(parts)
        src = (f"{net.meta.get('source', 'PoseNet')}; distilled by posetracker train distill (run {name}, "
               f"teacher {cfg.teacher}, stages done: {','.join(state.done) or 'none'})")
        save_posenet(net, args.out, source=src, trained=trained)
        _log(f"wrote {args.out} (trained={trained})")
    _log(f"log: {trainer.dir / 'losses.csv'}")
    return 0


def cmd_clip_eval(args: argparse.Namespace) -> int:
    from posetracker.session import (
        DepthSettings, MotionSettings, NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession,
    )
    from posetracker.train.clip_labels import cached_clip_labels
    from posetracker.train.metrics import evaluate_clip
    from posetracker.train.prepare import make_teacher, selection_for
    from posetracker.train.features import iter_frames

    cfg, net = _load(args)
    if args.blazepose:
        cfg = replace(cfg, blazepose=args.blazepose)
    teacher = make_teacher(cfg)
    clips = args.clips or list(cfg.val)
    results: dict[str, dict] = {}
    baselines: dict[str, dict] = {}  # clip -> the first weights' run, for the added lag of the others
    for weights in args.weights:
        for rel in clips:
            path = cfg.data_path / rel
            sel = selection_for(path, cfg)
            labels = cached_clip_labels(teacher, path, net.spec, sel.key(), lambda: iter_frames(path, sel))
            config = SessionConfig(mode=args.mode,
                                   network=NetworkSettings(lookahead=args.lookahead, threads=args.threads),
                                   people=PeopleSettings(vote_radius=args.vote_radius),
                                   refine=RefineSettings(refiners=chosen_refiners(args), tile_grid=args.tiles,
                                                         **crop_budget(args)),
                                   motion=MotionSettings(smoothing=not args.no_smoothing,
                                                         fix_swaps=not args.no_swap_fix, fix_legs=not args.no_leg_repair),
                                   depth=DepthSettings(pose_prior=not args.no_pose_prior))
            session = TrackingSession.open(weights=weights, config=config)
            for notice in session.notices:
                _log(f"warning: {Path(weights).name}: {notice}")
            r, run = evaluate_clip(session, path, labels, baseline=baselines.get(rel))
            baselines.setdefault(rel, run)
            results[f"{Path(weights).name} | {rel}"] = r
            _log(f"{Path(weights).name} {rel}: " + ", ".join(f"{k}={v:.3f}" for k, v in r.items()))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


def cmd_pose_prior(args: argparse.Namespace) -> int:
    import torch
    from tqdm import tqdm

    from posetracker.skeletons import load_skeleton
    from posetracker.train.pose_prior import (VirtualViews, load_prior_config, mocap_poses, save_pose_prior, teacher_poses,
                                              train_prior)

    torch.set_num_threads(max(1, args.threads))
    cfg = load_prior_config(args.config)
    spec = load_skeleton("human18")
    if cfg.bvh and not cfg.bvh_path.is_dir():
        _log(f"error: motion capture folder not found: {cfg.bvh_path}")
        return 2
    poses = mocap_poses(cfg, spec, _log) + (teacher_poses(cfg, spec, _log) if cfg.distill_config else [])
    _log(f"{sum(len(p) for p in poses)} 3-D poses from {len(poses)} sequences")
    views = VirtualViews(poses, spec, noise=cfg.noise, seed=cfg.seed, pitch_deg=cfg.pitch_deg,
                         roll_sd_deg=cfg.roll_sd_deg)
    bar = tqdm(total=cfg.steps, desc="pose prior", unit="step", dynamic_ncols=True, disable=None)

    def progress(step: int, loss: float) -> None:
        bar.update(1)
        if step % 200 == 0:
            bar.set_postfix(loss=f"{loss:.4f}")

    net = train_prior(views, cfg, progress)
    bar.close()
    sources = [f"mocap {rel}" for rel, _ in cfg.bvh]
    if cfg.distill_config:
        sources.append(f"BlazePose {cfg.blazepose} world poses of the training clips of {cfg.distill_config}")
    save_pose_prior(net, spec, args.out, source=f"posetracker train pose-prior ({Path(args.config).name}: "
                    f"{'; '.join(sources)}; {cfg.steps} steps in {net.train_seconds / 60:.1f} min)")
    _log(f"wrote {args.out} ({len(views.poses)} poses, {net.train_seconds / 60:.1f} min)")
    return 0


def cmd_score_calibration(args) -> int:
    from posetracker.cli.evaluate import find_sets
    from posetracker.train.score_calibration import calibrate

    try:
        lines, _ = calibrate(find_sets(args.data), args.threads)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


def add_train_parser(subparsers) -> None:
    """Add ``train`` (``distill``, ``clip-eval``, ``pose-prior`` and the detector commands) to the top-level sub-parsers."""
    t = subparsers.add_parser("train", help="train parts of the model (distillation from teachers)")
    tsub = t.add_subparsers(dest="train_command", required=True)

    d = tsub.add_parser("distill", help="train the depth head and the temporal GRUs from teacher labels")
    d.add_argument("--config", required=True, help="configs/distill_quick.yaml (the shipped weights' recipe)")
    d.add_argument("--resume", action="store_true", help="continue the run from its last checkpoint")
    d.add_argument("--fresh", action="store_true", help="discard the run's checkpoint and log, start over")
    d.add_argument("--stage", choices=["depth", "temporal", "all"], default="all")
    d.add_argument("--max-minutes", type=float, default=None, help="stop training (checkpointed) after N minutes")
    d.add_argument("--out", help="write the trained weights here (a candidate, e.g. /tmp/posenet-human18.safetensors)")
    d.add_argument("--run", help="run name (default: the config's 'run')")
    d.add_argument("--init-weights", help="start from these weights instead of the config's 'weights'")
    d.add_argument("--clips", nargs="+", help="only these clips (paths relative to the data root)")
    d.add_argument("--prepare-only", action="store_true", help="make the labels and feature caches, do not train")
    d.add_argument("--threads", type=int, default=1, help="torch threads (the CPU is shared: default 1)")
    d.set_defaults(func=cmd_distill)

    e = tsub.add_parser("clip-eval", help="jitter, lag, PCK vs teacher and 3-D metrics on held-out clips")
    e.add_argument("--config", required=True)
    e.add_argument("--weights", nargs="+", required=True, help="weights files to compare; the others' added_lag_frames "
                   "is measured behind the first's output")
    e.add_argument("--clips", nargs="+", help="clips (default: the config's val clips)")
    e.add_argument("--mode", choices=["live", "offline"], default="live")
    e.add_argument("--lookahead", type=int, default=0)
    e.add_argument("--no-smoothing", action="store_true", help="measure the network without the One Euro/SG smoother")
    e.add_argument("--no-pose-prior", action="store_true", help="the depth head alone, without the pose prior's mix")
    e.add_argument("--blazepose", choices=["full", "heavy"], help="BlazePose variant of the reference 3-D "
                   "(default: the config's; heavy = the most accurate teacher, labels cached separately)")
    e.add_argument("--vote-radius", type=int, default=None, metavar="CELLS",
                   help="cells around a keypoint peak whose offsets vote for its position (default: the decoder's, "
                   "2; 0: the peak cell's own offset)")
    e.add_argument("--no-swap-fix", action="store_true", help="leave left/right pairs as the network read them "
                   "(the tracker swaps back pairs crossed against the track by default)")
    e.add_argument("--no-leg-repair", action="store_true", help="offline: leave knees and ankles read on the "
                   "other leg in side views (tracking.near_leg) and the legs after the feet's left / right labels "
                   "swap (motion.sides; both exchanged back by default)")
    e.add_argument("--out", help="write the results as JSON")
    e.add_argument("--threads", type=int, default=1)
    add_refiners_argument(e, "with these refiners on (read beside each weights file)")
    add_tiles_argument(e)
    add_crop_budget_argument(e)
    e.set_defaults(func=cmd_clip_eval)

    p = tsub.add_parser("pose-prior", help="train the pose prior (2-D pose -> joint depths) on mocap and teacher 3-D poses")
    p.add_argument("--config", default="configs/pose_prior.yaml")
    p.add_argument("--out", required=True, help="weights to write (e.g. models/pose-prior-human18.safetensors)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2: nothing else runs while training)")
    p.set_defaults(func=cmd_pose_prior)

    c = tsub.add_parser("score-calibration", help="fit the map from raw person scores to probabilities on labelled "
                        "sets (human18.yaml's score_calibration)")
    c.add_argument("--data", nargs="+", required=True, help="labelled sets (normalized.json files or folders)")
    c.add_argument("--threads", type=int, default=1)
    c.set_defaults(func=cmd_score_calibration)

    from posetracker.cli.train_crop import add_crop_parsers
    from posetracker.cli.train_detector import add_detector_parsers
    from posetracker.cli.train_heads import add_heads_parsers
    from posetracker.cli.train_int8 import add_int8_parsers

    add_crop_parsers(tsub)
    add_detector_parsers(tsub)
    add_heads_parsers(tsub)
    add_int8_parsers(tsub)
