"""Network speed: frames per second of PoseNet's forward at 256x256.

Causal mode pushes one frame at a time through ``CausalStream`` (look-ahead
0); bidirectional mode runs windows of 8 frames. Each configuration is timed
over ``runs`` runs of ``frames`` frames after one warm-up run; the report
gives the median and the min/max of the per-run frames per second.
"""

from __future__ import annotations

import platform
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from posetracker.defaults import DEFAULT_LOOKAHEAD
from posetracker.model.network import CausalStream, PoseNet
from posetracker.pipeline_live import use_two_stages


@dataclass(frozen=True)
class BenchResult:
    mode: str
    runtime: str
    threads: int
    median_fps: float
    min_fps: float
    max_fps: float
    median_ms_per_frame: float
    runs: int
    frames_per_run: int


def _time_run(fn, frames: int) -> float:
    t0 = time.perf_counter()
    fn()
    return frames / (time.perf_counter() - t0)


def bench_network(net: PoseNet, threads: int, mode: str, runs: int = 5, frames: int = 16,
                  window: int = 8, size: int = 256, runtime: str = "torch") -> BenchResult:
    """Time one (mode, threads, runtime) configuration; mode is "causal" or "bidirectional";
    runtime "onnxruntime" runs the backbone in ONNX Runtime (``model.runtime.accelerate``)."""
    if runtime == "onnxruntime":
        from posetracker.model.runtime import accelerate, plain

        plain(net)
        if accelerate(net, threads) != "onnxruntime":
            raise RuntimeError("ONNX Runtime is not available")
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        clip = torch.rand(frames, 3, size, size, generator=gen) * 255
        if mode == "causal":
            stream = CausalStream(net, lookahead=0)

            def run() -> None:
                stream.reset()
                for i in range(frames):
                    stream.push(clip[i : i + 1])
        elif mode == "bidirectional":
            if frames % window:
                raise ValueError(f"frames ({frames}) must be a multiple of the window ({window})")

            def run() -> None:
                with torch.no_grad():
                    for s in range(0, frames, window):
                        net(clip[None, s : s + window])
        else:
            raise ValueError(f"unknown mode {mode!r}; choices: causal, bidirectional")
        run()  # warm-up
        fps = [_time_run(run, frames) for _ in range(runs)]
    finally:
        torch.set_num_threads(previous)
        if runtime == "onnxruntime":
            plain(net)
    med = statistics.median(fps)
    return BenchResult(mode, runtime, threads, med, min(fps), max(fps), 1000.0 / med, runs, frames)


def machine_description() -> str:
    import os

    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical cores, torch {torch.__version__}, {platform.system()}"


def format_table(results: list[BenchResult]) -> str:
    rows = [f"{'mode':<14}{'runtime':<13}{'threads':>8}{'median fps':>12}{'min':>8}{'max':>8}{'ms/frame':>10}"]
    for r in results:
        rows.append(f"{r.mode:<14}{r.runtime:<13}{r.threads:>8}{r.median_fps:>12.1f}{r.min_fps:>8.1f}{r.max_fps:>8.1f}{r.median_ms_per_frame:>10.1f}")
    return "\n".join(rows)


def results_json(results: list[BenchResult]) -> dict:
    return {"machine": machine_description(), "results": [asdict(r) for r in results]}


@dataclass(frozen=True)
class PipelineResult:
    mode: str
    median_fps: float
    min_fps: float
    max_fps: float
    median_latency_ms: float  # live: read of a frame until its PoseFrame (look-ahead included); offline: 1000 / fps
    network_ms: float  # medians of the session's stage times
    decode_ms: float
    track_ms: float
    runs: int
    frames_per_run: int
    lookahead: int = 0  # live: frames the output waits for (0 for offline)
    refiners: tuple[str, ...] = ()  # the refiners the session ran
    people: float = 0.0  # median people (or animals) tracked per frame
    backbone: str = "float"  # live: "int8" when the graph with the 8-bit body ran (model/int8.py)
    two_stage: bool = False  # live: the network and the rest on two threads (pipeline_live.live_poses)


