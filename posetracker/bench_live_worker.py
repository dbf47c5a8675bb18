"""PoseTracker's side of ``posetracker bench --versus-mediapipe``, in a process of its own.

The harness starts this module under ``taskset -c CORES``, as it starts MediaPipe's peer script, so that
every thread the libraries start (torch, ONNX Runtime, OpenCV, PyAV) is confined from the first import;
pinning a running process afterwards leaves threads started for all CPUs (measured: 31 fps instead of
45-50 on one core, studies/runtime-speed.md, "One core against MediaPipe").

    python -m posetracker.bench_live_worker SPEC_JSON

SPEC_JSON: ``{"path", "frames", "weights", "lookahead", "refiners", "tile_grid", "crop_budget_ms", "int8",
"two_stage"}`` (as :func:`posetracker.bench.bench_versus_mediapipe` takes them). The worker opens a live
session, runs one untimed warm-up and prints ``{"ready": true}``; then, per line on stdin, ``run`` times one
run and prints ``{"fps", "latencies" (ms, one per frame), "people" (one per frame)}``, and ``end`` prints
the whole result (:class:`posetracker.bench.PipelineResult` as a dict) and exits. One JSON object a line.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict


def main(argv: list[str]) -> int:
    from posetracker.bench import _pipeline_run, _result
    from posetracker.pipeline_live import use_two_stages
    from posetracker.session import SessionConfig, TrackingSession

    spec = json.loads(argv[0])
    chosen = ("lookahead", "refiners", "tile_grid", "crop_budget_ms", "int8", "two_stage")  # None: the default
    config = SessionConfig.from_dict({"mode": "live", "threads": 1,
                                      **{k: spec[k] for k in chosen if spec.get(k) is not None}})
    session = TrackingSession.open(weights=spec.get("weights"), config=config)
    two_stage = use_two_stages(session.config.network.two_stage)  # as this (confined) process resolves it
    path, frames = spec["path"], int(spec["frames"])
    _pipeline_run(session, path, "live", frames)  # warm-up
    print(json.dumps({"ready": True}), flush=True)
    fps, lat, people = [], [], []
    for line in sys.stdin:
        command = line.strip()
        if command == "run":
            run_people: list[int] = []
            f, l = _pipeline_run(session, path, "live", frames, run_people)
            fps.append(f)
            lat += l
            people += run_people
            print(json.dumps({"fps": f, "latencies": l, "people": run_people}), flush=True)
        elif command == "end":
            break
    result = _result(session, "live", fps or [0.0], lat, len(fps), frames, spec["lookahead"], people, two_stage)
    print(json.dumps(asdict(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
