"""``posetracker train held-out-eval`` with a top-down mode's refiners on its CROP model (studies/fly13.md, "The crop
model's refiners", issue #49), and the CPU time of each refiner combination.

    python studies/tools/crop_refiners_eval.py [--every N] [held-out-eval arguments] --out X.json

The arguments are held-out-eval's (e.g. ``--config configs/fly13-crops.yaml --weights W/posenet-fly13.safetensors
--refiners none graph heatmap heatmap+graph --animals 2 --mode offline``). Each session it opens gets
``second_look.crop_refiners`` (which ``TrackingSession`` now calls itself; a second call changes nothing): the maps-
and people-stage refiners read beside the weights (``refiner-heatmap-fly13``, ``refiner-graph-fly13``, trained on the
crop model by ``configs/fly13-crops-refiners.yaml``) run on each crop's maps instead of the centre model's (whose
keypoints the crops replace, so there they change nothing). The scores and
``--out`` are held-out-eval's; printed after: each combination's process CPU seconds per scored frame (the whole
offline reading: centre model, every turn and round of every crop, the refiners), also written to the --out file
under ``"cpu_s_per_frame"``. ``--every N``: only every N-th held-out frame is scored (the same frames for every
combination, so the results stay paired; the offline reading costs ~1.5-3 CPU s a frame).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import posetracker.evaluation.held_out as held_out
from posetracker.cli import main
from posetracker.second_look import crop_refiners
from posetracker.session import TrackingSession

CPU: dict[str, list[float]] = {}  # combination -> CPU s of each scored frame


def _patch() -> None:
    opened = TrackingSession.open.__func__

    def open_(cls, *args, **kwargs):
        session = opened(cls, *args, **kwargs)
        crop_refiners(session)
        name = "+".join(session.crop_model.refiners.names) if session.crop_model is not None else ""
        times = CPU.setdefault(name or "none", [])
        process = session.process_image

        def timed(rgb):
            t = time.process_time()
            pose = process(rgb)
            times.append(time.process_time() - t)
            return pose

        session.process_image = timed
        return session

    TrackingSession.open = classmethod(open_)


def _every(n: int) -> None:
    score = held_out.evaluate_items

    def every(predict, items, *args, **kwargs):
        return score(predict, items[::n], *args, **kwargs)

    held_out.evaluate_items = every  # held-out-eval imports it when it runs


if __name__ == "__main__":
    _patch()
    args = sys.argv[1:]
    if "--every" in args:
        i = args.index("--every")
        _every(int(args[i + 1]))
        args = args[:i] + args[i + 2:]
    rc = main(["train", "held-out-eval", *args])
    cost = {k: sum(v) / max(len(v), 1) for k, v in CPU.items()}
    for k, v in cost.items():
        print(f"{k:15s} {v:.3f} CPU s a frame ({len(CPU[k])} frames)", file=sys.stderr)
    if "--out" in args:
        out = Path(args[args.index("--out") + 1])
        if out.is_file():
            out.write_text(json.dumps({**json.loads(out.read_text()), "cpu_s_per_frame": cost}, indent=2))
    sys.exit(rc)