def _pipeline_run(session, path: str, mode: str, frames: int, people: list[int] | None = None) -> tuple[float, list[float]]:
    """One timed run of ``session`` over the first ``frames`` frames of ``path`` -> (fps, live latencies ms);
    ``people`` (if given) gets the number tracked in each output frame."""
    from posetracker.capture import open_source

    latencies: list[float] = []
    with open_source(path) as src:
        t_start = time.perf_counter()
        if mode == "live":
            from posetracker.pipeline_live import poses

            session.reset()
            read_at: dict[int, float] = {}
            done: list[tuple[int, float]] = []  # (index, latency ms) of each pose as it is finished

            def reading():
                for _ in range(frames):
                    t0 = time.perf_counter()
                    frame = src.read()
                    if frame is None:
                        return
                    read_at[frame.index] = t0
                    yield frame

            def finished(pose) -> None:
                done.append((pose.index, (time.perf_counter() - read_at[pose.index]) * 1000))
                if people is not None:
                    people.append(pose.num_people)

            for _ in poses(session, reading(), on_finish=finished):
                pass
            n = len(read_at)
            # the frames held back by the look-ahead come out at the stream's end: not a live latency
            last = n - 1 - session.config.network.lookahead
            latencies = [ms for i, ms in done if i <= last]
        else:
            clip = (f for f in iter(src.read, None))
            seq = session.run((f for _, f in zip(range(frames), clip)), fps=src.fps)
            n = len(seq)
            if people is not None:
                people += [p.num_people for p in seq.frames]
    return n / (time.perf_counter() - t_start), latencies


def _result(session, mode: str, fps: list[float], lat: list[float], runs: int, frames: int, lookahead: int,
            people: list[int] = (), two_stage: bool | None = None) -> PipelineResult:
    """``two_stage``: whether the live runs had two stages (None: as the session's config resolves now)."""
    hist = list(session.times.history) or [(0.0, 0.0, 0.0)]
    med = statistics.median
    return PipelineResult(mode, med(fps), min(fps), max(fps), med(lat) if lat else 1000.0 / med(fps),
                          med(h[0] for h in hist), med(h[1] for h in hist), med(h[2] for h in hist), runs, frames,
                          lookahead if mode == "live" else 0, tuple(session.refiners.names),
                          float(med(people)) if people else 0.0, "int8" if getattr(session.stream, "int8", False) else "float",
                          mode == "live" and (use_two_stages(session.config.network.two_stage) if two_stage is None else two_stage))


def bench_pipeline(path: str, mode: str, runs: int = 5, frames: int = 60, threads: int = 1,
                   weights: str | None = None, lookahead: int = DEFAULT_LOOKAHEAD,
                   refiners: tuple[str, ...] | None = None, tile_grid: int | None = None, skeleton: str | None = None,
                   max_people: int | None = None, crop_budget_ms: float | None = None, int8: bool = True,
                   two_stage: bool | None = None) -> PipelineResult:
    """End to end on a video: read + letterbox + network + decoding + tracking, ``frames`` frames a run.

    Live latency runs from reading a frame until its own PoseFrame comes out, i.e. ``lookahead``
    further frames later (read back to back here, so each waits for ``lookahead`` more steps)."""
    from posetracker.session import NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession

    people = PeopleSettings() if max_people is None else PeopleSettings(max_people=max_people)
    budget = {} if crop_budget_ms is None else {"crop_budget_ms": crop_budget_ms}
    config = SessionConfig(mode=mode, network=NetworkSettings(threads=threads, lookahead=lookahead, int8=int8,
                                                              two_stage=two_stage), people=people,
                           refine=RefineSettings(refiners=None if refiners is None else tuple(refiners),
                                                 tile_grid=tile_grid, **budget))
    session = TrackingSession.open(skeleton, weights, config)
    _pipeline_run(session, path, mode, frames)  # warm-up
    fps, lat, people = [], [], []
    for _ in range(runs):
        f, l = _pipeline_run(session, path, mode, frames, people)
        fps.append(f)
        lat += l
    return _result(session, mode, fps, lat, runs, frames, lookahead, people)


