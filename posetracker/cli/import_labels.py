"""``posetracker import-labels PROJECT --out DIR [--name NAME] [--include-predicted] [--force]``:
a SLEAP ``.slp`` or a DeepLabCut project folder -> a labelled set, a skeleton and a training config.

    posetracker import-labels flies.slp --out runs/flies
    posetracker import-labels ~/dlc/openfield-Pranav-2018-10-30 --out runs/mouse --name mouse4b
    posetracker train detector --config runs/mouse/train.yaml
"""

from __future__ import annotations

import argparse
import sys


def _cmd_import_labels(args: argparse.Namespace) -> int:
    from posetracker.importers import LabelImportError, import_project

    try:
        summary = import_project(args.project, args.out, name=args.name, include_predicted=args.include_predicted,
                                 force=args.force)
    except LabelImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FileExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for w in summary["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    tracks = f", tracks {summary['tracks']}" if summary["tracks"] else ""
    mirrors = ", ".join(f"{a}/{b}" for a, b in summary["mirrors"]) or "none"
    pred = " (includes PREDICTED instances: pseudo-labels)" if summary["predicted"] else ""
    print(f"imported {summary['frames']} frames, {summary['instances']} instances{pred}, {summary['keypoints']} "
          f"keypoints ({summary['labelled_points']} labelled points){tracks}; mirrors: {mirrors}")
    print(f"wrote {summary['data']}\nwrote {summary['skeleton']}\nwrote {summary['config']}")
    print(f"train with: posetracker train detector --config {summary['config']}")
    return 0


def add_import_labels_parser(sub) -> None:
    c = sub.add_parser(
        "import-labels", help="import a SLEAP .slp or DeepLabCut project as a labelled set, skeleton and training config",
        description="Write DIR/normalized.json (the common schema), DIR/NAME.yaml (a skeleton rooted at a virtual "
                    "body centre, left/right mirrors found by name) and DIR/train.yaml (for `posetracker train "
                    "detector --config DIR/train.yaml`). Only user-labelled SLEAP instances are ground truth: a file "
                    "holding only predictions is refused unless --include-predicted.")
    c.add_argument("project", help="a SLEAP .slp / .pkg.slp file (needs sleap-io: pip install 'posetracker[animals]'), "
                                   "or a DeepLabCut project folder with config.yaml and labeled-data/")
    c.add_argument("--out", required=True, help="folder to write normalized.json, NAME.yaml and train.yaml into "
                                                "(and frames/ for a .pkg.slp's embedded frames)")
    c.add_argument("--name", default=None, help="mode / skeleton name (default: the DeepLabCut Task, or the .slp "
                                                "file's name)")
    c.add_argument("--include-predicted", action="store_true",
                   help="SLEAP: also import model-predicted instances (pseudo-labels with a score, NOT ground truth; "
                        "a prediction a user corrected is replaced by the user's instance). Without it, only "
                        "user-labelled instances are imported and a predictions-only file is refused")
    c.add_argument("--force", action="store_true", help="overwrite existing output files")
    c.set_defaults(func=_cmd_import_labels)
