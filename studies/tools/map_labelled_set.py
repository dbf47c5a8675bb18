"""Write a labelled set (normalized.json schema) with its keypoints mapped onto a skeleton's joints.

    python studies/tools/map_labelled_set.py SRC.json OUT.json --names snout=Nose leftear=Ear_L ... [--note TEXT]

Each output keypoint is the source keypoint named in ``--names`` (joint=source name), in that order; the
instances, frames and visibility are kept; image / video paths are rewritten relative to OUT's folder, so
``posetracker train held-out-eval --data OUT.json`` reads the source's own files. Used by
studies/mouse4-recipe.md for ``configs/heldout/mouse4-sleap-minsession.json``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def map_set(src: dict, names: list[tuple[str, str]], src_dir: Path, out_dir: Path) -> dict:
    """The source set ``src`` (parsed json, its files relative to ``src_dir``) with keypoints (N, 3) cut to
    ``names`` [(joint, source name)] and paths made relative to ``out_dir``."""
    cols = [src["keypoint_names"].index(s) for _, s in names]

    def rel(p: str) -> str:
        return os.path.relpath(os.path.abspath(src_dir / p), os.path.abspath(out_dir))  # links kept: ../shared may be one

    images = []
    for im in src["images"]:
        new = dict(im)
        for k in ("file", "video", "image"):
            if new.get(k) and not (k == "file" and "video" in new):
                new[k] = rel(new[k])
        new["instances"] = [dict(ins, keypoints=[ins["keypoints"][c] for c in cols]) for ins in im["instances"]]
        images.append(new)
    return {"dataset": src.get("dataset", ""), "kind": src.get("kind", ""),
            "keypoint_names": [j for j, _ in names], "skeleton": [],
            "visibility_note": src.get("visibility_note", ""), "source_annotation": src.get("source_annotation", ""),
            "images": images}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--names", nargs="+", required=True, help="joint=source keypoint name, in the skeleton's order")
    ap.add_argument("--note", default="", help="prepended to the visibility note")
    a = ap.parse_args()
    names = [tuple(n.split("=", 1)) for n in a.names]
    src = json.loads(Path(a.src).read_text())
    out = map_set(src, names, Path(a.src).parent, Path(a.out).parent)
    if a.note:
        out["visibility_note"] = f"{a.note} Source note: {out['visibility_note']}"
    Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
