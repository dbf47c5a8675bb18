"""BlazePose GHUM's world landmarks of each person tracked by PoseTracker in one view, read by the product's own
PyTorch rebuild of the landmark network on ROIs placed from PoseTracker's 2-D: a measuring tool.

    python studies/tools/ghum_world.py VIDEO RESULTS.json --out READ.json [--variant full|heavy] [--min-frames 30]

Each track of RESULTS.json (``posetracker process --out X.json``) present in at least ``--min-frames`` frames is read
in every frame it is present: the first frame's ROI (and any frame after one whose landmarks were not present) is
placed as BlazePose's detector places it, centred on the track's mid-hip, side 2.5 x the distance from there to
its farthest joint (confidence >= 0.2), turned so mid-hip -> mid-shoulder points up; later frames take the ROI from
the previous frame's auxiliary landmarks, as MediaPipe tracks a person. Output as
``studies/tools/mediapipe_world.py`` writes it ("format": "mediapipe-pose-readings"), so the study tools read both.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import av
import numpy as np

from posetracker.export.json_io import read_sequence
from posetracker.tracks import person_tracks
from posetracker.train.teachers import blazepose_geometry as geo
from posetracker.train.teachers.blazepose import BlazePoseTeacher


def roi_from_joints(xy: np.ndarray, conf: np.ndarray, names: list[str]) -> geo.Roi | None:
    """(K, 2) px, (K,) -> the detector-style ROI around one person's joints, None when hips or shoulders are unread."""
    ok = conf >= 0.2
    idx = {n: i for i, n in enumerate(names)}
    hips, shoulders = [idx["left_hip"], idx["right_hip"]], [idx["left_shoulder"], idx["right_shoulder"]]
    if not (ok[hips].any() and ok[shoulders].any()):
        return None
    hip, shoulder = xy[hips][ok[hips]].mean(0), xy[shoulders][ok[shoulders]].mean(0)
    radius = float(np.max(np.linalg.norm(xy[ok] - hip, axis=1))) * 1.0
    up = (shoulder - hip) / max(float(np.linalg.norm(shoulder - hip)), 1e-6)
    return geo.roi_from_points(hip, hip + up * radius)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("video")
    ap.add_argument("results")
    ap.add_argument("--out", required=True)
    ap.add_argument("--variant", default="heavy", choices=("full", "heavy"))
    ap.add_argument("--min-frames", type=int, default=30)
    args = ap.parse_args()
    seq = read_sequence(Path(args.results))
    names = list(seq.skeleton.joint_names)
    tracks = {tid: tr for tid, tr in person_tracks(seq).items() if tr.present.sum() >= args.min_frames}
    teacher = BlazePoseTeacher(args.variant, refine=False)
    out = {tid: {"frames": [], "box": [], "world": [], "image": []} for tid in tracks}
    last: dict[int, geo.Roi | None] = {tid: None for tid in tracks}
    with av.open(args.video) as container:
        for i, frame in enumerate(container.decode(video=0)):
            if i >= len(seq):
                break
            rgb = frame.to_ndarray(format="rgb24")
            for tid, tr in tracks.items():
                if not tr.present[i]:
                    last[tid] = None
                    continue
                roi = last[tid] or roi_from_joints(tr.keypoints[i, :, :2], tr.keypoints[i, :, 2], names)
                people = teacher.predict_rois(rgb, [roi], keep_absent=True) if roi is not None else []
                p = people[0] if people else None
                ok = p is not None and p.presence >= geo.POSE_PRESENCE_THRESHOLD
                last[tid] = geo.roi_from_points(p.aux[0], p.aux[1]) if ok else None
                out[tid]["frames"].append(i)
                half = roi.size / 2 if roi is not None else math.nan
                out[tid]["box"].append([roi.cx - half, roi.cy - half, roi.cx + half, roi.cy + half] if roi else None)
                out[tid]["world"].append(p.world.tolist() if ok else None)
                out[tid]["image"].append(np.concatenate([p.landmarks[:, :3], p.landmarks[:, 3:4]], 1).tolist()
                                         if ok else None)
    Path(args.out).write_text(json.dumps({"format": "mediapipe-pose-readings", "reader": f"ghum-{args.variant}",
                                          "video": args.video, "results": args.results, "num_frames": len(seq),
                                          "tracks": {str(k): v for k, v in out.items()}}))


if __name__ == "__main__":
    main()
