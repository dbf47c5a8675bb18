"""``posetracker eval multiview``: single-view 3-D scored against a reference triangulated from calibrated views.

    posetracker eval multiview --calibration calib.qca.txt --views cam01.mp4 cam02.mp4 ... \\
        [--results cam01.json ...] [--peer mp_cam01.json ...] --out scores.json

Each view is matched to the calibration's camera of the same name (``cam01`` in ``cam01.mp4``). Without
``--results`` each view is first tracked as ``posetracker process VIEW --out OUT.VIEW.json`` does (offline mode,
defaults). ``--peer``: one ``studies/tools/mediapipe_world.py`` readings file per view, in the order of ``--views``.
Library: :mod:`posetracker.evaluation.multiview_reference`, :mod:`posetracker.multiview`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

METRICS = (("pa_mm", "PA-MPJPE mm"), ("knee", "knee"), ("hip", "hip"), ("elbow", "elbow"), ("mean_angle", "angles"))


def _results_for(args: argparse.Namespace) -> list[Path]:
    if args.results:
        if len(args.results) != len(args.views):
            raise ValueError(f"--results: one file per view ({len(args.views)}), got {len(args.results)}")
        return [Path(r) for r in args.results]
    from posetracker.cli.options import run_command
    from posetracker.cli.process import add_process_parser

    parser = argparse.ArgumentParser(prog="posetracker")  # the process verb alone, run as the command line runs it
    add_process_parser(parser.add_subparsers(dest="command", required=True))
    out = []
    for view in args.views:
        path = Path(args.out).with_suffix(f".{Path(view).stem}.json")
        if run_command(parser, ["process", view, "--out", str(path), "--force"]) != 0:
            raise RuntimeError(f"tracking {view} failed")
        out.append(path)
    return out


def format_quality(people: list[dict], title: str) -> str:
    rows = [title]
    for n, p in enumerate(people):
        cams = list(p["reprojection_px"])
        rows.append(f"  P{n + 1} ({', '.join(f'{c}#{t}' for c, t in p['tracks'])}; match {p['match_cost_px']:.0f} px): "
                    f"{100 * p['triangulated']:.1f} % of joints triangulated over {p['frames_in_2_views']} frames ("
                    + ", ".join(f"{100 * s:.0f} % from {n} views" for n, s in p["views_used"].items()) + ")")
        rows.append("    median reprojection px (share of points used): " + ", ".join(
            f"{c} {p['reprojection_px'][c]:.1f} ({100 * p['used_share'][c]:.0f} %)" for c in cams))
        spread = p.get("body_spread_pct")
        if spread:
            rows.append(f"    limb and trunk bones over the frames: median IQR {spread['iqr']:.1f} %, std "
                        f"{spread['std']:.1f} % of their length")
        rows.append("    bones median m (std mm): " + ", ".join(
            f"{b} {s['median_m']:.3f} ({s['std_mm']:.0f})" for b, s in p["bones"].items()))
    return "\n".join(rows)


def _interval(d: list[float]) -> str:
    """[difference, low, high] -> ' +1.2 [-3,+5]' right-aligned in 15 columns."""
    return f"{d[0]:+.1f} [{d[1]:+.0f},{d[2]:+.0f}]".rjust(15)


def format_scores(views: dict, peer_name: str | None) -> str:
    head = f"  {'view':<8}{'person':<8}{'frames':>7}  " + "".join(f"{label:>15}" for _, label in METRICS)
    rows = [head]
    for view, people in views.items():
        for person, c in people.items():
            if peer_name is None or "both_ours" not in c:
                rows.append(f"  {view:<8}{person:<8}{c['frames_ours']:>7}  "
                            + "".join(f"{c['ours'][m]:>15.1f}" for m, _ in METRICS))
                continue
            rows.append(f"  {view:<8}{person:<8}{c['frames_both']:>7}  "
                        + "".join(f"{c['both_ours'][m]:>8.1f} /{c['both_peer'][m]:>6.1f}" for m, _ in METRICS))
            rows.append(f"  {'':<16}{'diff':>7}  " + "".join(_interval(c["difference"][m]) for m, _ in METRICS))
    rows.append(f"  {'view':<8}{'person':<8}{'stature ours / reference m':>28}{'bones off: as read':>20}"
                f"{'height given':>14}{'limbs: as read':>16}{'height given':>14}")
    for view, people in views.items():
        for person, c in people.items():
            z = c["size"]
            rows.append(f"  {view:<8}{person:<8}{z['stature_ours_m']:>19.2f} / {z['stature_ref_m']:.2f}"
                        + "".join(f"{z[k]:>{w}.1f}%" for k, w in (("bones_as_read_pct", 19),
                                  ("bones_height_given_pct", 13), ("limbs_as_read_pct", 15),
                                  ("limbs_height_given_pct", 13))))
    rows.append("  (median over bones of |our length / the reference's - 1|; height given: ours scaled to the "
                "reference's stature, as --height does)")
    if peer_name:
        rows.append(f"  (ours / {peer_name} on the frames both read; diff = ours - {peer_name}, 95 % block-bootstrap "
                    "interval; angles: mean absolute error, degrees)")
    return "\n".join(rows)


def cmd_eval_multiview(args: argparse.Namespace) -> int:
    from posetracker.evaluation.multiview_reference import evaluate_views
    from posetracker.export.json_io import read_sequence
    from posetracker.multiview.calibration import camera_of_video, read_calibrations

    cameras = read_calibrations(args.calibration)
    chosen = [camera_of_video(cameras, v) for v in args.views]
    if args.peer and len(args.peer) != len(args.views):
        raise ValueError(f"--peer: one readings file per view ({len(args.views)}), got {len(args.peer)}")
    sequences = [read_sequence(p) for p in _results_for(args)]
    peers = [json.loads(Path(p).read_text()) for p in args.peer] if args.peer else None
    res = evaluate_views(chosen, sequences, peers, max_error_px=args.max_error, block=args.block,
                         min_views=args.min_views, adjust=not args.keep_poses)
    peer_name = args.peer_name if peers else None
    for a in res["pose_adjustments"]:
        print(f"camera {a['camera']}'s pose fitted to the people: median reprojection {a['before_px']:.1f} -> "
              f"{a['after_px']:.1f} px over {a['points']} points, moved {100 * a['moved_m']:.1f} cm, turned "
              f"{a['turned_deg']:.2f} deg" + ("" if a["kept"] else " (not kept)"))
    print(format_quality(res["people"], "reference (our 2-D points of every view):"))
    print(format_scores(res["views"], peer_name))
    if res["peer_reference"]:
        print(format_quality(res["peer_reference"]["people"], f"check reference ({peer_name}'s 2-D landmarks):"))
        print(format_scores(res["peer_reference"]["views"], peer_name))
    res.update(views_files=list(args.views), peer_name=peer_name)
    Path(args.out).write_text(json.dumps(res, indent=1))
    print(f"-> {args.out}", file=sys.stderr)
    return 0


def add_multiview_parser(eval_parser: argparse.ArgumentParser) -> None:
    """``eval multiview`` as a sub-command of ``eval``; plain ``eval`` keeps asking for ``--data``."""
    kinds = eval_parser.add_subparsers(dest="eval_kind", metavar="{multiview}")
    m = kinds.add_parser("multiview", help="single-view 3-D against a reference triangulated from calibrated views")
    m.add_argument("--calibration", required=True, action="append",
                   help="calibration file (Qualisys .qca.txt, Pose2Sim / anipose .toml, OpenCV .yml/.xml; again for "
                        "one file per camera)")
    m.add_argument("--views", nargs="+", required=True, help="the views' videos, named after their cameras")
    m.add_argument("--results", nargs="+", help="posetracker JSON of each view (default: track them now)")
    m.add_argument("--peer", nargs="+", help="studies/tools/mediapipe_world.py readings of each view, in --views order")
    m.add_argument("--peer-name", default="MediaPipe", help="the peer's name in the tables")
    m.add_argument("--max-error", type=float, default=15.0, help="reprojection px above which a view is dropped")
    m.add_argument("--min-views", type=int, default=2, help="views that must agree on a reference joint")
    m.add_argument("--block", type=int, default=10, help="frames per bootstrap block")
    m.add_argument("--keep-poses", action="store_true",
                   help="triangulate with the calibration's camera poses as they are (default: a view whose pose "
                        "disagrees with the others' is fitted to the people first; posetracker.multiview.adjust)")
    m.add_argument("--out", required=True, help="write the scores as JSON")
    m.set_defaults(func=cmd_eval_multiview)
    # `eval multiview` has no --data: the parent's requirement moves into its own command
    data = next(a for a in eval_parser._actions if a.dest == "data")
    data.required = False
    data.help = f"{data.help} (required, except for eval multiview)"
    plain = eval_parser.get_default("func")

    def needs_data(args: argparse.Namespace) -> int:
        if args.data is None:
            eval_parser.error("the following arguments are required: --data")
        return plain(args)

    eval_parser.set_defaults(func=needs_data)
