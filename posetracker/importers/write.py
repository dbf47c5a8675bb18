"""Write an import: ``<out>/normalized.json`` (the common schema, paths relative to ``<out>``),
``<out>/<name>.yaml`` (the skeleton) and ``<out>/train.yaml`` (a ``train detector`` config)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from posetracker.importers.common import ImportedLabels
from posetracker.importers.skeleton import build_skeleton, mirror_pairs, skeleton_yaml, unpaired_sided

# The shipped animal modes' training settings (configs/mouse4.yaml, configs/fly13.yaml).
TRAIN_DEFAULTS = {
    "init_weights": "models/posenet-human18.safetensors",
    "val_fraction": 0.2,
    "augment": {"variants": 8, "rotate_deg": 180, "scale": [0.75, 1.25], "flip": True, "colour": 0.2},
    "steps": 1500,
    "batch": 16,
    "lr": 0.005,
    "sigma": 1.0,
    "graph": {"radius": 3, "hidden": 64, "layers": 3},
    "heatmap": {"width": 32},
    "heatmap_steps": 800,
}


def relative_to(path: str | Path, folder: Path) -> str:
    """``path`` relative to ``folder`` (POSIX separators), or absolute where it cannot be (another drive)."""
    try:
        return Path(os.path.relpath(Path(path).resolve(), folder.resolve())).as_posix()
    except ValueError:
        return Path(path).resolve().as_posix()


def schema_json(labels: ImportedLabels, out: Path, name: str) -> dict:
    images = []
    for im in labels.images:
        e = dict(im)
        e["file"] = relative_to(im["file"], out)
        if "video" in im:
            e["video"] = relative_to(im["video"], out)
        images.append(e)
    return {
        "dataset": name,
        "kind": "animal",
        "keypoint_names": list(labels.keypoint_names),
        "skeleton": [list(e) for e in labels.edges],
        "visibility_note": labels.visibility_note,
        "source_annotation": relative_to(labels.source, out),
        "images": images,
    }


def _json_text(doc: dict) -> str:
    """The schema json with one line per image (readable, and a fraction of an indented file's size)."""
    head = {k: v for k, v in doc.items() if k != "images"}
    lines = [json.dumps(head, indent=1)[:-2] + ',\n "images": [']
    lines += [json.dumps(im, separators=(",", ":")) + ("," if i < len(doc["images"]) - 1 else "")
              for i, im in enumerate(doc["images"])]
    return "\n".join(lines) + "\n ]\n}\n"


def _flow(v) -> str:
    import yaml

    return yaml.safe_dump(v, default_flow_style=True, sort_keys=False, width=10_000).strip().removesuffix("...").strip()


def train_yaml(out: Path, name: str, skeleton: Path, labels: ImportedLabels, flip: bool) -> str:
    out = out.resolve()
    cfg = {"skeleton": str(skeleton.resolve()), "data": "normalized.json", "data_root": str(out),
           "out": str(out / f"posenet-{name}.safetensors"), **TRAIN_DEFAULTS}
    cfg["augment"] = {**TRAIN_DEFAULTS["augment"], "flip": flip}
    n_inst = sum(len(im["instances"]) for im in labels.images)
    lines = [
        f"# Animal mode {name!r}, imported by `posetracker import-labels` from {labels.source}",
        f"# ({len(labels.images)} labelled frames, {n_inst} instances; the last val_fraction of the frames is held out).",
        f"#   posetracker train detector --config {out / 'train.yaml'}",
        f"#   posetracker train refiner --kind heatmap --config {out / 'train.yaml'}",
        f"#   posetracker train held-out-eval --config {out / 'train.yaml'}",
        "# Paths are absolute: `skeleton` is opened from the working folder, `data_root`, `out` and",
        "# `init_weights` (when relative) from the repository root, never from this file's folder.",
    ]
    if labels.predicted:
        lines.append("# NOTE: the labelled set holds model-PREDICTED instances (pseudo-labels, not ground truth).")
    if not flip:
        lines.append("# flip: false - some keypoints look left/right but have no mirror in the skeleton; a")
        lines.append("# horizontal flip would teach the wrong side (add `mirror:` to the skeleton, then flip: true).")
    lines += [f"{k}: {_flow(v)}" for k, v in cfg.items()]
    return "\n".join(lines) + "\n"


def output_paths(out: Path, name: str) -> list[Path]:
    return [out / "normalized.json", out / f"{name}.yaml", out / "train.yaml"]


def write_import(labels: ImportedLabels, out: Path, name: str) -> dict:
    """Write the three files; returns a summary (counts, paths, mirrors, warnings)."""
    out.mkdir(parents=True, exist_ok=True)
    data, skel_path, cfg_path = output_paths(out, name)
    spec = build_skeleton(labels.keypoint_names, labels.edges, name)
    pairs = mirror_pairs(labels.keypoint_names)
    sided = unpaired_sided(labels.keypoint_names, pairs)
    warnings = list(labels.warnings)
    if sided:
        warnings.append(f"keypoints {sided} look left/right but have no mirror: horizontal flips are off in train.yaml")
    header = (f"{name}: imported by `posetracker import-labels` from {labels.source.name}. A tree rooted at a\n"
              "virtual body centre (box centre of the labelled points); mirrors found by name; edges of the\n"
              "project's skeleton outside the tree in extra_edges. Edit freely, then train.")
    skel_path.write_text(skeleton_yaml(spec, header), encoding="utf-8")
    data.write_text(_json_text(schema_json(labels, out, name)), encoding="utf-8")
    cfg_path.write_text(train_yaml(out, name, skel_path, labels, flip=not sided), encoding="utf-8")
    tracks = sorted({str(i["track"]) for im in labels.images for i in im["instances"] if "track" in i},
                    key=lambda t: (not t.isdigit(), int(t) if t.isdigit() else 0, t))
    return {
        "name": name,
        "frames": len(labels.images),
        "instances": sum(len(im["instances"]) for im in labels.images),
        "keypoints": len(labels.keypoint_names),
        "labelled_points": sum(v > 0 for im in labels.images for i in im["instances"] for _, _, v in i["keypoints"]),
        "tracks": tracks,
        "mirrors": sorted(tuple(sorted(p)) for p in {frozenset(kv) for kv in pairs.items()}),
        "predicted": labels.predicted,
        "data": data,
        "skeleton": skel_path,
        "config": cfg_path,
        "warnings": warnings,
    }
