"""Render exported BVH files in real Blender (the PyPI ``bpy`` wheel, headless, Cycles on the CPU): each
bone a cylinder, on a floor at Y = 0, seen from where the video's camera stood (Blender's -Y), a few frames.

    /opt/bpyvenv/bin/python tools/render_bvh_blender.py A.bvh[,B.bvh ...] OUT_PREFIX FRAME[,FRAME ...]

Writes OUT_PREFIX<frame>.png (640 x 400). The BVH files are in centimetres (the export's default units).
"""
import math
import sys

import bpy
from mathutils import Vector

bvhs, out_prefix, frames = sys.argv[1].split(","), sys.argv[2], [int(f) for f in sys.argv[3].split(",")]
bpy.ops.wm.read_factory_settings(use_empty=True)
for bvh in bvhs:
    bpy.ops.import_anim.bvh(filepath=bvh, global_scale=0.01, rotate_mode="NATIVE", axis_forward="-Z", axis_up="Y")
arms = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
scene = bpy.context.scene
mat = bpy.data.materials.new("bone")
for arm, bone in ((a, b) for a in arms for b in a.data.bones):
    if bone.length < 1e-4:
        continue
    bpy.ops.mesh.primitive_cylinder_add(radius=0.025, depth=1.0, vertices=12)
    cyl = bpy.context.active_object
    cyl.data.materials.append(mat)
    # a unit cylinder along Y of the bone, from head to tail: parent to the bone (placed at its tail), shift back
    cyl.parent, cyl.parent_type, cyl.parent_bone = arm, "BONE", bone.name
    cyl.rotation_euler = (math.pi / 2, 0, 0)
    cyl.scale = (1, 1, bone.length)
    cyl.location = (0, -bone.length / 2, 0)
bpy.ops.mesh.primitive_plane_add(size=20, location=(0, 0, 0))
floor = bpy.context.active_object
fm = bpy.data.materials.new("floor"); fm.diffuse_color = (0.55, 0.55, 0.58, 1); floor.data.materials.append(fm)
scene.render.engine = "CYCLES"; scene.cycles.device = "CPU"; scene.cycles.samples = 16; scene.cycles.use_denoising = False
mat.use_nodes = True  # materials: Cycles reads the node tree; mat.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value = (0.9, 0.2, 0.25, 1)
fm.use_nodes = True; fm.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value = (0.6, 0.6, 0.62, 1)
sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN")); sun.data.energy = 4.0
sun.rotation_euler = (math.radians(40), math.radians(10), math.radians(30)); scene.collection.objects.link(sun)
world = bpy.data.worlds.new("w"); scene.world = world; world.use_nodes = True
world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.6
scene.render.resolution_x, scene.render.resolution_y = 640, 400
cam_data = bpy.data.cameras.new("cam"); cam = bpy.data.objects.new("cam", cam_data); scene.collection.objects.link(cam)
scene.camera = cam
for f in frames:
    scene.frame_set(f)
    bpy.context.view_layer.update()
    root = sum((a.matrix_world @ a.pose.bones[0].head for a in arms), Vector()) / len(arms)
    cam.location = root + Vector((0.0, -5.0, 1.2))  # where the video's camera stood, 5 m back, 1.2 m up
    direction = (root + Vector((0, 0, -0.1))) - cam.location
    cam.rotation_euler = direction.to_track_quat("-Z", "Y").to_euler()
    scene.render.filepath = f"{out_prefix}{f:04d}.png"
    bpy.ops.render.render(write_still=True)
    print("rendered", scene.render.filepath, "mean root (m)", tuple(round(v, 2) for v in root))
