"""The live session's tracking stage (ids, live solve, hinges, bone lengths) alone: its cost and its outputs.

    python studies/tools/live_track_cost.py record CLIP --frames N --out rec.pkl   # the stage's inputs, kept
    python studies/tools/live_track_cost.py replay rec.pkl --runs R [--stages] [--profile]   # CPU ms, outputs' SHA-1

``record`` runs ``TrackingSession`` live (the app's defaults: look-ahead 1, the fast precision stage, one thread)
over the first N frames of CLIP and keeps what enters its tracking stage (``TrackingSession._post_live``) each
frame: the untracked PoseFrame and the bottom-up joints the tracker links by (``_bottom_up``).

    python studies/tools/live_track_cost.py pipeline CLIP --mode live --runs R      # the whole path's CPU ms a frame

``pipeline`` times what ``posetracker bench CLIP`` times (``bench.bench_pipeline``: the session set up as it does,
one thread, 64 frames a run after a warm-up run), but as the process's CPU time a frame over each run (every
thread: reading, network, the frame stage, the tracking stage) beside the wall-clock fps, so that two commits can
be compared on a machine shared with other jobs (wall-clock fps moves with the load; CPU time much less).

``replay`` opens a live session with whichever ``posetracker`` is imported (run it with ``PYTHONPATH=<a git
worktree>`` for another commit; ``cd /tmp`` first so that the repository's own package is not the one found),
feeds the recorded frames through ``_post_live`` ``--runs`` times (the session reset before each run) and prints
the stage's process CPU time a frame (median frame, mean frame; medians over the runs) and the SHA-1 of every
output array (keypoints (P, K, 3), confidence (P, K), scores (P,), track ids (P,), world (P, K, 3)) of the last
run: two commits whose digests agree give byte-identical live outputs on these inputs. ``--stages`` adds each
part's CPU ms a frame (medians over the runs): the tracker (``PoseTracker.update``), the far-depth blend, the
unconfirmed-people filter (``_shown``), the live solve (``LiveSolve.update``, of it the One Euro smoother and the
hinges where the commit has them) and the bone lengths. ``--profile`` adds a cProfile of one more run (the 25
costliest functions by own time).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import hashlib
import io
import pickle
import pstats
import statistics
import time


def _session():
    import torch

    from posetracker.session import SessionConfig, TrackingSession

    torch.set_num_threads(1)
    return TrackingSession.open("human18", None, SessionConfig(mode="live"))


def record(clip: str, frames: int, out: str) -> None:
    from posetracker.capture import open_source
    from posetracker.session import TrackingSession

    session = _session()
    kept = []
    inner = TrackingSession._post_live

    def keep(self, pose, network_ms):
        kept.append((copy.deepcopy(pose), copy.deepcopy(self._bottom_up.get(pose.index))))
        return inner(self, pose, network_ms)

    TrackingSession._post_live = keep
    source = open_source(clip)

    def first():
        for i, f in enumerate(source):
            if i >= frames:
                break
            yield f

    t0 = time.time()
    with source:
        session.run(first(), fps=source.fps)
    with open(out, "wb") as fh:
        pickle.dump({"clip": clip, "frames": kept}, fh)
    people = sum(p.num_people for p, _ in kept) / max(len(kept), 1)
    print(f"{clip}: {len(kept)} frames ({people:.2f} people a frame) in {time.time() - t0:.0f} s -> {out}")


def _timed(obj, name: str, label: str, spent: dict[str, float]) -> None:
    """Wrap ``obj.name`` so that its process CPU time adds up in ``spent[label]`` (s)."""
    inner = getattr(obj, name)

    def timed(*args, **kwargs):
        t0 = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - t0

    setattr(obj, name, timed)


def _run(session, frames: list, parts: dict[str, float] | None = None) -> tuple[list, list[float]]:
    """One replay: the outputs and each frame's process CPU time (s); ``parts`` (if given) gets each part's CPU
    time over the run (s)."""
    session.reset()
    if parts is not None:  # the session's tracker, smoother and bones are made again by reset
        _timed(session.tracker, "update", "tracker", parts)
        _timed(session.smoother, "update", "live solve", parts)
        inner = getattr(session.smoother, "smoother", None)
        if inner is not None:
            _timed(inner, "update", "  of it smoother", parts)
        if getattr(session.smoother, "hinges", None) is not None:
            _timed(session.smoother.hinges, "update", "  of it hinges", parts)
        _timed(session.bones, "update", "bone lengths", parts)
        for obj, name, label in ((session.depth, "blend_tracks", "far-depth blend"), (session, "_shown", "shown")):
            _timed(obj, name, label, parts)
    outs, spent = [], []
    for pose, bottom_up in frames:
        pose = copy.deepcopy(pose)
        if bottom_up is not None:
            session._bottom_up[pose.index] = copy.deepcopy(bottom_up)
        t0 = time.process_time()
        outs.append(session._post_live(pose, 0.0))
        spent.append(time.process_time() - t0)
    if parts is not None:
        for obj, name in ((session.depth, "blend_tracks"), (session, "_shown")):
            obj.__dict__.pop(name, None)  # these outlive the reset
    return outs, spent


def digest(outs: list) -> str:
    h = hashlib.sha1()
    for f in outs:
        for a in (f.keypoints, f.confidence, f.scores, f.track_ids, f.world):
            if a is not None:
                h.update(str(a.dtype).encode() + str(a.shape).encode())
                h.update(a.tobytes())
    return h.hexdigest()


def replay(path: str, runs: int, profile: bool, stages: bool = False) -> None:
    import posetracker

    with open(path, "rb") as fh:
        rec = pickle.load(fh)
    session = _session()
    frames = rec["frames"]
    _run(session, frames)  # warm-up
    medians, means, by_part = [], [], {}
    for _ in range(runs):
        parts = {} if stages else None
        outs, spent = _run(session, frames, parts)
        medians.append(statistics.median(spent) * 1000)
        means.append(statistics.fmean(spent) * 1000)
        for k, v in (parts or {}).items():
            by_part.setdefault(k, []).append(v / len(frames) * 1000)
    print(f"{posetracker.__file__}: {rec['clip']}, {len(frames)} frames, {runs} runs")
    print(f"  CPU ms a frame: median frame {statistics.median(medians):.3f} (runs {', '.join(f'{m:.3f}' for m in medians)}),"
          f" mean frame {statistics.median(means):.3f} (runs {', '.join(f'{m:.3f}' for m in means)})")
    for k, v in by_part.items():
        print(f"  {k:<18} {statistics.median(v):.3f} ms a frame")
    print(f"  outputs SHA-1 {digest(outs)}")
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        _run(session, frames)
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        print(text.getvalue())


def pipeline(clip: str, mode: str, runs: int, frames: int = 64) -> None:
    import posetracker
    from posetracker.bench import _pipeline_run
    from posetracker.defaults import DEFAULT_LOOKAHEAD
    from posetracker.session import (
        NetworkSettings,
        PeopleSettings,
        RefineSettings,
        SessionConfig,
        TrackingSession,
    )

    config = SessionConfig(mode=mode, network=NetworkSettings(threads=1, lookahead=DEFAULT_LOOKAHEAD, int8=True,
                                                              two_stage=None),
                           people=PeopleSettings(), refine=RefineSettings(refiners=None, tile_grid=None))
    session = TrackingSession.open(None, None, config)  # as bench_pipeline sets it up
    _pipeline_run(session, clip, mode, frames)  # warm-up, as bench_pipeline
    cpu, fps = [], []
    for _ in range(runs):
        t0 = time.process_time()
        f, _ = _pipeline_run(session, clip, mode, frames)
        cpu.append((time.process_time() - t0) / frames * 1000)
        fps.append(f)
    print(f"{posetracker.__file__}: {clip} {mode}, {runs} runs of {frames} frames: CPU ms a frame "
          f"{statistics.median(cpu):.1f} (runs {', '.join(f'{c:.1f}' for c in cpu)}), fps {statistics.median(fps):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("clip")
    r.add_argument("--frames", type=int, default=120)
    r.add_argument("--out", required=True)
    p = sub.add_parser("replay")
    p.add_argument("recording")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--stages", action="store_true")
    p.add_argument("--profile", action="store_true")
    q = sub.add_parser("pipeline")
    q.add_argument("clip")
    q.add_argument("--mode", default="live", choices=("live", "offline"))
    q.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if a.cmd == "record":
        record(a.clip, a.frames, a.out)
    elif a.cmd == "replay":
        replay(a.recording, a.runs, a.profile, a.stages)
    else:
        pipeline(a.clip, a.mode, a.runs)


if __name__ == "__main__":
    main()
