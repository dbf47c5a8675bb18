"""Render exported BVH takes in real Blender (PyPI ``bpy``, headless, Cycles on the CPU) at given clip frames,
each take placed at its ``start_frame``, seen (1) from the video's own camera and (2) from the side.

    /opt/bpyvenv/bin/python studies/tools/render_clip_frames_blender.py SPEC.json

SPEC.json (written by ``studies/tools/render_clip_sheets.py``)::

    {"files": [{"bvh": "A.bvh", "report": "A.bvh.json", "track_id": 0}, ...],
     "frames": [280, ...],                   # clip frames (0-based, the clip's timeline)
     "width": 640, "height": 360,            # the camera view's size (the video's aspect)
     "side_width": 400, "side_azimuth_deg": 70, "side_elevation_deg": 12,
     "samples": 16, "place": "import", "out_prefix": "/tmp/x/clip_"}

Writes OUT_PREFIX<frame>_cam.png (RGBA: the bodies and, on a shadow-catcher floor, their shadows, to lay over
the video frame; the floor is left out of this view where the camera stands less than 20 cm above it),
OUT_PREFIX<frame>_side.png (looking at the person nearest the camera and everyone within 2.5 m of them) and
OUT_PREFIX.json (per frame, the takes shown, their joints projected into the camera view: x, y px and depth m, and
the height of their lowest ankle or toe point above the floor drawn, m).

Placing: a take that starts at clip frame S is imported with Start Frame S + 1 (Blender keys the first motion frame
there) and the scene is set to frame f + 1 for clip frame f, so clip frame f shows the take's BVH frame f - S + 1
(1-based). A take outside [S, S + frames) is hidden. The camera view is the video's camera as the report's
``bvh_from_camera`` map (BVH = R @ camera + t, cm) and ``camera.fov_deg`` (across the long side) give it, with the
principal point at the image centre, of the first file; where the camera tilts (the report's ``floor.turn``), each
frame's camera turned by that frame's rotation (BVH = R C_f camera + t). Every file's map is its own (on a fitted floor each person
stands on their own floor, Y = 0 of their file). ``"place": "import"`` (default) leaves every file where Blender's
importer puts it, as a user sees them: everyone on the floor drawn (Y = 0), and a person whose own floor differs from
the first file's is off their place in the camera view by that difference. ``"place": "camera"`` moves each
armature so that its camera coincides with the first file's, so every body is where the video's camera saw it, and
a person whose own floor differs from the first file's gets a small disc of it under the root (more than 2 cm).
Left bones are blue, right bones red, the trunk and head the person's colour.
"""
import json
import math
import sys

import bpy
from mathutils import Matrix, Vector
from bpy_extras.object_utils import world_to_camera_view

PALETTE = [(0.95, 0.85, 0.2), (0.2, 0.85, 0.35), (0.85, 0.4, 0.95), (0.95, 0.6, 0.15), (0.3, 0.9, 0.9),
           (0.95, 0.95, 0.95), (0.6, 0.85, 0.2), (0.95, 0.45, 0.6)]
LEFT, RIGHT = (0.15, 0.35, 1.0), (1.0, 0.15, 0.12)
# BVH (X, Y up, Z towards the camera) -> Blender world as the importer maps it (axis_forward -Z, axis_up Y)
B_FROM_BVH = Matrix(((1, 0, 0), (0, 0, -1), (0, 1, 0)))
# the video's joints (human18 names) at the heads of the rig's bones (a bone is named after its head joint)
JOINTS = {f"{s}_{j}": f"{S}{b}" for s, S in (("left", "Left"), ("right", "Right"))
          for j, b in (("shoulder", "Arm"), ("elbow", "ForeArm"), ("wrist", "Hand"), ("hip", "UpLeg"), ("knee", "Leg"),
                       ("ankle", "Foot"))}


def material(name, rgb):
    m = bpy.data.materials.new(name)
    m.use_nodes = True
    m.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value = (*rgb, 1)
    m.diffuse_color = (*rgb, 1)
    return m


def camera_map(report):
    """(R 3x3, t metres) of BVH = R camera + t, in Blender world coordinates."""
    m = report["bvh_from_camera"]
    r = B_FROM_BVH @ Matrix(m["rotation"])
    t = B_FROM_BVH @ (Vector(m["translation"]) / 100.0)
    return r, t


