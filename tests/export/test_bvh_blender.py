"""Import an exported BVH in real Blender (bpy 4.5 from PyPI, in its own venv), headless.

Slow and optional: set ``POSETRACKER_BPY_PYTHON`` to a Python that can
``import bpy`` (e.g. ``python3 -m venv /tmp/bpyvenv && /tmp/bpyvenv/bin/pip
install bpy==4.5.15``, then ``POSETRACKER_BPY_PYTHON=/tmp/bpyvenv/bin/python``);
the test skips otherwise.

Run as a script under that Python, this file is the Blender side:
``python test_bvh_blender.py FILE.bvh OUT.json [OUT.png FRAME]`` imports the
file with Blender's own importer (scene fps from the file), evaluates the
armature at every frame and writes bone names, frame range, fps, per-frame
bone lengths and joint (bone head) positions; with OUT.png it also renders
the pose at FRAME.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BLENDER_ENV = "POSETRACKER_BPY_PYTHON"


def _blender_side(bvh: str, out: str, png: str | None = None, frame: int = 1) -> None:  # pragma: no cover - runs in bpy
    import bpy
    from mathutils import Vector

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_anim.bvh(filepath=bvh, update_scene_fps=True, update_scene_duration=True)
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    scene = bpy.context.scene
    names = [b.name for b in arm.data.bones]
    first, last = (int(round(v)) for v in arm.animation_data.action.frame_range)
    lengths, heads = [], []
    for f in range(first, last + 1):
        scene.frame_set(f)
        mw = arm.matrix_world
        lengths.append([(pb.tail - pb.head).length for pb in arm.pose.bones])
        heads.append([list(mw @ pb.head) for pb in arm.pose.bones])
    result = {"bones": names, "frame_start": first, "frame_end": last,
              "fps": scene.render.fps / scene.render.fps_base, "lengths": lengths, "heads": heads,
              "parents": [b.parent.name if b.parent else None for b in arm.data.bones]}
    Path(out).write_text(json.dumps(result))
    if png:
        _render(bpy, Vector, arm, scene, png, frame)


def _render(bpy, Vector, arm, scene, png: str, frame: int) -> None:  # pragma: no cover - runs in bpy
    """Workbench render of the pose at ``frame``: a rod per BVH segment (parent joint -> joint, and each
    End Site), a ball per joint; left side blue, right side red, centre grey; a floor; front-left view."""
    scene.frame_set(frame)
    mw = arm.matrix_world
    head = {pb.name: mw @ pb.head for pb in arm.pose.bones}
    segs = []
    for pb in arm.pose.bones:
        if pb.parent is not None:
            segs.append((pb.name, head[pb.parent.name], head[pb.name]))
        if not pb.children:
            segs.append((pb.name, head[pb.name], mw @ pb.tail))
    pts = list(head.values()) + [b for _, _, b in segs]
    lo = Vector((min(p.x for p in pts), min(p.y for p in pts), min(p.z for p in pts)))
    hi = Vector((max(p.x for p in pts), max(p.y for p in pts), max(p.z for p in pts)))
    centre, extent = (lo + hi) / 2, max((hi - lo).length, 1e-3)
    mats = {}
    for key, rgb in {"Left": (0.2, 0.45, 0.95), "Right": (0.92, 0.3, 0.25), "": (0.75, 0.75, 0.75)}.items():
        mats[key] = bpy.data.materials.new(key or "centre")
        mats[key].diffuse_color = (*rgb, 1.0)
    side = lambda name: "Left" if name.startswith("Left") else "Right" if name.startswith("Right") else ""  # noqa: E731
    r = 0.012 * extent
    for name, a, b in segs:
        d = b - a
        if d.length < 1e-6:
            continue
        bpy.ops.mesh.primitive_cylinder_add(vertices=12, radius=r, depth=d.length, location=(a + b) / 2)
        ob = bpy.context.active_object
        ob.rotation_euler = d.to_track_quat("Z", "Y").to_euler()
        ob.data.materials.append(mats[side(name)])
    for name, p in head.items():
        bpy.ops.mesh.primitive_uv_sphere_add(radius=1.8 * r, location=p, segments=16, ring_count=8)
        bpy.context.active_object.data.materials.append(mats[side(name)])
    bpy.ops.mesh.primitive_plane_add(size=2.5 * extent, location=(centre.x, centre.y, lo.z - 2 * r))
    cam = bpy.data.objects.new("cam", bpy.data.cameras.new("cam"))
    scene.collection.objects.link(cam)
    cam.location = centre + Vector((-0.55, -2.1, 0.45)) * extent
    cam.rotation_euler = (centre - cam.location).to_track_quat("-Z", "Y").to_euler()
    scene.camera = cam
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "MATERIAL"
    scene.display.shading.show_shadows = True
    scene.render.resolution_x, scene.render.resolution_y = 900, 900
    scene.render.filepath = png
    bpy.ops.render.render(write_still=True)


def run_blender(python: str, bvh: Path, out: Path, png: Path | None = None, frame: int = 1, timeout: int = 600) -> dict:
    """Run this file under ``python`` (with bpy) on ``bvh``; returns the JSON it wrote."""
    cmd = [python, __file__, str(bvh), str(out)] + ([str(png), str(frame)] if png else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"blender failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


if __name__ == "__main__":  # pragma: no cover
    _blender_side(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None,
                  int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    sys.exit(0)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from posetracker.export.bvh import BvhExporter  # noqa: E402


@pytest.fixture(scope="module")
def bpy_python() -> str:
    py = os.environ.get(BLENDER_ENV, "")
    if not py or not Path(py).exists():
        pytest.skip(f"set {BLENDER_ENV} to a Python with bpy==4.5.15 to run the Blender import test")
    return py


@pytest.mark.slow
def test_blender_imports_exported_bvh(bpy_python, tmp_path):
    from test_bvh_synthetic import make_sequence, synthetic_world

    n, fps = 48, 25.0
    seq = make_sequence(n, fps=fps, seed=3)
    bvh = tmp_path / "person.bvh"
    BvhExporter().write(seq, bvh)
    report = json.loads((tmp_path / "person.bvh.json").read_text())
    res = run_blender(bpy_python, bvh, tmp_path / "blender.json")

    from posetracker.export.bvh_rig import HUMANOID

    assert res["bones"] == [name for name, *_ in HUMANOID]
    assert len(res["bones"]) == 19
    assert res["frame_start"] == 1 and res["frame_end"] == n
    assert res["fps"] == pytest.approx(fps, rel=1e-3)
    lengths = np.array(res["lengths"])  # (frames, bones), Blender units = BVH centimetres
    assert lengths.shape == (n, 19)
    assert np.ptp(lengths, axis=0).max() < 1e-3  # 0.01 mm
    assert lengths[0, 0] > 1.0  # the root Hips bone is kept with a length (cm), not collapsed
    # joint positions: BVH (x, y, z) -> Blender (x, -z, y); frame 1 = motion line 0
    truth = synthetic_world(n, fps, seed=3)
    heads = np.array(res["heads"])
    shift = np.array(report["origin_shift"])
    pairs = {"LeftForeArm": "left_elbow", "RightHand": "right_wrist", "LeftLeg": "left_knee", "RightFoot": "right_ankle"}
    for bone, joint in pairs.items():
        want = truth[joint] * 100 + shift
        want = np.stack([want[:, 0], -want[:, 2], want[:, 1]], axis=1)
        got = heads[:, res["bones"].index(bone)]
        # 1 mm; above the Spine (placed a tenth up the trunk so the root bone has a length) 3 mm
        assert np.abs(got - want).max() < (0.1 if "Leg" in bone or "Foot" in bone else 0.3), bone


@pytest.mark.slow
def test_blender_imports_several_people_in_sync_and_apart(bpy_python, tmp_path):
    """Issue #22: the multi-person export in real Blender: one timeline for all, each person where they stood."""
    from test_bvh_synthetic import make_sequence

    from posetracker.types import PoseSequence

    seq = make_sequence(40, fps=25.0, people=2, seed=6)  # person 1 walks ~1.2 m to the right of person 0
    frames = [f if 10 <= f.index < 30 else f.select(np.array([True, False])) for f in seq.frames]
    BvhExporter().write(PoseSequence(frames, seq.fps, seq.skeleton, seq.metadata), tmp_path / "two.bvh")
    res = {tid: run_blender(bpy_python, tmp_path / f"two_person{tid}.bvh", tmp_path / f"b{tid}.json") for tid in (0, 1)}
    assert res[0]["frame_start"] == res[1]["frame_start"] == 1
    assert res[0]["frame_end"] == res[1]["frame_end"] == 40  # person 1 (frames 10-29 only) padded to the clip
    hips = [np.array(res[t]["heads"])[:, 0] for t in (0, 1)]  # Blender (x, -z, y), BVH centimetres
    gap = hips[1][10:30] - hips[0][10:30]
    lr = [seq.skeleton.index("left_hip"), seq.skeleton.index("right_hip")]
    truth = 100 * np.array([f.world[1, lr, 0].mean() - f.world[0, lr, 0].mean() for f in seq.frames[10:30]])
    assert truth.min() > 100  # they do stand apart
    np.testing.assert_allclose(gap[:, 0], truth, atol=1.0)  # apart as they stood, in every shared frame (cm)
