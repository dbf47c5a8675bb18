"""Sheets of Blender renders beside the video (issue #46): per clip, a few frames, each a row of three panels:

1. the video frame with the tracked 2-D skeleton of NAME.json drawn thinly (left joints' bones blue, right red,
   the trunk the person's colour, the track id at the head);
2. the exported BVH takes rendered in real Blender from the video's own camera (the first file's
   ``bvh_from_camera`` and ``camera.fov_deg``), laid over the video frame faded to 35 %, with their shadows on the
   floor (a shadow catcher at Y = 0; left out where the camera stands within 20 cm of it), the track id at each
   rendered head, and the median offset of the Blender joints from the tracked 2-D joints (people with at least 6
   joints seen; per person up to 3 people, else the median over them);
3. the same instant in Blender seen from the side (70 degrees round the person nearest the camera and everyone
   within 2.5 m of them, 12 degrees up), on the floor at Y = 0.

    python studies/tools/render_clip_sheets.py RESULTS_DIR OUT_DIR [--clips dancer,walk] [--frames walk=100,262]
                                      [--work /tmp/clip_sheets] [--max-kb 200] [--place import|camera]

RESULTS_DIR holds, per clip NAME, NAME.json (``posetracker process``) and NAME.bvh / NAME_*.bvh with their
``.bvh.json`` reports (``posetracker export --format bvh``), as ``studies/tools/blender_bone_steps.sh`` leaves them.
Writes OUT_DIR/NAME.jpg (JPEG, quality lowered until the file is at most --max-kb; the full sheet as
WORK/NAME_sheet.png) and keeps the renders under --work, with WORK/offsets.tsv: per clip, frame and person, the
median distance (px, and % of the person's 2-D height) between the Blender joints (shoulders, elbows, wrists,
hips, knees, ankles) projected into the video camera and the tracked 2-D joints (confidence >= 0.3), and the
height of the person's lowest ankle or toe point above the floor drawn (cm). The Blender side runs
``studies/tools/render_clip_frames_blender.py`` under POSETRACKER_BPY_PYTHON (default /opt/bpyvenv/bin/python; bpy 4.5,
Cycles on the CPU, about 10 s a frame on two cores). studies/renders-and-gait.md shows and reads them.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from posetracker.export.json_io import read_sequence  # noqa: E402

DATA = Path(os.environ.get("POSETRACKER_DATA", "/work/shared/data"))
CLIPS = {
    "dancer": "video/sleap_dance_human/dance.mp4",
    "walk": "video/more/sports2d_demos/demo4_older_woman_walking.mp4",
    "pose2sim": "video/more/pose2sim_demo/multi_cam02.mp4",
    "crowd": "video/video_openpose_examples/video.avi",
}
# the frames shown by default: dancer 290 seen from behind, walk 262 the feet crossing, pose2sim both people,
# crowd busy frames (see studies/renders-and-gait.md)
FRAMES = {"dancer": [60, 180, 290], "walk": [100, 262, 310], "pose2sim": [20, 60, 90], "crowd": [30, 90, 175]}
# the same palette as the Blender side (RGB 0-1), here BGR 0-255
PALETTE = [(0.95, 0.85, 0.2), (0.2, 0.85, 0.35), (0.85, 0.4, 0.95), (0.95, 0.6, 0.15), (0.3, 0.9, 0.9),
           (0.95, 0.95, 0.95), (0.6, 0.85, 0.2), (0.95, 0.45, 0.6)]
LEFT, RIGHT = (255, 90, 40), (30, 40, 255)
PANEL_H = {"landscape": 300, "portrait": 460}


def bgr(track_id: int) -> tuple[int, int, int]:
    r, g, b = PALETTE[int(track_id) % len(PALETTE)]
    return int(255 * b), int(255 * g), int(255 * r)


def video_frames(path: Path, wanted: list[int]) -> dict[int, np.ndarray]:
    """{frame index: BGR image} decoding from the start (exact indices, no seeking)."""
    cap = cv2.VideoCapture(str(path))
    out, i, last = {}, 0, max(wanted)
    while i <= last:
        ok, img = cap.read()
        if not ok:
            break
        if i in wanted:
            out[i] = img
        i += 1
    cap.release()
    missing = sorted(set(wanted) - set(out))
    if missing:
        raise SystemExit(f"{path}: frames {missing} could not be decoded (the clip has {i})")
    return out


def draw_skeleton(img: np.ndarray, seq, frame_index: int, min_conf: float = 0.2) -> None:
    frame = next((f for f in seq.frames if f.index == frame_index), None)
    if frame is None:
        return
    names = seq.skeleton.joint_names
    thick = max(1, round(img.shape[0] / 400))
    for p in range(frame.num_people):
        kp, cf, tid = frame.keypoints[p], frame.confidence[p], int(frame.track_ids[p])
        for a, b in np.asarray(seq.skeleton.edges):
            if cf[a] < min_conf or cf[b] < min_conf or not np.isfinite(kp[[a, b], :2]).all():
                continue
            side = names[b].split("_")[0]
            colour = LEFT if side == "left" else RIGHT if side == "right" else bgr(tid)
            cv2.line(img, tuple(int(v) for v in kp[a, :2]), tuple(int(v) for v in kp[b, :2]), colour, thick,
                     cv2.LINE_AA)
        head = kp[names.index("nose")] if "nose" in names and cf[names.index("nose")] >= min_conf else kp[
            int(np.argmax(cf))]
        if tid >= 0 and np.isfinite(head[:2]).all():
            label(img, str(tid), (int(head[0]) + 6, int(head[1]) - 10), scale=img.shape[0] / 900, colour=bgr(tid))


def label(img: np.ndarray, text: str, org: tuple[int, int], scale: float = 0.5, colour=(255, 255, 255)) -> None:
    """``text`` on a black box whose bottom left is ``org``."""
    (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
    x, y = org
    cv2.rectangle(img, (x - 2, y - th - 3), (x + tw + 2, y + base), (0, 0, 0), -1)
    cv2.putText(img, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, scale, colour, 1, cv2.LINE_AA)


def offsets(seq, frame_index: int, people: list[dict], to_video: float, min_conf: float = 0.3) -> dict[int, tuple]:
    """{track id: (median px, median % of the 2-D body height, joints)}: the Blender joints projected into the video
    camera against the tracked 2-D joints of the same person (confidence >= min_conf), in video pixels."""
    frame = next((f for f in seq.frames if f.index == frame_index), None)
    out: dict[int, tuple] = {}
    if frame is None:
        return out
    names = list(seq.skeleton.joint_names)
    for person in people:
        rows = np.flatnonzero(frame.track_ids == person["track_id"])
        if not rows.size:
            continue
        kp, cf = frame.keypoints[rows[0]], frame.confidence[rows[0]]
        seen = np.flatnonzero((cf >= min_conf) & np.isfinite(kp[:, :2]).all(1))
        if seen.size < 2:
            continue
        height = float(np.ptp(kp[seen, 1]))
        d = [np.hypot(*(np.array(xyz[:2]) * to_video - kp[names.index(j), :2]))
             for j, xyz in person["joints_px"].items() if j in names and names.index(j) in seen]
        if d:
            med = float(np.median(d))
            out[int(person["track_id"])] = (med, 100.0 * med / max(height, 1.0), len(d))
    return out


def fit(img: np.ndarray, h: int) -> np.ndarray:
    return cv2.resize(img, (round(img.shape[1] * h / img.shape[0]), h), interpolation=cv2.INTER_AREA)


def render(name: str, results: Path, frames: list[int], work: Path, bpy_python: str, place: str
           ) -> tuple[dict, Path]:
    bvhs = sorted(glob.glob(str(results / f"{name}.bvh")) + glob.glob(str(results / f"{name}_*.bvh")))
    if not bvhs:
        raise SystemExit(f"no {name}*.bvh in {results}")
    files = []
    for b in bvhs:
        report = json.load(open(b + ".json"))
        files.append({"bvh": b, "report": b + ".json", "track_id": report["track_id"]})
    seq = read_sequence(results / f"{name}.json")
    w, h = seq.frames[0].image_size
    prefix = work / f"{name}_"
    scale = 640 / max(w, h)  # the camera view's long side 640 px
    spec = {"files": files, "frames": frames, "width": round(w * scale), "height": round(h * scale), "side_width": 420,
            "side_azimuth_deg": 70, "side_elevation_deg": 12, "samples": 16, "place": place, "out_prefix": str(prefix)}
    spec_path = work / f"{name}_spec.json"
    spec_path.write_text(json.dumps(spec, indent=1))
    print(f"{name}: rendering {len(files)} BVH files at frames {frames}", flush=True)
    run = subprocess.run([bpy_python, str(REPO / "studies" / "tools" / "render_clip_frames_blender.py"), str(spec_path)],
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stdout[-3000:] + run.stderr[-3000:])
        raise SystemExit(f"{name}: Blender failed ({run.returncode})")
    return json.load(open(str(prefix) + ".json")), prefix


def sheet(name: str, results: Path, frames: list[int], work: Path, bpy_python: str, place: str = "import"
          ) -> tuple[np.ndarray, list[str]]:
    """The sheet (rows of three panels) and the lines of its joint-offset report."""
    seq = read_sequence(results / f"{name}.json")
    info, prefix = render(name, results, frames, work, bpy_python, place)
    video = video_frames(DATA / CLIPS[name], frames)
    vw, vh = seq.frames[0].image_size
    panel_h = PANEL_H["portrait" if vh > vw else "landscape"]
    floor_note = "" if info["camera_above_floor_m"] > 0.2 else " (floor not drawn: at camera height)"
    rows, report = [], []
    for f in frames:
        img = video[f].copy()
        draw_skeleton(img, seq, f)
        left = fit(img, panel_h)
        label(left, f"{name} frame {f}", (6, 18))
        rgba = cv2.imread(f"{prefix}{f:04d}_cam.png", cv2.IMREAD_UNCHANGED)
        base = cv2.resize(video[f], (rgba.shape[1], rgba.shape[0]), interpolation=cv2.INTER_AREA)
        base = (0.35 * base + 0.65 * 235).astype(np.float32)
        alpha = rgba[..., 3:4].astype(np.float32) / 255.0
        cam = (rgba[..., :3] * alpha + base * (1 - alpha)).clip(0, 255).astype(np.uint8)
        people = info["frames"][str(f)]["people"]
        for person in people:
            if person["track_id"] is not None and person["depth_m"] > 0:
                label(cam, str(person["track_id"]), (int(person["x"]) + 5, int(person["y"]) - 6), 0.4,
                      bgr(person["track_id"]))
        off = offsets(seq, f, people, vw / rgba.shape[1])
        for person in sorted(people, key=lambda p: p["track_id"]):
            tid = person["track_id"]
            px, pct, n = off.get(tid, (float("nan"), float("nan"), 0))
            report.append(f"{name}\t{f}\t{tid}\t{px:.1f}\t{pct:.1f}\t{n}\t{100 * person['lowest_foot_m']:.1f}")
        middle = fit(cam, panel_h)
        label(middle, "Blender, video camera" + floor_note, (6, 18), 0.45)
        off = {k: v for k, v in off.items() if v[2] >= 6}  # at least 6 joints seen in 2-D
        if 0 < len(off) <= 3:
            text = ", ".join(f"#{k} {v[1]:.0f} %" for k, v in sorted(off.items()))
            label(middle, f"joints off the 2-D (of body height): {text}", (6, panel_h - 8), 0.4)
        elif off:
            pct = np.median([v[1] for v in off.values()])
            label(middle, f"joints off the 2-D: median {pct:.0f} % of body height ({len(off)} people)",
                  (6, panel_h - 8), 0.4)
        side = fit(cv2.imread(f"{prefix}{f:04d}_side.png"), panel_h)
        label(side, "Blender, from the side", (6, 18), 0.45)
        rows.append(np.concatenate([left, middle, side], axis=1))
    width = max(r.shape[1] for r in rows)
    rows = [np.pad(r, ((0, 4), (0, width - r.shape[1]), (0, 0)), constant_values=255) for r in rows]
    return np.concatenate(rows, axis=0), report


def save_small(img: np.ndarray, path: Path, max_kb: int) -> int:
    for q in range(90, 30, -5):
        ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, q])
        if len(buf) <= max_kb * 1000:
            break
    else:
        img = cv2.resize(img, (img.shape[1] * 3 // 4, img.shape[0] * 3 // 4), interpolation=cv2.INTER_AREA)
        return save_small(img, path, max_kb)
    path.write_bytes(buf.tobytes())
    return q


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--clips", default=",".join(CLIPS))
    ap.add_argument("--frames", action="append", default=[], help="NAME=F1,F2,... (clip frames, 0-based)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/clip_sheets"))
    ap.add_argument("--max-kb", type=int, default=200)
    ap.add_argument("--place", choices=("import", "camera"), default="import",
                    help="import: every BVH file where Blender's importer puts it (each person on their own floor, "
                         "Y = 0); camera: each moved so that its camera map matches the first file's "
                         "(studies/tools/render_clip_frames_blender.py)")
    ap.add_argument("--bpy-python", default=os.environ.get("POSETRACKER_BPY_PYTHON", "/opt/bpyvenv/bin/python"))
    args = ap.parse_args(argv)
    frames = dict(FRAMES)
    for item in args.frames:
        name, _, values = item.partition("=")
        frames[name] = [int(v) for v in values.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    lines = ["clip\tframe\ttrack\tmedian_px\tpct_height\tjoints\tlowest_foot_cm"]
    for name in args.clips.split(","):
        img, report = sheet(name, args.results, frames[name], args.work, args.bpy_python, args.place)
        lines += report
        print("\n".join(report))
        cv2.imwrite(str(args.work / f"{name}_sheet.png"), img)
        path = args.out / f"{name}.jpg"
        q = save_small(img, path, args.max_kb)
        print(f"{path}: {img.shape[1]} x {img.shape[0]}, JPEG quality {q}, {path.stat().st_size // 1024} KB")
    (args.work / "offsets.tsv").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
