"""Two calibrated cameras live (issue #48's stretch goal): speed and accuracy of ``process SRC1 SRC2 --mode live``.

Speed (``speed``): the trial's cam01 and cam02 played as two live cameras, tracked, matched, triangulated and
solved as ``process --mode live`` does; in the same process and run, one source (cam01) through the same reading
path and one live session, for the ratio. Sources: by default the trial's own 1088x1920 60 fps clips as
``lavfi:movie=camNN.mp4:loop=L`` with continuous timestamps (a camera's reader thread, pacing and pairing; every
frame decoded and converted to RGB as a camera's is); with ``--clips DIR`` the webcam-like clips ``webcam`` writes
(544x960, 30 fps: every other frame at half size, looped 4 times), played as paced files, their cameras scaled.
Each run reports the instants (fused outputs) per second of the pairing's wall time, the frames dropped, the
median time of the views' step and of the fusion per instant, and the process's CPU time over the run (the cores it
used, and per instant: what it would need of a quiet machine). Medians over ``--runs``.

Accuracy (``accuracy``): live results (JSON of ``process ... --mode live``) against the offline 4-view and 2-view
results (JSON of ``process cam01..04.mp4 --calibration``): each live person is paired with the offline person
nearest in world space, and the distance of their joints (cam01's metres; the real joints both found) is given per
person as a median and 90th percentile over the person-frames, with the live and offline reprojection px per view
and joints triangulated from the results' metadata.

    OMP_NUM_THREADS=1 python studies/tools/live_views_check.py speed --runs 3 --loops 4
    python studies/tools/live_views_check.py webcam /tmp/webcam     # cam01.mp4, cam02.mp4 at 544x960, 30 fps
    OMP_NUM_THREADS=1 python studies/tools/live_views_check.py speed --runs 3 --clips /tmp/webcam [--no-refiners]
    python studies/tools/live_views_check.py accuracy LIVE.json [LIVE2.json ...] --offline off4.json off2.json
    OMP_NUM_THREADS=1 python studies/tools/live_views_check.py stages --offline off4.json [--variants]  # per stage
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

D = "../shared/data/video/multiview_pose2sim_multiperson"


def _sessions(cameras, refiners: bool = True):
    import dataclasses

    from posetracker.multiview.fuse import calibrated_fov
    from posetracker.session import DepthSettings, RefineSettings, SessionConfig, TrackingSession

    out = []
    for cam in cameras:
        config = SessionConfig(mode="live", depth=DepthSettings(fov_deg=calibrated_fov(cam)),
                               refine=RefineSettings(refiners=None if refiners else ()))
        out.append(TrackingSession.open(config=dataclasses.replace(
            config, motion=dataclasses.replace(config.motion, smoothing=False))))
    return out


def run_once(names: list[str], loops: int, root: str, clips: str | None = None, refiners: bool = True,
             overlap: bool = False) -> dict:
    """One paced run of the sources ``names`` (cam01, ...): instants per second, dropped, step and fusion ms."""
    from posetracker.capture import open_source
    from posetracker.multiview.calibration import read_calibrations
    from posetracker.multiview.live import LiveViews
    from posetracker.multiview.live_sources import PairStats, paired_frames

    from posetracker.multiview.live_run import fit_camera

    cams = {c.name: c for c in read_calibrations([f"{root}/calibration.qca.txt"])}
    sources = [open_source(f"{clips}/{n}.mp4") if clips else
               open_source(f"lavfi:movie={root}/{n}.mp4:loop={loops},setpts=N/FRAME_RATE/TB") for n in names]
    cameras = [fit_camera(cams[n], tuple(s.size))[0] for n, s in zip(names, sources)]
    sessions = _sessions(cameras, refiners)
    views = LiveViews(sessions, cameras) if len(names) > 1 else None
    if views is not None:
        views.warm_up([s.size for s in sources])
    else:
        from posetracker.types import Frame

        w, h = sources[0].size
        sessions[0].step(Frame(0, 0.0, np.zeros((h, w, 3), np.uint8)))
        sessions[0].reset()
    stats, step_ms, fuse_ms, outputs = PairStats(), [], [], 0
    fuser, pending = ThreadPoolExecutor(1), None  # overlap: instant t fused while the views step t + 1
    t0, cpu0 = time.perf_counter(), time.process_time()
    for frames in paired_frames(sources, True, stats):
        a = time.perf_counter()
        if overlap:
            poses = list(views._pool.map(lambda sf: sf[0].step(sf[1]), zip(views.sessions, frames)))
            step_ms.append(1000 * (time.perf_counter() - a))
            if pending is not None:
                outputs += pending.result() is not None
            pending = None if any(p is None for p in poses) else fuser.submit(views.fuse, poses)
            continue
        if views is None:
            pose = sessions[0].step(frames[0])
            step_ms.append(1000 * (time.perf_counter() - a))
        else:
            poses = list(views._pool.map(lambda sf: sf[0].step(sf[1]), zip(views.sessions, frames)))
            b = time.perf_counter()
            step_ms.append(1000 * (b - a))
            pose = None if any(p is None for p in poses) else views.fuse(poses)
            fuse_ms.append(1000 * (time.perf_counter() - b))
        outputs += pose is not None
    if pending is not None:
        pending.result()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    fuser.shutdown()
    if views is not None:
        views.close()
    for s in sources:
        s.close()
    parts = np.median(np.array(sessions[0].times.history), axis=0) if sessions[0].times.history else [np.nan] * 3
    return {"views": len(names), "overlap": overlap, "instants_per_s": stats.instants / seconds, "instants": stats.instants,
            "view0_network_decode_track_ms": [round(float(x), 1) for x in parts],
            "cores_used": cpu / seconds, "cpu_ms_per_instant": 1000 * cpu / max(stats.instants, 1),
            "read": stats.read, "dropped": stats.dropped, "step_ms": statistics.median(step_ms),
            "fuse_ms": statistics.median(fuse_ms) if fuse_ms else 0.0,
            "spread_ms": statistics.median(stats.spread_ms), "seconds": seconds}


def speed(args) -> None:
    rows = []
    setups = [(["cam01"], False), (["cam01", "cam02"], False)] + ([(["cam01", "cam02"], True)] if args.overlap else [])
    for run in range(args.runs):
        for names, overlap in setups:
            r = run_once(names, args.loops, args.root, args.clips, not args.no_refiners, overlap)
            rows.append(r)
            print(json.dumps({"run": run, **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}}),
                  flush=True)
    for v, overlap in ((1, False), (2, False), (2, True)):
        mine = [r for r in rows if r["views"] == v and r["overlap"] == overlap]
        if not mine:
            continue
        print(f"{v} view(s){' fusion overlapped' if overlap else ''}: median {statistics.median(r['instants_per_s'] for r in mine):.1f} instants/s "
              f"(runs {', '.join(format(r['instants_per_s'], '.1f') for r in mine)}); step "
              f"{statistics.median(r['step_ms'] for r in mine):.1f} ms, fusion "
              f"{statistics.median(r['fuse_ms'] for r in mine):.1f} ms; cores used "
              f"{statistics.median(r['cores_used'] for r in mine):.2f}, CPU per instant "
              f"{statistics.median(r['cpu_ms_per_instant'] for r in mine):.0f} ms")
    ratio = [b["instants_per_s"] / a["instants_per_s"] for a, b in zip(rows[::len(setups)], rows[1::len(setups)])]
    print(f"two sources / one, per run: {', '.join(f'{x:.2f}' for x in ratio)} (median {statistics.median(ratio):.2f})")


def webcam(args) -> None:
    """cam01 and cam02 of the trial as webcam-like clips in ``args.out``: every other frame (30 fps) at half size
    (544x960), looped 4 times (200 frames, 6.7 s), H.264 CRF 18."""
    from pathlib import Path

    import av

    from posetracker.capture import open_source

    Path(args.out).mkdir(parents=True, exist_ok=True)
    for cam in ("cam01", "cam02"):
        with open_source(f"{args.root}/{cam}.mp4") as src:
            frames = [f.image for f in src][::2]
        with av.open(f"{args.out}/{cam}.mp4", "w") as out:
            stream = out.add_stream("libx264", rate=30)
            stream.width, stream.height, stream.pix_fmt = 544, 960, "yuv420p"
            stream.options = {"crf": "18", "preset": "fast"}
            for n in range(4 * len(frames)):
                vf = av.VideoFrame.from_ndarray(frames[n % len(frames)], format="rgb24").reformat(width=544, height=960)
                vf.pts = n
                for packet in stream.encode(vf):
                    out.mux(packet)
            for packet in stream.encode():
                out.mux(packet)
        print(f"{args.out}/{cam}.mp4")


def _people(path: str) -> dict[int, dict[int, np.ndarray]]:
    """{person id: {frame index: (K, 3) world m}} of a result JSON."""
    from posetracker.export import read_sequence

    seq = read_sequence(path)
    out: dict[int, dict[int, np.ndarray]] = {}
    for f in seq.frames:
        for p, t in enumerate(f.track_ids.tolist()):
            if f.world is not None:
                out.setdefault(int(t), {})[f.index] = np.asarray(f.world[p], float)
    return out


def accuracy(args) -> None:
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("human18")
    real = [j for j in range(spec.num_joints) if j not in spec.virtual]
    offline = {name: _people(name) for name in args.offline}
    for name in args.offline:
        with open(name) as f:
            meta = json.load(f)["metadata"]["multiview"]
        for n, p in enumerate(meta["people"]):
            print(f"{name} person {n}: triangulated {p['triangulated']:.1%}, reprojection px "
                  + ", ".join(f"{v} {e:.1f}" for v, e in p["reprojection_px"].items()))
    for live_name in args.live:
        with open(live_name) as f:
            meta = json.load(f)["metadata"]["multiview"]
        if "live" in meta:
            print(f"{live_name}: {meta['live']['instants']} instants, dropped {meta['live']['dropped']}")
            for p in meta["people"]:
                print(f"  live person {p['id']}: {p['instants']} instants, triangulated {p['triangulated']:.1%}, "
                      "reprojection px " + ", ".join(f"{v} {e:.1f}" for v, e in p["reprojection_px"].items()))
        live = _people(live_name)
        for ref_name, ref in offline.items():
            for pid, frames in sorted(live.items()):
                best = None
                for rid, rframes in ref.items():
                    common = sorted(set(frames) & set(rframes))
                    if not common:
                        continue
                    d = np.concatenate([np.linalg.norm(frames[i][real] - rframes[i][real], axis=-1) for i in common])
                    d = d[np.isfinite(d)]
                    if d.size and (best is None or np.median(d) < best[1]):
                        best = (rid, float(np.median(d)), float(np.percentile(d, 90)), len(common))
                if best:
                    print(f"  vs {ref_name}: {pid} ~ {best[0]}: joints {1000 * best[1]:.0f} mm median, "
                          f"{1000 * best[2]:.0f} mm p90 over {best[3]} frames")


def stages(args) -> None:
    """cam01 + cam02 tracked live in lock step (every frame, as ``process --mode live``), fused, and each person's
    joints against the offline result ``args.offline`` after each stage: triangulated as read, with the live solve,
    finished without the feet step (``motion.finish._feet``), finished (what is written)."""
    import posetracker.motion.finish as finish
    from posetracker.capture import open_source
    from posetracker.multiview.calibration import read_calibrations
    from posetracker.multiview.live import LiveViews, live_sequence
    from posetracker.skeletons import load_skeleton

    spec = load_skeleton("human18")
    real = [j for j in range(spec.num_joints) if j not in spec.virtual]
    ref = _people(args.offline)
    cams = {c.name: c for c in read_calibrations([f"{args.root}/calibration.qca.txt"])}
    cameras = [cams["cam01"], cams["cam02"]]
    poses = []
    for cam, session in zip(cameras, _sessions(cameras)):
        with open_source(f"{args.root}/{cam.name}.mp4") as src:
            poses.append([p for f in src if (p := session.step(f)) is not None] + session.flush())

    def score(frames, label):
        people: dict[int, dict[int, np.ndarray]] = {}
        for f in frames:
            for p, t in enumerate(f.track_ids.tolist()):
                people.setdefault(t, {})[f.index] = np.asarray(f.world[p], float)
        out = []
        for t, fr in sorted(people.items()):
            d = min((np.nanmedian(np.concatenate([np.linalg.norm(fr[i][real] - rf[i][real], axis=-1)
                                                  for i in set(fr) & set(rf)])), r) for r, rf in ref.items())
            out.append(f"live {t} ~ offline {d[1]}: {1000 * d[0]:.0f} mm")
        print(f"{label}: {', '.join(out)}")

    for smoothing in (False, True):
        views = LiveViews([type("S", (), {"spec": spec})()] * 2, cameras, smoothing=smoothing, rigid_bones=smoothing)
        fused = [views.fuse(list(pair)) for pair in zip(*poses)]
        score(fused, "live solve, running bones" if smoothing else "triangulated as read")
    keep = finish._feet
    finish._feet = lambda seq: seq
    bare = live_sequence(fused, views, fps=60.0, sources=[], calibration_name="calibration.qca.txt", pairing={})[0]
    score(bare.frames, "finished without the feet step")
    finish._feet = keep
    score(live_sequence(fused, views, fps=60.0, sources=[], calibration_name="calibration.qca.txt", pairing={})[0]
          .frames, "finished (written)")
    if args.variants:  # the feet step (motion.feet.plant_feet) on the finished-without-feet people, other ways
        import dataclasses

        import posetracker.analysis.ground as ground
        from posetracker.motion.feet import FeetSettings, plant_feet

        floor = bare.metadata["floor"]
        snapped = {k: v for k, v in floor.items() if k != "on_floor_m"}  # as offline: on it within 3 cm
        for label, meta, settings, stature in (
                ("feet, on the calibration's floor within 3 cm (offline's)", {"floor": snapped}, None, None),
                ("feet, the same with the woman's stature 1.36 m", {"floor": snapped}, None, 1.36),
                ("feet, a floor fitted to the stance feet", {"floor": None}, None, None),
                ("feet, each on their own floor, the body not moved", {}, FeetSettings(across=1e6, eps=1e6), None)):
            m = {k: v for k, v in {**bare.metadata, **meta}.items() if v is not None}
            default = ground.DEFAULT_STATURE_M
            ground.DEFAULT_STATURE_M = stature or default  # her stature is unknown live: the default's
            out, report = plant_feet(dataclasses.replace(bare, metadata=m), settings)
            ground.DEFAULT_STATURE_M = default
            score(out.frames, f"{label} (largest shifts "
                  + ", ".join(f"{t}: {p['largest_shift_m']:.2f} m" for t, p in report.get("people", {}).items()) + ")")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(required=True)
    s = sub.add_parser("speed")
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--loops", type=int, default=4, help="plays of the 100-frame clip per run")
    s.add_argument("--root", default=D)
    s.add_argument("--clips", help="a folder with cam01.mp4 and cam02.mp4 (the webcam verb's) played as paced files")
    s.add_argument("--no-refiners", action="store_true", help="live sessions without the fast precision stage")
    s.add_argument("--overlap", action="store_true", help="also two views with each instant fused on a helper "
                   "thread while the views step the next")
    s.set_defaults(func=speed)
    w = sub.add_parser("webcam")
    w.add_argument("out")
    w.add_argument("--root", default=D)
    w.set_defaults(func=webcam)
    a = sub.add_parser("accuracy")
    a.add_argument("live", nargs="+")
    a.add_argument("--offline", nargs="+", required=True)
    a.set_defaults(func=accuracy)
    g = sub.add_parser("stages")
    g.add_argument("--offline", required=True, help="the offline 4-view result (JSON)")
    g.add_argument("--root", default=D)
    g.add_argument("--variants", action="store_true", help="also the feet step on the calibration's floor within "
                   "3 cm, with the woman's stature given, on a fitted floor, and without moving the body")
    g.set_defaults(func=stages)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
