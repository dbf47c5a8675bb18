"""Bone steps of exported BVH files as real Blender plays them (issue #46: steps > 90 / > 30 degrees).

Each file is imported with Blender's own BVH importer (``bpy.ops.import_anim.bvh``, scene fps from the
file, the importer's default axes), the armature is evaluated at every frame of its action, and for every
pose bone (end bones such as Head, hands and feet, and the root Hips included) its world-space rotation
``R[f, b] = (armature.matrix_world @ pose_bone.matrix).to_3x3()`` (normalised; shape (F, B, 3, 3)) is taken.
A *step* is the rotation between consecutive frames, ``D = R[f-1]^T R[f]`` (in the bone's own frame at f-1;
shape (F-1, B, 3, 3)):

* step  = full rotation angle of D (swing and roll together), degrees;
* swing = angle between the bone's Y axis (head -> tail) at f-1 and at f (direction change);
* twist = |angle| of the twist part of D about the bone's Y axis (``Quaternion.to_swing_twist('Y')``),
  the roll; D = swing part @ twist part, so step <= swing + twist.

A *bone-frame* is one bone at one step (F-1 per bone); percentages are of these. Frame numbers are
Blender's (the frame the step arrives at; the importer starts at 1); ``seq_frame`` adds the take's
``start_frame`` from the ``.bvh.json`` report next to the file where there is one.

    /opt/bpyvenv/bin/python studies/tools/blender_bone_steps.py A.bvh [B.bvh ...] [--json OUT.json] [--top N]

Prints per file (and per clip: files ``CLIP_personN*.bvh`` taken together) the bone-frames, the steps over
90, over 30 and over 30.5 degrees (the exporter turns a roll reference at most ``MAX_TURN_DEG`` = 30 degrees
a frame, so a step of 30.0000x is that limit plus rounding, not a jump) and how many of those over 30 are
mostly roll (twist > swing); per bone the counts and its worst step; the N largest steps over 30 degrees
with their swing / twist split. ``--json`` writes all of it (per clip also per bone).
``studies/tools/blender_bone_steps.sh OUT_DIR`` regenerates the BVH files of the issue's clips and runs this;
studies/blender-bone-steps.md has today's numbers.
"""
import argparse
import contextlib
import io
import json
import math
import re
import sys
from pathlib import Path

import bpy
import numpy as np
from mathutils import Matrix


