"""The app's inference rate against ``posetracker bench --paced`` on the same clip, rounds interleaved.

    xvfb-run is needed (a virtual screen for the real window); run from the repository root:

    python studies/tools/app_vs_bench.py ../shared/data/video/video_openpose_examples/video.avi --rounds 3

The clip is played forwards, backwards, forwards, ... (at least four times, and longer than the app's run) and
re-encoded at ``--fps`` (default 120, faster than the network, so that both sides are limited by inference, not
by the source), once, into a temporary folder. Each round runs the app (``main.py --source LOOP --screenshot ... --quit-after
SECONDS``; it prints the status bar's rates over the last 2 s and its mean inference rate since its first
pose) and then the bench (``--paced``: the source at its fps, inference on the newest frame, as the app
does), and prints both rates and their ratio; the last line is the median ratio of the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import av
import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def looped_clip(src: Path, dst: Path, fps: int, seconds: float) -> Path:
    """``src`` forwards, backwards, forwards, ... (at least four times, at least ``seconds`` long), as H.264 at
    ``fps`` (even sides)."""
    with av.open(str(src)) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    h, w = (frames[0].shape[0] // 2) * 2, (frames[0].shape[1] // 2) * 2
    seq: list[np.ndarray] = []
    while len(seq) < max(4 * len(frames), seconds * fps):
        seq += frames if len(seq) // len(frames) % 2 == 0 else frames[::-1]
    with av.open(str(dst), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        for rgb in seq:
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb[:h, :w]), format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return dst


def app_rates(clip: Path, seconds: float, shot: Path) -> tuple[float, float]:
    """(status bar inference fps over the last 2 s, mean inference fps since the first pose) of one app run."""
    cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", sys.executable, str(ROOT / "main.py"), "--source",
           str(clip), "--screenshot", str(shot), "--quit-after", str(seconds)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120, cwd=ROOT,
                         env={**os.environ, "QT_QPA_PLATFORM": "xcb"})
    bar = re.search(r"inference ([\d.]+) fps", out.stdout)
    mean = re.search(r"([\d.]+) fps since the first pose", out.stdout)
    if bar is None:
        raise RuntimeError(f"the app printed no rates: {(out.stderr or out.stdout)[-800:]}")
    return float(bar.group(1)), float(mean.group(1)) if mean else float("nan")


def bench_rate(clip: Path) -> float:
    cmd = [sys.executable, "-m", "posetracker", "bench", str(clip), "--paced", "--frames", "6", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT, check=True)
    return float(json.loads(out.stdout)["paced"]["inference_fps"])


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("clip", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fps", type=int, default=120, help="frame rate of the looped clip")
    ap.add_argument("--seconds", type=float, default=12.0, help="the app's run (it starts in ~5 s)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="app-vs-bench-"))
    clip = looped_clip(args.clip, tmp / "loop.mp4", args.fps, args.seconds + 10)
    print(f"{args.clip} forwards and backwards over {args.seconds + 10:.0f} s at {args.fps} fps: {clip}")
    print("round | load | app status bar fps (mean since first pose) | bench --paced fps | app / bench")
    ratios = []
    for r in range(1, args.rounds + 1):
        at = load()
        bar, mean = app_rates(clip, args.seconds, tmp / f"shot{r}.png")
        bench = bench_rate(clip)
        ratios.append(bar / bench)
        print(f"{r} | {at} | {bar:.1f} ({mean:.1f}) | {bench:.1f} | {bar / bench:.2f}", flush=True)
    print(f"median app / bench: {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}; "
          f"{sum(abs(x - 1) <= 0.2 for x in ratios)} of {len(ratios)} within 20%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
