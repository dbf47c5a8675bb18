"""Feet on the floor in the BVH export, before and after the floor fit and the foot lock (studies/floor-and-feet.md).

    python studies/tools/floor_and_feet.py [--shared ../shared] [--poses DIR] [CLIP ...]

Tracks and finishes each clip offline with the shipped model (as ``posetracker process CLIP``;
about two minutes for the three default clips on two CPU cores; the finishing step holds the
standing feet on the floor, ``posetracker.motion.feet``), or reads DIR/<clip stem>.json when
--poses holds it (the finished poses are saved there on the first run). Prints the floor fit
(camera pitch, roll and height; the feet-only and body-axis estimates) and, per person, two
BVH exports: ``percentile`` (level camera, floor at the 2nd percentile of the lowest joint: the
export before the fit) and ``fit`` (the default): the ankles' height above the floor during
stance, their distance from standing on it, the slide per stance phase
(posetracker.evaluation.feet_on_floor), whole-body holds, bone CV and the largest joint step and
acceleration (pops). ``studies/tools/feet_outputs.py`` measures the world coordinates too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

CLIPS = ("data/video/more/sports2d_demos/demo4_older_woman_walking.mp4", "data/video/sleap_dance_human/dance.mp4",
         "data/video/more/pose2sim_demo/multi_cam02.mp4")
VARIANTS = {"percentile": {"floor": "percentile"}, "fit": {}}


def track(video: Path):
    """The offline-tracked, finished PoseSequence of ``video`` (as ``posetracker process``)."""
    from posetracker.capture import open_source
    from posetracker.motion.finish import camera_before, finish_sequence, fov_to_track
    from posetracker.session import DepthSettings, SessionConfig, TrackingSession

    camera = camera_before(video, "auto")
    session = TrackingSession.open("human18", None, SessionConfig(mode="offline",
                                                                  depth=DepthSettings(fov_deg=fov_to_track(camera))))
    with open_source(str(video)) as source:
        seq = session.run(source, fps=source.fps, total=source.frame_count, metadata={"source": str(video)})
    return finish_sequence(seq, camera, rigid_bones=True)[0]


def load(video: Path, poses: Path | None):
    from posetracker.export import get_exporter, read_sequence

    cached = poses / f"{video.stem}.json" if poses else None
    if cached is not None and cached.exists():
        return read_sequence(cached)
    seq = track(video)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        get_exporter("json").write(seq, cached, force=True)
    return seq


def _cm(v: float) -> str:
    return "" if v != v else f"{100 * v:.1f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("clips", nargs="*", help=f"videos (default: the three clips under --shared: {', '.join(CLIPS)})")
    p.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    p.add_argument("--poses", type=Path, help="folder to keep / reuse the tracked poses (CLIP_STEM.json)")
    args = p.parse_args(argv)
    from posetracker.analysis.held_ground import held_ground
    from posetracker.evaluation.feet_on_floor import feet_on_floor
    from posetracker.export.bvh import BvhOptions, solve_person
    from posetracker.tracks import person_tracks

    videos = [Path(c) for c in args.clips] or [args.shared / c for c in CLIPS]
    floors, rows = [], []
    for video in videos:
        if not video.exists():
            print(f"missing: {video}", file=sys.stderr)
            continue
        seq = load(video, args.poses)
        ground = held_ground(seq)  # the session's floor and stance phases, as the exports read them
        r = ground.frame.report
        floors.append(f"| {video.name} | {'yes' if r['fitted'] else 'no: ' + r['reason']} | {r['pitch_deg']:.1f} "
                      f"| {r['roll_deg']:.1f} | {r.get('feet_only_pitch_deg')} | {r.get('prior_pitch_deg')} "
                      f"| {r['camera_height_m']:.2f} | {r.get('inliers', 0)} / {r.get('contact_points', 0)} "
                      f"| {r.get('scale_cm', '')} | {r.get('spread_m', '')} |")
        for tid, tr in person_tracks(seq).items():
            for name, opts in VARIANTS.items():
                try:
                    motion = solve_person(tr, seq.skeleton, seq.fps, BvhOptions(**opts), ground)
                except ValueError as exc:
                    rows.append(f"| {video.name} | {tid} | {name} | not exported: {exc} |")
                    break
                ankle = 0.0 if name == "percentile" else ground.frame.ankle_height[tid]  # that floor is at the ankles
                m = feet_on_floor(motion, tr, ground.phases.get(tid, []), ankle)
                rows.append(f"| {video.name} | {tid} | {name} | {m.stance_frames} | {_cm(m.height_median)} "
                            f"/ {_cm(m.height_p95)} | {_cm(m.clearance_median)} / {_cm(m.clearance_p95)} "
                            f"| {100 * m.within:.0f} | {m.phases} | {_cm(m.slide_median)} / {_cm(m.slide_max)} "
                            f"| {100 * m.slide_under:.0f} | {m.held_frames} | {m.bone_cv:.4f} "
                            f"| {_cm(m.step_max)} / {_cm(m.accel_p99)} | {m.under_frames} / {len(motion.root)} "
                            f"| {_cm(m.under_max)} |")
    print("| clip | fitted | pitch (deg) | roll (deg) | feet-only pitch | body-axis pitch | camera height (m) "
          "| inliers / stance ankles | scale (cm) | spread (m) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(floors))
    print()
    print("| clip | person | export | stance frames | ankle height median / p95 (cm) | off the floor median / p95 (cm) "
          "| within 3 cm (%) | stance phases | slide median / max (cm) | phases under 2 cm (%) | held frames "
          "| bone CV | largest joint step / accel p99 (cm/frame, cm/frame^2) | frames with an ankle > 3 cm under "
          "standing | deepest (cm) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
