"""Where a single view's 3-D error comes from on the 4-view trial (studies/multiview-reference.md, issue #46).

    python studies/tools/single_view_where.py replay REC OUT VARIANT ...   # single_view_replay.py's replay, stages kept
    python studies/tools/single_view_where.py report DIR --peer mp_cam01.json mp_cam02.json mp_cam03.json mp_cam04.json

``replay`` is ``single_view_replay.py replay`` (REC a ``record`` folder; the same variants, and those below) with
each view's intermediate motion kept in ``OUT/VARIANT/camN.stages.pkl``: {"raw": the tracked frames as the
depth stage read them (ids backfilled, before the whole-track step), "solved": after the motion solve
(``motion.solve.solve_tracks``, its last call), "rigid": ``whole_track_motion``'s result (one length per bone,
bones on their rays), "plant_in": what the feet step (``motion.feet.plant_feet``) was given}; ``camN.json`` is the
finished output as ``process`` writes it. Extra variants (monkeypatches, for measuring only):

    feet_tol:M        a stance phase's ankle held at its own mean height within M metres of standing height (not
                      at standing height), and a swinging ankle lifted only from M under it
    feet_sens:K       each phase's height moved towards standing height by 1 / (1 + (k / K)^2) of the way, k the
                      phase's knee-angle change per cm of hip-ankle distance (deg / cm), within 2 cm
    feet_rounds:N     the feet step's rounds at most N (shipped 4)
    feet_fresh        each round plants the motion it was given, on the floor fitted to the round before
    feet_ray          a stance phase's ankle held where its camera ray meets standing height (mean over the
                      phase), not straight above or below its mean position
    knee_bend_head:W  each knee's depth off its hip-ankle line (the bend seen along the ray): W of the depth head's
                      in place of the mix's (elbows: elbow_bend_head:W)

``report`` prints, per view and person (the references as ``posetracker eval multiview`` builds them: the own
one from DIR's 2-D points, the check from MediaPipe's): PA-MPJPE and knee / hip / elbow error at each stage and
MediaPipe's; the joints with the largest PA error; how the error spreads over frames; the limbs' 2-D against
the reference reprojected; the error after scale and translation only in the camera frame split along / across
each joint's camera ray, and the PA residual split the same way; the rotation PA takes out; frames where left and
right exchanged would fit better; bone lengths against the reference's; the body axis against the calibration's
up; the reference's own limb glitches and the scores without those frames; the feet step's ankle moves.
Run from the repository root, one thread (``OMP_NUM_THREADS=1``).
"""

from __future__ import annotations

import inspect
import json
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # single_view_replay.py beside this file
import single_view_replay as svr

D = svr.D
NAMES = ("cam01", "cam02", "cam03", "cam04")
STAGES: dict = {}


# ---------------------------------------------------------------- replay with the stages kept, extra variants
def _keep_stages() -> None:
    from posetracker import cli
    from posetracker.motion import feet, whole_track

    solve, motion, plant, main = whole_track.solve_tracks, whole_track.whole_track_motion, feet.plant_feet, cli.main

    def solve_kept(frames):
        STAGES["solved"] = solve(frames)
        return STAGES["solved"]

    def motion_kept(tracked, spec, config, fps):
        STAGES["raw"] = tracked
        out = motion(tracked, spec, config, fps)
        STAGES["rigid"] = out[0]
        return out

    def plant_kept(seq, settings=None):
        STAGES["plant_in"] = seq
        return feet._planting(seq, settings)

    def main_kept(argv):
        rc = main(argv)
        v = int(Path(argv[1]).stem[-1])
        (Path(argv[3]).parent / f"cam{v}.stages.pkl").write_bytes(pickle.dumps(STAGES))
        return rc

    feet._planting = feet._shipped = plant
    whole_track.solve_tracks, whole_track.whole_track_motion, feet.plant_feet = solve_kept, motion_kept, plant_kept
    cli.main = main_kept


