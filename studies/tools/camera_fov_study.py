"""Field of view and leg repair on the three clips (studies/camera-fov.md).

    python studies/tools/camera_fov_study.py [--shared ../shared] [--poses DIR] [CLIP ...]

Tracks each clip offline at 60 degrees (as ``posetracker process --fov 60``; or reads DIR/<stem>.json,
saved there on the first run), then per clip: (1) the longest-seen person's stature (analysis.stature)
and mean bone-length CV of the joints lifted with 30-100 degrees (depth.lift.camera_depths: the root's
distance scales, the relief stays); (2) the people's estimate (analysis.camera_fov) with its interval or
the reason it falls back; (3) the leg repair (motion.sides.one_leg_each, which the offline session now runs
itself: on poses tracked since, the swaps left): swaps found and how often the hips then cross against the
shoulders in the image (1 % on a frontal clip as named).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from studies.tools.floor_and_feet import CLIPS, load  # noqa: E402

FOVS = (30, 45, 60, 75, 90, 100)


def sweep(seq) -> list[str]:
    from posetracker.analysis.camera_fov import relift
    from posetracker.analysis.stature import stature
    from posetracker.tracks import person_tracks

    spec, size = seq.skeleton, seq.frames[0].image_size
    tracks = person_tracks(seq)
    tr = max(tracks.values(), key=lambda t: int(t.present.sum()))
    ok = tr.confidence >= 0.5
    out = []
    for fov in FOVS:
        _, world = relift(tr.keypoints, spec.root, size, 60.0, fov)
        cvs = []
        for a, b in spec.edges:
            both = ok[:, a] & ok[:, b]
            if both.sum() >= 10:
                length = np.linalg.norm(world[both, a] - world[both, b], axis=-1)
                cvs.append(length.std() / length.mean())
        out.append(f"{fov}: {stature(world, ok, spec):.3f} m / CV {np.mean(cvs):.3f} / root {np.nanmedian(world[:, spec.root, 2]):.2f} m")
    return out


def legs(seq) -> list[str]:
    import dataclasses

    from posetracker.motion.sides import one_leg_each
    from posetracker.tracks import person_tracks

    spec = seq.skeleton
    j = spec.index
    raw = person_tracks(seq)
    frames, by_frame = one_leg_each(seq.frames, spec, seq.fps)
    rep = person_tracks(dataclasses.replace(seq, frames=frames))
    swaps = {tid: np.asarray(by_frame.get(tid, []), np.int64) for tid in raw}
    out = []
    for tid in raw:
        crossed = []
        for tr in (raw[tid], rep[tid]):
            x = tr.keypoints[..., 0]
            ok = np.isfinite(x[:, [j("left_hip"), j("right_hip"), j("left_shoulder"), j("right_shoulder")]]).all(1)
            hip = np.sign(x[ok, j("left_hip")] - x[ok, j("right_hip")])
            sh = np.sign(x[ok, j("left_shoulder")] - x[ok, j("right_shoulder")])
            crossed.append(100 * np.mean(hip != sh) if ok.any() else float("nan"))
        out.append(f"person {tid}: {len(swaps[tid])} swaps {swaps[tid].tolist()}; hips crossed against the shoulders "
                   f"{crossed[0]:.0f} % as named, {crossed[1]:.0f} % repaired")
    return out


def main(argv: list[str] | None = None) -> int:
    from posetracker.analysis.camera_fov import estimate_from_sequence

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("clips", nargs="*")
    p.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    p.add_argument("--poses", type=Path, default=None, help="folder for the tracked poses (JSON), reused when there")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    videos = [Path(c) for c in args.clips] or [args.shared / c for c in CLIPS]
    for video in videos:
        seq = load(video, args.poses)
        print(f"## {video.name} {seq.frames[0].image_size}")
        print("stature / bone CV / root depth by field of view: " + "; ".join(sweep(seq)))
        est = estimate_from_sequence(seq, 60.0)
        best = est.grid[int(np.argmin(est.cost))] if len(est.cost) else float("nan")
        print(f"estimate: {est.fov_deg:g} deg, estimated={est.estimated}, cost minimum at {best:g}, 90 % interval "
              f"{est.interval[0]:g}-{est.interval[1]:g}, {est.person_frames} person-frames; {est.reason}")
        for line in legs(seq):
            print("legs: " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