PEER_SCRIPT = Path(__file__).resolve().parent / "peers" / "mediapipe_pose.py"


@dataclass(frozen=True)
class VersusResult:
    """PoseTracker live against MediaPipe Pose full on the same frames, runs interleaved, on the same cores."""

    ours: PipelineResult
    mediapipe_fps: list[float]
    ratios: list[float]  # ours / MediaPipe, run by run
    cores: tuple[int, ...]

    @property
    def mediapipe_median(self) -> float:
        return statistics.median(self.mediapipe_fps)

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)


def bench_versus_mediapipe(path: str, python: str, runs: int = 5, frames: int = 100, weights: str | None = None,
                           lookahead: int = DEFAULT_LOOKAHEAD, refiners: tuple[str, ...] | None = None,
                           cores: tuple[int, ...] = (0,), tile_grid: int | None = None,
                           crop_budget_ms: float | None = None, int8: bool = True, two_stage: bool | None = None
                           ) -> VersusResult:
    """PoseTracker live (1 inference thread) and MediaPipe Pose full (``python``: an interpreter whose
    environment has ``mediapipe``; it runs :data:`PEER_SCRIPT`), alternating run by run on the same first
    ``frames`` frames; each side's warm-up is not timed. Both sides are processes started under
    ``taskset -c CORES``, so every thread either starts is confined to ``cores`` from the beginning
    (PoseTracker's side: :mod:`posetracker.bench_live_worker`, one session kept open over its runs). On more
    than one core the peer script reads and converts the next frame on a thread of its own while MediaPipe
    runs (``--prefetch``), as PoseTracker's two stages read on their helper thread."""
    import json
    import subprocess
    import sys
    import tempfile

    cpus = ",".join(map(str, cores))
    peer_cmd = ["taskset", "-c", cpus, python, str(PEER_SCRIPT), path, str(frames), *(["--prefetch"] if len(cores) > 1 else [])]
    spec = {"path": path, "frames": frames, "weights": weights, "lookahead": lookahead,
            "refiners": None if refiners is None else list(refiners), "tile_grid": tile_grid,
            "crop_budget_ms": crop_budget_ms, "int8": int8, "two_stage": two_stage}
    ours_cmd = ["taskset", "-c", cpus, sys.executable, "-m", "posetracker.bench_live_worker", json.dumps(spec)]
    ours, peer = [], []
    with tempfile.TemporaryFile("w+") as errors:
        worker = subprocess.Popen(ours_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True)

        def reply() -> dict:
            for line in worker.stdout:
                if line.startswith("{"):
                    return json.loads(line)
            worker.wait()
            errors.seek(0)
            raise RuntimeError(f"PoseTracker's timing process failed: {errors.read().strip()[-500:]}")

        def send(command: str) -> dict:
            worker.stdin.write(command + "\n")
            worker.stdin.flush()
            return reply()

        try:
            reply()  # ready: session open, warm-up done
            for _ in range(runs):
                ours.append(send("run")["fps"])
                out = subprocess.run(peer_cmd, capture_output=True, text=True, timeout=600)
                lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
                if out.returncode != 0 or not lines:
                    raise RuntimeError(f"MediaPipe run failed ({python}): {(out.stderr or out.stdout).strip()[-500:]}")
                peer.append(float(json.loads(lines[-1])["fps"]))
            doc = send("end")
        finally:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
    doc["refiners"] = tuple(doc["refiners"])
    return VersusResult(PipelineResult(**doc), peer, [a / b for a, b in zip(ours, peer)], tuple(cores))


