"""Live jitter of two configurations on the held-out clips, with a paired bootstrap.

    python studies/tools/jitter_bootstrap.py [--vs int8 | --vs crop-fast]

``--vs int8`` (default): the 8-bit graph against the float network. ``--vs crop-fast``: the fast precision
stage with one crop a frame (``--refiners crop-fast --crop-budget 10``) against none.
For each held-out clip of configs/distill_quick.yaml (first 120 frames; live, look-ahead 1, the app's
smoothing), the session runs both ways. Jitter is ``train.metrics.jitter`` (mean |second difference| of every
track's joints, px/frame^2). The paired ratio uses the joint-frames both runs are sure of (confidence >= 0.3 in
both: one joint set for the two sides); its 95% interval comes from 2,000 resamplings of blocks of 10 frames.
"""
import os, sys, numpy as np, torch
torch.set_num_threads(1)
from posetracker.session import NetworkSettings, RefineSettings, SessionConfig, TrackingSession
from posetracker.capture import VideoFileSource
from posetracker.train.metrics import sequence_tracks, jitter
R = "../shared/data/video/more/"  # run from the repository root, ../shared beside it
clips = {"demo4": R + "sports2d_demos/demo4_older_woman_walking.mp4", "pose_1": R + "tfjs_pose_test_data/pose_1.mp4",
         "asl_sister": R + "intel_sample_videos/asl_sister.mkv"}
N = 120
VS = sys.argv[sys.argv.index("--vs") + 1] if "--vs" in sys.argv else "int8"
ONE = NetworkSettings(lookahead=1)
CONFIGS = {"int8": (SessionConfig(mode="live", network=NetworkSettings(lookahead=1, int8=False)),
                    SessionConfig(mode="live", network=ONE)),
           "crop-fast": (SessionConfig(mode="live", network=ONE, refine=RefineSettings(refiners=())),
                         SessionConfig(mode="live", network=ONE,
                                       refine=RefineSettings(refiners=("crop-fast",), crop_budget_ms=10.0)))}[VS]
rng = np.random.default_rng(0)
pooled = []
for name, clip in clips.items():
    acc = {}
    for side, config in enumerate(CONFIGS):
        s = TrackingSession.open(config=config)
        with VideoFileSource(clip) as src:
            seq = s.run((f for f in src if f.index < N), fps=src.fps)
        p = sequence_tracks(seq)
        xy, ok = p["xy"], p["ok"] & np.isfinite(p["xy"]).all(-1)
        a = np.linalg.norm(xy[2:] - 2 * xy[1:-1] + xy[:-2], axis=-1)
        m = ok[2:] & ok[1:-1] & ok[:-2]
        acc[side] = (a, m, jitter(p["xy"], p["ok"]))
    (af, mf, jf), (aq, mq, jq) = acc[0], acc[1]
    n = min(af.shape[1], aq.shape[1]); af, mf, aq, mq = af[:, :n], mf[:, :n], aq[:, :n], mq[:, :n]
    both = mf & mq
    T = af.shape[0]; B = 10
    starts = np.arange(0, T, B)
    ratios = []
    for _ in range(2000):
        pick = rng.choice(starts, len(starts))
        idx = np.concatenate([np.arange(s0, min(s0 + B, T)) for s0 in pick])
        w = both[idx]
        ratios.append(aq[idx][w].mean() / af[idx][w].mean())
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    print(f"{name}: jitter {jf:.3f} -> {jq:.3f} ({VS}) ratio {jq / jf:.3f}; paired (both ok) {aq[both].mean() / af[both].mean():.3f} 95% block-bootstrap [{lo:.3f}, {hi:.3f}]")
