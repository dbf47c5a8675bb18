"""``posetracker eval``: score the pipeline (or the original MoveNet) on labelled sets."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from posetracker.cli.eval_multiview import add_multiview_parser
from posetracker.cli.options import add_refiners_argument, add_tiles_argument, chosen_refiners

METRICS = ("pck@0.1", "pck@0.2", "ap", "ap50", "recall", "recall_tall", "pck_first@0.1", "sure_share")
COUNTS = ("predicted_people", "duplicates", "weak_skeletons")  # evaluation.people_sets
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


def _predictor(args: argparse.Namespace, baseline: str | None):
    from posetracker.session import NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession

    if baseline == "thunder-boxes":
        from posetracker.evaluation.thunder_boxes import ThunderOnBoxes

        return ThunderOnBoxes(args.crop_weights), "MoveNet Thunder given the true person boxes (a teacher with help)"
    if baseline == "movenet":
        from posetracker.evaluation.movenet_baseline import MoveNetBaseline
        from posetracker.model.weights import load_posenet

        net = load_posenet(args.weights)
        return MoveNetBaseline(args.movenet, net.backbone, net.spec).predict, "original MoveNet MultiPose decode"
    # still photos are offline work: the offline mode's defaults (precision stage, tiles) unless chosen; --mode
    # live: the live mode's (its fast precision stage where two CPUs are usable, no tiles), each photo held as a clip
    config = SessionConfig(mode=args.mode,
                           network=NetworkSettings(threads=args.threads, low_light=not args.no_low_light),
                           people=PeopleSettings(vote_radius=args.vote_radius),
                           refine=RefineSettings(refiners=chosen_refiners(args), tile_grid=args.tiles,
                                                 crop_weights=args.crop_weights))
    session = TrackingSession.open(weights=args.weights, config=config)
    for notice in session.notices:
        print(f"warning: {notice}", file=sys.stderr)
    grid = session.image_tile_grid if args.mode == "offline" else session.tile_grid
    label = f"PoseTracker tree decoder (tiles {grid}x{grid})"
    if session.refiners:
        label += f", refiners: {'+'.join(session.refiners.names)}"
    if args.mode == "live":
        from posetracker.evaluation.live_stills import HOLD_FRAMES, live_still_predictor

        label += f", live (look-ahead {session.config.network.lookahead}, each photo held {HOLD_FRAMES} frames)"
        return live_still_predictor(session), label
    return session.process_image, label


def format_table(results: dict[str, dict]) -> str:
    width = {m: max(9, len(m) + 2) for m in METRICS}
    heads = {"predicted_people": "skeletons", "duplicates": "dups", "weak_skeletons": "weak"}
    rows = [f"{'set':<28}{'images':>7}{'people':>7}" + "".join(f"{m:>{width[m]}}" for m in METRICS)
            + "".join(f"{heads[c]:>10}" for c in COUNTS)]
    for name, r in results.items():
        rows.append(f"{name:<28}{r['images']:>7}{r['people']:>7}" + "".join(f"{r[m]:>{width[m]}.3f}" for m in METRICS)
                    + "".join(f"{r[c]:>10d}" for c in COUNTS))
    total = {k: sum(r[k] for r in results.values()) for k in ("images", "people", *COUNTS)}
    found = sum(r["found_first"] for r in results.values())
    sure = sum(round(r["sure_share"] * r["found_first"]) for r in results.values() if r["found_first"])
    rows.append(f"all sets: {total['people']} people in {total['images']} images; {total['predicted_people']} "
                f"skeletons, {total['duplicates']} duplicates, {total['weak_skeletons']} under 0.02; "
                f"{sure} of {found} people found score >= 0.25")
    partial = [name for name, r in results.items() if not r.get("every_person_labelled", True)]
    if partial:
        rows.append(f"({', '.join(partial)}: one person labelled an image; AP leaves out predictions that "
                    "overlap no labelled person)")
    return "\n".join(rows)


def format_versus(ours: dict[str, dict], theirs: dict[str, dict], their_name: str) -> str:
    """Mean over the sets scored by both, ours against theirs, with the paired difference and its 95%
    bootstrap interval over sets; recall_tall pooled over people."""
    from posetracker.evaluation.metrics import paired_bootstrap

    names = [n for n in ours if n in theirs]
    rows = [f"mean over {len(names)} sets: ours / {their_name} (difference, 95% bootstrap interval over sets)"]
    for m in ("pck@0.1", "pck_first@0.1", "pck@0.2", "ap", "recall"):
        a, b = [ours[n][m] for n in names], [theirs[n][m] for n in names]
        d, lo, hi = paired_bootstrap(a, b)
        rows.append(f"  {m:<12}{sum(a) / len(a):.3f} / {sum(b) / len(b):.3f}  ({d:+.3f} [{lo:+.3f}, {hi:+.3f}])")
    for side, res in (("ours", ours), (their_name, theirs)):
        tall = sum(res[n]["tall_people"] for n in names)
        found = sum(round(res[n]["recall_tall"] * res[n]["tall_people"]) for n in names if res[n]["tall_people"])
        rows.append(f"  recall_tall {side}: {found} of {tall} people at least 1/8 of the image high")
    rows.append("  PCK@0.1 per joint, pooled over the sets' labelled joints: ours / " + their_name)
    for group, (ours_rate, their_rate, n) in joint_groups(ours, theirs, names).items():
        rows.append(f"    {group:<10}{ours_rate:.3f} / {their_rate:.3f}  ({n} joints)")
    return "\n".join(rows)


JOINT_GROUPS = {"head": ("nose", "left_eye", "right_eye", "left_ear", "right_ear"),
                "shoulders": ("left_shoulder", "right_shoulder"), "elbows": ("left_elbow", "right_elbow"),
                "wrists": ("left_wrist", "right_wrist"), "hips": ("left_hip", "right_hip"),
                "knees": ("left_knee", "right_knee"), "ankles": ("left_ankle", "right_ankle")}


def joint_groups(ours: dict[str, dict], theirs: dict[str, dict], names: list[str]) -> dict[str, tuple[float, float, int]]:
    """{group: (our PCK@0.1, theirs, labelled joints)} pooled over the sets ``names`` (JOINT_GROUPS)."""
    out = {}
    for group, joints in JOINT_GROUPS.items():
        hit_a = hit_b = total = 0
        for n in names:
            for j, name in enumerate(ours[n]["mapped_joints"]):
                if name in joints:
                    hit_a += ours[n]["joint_hits@0.1"][j]
                    hit_b += theirs[n]["joint_hits@0.1"][j]
                    total += ours[n]["joint_labelled"][j]
        if total:
            out[group] = (hit_a / total, hit_b / total, total)
    return out


def _score(args: argparse.Namespace, baseline: str | None) -> tuple[str, dict, dict]:
    from tqdm import tqdm

    from posetracker.evaluation import evaluate_set, load_labelled_set

    predict, label = _predictor(args, baseline)
    results, predictions = {}, {}
    for path in find_sets(args.data):
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
    return label, results, predictions


def cmd_eval(args: argparse.Namespace) -> int:
    label, results, predictions = _score(args, args.baseline)
    print(label)
    print(format_table(results))
    out = {"predictor": label, "results": results}
    if args.versus:
        their_label, theirs, _ = _score(args, args.versus)
        print(their_label)
        print(format_table(theirs))
        print(format_versus(results, theirs, args.versus))
        out["versus"] = {"predictor": their_label, "results": theirs}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))
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
    e.add_argument("--no-low-light", action="store_true",
                   help="read dark images as they are (default: stretched first, posetracker.model.low_light)")
    e.add_argument("--vote-radius", type=int, default=None, metavar="CELLS",
                   help="cells around a keypoint peak whose offsets vote for its position (default: the decoder's, "
                   "2; 0: the peak cell's own offset)")
    e.add_argument("--mode", choices=["offline", "live"], default="offline",
                   help="the pipeline scored: offline (whole-file processing, the default) or live (the app's "
                   "live tracking: each photo shown as a still clip, posetracker.evaluation.live_stills)")
    e.add_argument("--baseline", choices=["movenet", "thunder-boxes"], default=None,
                   help="score the original MoveNet MultiPose decode instead of ours, or MoveNet Thunder read from "
                   "each labelled person's true box (the precision stage's network given help it does not have)")
    e.add_argument("--versus", choices=["movenet", "thunder-boxes"], default=None,
                   help="also score MoveNet MultiPose's own decode and print the paired differences")
    add_tiles_argument(e)
    e.add_argument("--movenet", default=DEFAULT_MOVENET, help="MoveNet TF.js model.json (for --baseline movenet)")
    e.add_argument("--threads", type=int, default=1)
    add_refiners_argument(e, "score with these refiners on (read beside --weights, else the shipped ones)")
    e.add_argument("--crop-weights", default=None, metavar="PATH",
                   help="the precision stage's weights (a crop refiner file; default: beside --weights, else the "
                   "shipped refiner-crop-human18.safetensors); also the network of --versus/--baseline thunder-boxes")
    e.set_defaults(func=cmd_eval)
    add_multiview_parser(e)