def format_pipeline_table(results: list[PipelineResult]) -> str:
    rows = [f"{'mode':<14}{'median fps':>12}{'min':>8}{'max':>8}{'latency ms':>12}{'net ms':>8}{'decode':>8}{'track':>8}"
            f"{'people':>8}  refiners"]
    for r in results:
        stages = "".join(f"{v:>8.1f}" if r.mode == "live" else f"{'-':>8}" for v in (r.network_ms, r.decode_ms, r.track_ms))
        name = f"live, la {r.lookahead}" if r.mode == "live" else r.mode
        rows.append(f"{name:<14}{r.median_fps:>12.1f}{r.min_fps:>8.1f}{r.max_fps:>8.1f}{r.median_latency_ms:>12.1f}{stages}"
                    f"{r.people:>8g}  {'+'.join(r.refiners) or '-'}")
    return "\n".join(rows)


@dataclass(frozen=True)
class PacedResult:
    """Live-paced run: the source plays at its own fps, inference takes the newest frame."""

    inference_fps: float
    median_latency_ms: float  # from a frame being read until its pose is ready (as the app's status bar)
    dropped: int  # frames never inferred because a newer one replaced them
    frames: int
    lookahead: int = DEFAULT_LOOKAHEAD
    two_stage: bool = True  # poses finished on a helper thread while the network takes the next frame


def bench_paced(path: str, frames: int = 200, threads: int = 1, weights: str | None = None,
                lookahead: int = DEFAULT_LOOKAHEAD, int8: bool = True, two_stage: bool | None = None) -> PacedResult:
    """Play ``path`` at its frame rate in one thread; infer the newest frame in another (the app's set-up:
    ``two_stage``, each pose finished on a helper thread, ``pipeline_live.Finisher``, as the app's worker).

    The latency of a frame runs from its read until its own pose is out: with look-ahead that is
    after ``lookahead`` more *inferred* frames, as in the app."""
    import threading

    import numpy as np

    from posetracker.capture import open_source
    from posetracker.session import NetworkSettings, SessionConfig, TrackingSession
    from posetracker.types import Frame

    session = TrackingSession.open(weights=weights, config=SessionConfig(mode="live",
                                                                         network=NetworkSettings(threads=threads,
                                                                                                 lookahead=lookahead,
                                                                                                 int8=int8)))
    read_at: dict[int, float] = {}
    lock, done = threading.Lock(), threading.Event()
    slot: list = [None]  # (frame, time read) or None: a one-item latest-wins mailbox
    counts = {"read": 0, "dropped": 0}

    def capture() -> None:
        with open_source(path) as src:
            t0 = time.monotonic()
            for frame in src:
                if counts["read"] >= frames:
                    break
                with lock:
                    counts["dropped"] += slot[0] is not None
                    slot[0] = (frame, time.monotonic())
                counts["read"] += 1
                time.sleep(max(0.0, t0 + counts["read"] / src.fps - time.monotonic()))
        done.set()

    session.step(Frame(0, 0.0, np.zeros((64, 64, 3), np.uint8)))  # warm-up
    session.reset()
    worker = threading.Thread(target=capture, daemon=True)
    worker.start()
    latencies, t_start, inferred = [], time.perf_counter(), 0

    def out(pose, _tag=None) -> None:
        latencies.append((time.monotonic() - read_at.pop(pose.index)) * 1000)

    from posetracker.pipeline_live import Finisher

    two_stage = use_two_stages(two_stage)
    finisher = Finisher(session, out) if two_stage else None
    while not (done.is_set() and slot[0] is None):
        with lock:
            item, slot[0] = slot[0], None
        if item is None:
            time.sleep(0.001)
            continue
        read_at[item[0].index] = item[1]
        if finisher is not None:
            got = session.infer(session.prepare(item[0]))
            if got is not None:
                finisher.submit(got)
        elif (pose := session.step(item[0])) is not None:
            out(pose)
        inferred += 1
    if finisher is not None:
        finisher.drain()
        finisher.close()
    elapsed = time.perf_counter() - t_start
    worker.join()
    return PacedResult(inferred / elapsed, statistics.median(latencies), counts["dropped"], counts["read"], lookahead,
                       two_stage)