def _feet_legs(hold) -> None:
    """feet._legs with each phase's held point's height from ``hold(pts, leg, phase, point, stand) -> height`` and
    the swinging ankles lifted from ``hold.lift`` under standing height."""
    from posetracker.motion import feet

    legs = feet._legs

    def held(pts, leg_joints, phases, points, stand, valid, blend, lam, rest):
        points = points.copy()
        for i, p in enumerate(phases):
            if np.isfinite(points[i]).all():
                points[i, 1] = hold(pts[p.start:p.stop], leg_joints[p.foot], stand)
        return legs(pts, leg_joints, phases, points, stand - hold.lift, valid, blend, lam, rest)

    feet._legs = held


def _feet_tol(m: float) -> None:
    def hold(seg, leg, stand):
        a = seg[:, leg[2]]
        a = a[np.isfinite(a).all(1)]
        return float(np.clip(a[:, 1].mean(), stand - m, stand + m)) if len(a) else stand

    hold.lift = m
    _feet_legs(hold)


def _feet_sens(kappa: float, most: float = 0.02) -> None:
    def hold(seg, leg, stand):
        hip, knee, ankle = leg
        ok = np.isfinite(seg[:, [hip, knee, ankle]]).all((1, 2))
        if not ok.any():
            return stand
        h, k, a = seg[ok, hip], seg[ok, knee], seg[ok, ankle]
        l1, l2 = np.linalg.norm(k - h, axis=1).mean(), np.linalg.norm(a - k, axis=1).mean()
        d = np.median(np.linalg.norm(a - h, axis=1))
        cos = np.clip((l1**2 + l2**2 - d**2) / (2 * l1 * l2), -0.999999, 0.999999)
        per_cm = np.degrees(d / (l1 * l2 * np.sqrt(1 - cos**2))) / 100
        y = a[:, 1].mean()
        return float(np.clip(y + (stand - y) / (1.0 + (per_cm / kappa) ** 2), stand - most, stand + most))

    hold.lift = most
    _feet_legs(hold)


def _feet_rounds(n: int) -> None:
    from posetracker.motion import feet

    plant = feet._planting
    feet._planting = lambda seq, settings=None: plant(seq, settings or feet.FeetSettings(rounds=n))


def _feet_fresh() -> None:
    from posetracker.motion import feet

    fit: dict = {}
    ns = dict(vars(feet), FIT=fit)
    exec(inspect.getsource(feet._plant_once).replace(  # noqa: S102 (a measuring variant of the shipped function)
        "ground = ground_from_sequence(seq)", "ground = ground_from_sequence(FIT.get('seq', seq))"), ns)
    ns["_plant_fit"] = ns["_plant_once"]
    src = inspect.getsource(feet._shipped).replace(
        "again, more, found = _plant_once(out, s, allowed)",
        "FIT['seq'] = out\n        again, more, found = _plant_fit(seq, s, allowed)\n        FIT.pop('seq')")
    exec(src, ns)  # noqa: S102
    feet._planting = ns["plant_feet"]


def _feet_ray() -> None:
    from posetracker.motion import feet

    seen: dict = {}
    rays = feet.body_rays

    def rays_kept(pts, camera):
        seen["camera"] = camera  # the camera centre in the person's floor frame, as _plant_once gives it
        return rays(pts, camera)

    def points(ankles, phases, stand):
        c = seen["camera"]
        out = np.full((len(phases), 3), np.nan)
        for i, p in enumerate(phases):
            seg = ankles[p.start:p.stop, p.foot]
            seg = seg[np.isfinite(seg).all(1)]
            if len(seg):  # each frame's ankle ray where it meets standing height, averaged over the phase
                out[i] = (c + ((stand - c[1]) / (seg[:, 1] - c[1]))[:, None] * (seg - c)).mean(0)
                out[i, 1] = stand
        return out

    feet.body_rays, feet._points = rays_kept, points


def _bend_from_head(limb: tuple[str, str, str], w: float) -> None:
    from posetracker.depth import pose_prior

    names = svr._names()
    trip = [tuple(names.index(f"{s}_{j}") for j in limb) for s in ("left", "right")]
    fuse = pose_prior.PosePrior.fuse

    def fused(self, xy, confidence, depth, focal, weight=None):
        mixed = fuse(self, xy, confidence, depth, focal, weight)
        out = mixed.copy()
        for h, k, a in trip:
            v = xy[:, a] - xy[:, h]
            t = np.clip(((xy[:, k] - xy[:, h]) * v).sum(-1) / np.maximum((v * v).sum(-1), 1e-9), 0, 1)
            bend_head = depth[:, k] - (depth[:, h] + t * (depth[:, a] - depth[:, h]))
            bend_mix = mixed[:, k] - (mixed[:, h] + t * (mixed[:, a] - mixed[:, h]))
            out[:, k] = mixed[:, k] + w * (bend_head - bend_mix)
        return np.where(np.isfinite(out), out, mixed).astype(mixed.dtype)

    pose_prior.PosePrior.fuse = fused