def turned_camera(report, frame, video_cam):
    """The Blender camera matrix at clip ``frame``: ``video_cam`` (the map's camera) where the report's floor has
    no ``turn``, else turned by that frame's: BVH = R (C_f camera) + t, so the camera's axes are R C_f's."""
    turn = (report.get("floor") or {}).get("turn")
    if not turn or frame not in turn["frames"]:
        return video_cam
    v = Vector(turn["rotvec"][turn["frames"].index(frame)])
    c = Matrix.Rotation(v.length, 3, v.normalized()) if v.length > 1e-12 else Matrix.Identity(3)
    r = B_FROM_BVH @ Matrix(report["bvh_from_camera"]["rotation"]) @ c
    out = Matrix((r.col[0], -r.col[1], -r.col[2])).transposed().to_4x4()
    out.translation = video_cam.translation
    return out


def main():
    spec = json.load(open(sys.argv[1]))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    mats = {"left": material("left", LEFT), "right": material("right", RIGHT)}
    reports = [json.load(open(f["report"])) for f in spec["files"]]
    r0, t0 = camera_map(reports[0])
    people = []  # (armature, cylinders, report, spec entry)
    for i, (entry, report) in enumerate(zip(spec["files"], reports)):
        before = set(bpy.data.objects)
        bpy.ops.import_anim.bvh(filepath=entry["bvh"], global_scale=0.01, rotate_mode="NATIVE", axis_forward="-Z",
                                axis_up="Y", frame_start=int(report["start_frame"]) + 1, use_fps_scale=False,
                                update_scene_fps=False, update_scene_duration=False)
        arm = [o for o in bpy.data.objects if o not in before and o.type == "ARMATURE"][0]
        # this file's BVH -> the first file's: p0 = R0 Ri^T (pi - ti) + t0 (in Blender world coordinates)
        ri, ti = camera_map(report)
        rot = r0 @ ri.transposed()
        move = Matrix.Translation(t0 - rot @ ti) @ rot.to_4x4()
        if spec.get("place", "import") == "camera":
            arm.matrix_world = move @ arm.matrix_world
        else:  # as imported: every file on its own Y = 0
            move = Matrix.Identity(4)
        body = material(f"body{i}", PALETTE[int(entry.get("track_id", i)) % len(PALETTE)])
        cyls = []
        for bone in arm.data.bones:
            if bone.length < 1e-4:
                continue
            bpy.ops.mesh.primitive_cylinder_add(radius=0.025, depth=1.0, vertices=12)
            cyl = bpy.context.active_object
            side = "left" if bone.name.startswith("Left") else "right" if bone.name.startswith("Right") else None
            cyl.data.materials.append(mats[side] if side else body)
            cyl.parent, cyl.parent_type, cyl.parent_bone = arm, "BONE", bone.name
            cyl.rotation_euler = (math.pi / 2, 0, 0)
            cyl.scale = (1, 1, bone.length)
            cyl.location = (0, -bone.length / 2, 0)
            cyls.append(cyl)
        # the person's own floor (BVH Y = 0 of this file), drawn where it is not the common one
        own_floor = move @ Vector((0, 0, 0))
        disc = None
        if abs(own_floor.z - 0.0) > 0.02:
            bpy.ops.mesh.primitive_cylinder_add(radius=0.45, depth=0.004, vertices=32)
            disc = bpy.context.active_object
            disc.data.materials.append(body)
        people.append((arm, cyls, report, entry, disc, move))
    bpy.ops.mesh.primitive_plane_add(size=60, location=(0, 0, 0))
    floor = bpy.context.active_object
    floor.data.materials.append(material("floor", (0.6, 0.6, 0.62)))
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = int(spec.get("samples", 16))
    scene.cycles.use_denoising = False
    sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
    sun.data.energy = 3.5
    sun.rotation_euler = (math.radians(35), math.radians(15), math.radians(30))
    scene.collection.objects.link(sun)
    world = bpy.data.worlds.new("w")
    scene.world = world
    world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.7

    cam = bpy.data.objects.new("cam", bpy.data.cameras.new("cam"))
    scene.collection.objects.link(cam)
    scene.camera = cam
    w, h = int(spec["width"]), int(spec["height"])
    fov = math.radians(float(reports[0]["camera"]["fov_deg"]))
    # the video's camera: Blender camera axes X = camera x, Y = -camera y, Z = -camera z
    video_cam = Matrix((r0.col[0], -r0.col[1], -r0.col[2])).transposed().to_4x4()
    video_cam.translation = t0
    cam_above_floor = video_cam.translation.z  # the floor drawn is Blender z = 0
    out = {"frames": {}, "camera_above_floor_m": cam_above_floor}
    for f in spec["frames"]:
        scene.frame_set(f + 1)
        shown = []
        for arm, cyls, report, entry, disc, move in people:
            s = int(report["start_frame"])
            on = s <= f < s + int(report["frames"])
            for o in cyls + [arm] + ([disc] if disc else []):
                o.hide_render = not on
            if on:
                shown.append((arm, entry, disc, move))
        bpy.context.view_layer.update()
        heads, roots = [], []
        for arm, entry, disc, move in shown:
            root = arm.matrix_world @ arm.pose.bones[0].head
            roots.append(root)
            if disc:
                disc.location = (root.x, root.y, (move @ Vector((0, 0, 0))).z)
            joints = {name: arm.matrix_world @ arm.pose.bones[bone].head for name, bone in JOINTS.items()}
            joints["head_top"] = arm.matrix_world @ arm.pose.bones["Head"].tail
            joints["left_toe"] = arm.matrix_world @ arm.pose.bones["LeftFoot"].tail
            joints["right_toe"] = arm.matrix_world @ arm.pose.bones["RightFoot"].tail
            heads.append((entry, joints))
        # (1) the video's camera (a camera that tilts: turned by this frame's turn, the first file's floor.turn)
        cam.matrix_world = turned_camera(reports[0], f, video_cam)
        cam.data.sensor_fit = "HORIZONTAL" if w >= h else "VERTICAL"
        cam.data.angle = fov
        scene.render.resolution_x, scene.render.resolution_y = w, h
        scene.render.film_transparent, floor.is_shadow_catcher = True, True  # RGBA: bodies and their shadows
        floor.visible_camera = floor.visible_shadow = cam_above_floor > 0.2
        scene.render.image_settings.color_mode = "RGBA"
        scene.render.filepath = f"{spec['out_prefix']}{f:04d}_cam.png"
        bpy.ops.render.render(write_still=True)
        proj = []
        for entry, joints in heads:
            px = {}
            for name, p in joints.items():
                v = world_to_camera_view(scene, cam, p)
                px[name] = [v.x * w, (1 - v.y) * h, v.z]
            feet = [joints[j].z for j in ("left_ankle", "right_ankle", "left_toe", "right_toe")]
            proj.append({"track_id": entry.get("track_id"), "bvh": entry["bvh"], "joints_px": px,
                         "lowest_foot_m": min(feet),
                         "x": px["head_top"][0], "y": px["head_top"][1], "depth_m": px["head_top"][2]})
        # (2) from the side: orbit the people's centre, looking at it, far enough to hold them all
        near = min(roots, key=lambda r: (r - video_cam.translation).length) if roots else Vector()
        group = [r for r in roots if (r - near).length < 2.5] or [near]
        centre = sum(group, Vector()) / len(group)
        to_cam = (video_cam.translation - centre)
        to_cam.z = 0
        to_cam = to_cam.normalized() if to_cam.length > 1e-6 else Vector((0, -1, 0))
        az, el = math.radians(spec.get("side_azimuth_deg", 70)), math.radians(spec.get("side_elevation_deg", 12))
        d = Matrix.Rotation(az, 3, "Z") @ to_cam
        spread = max([(r - centre).length for r in group] + [0.0])
        dist = 3.2 + 1.6 * spread
        eye = centre + Vector((d.x * math.cos(el), d.y * math.cos(el), math.sin(el))) * dist
        eye.z = max(eye.z, 0.3)
        cam.location = eye
        cam.rotation_euler = (centre - eye).to_track_quat("-Z", "Y").to_euler()
        cam.data.sensor_fit = "VERTICAL"
        cam.data.angle = math.radians(45)
        scene.render.resolution_x, scene.render.resolution_y = int(spec.get("side_width", 400)), h
        scene.render.film_transparent, floor.is_shadow_catcher = False, False
        floor.visible_camera = floor.visible_shadow = True
        scene.render.image_settings.color_mode = "RGB"
        scene.render.filepath = f"{spec['out_prefix']}{f:04d}_side.png"
        bpy.ops.render.render(write_still=True)
        out["frames"][str(f)] = {"people": proj, "centre_m": list(centre), "side_eye_m": list(eye)}
        print("rendered frame", f, "people", len(shown), flush=True)
    json.dump(out, open(spec["out_prefix"] + ".json", "w"), indent=1)


main()