def bone_rotations(path: str):
    """Import ``path``; returns (bone names, first frame, fps, R of shape (F, B, 3, 3))."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with contextlib.redirect_stdout(io.StringIO()):  # the importer's progress lines
        bpy.ops.import_anim.bvh(filepath=path, update_scene_fps=True, update_scene_duration=True)
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    scene = bpy.context.scene
    first, last = (int(round(v)) for v in arm.animation_data.action.frame_range)
    rots = []
    for f in range(first, last + 1):
        scene.frame_set(f)
        mw = arm.matrix_world
        rots.append([np.array((mw @ pb.matrix).to_3x3().normalized()) for pb in arm.pose.bones])
    return [pb.name for pb in arm.pose.bones], first, scene.render.fps / scene.render.fps_base, np.array(rots)


def steps(rots: np.ndarray):
    """Step, swing and twist angles (degrees), each (F-1, B), between consecutive frames of ``rots``."""
    d = np.einsum("fbji,fbjk->fbik", rots[:-1], rots[1:])  # R[f-1]^T R[f]
    step = np.degrees(np.arccos(np.clip((np.trace(d, axis1=2, axis2=3) - 1) / 2, -1, 1)))
    swing = np.degrees(np.arccos(np.clip(d[..., 1, 1], -1, 1)))  # Y_{f-1} . Y_f
    twist = np.zeros_like(step)
    for i, j in zip(*np.nonzero(step > 1.0)):  # twist only where it can matter (steps over 1 degree)
        _, ang = Matrix(d[i, j].tolist()).to_quaternion().to_swing_twist("Y")
        twist[i, j] = abs(math.degrees(math.remainder(ang, 2 * math.pi)))
    return step, swing, twist


def measure(path: str, top: int, frames: tuple[int, int] | None = None) -> dict:
    names, first, fps, rots = bone_rotations(path)
    step, swing, twist = steps(rots)
    report = Path(path + ".json")
    start = json.loads(report.read_text()).get("start_frame", 0) if report.exists() else 0
    n = step.size
    res = {"file": path, "fps": fps, "frames": len(rots), "bones": len(names), "bone_frames": int(n),
           "over_90": int((step > 90).sum()), "over_30": int((step > 30).sum()),
           "over_30_5": int((step > 30.5).sum()), "over_30_roll": int(((step > 30) & (twist > swing)).sum()),
           "per_bone": {}, "top": []}
    res["pct_over_30"] = 100.0 * res["over_30"] / max(n, 1)
    res["pct_over_90"] = 100.0 * res["over_90"] / max(n, 1)
    for b, name in enumerate(names):
        i = int(np.argmax(step[:, b])) if len(step) else 0
        worst = (step[i, b], swing[i, b], twist[i, b]) if len(step) else (0.0, 0.0, 0.0)
        res["per_bone"][name] = {
            "over_90": int((step[:, b] > 90).sum()), "over_30": int((step[:, b] > 30).sum()),
            "over_30_5": int((step[:, b] > 30.5).sum()), "worst_deg": float(worst[0]), "worst_frame": first + i + 1,
            "worst_swing_deg": float(worst[1]), "worst_twist_deg": float(worst[2])}
    big = np.argwhere(step > 30)
    for i, b in sorted(big.tolist(), key=lambda ib: -step[ib[0], ib[1]])[:top]:
        res["top"].append({"bone": names[b], "frame": first + i + 1, "seq_frame": start + i + 1,
                           "step_deg": float(step[i, b]), "swing_deg": float(swing[i, b]), "twist_deg": float(twist[i, b]),
                           "from": "roll" if twist[i, b] > swing[i, b] else "swing"})
    if frames:  # every bone's step at each Blender frame in [a, b]
        a, b = frames
        res["frames_listed"] = [
            {"frame": first + i + 1, "seq_frame": start + i + 1,
             "bones": {names[j]: [round(float(step[i, j]), 1), round(float(swing[i, j]), 1), round(float(twist[i, j]), 1)]
                       for j in range(len(names))}}
            for i in range(len(step)) if a <= first + i + 1 <= b]
    return res


COUNTS = ("bone_frames", "over_90", "over_30", "over_30_5", "over_30_roll")
HEAD = f"{'bone-fr':>8s} {'>90':>5s} {'>30':>6s} {'>30 %':>7s} {'>30.5':>6s} {'roll':>5s}"


def row(r: dict) -> str:
    return (f"{r['bone_frames']:8d} {r['over_90']:5d} {r['over_30']:6d} {r['pct_over_30']:7.3f} "
            f"{r['over_30_5']:6d} {r['over_30_roll']:5d}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bvh", nargs="+")
    ap.add_argument("--json", help="write all results here")
    ap.add_argument("--top", type=int, default=15, help="largest steps over 30 degrees listed per file")
    ap.add_argument("--frames", help="A:B: also list every bone's step / swing / twist at Blender frames A to B")
    args = ap.parse_args(argv)
    span = tuple(int(v) for v in args.frames.split(":")) if args.frames else None
    files = [measure(p, args.top, span) for p in args.bvh]
    clips: dict[str, dict] = {}
    for r in files:
        c = clips.setdefault(re.sub(r"_person\d+.*$", "", Path(r["file"]).stem),
                             dict.fromkeys(("files",) + COUNTS, 0) | {"per_bone": {}})
        c["files"] += 1
        for k in COUNTS:
            c[k] += r[k]
        for bone, v in r["per_bone"].items():
            cb = c["per_bone"].setdefault(bone, dict.fromkeys(("over_90", "over_30", "over_30_5"), 0))
            for k in cb:
                cb[k] += v[k]
    for c in clips.values():
        c["pct_over_30"] = 100.0 * c["over_30"] / max(c["bone_frames"], 1)
    print(f"{'file':34s} {'frames':>6s} {'bones':>5s} {HEAD}")
    for r in files:
        print(f"{Path(r['file']).name:34s} {r['frames']:6d} {r['bones']:5d} {row(r)}")
    print(f"\n{'clip':20s} {'files':>5s} {HEAD}")
    for name, c in clips.items():
        print(f"{name:20s} {c['files']:5d} {row(c)}")
    for r in files:
        bad = {k: v for k, v in r["per_bone"].items() if v["over_30"]}
        if not bad:
            continue
        print(f"\n{Path(r['file']).name}: bones with steps > 30 deg (>30, >30.5, >90, worst deg @ frame, swing / twist)")
        for k, v in sorted(bad.items(), key=lambda kv: -kv[1]["over_30"]):
            print(f"  {k:16s} {v['over_30']:4d} {v['over_30_5']:4d} {v['over_90']:4d}  {v['worst_deg']:6.1f} @ "
                  f"{v['worst_frame']:4d}  {v['worst_swing_deg']:6.1f} / {v['worst_twist_deg']:6.1f}")
        print(f"  top {len(r['top'])}: bone frame(seq) step swing twist from")
        for t in r["top"]:
            print(f"    {t['bone']:16s} {t['frame']:4d}({t['seq_frame']:4d}) {t['step_deg']:6.1f} {t['swing_deg']:6.1f}"
                  f" {t['twist_deg']:6.1f} {t['from']}")
        for fr in r.get("frames_listed", []):
            moved = {k: v for k, v in fr["bones"].items() if v[0] >= 10.0}
            print(f"  frame {fr['frame']:4d}({fr['seq_frame']:4d}) bones turning 10 deg or more (step swing twist): "
                  + (", ".join(f"{k} {v[0]:.1f} {v[1]:.1f} {v[2]:.1f}" for k, v in moved.items()) or "none"))
    if args.json:
        out = {"blender": bpy.app.version_string, "files": files, "clips": clips}
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:])