EXTRA = {"feet_tol": lambda a: _feet_tol(float(a)), "feet_sens": lambda a: _feet_sens(float(a)),
         "feet_rounds": lambda a: _feet_rounds(int(a)), "feet_fresh": lambda a: _feet_fresh(),
         "feet_ray": lambda a: _feet_ray(),
         "knee_bend_head": lambda a: _bend_from_head(("hip", "knee", "ankle"), float(a)),
         "elbow_bend_head": lambda a: _bend_from_head(("shoulder", "elbow", "wrist"), float(a))}


def replay(rec: Path, out: Path, variants: list[str]) -> None:
    _keep_stages()
    apply = svr.apply

    def apply_more(variant: str) -> None:
        for part in variant.split("+"):
            name, _, arg = part.partition(":")
            EXTRA[name](arg) if name in EXTRA else apply(part)

    svr.apply = apply_more
    svr.replay(rec, out, variants)


# ---------------------------------------------------------------- report
def _align(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, 3) p fitted to q by a similarity -> (aligned p, rotation (3, 3) for row vectors)."""
    pc, qc = p - p.mean(0), q - q.mean(0)
    u, s, vt = np.linalg.svd(pc.T @ qc)
    d = np.diag([1.0, 1.0, np.sign(np.linalg.det(u @ vt))])
    r = u @ d @ vt
    return pc @ r * (np.diag(d) * s).sum() / (pc**2).sum() + q.mean(0), r


def _stage(frames, ids, t: int, k: int) -> np.ndarray:
    w = np.full((t, k, 3), np.nan)
    for f in frames:
        for p, tid in enumerate(f.track_ids.tolist() if f.world is not None else ()):
            if tid in ids and not np.isfinite(w[f.index]).any():
                w[f.index] = f.world[p]
    return w


def report(d: Path, peers: list[str]) -> None:
    from scipy.spatial.transform import Rotation

    from posetracker.evaluation.multiview_reference import (
        _per_metric,
        _world_of,
        block_bootstrap,
        frame_errors,
        peer_person,
    )
    from posetracker.export.json_io import read_sequence
    from posetracker.multiview.calibration import camera_named, read_calibrations
    from posetracker.multiview.reference import reconstruct_views, triangulate_person
    from posetracker.tracking.bones import bone_lengths
    from posetracker.tracks import person_tracks

    warnings.simplefilter("ignore", RuntimeWarning)
    cams = [camera_named(read_calibrations([str(D / "calibration.qca.txt")]), n) for n in NAMES]
    seqs = [read_sequence(d / f"cam{v + 1}.json") for v in range(4)]
    spec, t = seqs[0].skeleton, len(seqs[0])
    names, k = spec.joint_names, spec.num_joints
    j = {n: i for i, n in enumerate(names)}
    real = np.array([i not in spec.virtual for i in range(k)])
    flip = np.array([names.index(n.replace("left", "@").replace("right", "left").replace("@", "right")) for n in names])
    limbs = [j[f"{s}_{p}"] for s in ("left", "right") for p in ("elbow", "wrist", "knee", "ankle")]
    limb_bones = [e for e, (a, b) in enumerate(spec.edges.tolist()) if names[b].split("_")[-1] in
                  ("elbow", "wrist", "knee", "ankle")]
    readings = [json.loads(Path(p).read_text()) for p in peers]
    rec = reconstruct_views(cams, seqs)

    def pa_joints(w: np.ndarray, ref: np.ndarray) -> np.ndarray:
        out = np.full((t, k), np.nan)
        for i in range(t):
            ok = np.isfinite(w[i]).all(-1) & np.isfinite(ref[i]).all(-1) & real
            if ok.sum() >= 8:
                out[i, ok] = np.linalg.norm(_align(w[i, ok], ref[i, ok])[0] - ref[i, ok], axis=-1) * 1000
        return out

    def scores(w, ref):
        e = _per_metric(frame_errors(w, ref, spec))
        return " ".join(f"{np.nanmean(e[m]):5.1f}" for m in ("pa_mm", "knee", "hip", "elbow", "mean_angle"))

    for n, person in enumerate(rec.people):
        ref = person.xyz
        got = [peer_person(readings[v], person.match.track_ids(v), t, spec) for v in range(4)]
        mp_ref = triangulate_person(rec.cameras, np.stack([g[1] for g in got]), np.stack([g[2] for g in got]), spec,
                                    15.0, min_views=2).xyz
        dev = np.abs(bone_lengths(ref, spec) / np.nanmedian(bone_lengths(ref, spec), 0) - 1)[:, limb_bones]
        good = ~(dev > 0.2).any(1)
        for v in range(4):
            ids = person.match.track_ids(v)
            cam, mp = rec.cameras[v], got[v][0]
            tracks = person_tracks(seqs[v])
            ours = _world_of(tracks, ids, t, k)
            both = np.isfinite(ours).all(-1).any(-1) & np.isfinite(mp).all(-1).any(-1)
            keep = lambda w, b=both: np.where(b[:, None, None], w, np.nan)
            stages = pickle.loads((d / f"cam{v + 1}.stages.pkl").read_bytes())
            print(f"\n=== {NAMES[v]} P{n + 1}: {both.sum()} frames; PA mm / knee / hip / elbow / mean angle deg, own ref")
            for name, w in [(s, _stage(stages[s], set(ids), t, k)) for s in ("raw", "solved", "rigid")] + [
                    ("finished", ours), ("mediapipe", mp)]:
                print(f"  {name:9s} {scores(keep(w), ref)}   (MP-2-D ref: {scores(keep(w), mp_ref)})")
            e, em = pa_joints(keep(ours), ref), pa_joints(keep(mp), ref)
            pj, pjm = np.nanmean(e, 0), np.nanmean(em, 0)
            print("  worst joints PA ours/MP mm: " + ", ".join(
                f"{names[i]} {pj[i]:.0f}/{pjm[i]:.0f}" for i in np.argsort(-np.nan_to_num(pj))[:6]))
            pf = np.nanmean(e, 1)
            pf = np.sort(pf[np.isfinite(pf)])[::-1]
            print(f"  per frame: median {np.median(pf):.0f}, 90th pct {np.percentile(pf, 90):.0f} mm; the worst 10 % "
                  f"of frames carry {pf[:max(1, len(pf) // 10)].sum() / pf.sum() * 100:.0f} % of the error")
            kp = np.full((t, k, 2), np.nan)
            for tid in ids:
                kp[tracks[tid].present] = tracks[tid].keypoints[tracks[tid].present, :, :2]
            px = lambda xy, r, c=cam, b=both: np.nanmedian(np.linalg.norm(
                xy - c.project(r.reshape(-1, 3)).reshape(t, k, 2), axis=-1)[b][:, limbs])
            print(f"  limbs' 2-D px (median) ours / MP: against the own ref {px(kp, ref):.1f} / {px(got[v][1], ref):.1f}, "
                  f"against the MP-2-D ref {px(kp, mp_ref):.1f} / {px(got[v][1], mp_ref):.1f}")
            ref_c = cam.to_camera(ref.reshape(-1, 3)).reshape(ref.shape)
            along, across, res_a, res_c, turn = [], [], [], [], []
            for i in np.flatnonzero(both):
                ok = np.isfinite(ours[i]).all(-1) & np.isfinite(ref_c[i]).all(-1) & real
                if ok.sum() < 8:
                    continue
                p, q = ours[i, ok], ref_c[i, ok]
                ray = q / np.linalg.norm(q, axis=-1, keepdims=True)
                pc, qc = p - p.mean(0), q - q.mean(0)
                r = pc * (pc * qc).sum() / (pc * pc).sum() + q.mean(0) - q  # scale and translation only
                al, rot = _align(p, q)
                for x, a_list, c_list in ((r, along, across), (al - q, res_a, res_c)):
                    a = (x * ray).sum(-1)
                    a_list.append(np.abs(a).mean())
                    c_list.append(np.linalg.norm(x - a[:, None] * ray, axis=-1).mean())
                turn.append(np.degrees(Rotation.from_matrix(rot.T).as_rotvec()))
            turn = np.array(turn)
            print(f"  camera frame, scale + translation only: along the ray {np.mean(along) * 1000:.0f} mm, across "
                  f"{np.mean(across) * 1000:.0f}; PA residual along {np.mean(res_a) * 1000:.0f}, across "
                  f"{np.mean(res_c) * 1000:.0f}; PA's rotation {np.median(np.linalg.norm(turn, axis=1)):.1f} deg "
                  f"(about the camera's x / y / z {np.median(turn[:, 0]):+.1f} / {np.median(turn[:, 1]):+.1f} / "
                  f"{np.median(turn[:, 2]):+.1f})")
            pff = np.nanmean(pa_joints(keep(ours)[:, flip], ref), 1)
            pfo = np.nanmean(e, 1)
            ratio = np.nanmedian(bone_lengths(keep(ours), spec), 0) / np.nanmedian(bone_lengths(ref, spec), 0)
            scale = np.nanmedian(ratio[limb_bones])
            print(f"  left / right exchanged better by > 20 mm in {np.sum(pff < pfo - 20)} frames; limb bones / "
                  f"reference's (÷ {scale:.2f}): " + " ".join(f"{ratio[e] / scale:.2f}" for e in limb_bones))
            up = cam.R @ np.array([0.0, 0.0, 1.0])

            def lean(w, up=up):  # up: the world's +z in camera axes
                u = (w[:, j["left_shoulder"]] + w[:, j["right_shoulder"]] - w[:, j["left_ankle"]] - w[:, j["right_ankle"]]) / 2
                return np.nanmedian(np.degrees(np.arccos(np.clip((u @ up) / np.linalg.norm(u, axis=-1), -1, 1))))
            print(f"  body axis (mid-ankle -> mid-shoulder) from the calibration's up: ours {lean(keep(ours)):.1f}, "
                  f"reference {lean(ref_c):.1f} deg")
            eo, ep = _per_metric(frame_errors(ours, ref, spec)), _per_metric(frame_errors(mp, ref, spec))
            line = f"  reference limb bones > 20 % off their median in {np.sum(~good)} frames;"
            for m in ("pa_mm", "mean_angle"):
                for label, sel in (("all", both), ("sound ref", both & good)):
                    md = block_bootstrap(np.where(sel, eo[m] - ep[m], np.nan))
                    line += (f" {m} {label} {np.nanmean(eo[m][sel]):.1f}/{np.nanmean(ep[m][sel]):.1f} "
                             f"({md[0]:+.1f} [{md[1]:+.1f}, {md[2]:+.1f}]);")
            print(line)
            rigid = _stage(stages["rigid"], set(ids), t, k)
            s = np.nanmedian(np.linalg.norm(ours[:, j["left_knee"]] - ours[:, j["left_hip"]], axis=-1)
                             / np.linalg.norm(rigid[:, j["left_knee"]] - rigid[:, j["left_hip"]], axis=-1))
            floor = np.array(json.loads((d / f"cam{v + 1}.json").read_text())["metadata"]["feet"]["floor"]["rotation"])
            moves = []
            for side in ("left", "right"):
                h, a = j[f"{side}_hip"], j[f"{side}_ankle"]
                mv = (ours[:, a] - ours[:, h]) - s * (rigid[:, a] - rigid[:, h])  # the feet step's ankle move
                moves.append(f"{side} {np.nanmedian(np.linalg.norm(mv, axis=-1)) * 100:.1f} cm "
                             f"({np.nanmedian(mv @ floor[1]) * 100:+.1f} up)")
            print("  feet step, ankle moved against its hip (median): " + ", ".join(moves))


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "replay":
        replay(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
    elif len(sys.argv) == 8 and sys.argv[1] == "report" and sys.argv[3] == "--peer":
        report(Path(sys.argv[2]), sys.argv[4:8])
    else:
        raise SystemExit(__doc__)
