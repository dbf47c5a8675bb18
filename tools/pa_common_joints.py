"""PA-MPJPE against the teacher on the joints both decoders find: the centre read against the anchored walk
(with the centre read as its second hypothesis), the shipped weights, no refiner, no smoothing
(docs/experiments/tree-walk.md).

    python tools/pa_common_joints.py offline|live CLIP [CLIP ...]     (clips relative to ../shared/data/video)
"""
import sys, argparse, numpy as np
from posetracker.cli.train import _load
from posetracker.session import SessionConfig, TrackingSession
from posetracker.train.clip_labels import cached_clip_labels
from posetracker.train.metrics import run_clip, pa_mpjpe, _virtual_mask
from posetracker.train.prepare import make_teacher, selection_for
from posetracker.train.features import iter_frames
args = argparse.Namespace(config="configs/distill_quick.yaml", weights=["models/posenet-human18.safetensors"], init_weights=None, threads=1)
cfg, net = _load(args)
teacher = make_teacher(cfg)
mode = sys.argv[1]
for rel in sys.argv[2:]:
    path = cfg.data_path / rel; sel = selection_for(path, cfg)
    labels = cached_clip_labels(teacher, path, net.spec, sel.key(), lambda: iter_frames(path, sel))
    runs = {}
    for v in ("centre", "anchored"):
        s = TrackingSession.open(weights="models/posenet-human18.safetensors", config=SessionConfig(mode=mode, lookahead=1, threads=1, smoothing=False, refiners=(), vector_read=v))
        runs[v] = run_clip(s, path, labels)
    spec = net.spec; K = spec.num_joints
    common = runs["centre"]["matched_ok"] & runs["anchored"]["matched_ok"] & labels.visible
    vm = ~_virtual_mask(spec)
    out = []
    for v in ("centre", "anchored"):
        own = runs[v]["matched_ok"] & labels.visible
        out.append(f"{v}: own {pa_mpjpe(runs[v]['matched_world'].reshape(-1,K,3), labels.world.reshape(-1,K,3), own.reshape(-1,K) & vm):.1f} (n {own.sum()}) common {pa_mpjpe(runs[v]['matched_world'].reshape(-1,K,3), labels.world.reshape(-1,K,3), common.reshape(-1,K) & vm):.1f} (n {common.sum()})")
    print(rel.split('/')[-1], " | ".join(out), flush=True)
