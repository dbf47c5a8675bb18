"""Live two-fly speed, one process: the live runs of ``posetracker bench CLIP --skeleton fly13 --max-people 2
--threads 1 --runs 3 --frames 48`` (``bench._pipeline_run``, look-ahead 1, after one warm-up run), printed as
two numbers: the median fps of wall time and the median fps of the process's CPU time (``time.process_time``:
what other work on the same core does not move). For comparing code versions, run it from ``git archive``
copies pinned to one core, interleaved (studies/fly13.md, "Two flies live"):

    python studies/tools/fly_live_bench.py flies_1000_1499.mp4 --cut ../shared/data/animal/sleap_flies_clip_train/clip.mp4
    taskset -c 1 env PYTHONPATH=COPY python studies/tools/fly_live_bench.py flies_1000_1499.mp4

(``--cut SOURCE``: first write CLIP, frames 1000-1499 of SOURCE with OpenCV's mp4v, then time it; ``--animals 2``:
with a known count, as ``process --animals 2``; ``--centre-every K``: ``RefineSettings.centre_every``.)
"""

from __future__ import annotations

import argparse
import statistics
import time


def cut(source: str, out: str, first: int = 1000, count: int = 500) -> None:
    import cv2

    src = cv2.VideoCapture(source)
    fps = src.get(cv2.CAP_PROP_FPS)
    for _ in range(first):  # read rather than seek: every codec lands on the same frame
        src.grab()
    writer = None
    for _ in range(count):
        ok, frame = src.read()
        if not ok:
            break
        writer = writer or cv2.VideoWriter(out, cv2.VideoWriter_fourcc(*"mp4v"), fps, frame.shape[1::-1])
        writer.write(frame)
    writer.release()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("clip")
    ap.add_argument("--cut", metavar="SOURCE", help="first write CLIP: frames 1000-1499 of SOURCE")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--animals", type=int, help="a known number of animals (PeopleSettings.known_count, as "
                    "process --animals N: the centre model looks for 2N centres); default: max people 2 only")
    ap.add_argument("--centre-every", type=int, help="RefineSettings.centre_every (default: the session's)")
    ap.add_argument("--weights", help="the centre model (the crop model and its 8-bit companion beside it; "
                    "default: the shipped ones)")
    ap.add_argument("--config", help="a crop model's training config: its top_down options (e.g. align) instead of "
                    "the shipped skeleton's")
    args = ap.parse_args()
    if args.cut:
        cut(args.cut, args.clip)
    from posetracker.bench import _pipeline_run
    from posetracker.session import NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession

    refine = RefineSettings(centre_every=args.centre_every) if args.centre_every else RefineSettings()
    config = SessionConfig(mode="live", network=NetworkSettings(threads=1, lookahead=1),
                           people=PeopleSettings(max_people=2, known_count=args.animals), refine=refine)
    spec = "fly13"
    if args.config:
        from posetracker.train.detector import config_spec, load_detector_config

        spec = config_spec(load_detector_config(args.config))
    session = TrackingSession.open(spec, args.weights, config)
    _pipeline_run(session, args.clip, "live", args.frames)  # warm-up
    wall, cpu = [], []
    for _ in range(args.runs):
        c0 = time.process_time()
        fps, _ = _pipeline_run(session, args.clip, "live", args.frames)
        wall.append(fps)
        cpu.append(args.frames / (time.process_time() - c0))
    print(f"{statistics.median(wall):.2f} {statistics.median(cpu):.2f}")


if __name__ == "__main__":
    main()
