"""``posetracker eval``: score the pipeline (or the original MoveNet) on labelled sets."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from posetracker.cli.options import add_refiners_argument

METRICS = ("pck@0.1", "pck@0.2", "ap", "ap50", "recall", "recall_tall")
DEFAULT_MOVENET = "../shared/pretrained/movenet/movenet-multipose.json"


def find_sets(paths: list[str]) -> list[Path]:
    """normalized.json files: given directly, or every ``*/normalized.json`` under a folder."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(p.glob("*/normalized.json")) or sorted(p.glob("normalized.json"))
        elif p.exists():
            found.append(p)
        else:
            raise FileNotFoundError(f"labelled set not found: {p}")
    if not found:
        raise FileNotFoundError(f"no normalized.json under {paths}")
    return found


def _predictor(args: argparse.Namespace):
    from posetracker.session import SessionConfig, TrackingSession

    if args.baseline == "movenet":
        from posetracker.evaluation.movenet_baseline import MoveNetBaseline
        from posetracker.model.weights import load_posenet

        net = load_posenet(args.weights)
        return MoveNetBaseline(args.movenet, net.backbone, net.spec).predict, "original MoveNet MultiPose decode"
    config = SessionConfig(vector_read=args.vector_read, threads=args.threads, refiners=tuple(args.refiners))
    session = TrackingSession.open(weights=args.weights, config=config)
    return session.process_image, f"PoseTracker tree decoder ({session.decoder.vector_read} vectors)"


def format_table(results: dict[str, dict]) -> str:
    rows = [f"{'set':<28}{'images':>7}{'people':>7}" + "".join(f"{m:>9}" for m in METRICS)]
    for name, r in results.items():
        rows.append(f"{name:<28}{r['images']:>7}{r['people']:>7}" + "".join(f"{r[m]:>9.3f}" for m in METRICS))
    return "\n".join(rows)


def cmd_eval(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from posetracker.evaluation import evaluate_set, load_labelled_set

    sets = find_sets(args.data)
    predict, label = _predictor(args)
    results, predictions = {}, {}
    for path in sets:
        ls = load_labelled_set(path)
        name = path.parent.name if path.name == "normalized.json" else f"{path.parent.name}/{path.stem}"
        bar = tqdm(total=len(ls.items), desc=name, unit="img", file=sys.stderr, disable=None)
        try:
            r = evaluate_set(ls, predict, progress=lambda d, t: bar.update(d - bar.n))
        except FileNotFoundError as exc:
            print(f"skipped {name}: {exc}", file=sys.stderr)
            continue
        finally:
            bar.close()
        predictions[name] = r.pop("predictions", [])
        results[name] = r
    if args.refiners and args.baseline != "movenet":
        label += f", refiners: {'+'.join(args.refiners)}"
    print(label)
    print(format_table(results))
    if args.out:
        Path(args.out).write_text(json.dumps({"predictor": label, "results": results}, indent=2))
    if args.predictions_out:
        Path(args.predictions_out).write_text(json.dumps(predictions))
    return 0


def add_eval_parser(sub) -> None:
    e = sub.add_parser("eval", help="score on labelled sets (PCK@0.1/0.2, OKS AP/AP50, recall)")
    e.add_argument("--data", nargs="+", required=True,
                   help="normalized.json files, or folders holding */normalized.json (e.g. ../shared/data/human)")
    e.add_argument("--out", help="write the metrics as JSON")
    e.add_argument("--predictions-out", help="write every predicted person as JSON")
    e.add_argument("--weights", default=None)
    e.add_argument("--vector-read", choices=["centre", "parent"], default=None,
                   help="where the decoder reads tree vectors (default: the located parent when the weights are "
                   "trained for the walk, else the centre)")
    e.add_argument("--baseline", choices=["movenet"], default=None,
                   help="score the original MoveNet MultiPose decode instead of ours")
    e.add_argument("--movenet", default=DEFAULT_MOVENET, help="MoveNet TF.js model.json (for --baseline movenet)")
    e.add_argument("--threads", type=int, default=1)
    add_refiners_argument(e, "score with these refiners on (read beside --weights, else the shipped ones)")
    e.set_defaults(func=cmd_eval)
