"""Live outputs with 8-bit companions against the float live graph, on clips.

    python studies/tools/int8_fidelity.py CLIP[,CLIP...] COMPANION [COMPANION ...]

For each clip (its first 150 frames; live, look-ahead 1, no smoothing) and each companion file
(``models/posenet-human18.int8.safetensors`` or one made by ``posetracker train int8-calibrate`` / ``int8-qat``): the error of the
highest-scoring person's keypoints (the 8-bit run's nearest person), median and mean over frames of the mean
over joints both runs see at confidence > 0.3, as a share of that person's height in the float run; and the lag
of the 8-bit track behind the float one in frames (``train.metrics.lag_frames``).
"""
import sys, json, numpy as np, torch
torch.set_num_threads(1)
from pathlib import Path
from posetracker.model import int8
from posetracker.session import MotionSettings, NetworkSettings, SessionConfig, TrackingSession
from posetracker.capture import open_source
from posetracker.train.metrics import lag_frames

if len(sys.argv) < 3 or sys.argv[1].startswith("-"):
    print(__doc__)
    sys.exit(2)
clips = sys.argv[1].split(",")
companions = sys.argv[2:]
N = 150

def run(comp):
    if comp != "float":
        int8.companion_for = lambda net, p=comp: Path(p)
    out = {}
    for clip in clips:
        s = TrackingSession.open(config=SessionConfig(mode="live",
                                                      network=NetworkSettings(lookahead=1, int8=comp != "float"),
                                                      motion=MotionSettings(smoothing=False)))
        assert (comp == "float") != bool(getattr(s.stream, "int8", False)), comp
        with open_source(clip) as src:
            frames = [f for _, f in zip(range(N), iter(src.read, None))]
        seq = s.run(frames, fps=30.0)
        out[clip] = seq.frames
    return out

ref = run("float")
for comp in companions:
    got = run(comp)
    for clip in clips:
        errs, a, b = [], [], []
        for fr, fg in zip(ref[clip], got[clip]):
            if fr.num_people == 0 or fg.num_people == 0:
                a.append(np.full((17, 2), np.nan)); b.append(np.full((17, 2), np.nan)); continue
            i = int(np.argmax(fr.scores))
            c = np.nanmean(fr.keypoints[i, :17, :2], 0)
            j = int(np.argmin([np.nansum((np.nanmean(fg.keypoints[q, :17, :2], 0) - c) ** 2) for q in range(fg.num_people)]))
            kr, kg = fr.keypoints[i, :17, :2], fg.keypoints[j, :17, :2]
            ok = (fr.confidence[i, :17] > 0.3) & (fg.confidence[j, :17] > 0.3)
            h = np.nanmax(kr[ok, 1]) - np.nanmin(kr[ok, 1]) if ok.sum() > 3 else np.nan
            if ok.any() and h > 0:
                errs.append(np.nanmean(np.linalg.norm(kr[ok] - kg[ok], axis=1)) / h)
            a.append(np.where(ok[:, None], kr, np.nan)); b.append(np.where(ok[:, None], kg, np.nan))
        lag = lag_frames(np.array(b), np.array(a))
        print(f"{Path(comp).name[:32]:32s} {Path(clip).name[:22]:22s} err/height median {np.median(errs):.4f} mean {np.mean(errs):.4f}  lag vs float {lag:+.2f}", flush=True)
