"""Knees and elbows in the live 3-D: frames bent backwards and bend-direction flips, before / after (issue #46).

    python studies/tools/live_hinges.py record CLIP --frames N --out rec.pkl   # the live session, its solve's input kept
    python studies/tools/live_hinges.py measure rec.pkl [--json out.json]      # replayed through the live solve
    python studies/tools/live_hinges.py cost rec.pkl [--baseline OLD.py]       # the stage's ms a frame, its outputs

``record`` runs ``TrackingSession`` live (the app's defaults, look-ahead 1, one thread) over the first N frames of
CLIP and keeps every frame that enters its live solve (``session.smoother``: ``motion.live_solve.LiveSolve``).
``measure`` replays them through the live solve and ``BoneLengthSolver`` as the session builds them, with whichever
``posetracker`` is imported (run it from a ``git worktree`` of the commit before to get the numbers before), and
counts in the output's world coordinates (camera space, metres), per limb (hip-knee-ankle, shoulder-elbow-wrist)
of every tracked person:

- backward: frames whose bend about the body's hinge axis is more than 10 degrees the wrong way (``flexion`` below:
  the axis as the offline solve reads it, the hip line swung onto the thigh, the chest's rest elbow axis swung onto
  the upper arm, ``export.bvh_solve.humanoid_rotations``; elbows only while the upper arm is below the shoulder,
  above it the humerus' own turn decides the axis), in all frames and in those whose hip (shoulder) line is at
  least half its median length over the track (where the body's axis is read at all);
- flips: frames where the limb is bent more than 20 degrees in this frame and the one before and its hinge axis
  (thigh x shin) turned by more than 90 degrees between them; per 1,000 frames of limb seen.

It also prints the SHA-1 of the output's 2-D keypoints (x, y of every person of every frame) so that two replays can
be checked byte for byte.

``cost`` times ``LiveHinges`` alone on the recording's smoothed frames (the live solve's own, its hinges left
out) against the One Euro smoother (``PoseSmoother``) alone on the recorded frames, interleaved in one process,
``--runs`` times (medians; the ratio to the smoother is what stays put on a loaded machine). ``--baseline`` names
another ``live_hinges.py`` (e.g. ``git show COMMIT:posetracker/motion/live_hinges.py > old.py``): it is timed in
the same runs, and its outputs (``world``, keypoints) are compared with the imported module's, frame by frame
(nan against nan counts as equal). Shapes: T frames, P people, K joints; world (P, K, 3).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import pickle
import sys
import time

import numpy as np

LIMBS = {"left_knee": ("left_hip", "left_knee", "left_ankle"), "right_knee": ("right_hip", "right_knee", "right_ankle"),
         "left_elbow": ("left_shoulder", "left_elbow", "left_wrist"),
         "right_elbow": ("right_shoulder", "right_elbow", "right_wrist")}


def record(clip: str, frames: int, out: str) -> None:
    import torch

    from posetracker.capture import open_source
    from posetracker.session import SessionConfig, TrackingSession

    torch.set_num_threads(1)
    from posetracker.motion.live_solve import LiveSolve

    session = TrackingSession.open("human18", None, SessionConfig(mode="live"))
    kept = []
    inner = LiveSolve.update

    def keep(self, frame):
        kept.append(copy.deepcopy(frame))
        return inner(self, frame)

    LiveSolve.update = keep  # the session makes its LiveSolve again at each run (reset)
    source = open_source(clip)

    def first():
        for i, f in enumerate(source):
            if i >= frames:
                break
            yield f

    t0 = time.time()
    with source:
        seq = session.run(first(), fps=source.fps)
    with open(out, "wb") as fh:
        pickle.dump({"clip": clip, "fps": seq.fps, "frames": kept}, fh)
    print(f"{clip}: {len(kept)} frames into the live solve in {time.time() - t0:.0f} s -> {out}")


def _unit(v):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 1e-12, n, np.nan)


def _swing(a, b, x):
    """x turned by the least rotation taking unit a onto unit b (each (..., 3))."""
    v = np.cross(a, b)
    c = np.sum(a * b, -1, keepdims=True)
    k = 1.0 / np.maximum(1.0 + c, 1e-9)
    return x + np.cross(v, x) + k * np.cross(v, np.cross(v, x))


def flexion(world: np.ndarray, names: list[str], limb: str) -> tuple[np.ndarray, np.ndarray]:
    """world (N, K, 3) -> (signed bend about the body's hinge axis (N,) degrees, positive the allowed way, nan where
    the reference is undefined; hinge axis (N, 3) unit, thigh x shin / upper arm x forearm)."""
    j = names.index
    p, m, c = (world[:, j(n)] for n in LIMBS[limb])
    d1, d2 = _unit(m - p), _unit(c - m)
    hinge = _unit(np.cross(d1, d2))
    up = _unit(0.5 * (world[:, j("left_shoulder")] + world[:, j("right_shoulder")])
               - 0.5 * (world[:, j("left_hip")] + world[:, j("right_hip")]))
    if limb.endswith("knee"):
        side = world[:, j("left_hip")] - world[:, j("right_hip")]
        side = _unit(side - np.sum(side * up, -1, keepdims=True) * up)
        ref = _unit(_swing(-up, d1, side))
    else:
        side = world[:, j("left_shoulder")] - world[:, j("right_shoulder")]
        side = _unit(side - np.sum(side * up, -1, keepdims=True) * up)
        sgn = 1.0 if limb.startswith("left") else -1.0
        ref = _unit(_swing(sgn * side, d1, -sgn * up))
        ref[np.sum(d1 * up, -1) > 0.0] = np.nan  # upper arm above the shoulder: the humerus' turn decides
    bend = np.arctan2(np.sum(np.cross(d1, d2) * ref, -1), np.sum(d1 * d2, -1))
    return np.degrees(bend), hinge


def replay(frames: list):
    from posetracker.motion.live_solve import LiveSolve
    from posetracker.session import LIVE_BONE_WINDOW
    from posetracker.skeletons import load_skeleton
    from posetracker.tracking import BoneLengthSolver, PoseSmoother

    spec = load_skeleton("human18")  # what record tracks with
    solve = LiveSolve(PoseSmoother(spec, "live"))
    bones = BoneLengthSolver(spec, rigidify=True, window=LIVE_BONE_WINDOW)
    out, spent = [], 0.0
    for f in frames:
        t0 = time.perf_counter()
        g = bones.update(solve.update(copy.deepcopy(f)))
        spent += time.perf_counter() - t0
        out.append(g)
    return spec, out, spent / max(len(frames), 1) * 1000


def measure(path: str) -> dict:
    with open(path, "rb") as fh:
        rec = pickle.load(fh)
    spec, out, ms = replay(rec["frames"])
    names = list(spec.joint_names)
    tracks: dict[int, list[np.ndarray]] = {}
    h2 = hashlib.sha1()
    for f in out:
        h2.update(np.ascontiguousarray(f.keypoints[..., :2]).tobytes())
        if f.world is None:
            continue
        for p, tid in enumerate(f.track_ids.tolist()):
            if tid >= 0:
                tracks.setdefault(tid, []).append((f.index, f.world[p].astype(np.float64)))
    res = {"clip": rec["clip"], "frames": len(out), "ms_per_frame": round(ms, 3), "sha1_2d": h2.hexdigest()}
    for limb, joints in LIMBS.items():
        seen = backward = flips = readable = backward_readable = 0
        worst: list[int] = []
        flipped: list[int] = []
        line = ("left_hip", "right_hip") if limb.endswith("knee") else ("left_shoulder", "right_shoulder")
        a, b, c = (names.index(n) for n in joints)
        for tid, rows in tracks.items():
            idx = np.array([i for i, _ in rows])
            w = np.stack([x for _, x in rows])
            bend, hinge = flexion(w, names, limb)
            ok = np.isfinite(hinge).all(-1)
            seen += int(ok.sum())
            bad = bend < -10.0
            backward += int(bad.sum())
            # the body's axis read: its line at least half the track's median length (else seen end-on)
            length = np.linalg.norm(w[:, names.index(line[0])] - w[:, names.index(line[1])], axis=-1)
            sure = length >= 0.5 * np.nanmedian(length)
            readable += int((ok & sure).sum())
            backward_readable += int((bad & sure).sum())
            worst += idx[bad & sure].tolist()
            raw = np.degrees(np.arccos(np.clip(np.sum(_unit(w[:, b] - w[:, a]) * _unit(w[:, c] - w[:, b]), -1), -1, 1)))
            consecutive = np.diff(idx) == 1
            turned = np.sum(hinge[1:] * hinge[:-1], -1) < 0
            flip = consecutive & turned & (raw[1:] > 20) & (raw[:-1] > 20)
            flips += int(flip.sum())
            flipped += idx[1:][flip].tolist()
        res[limb] = {"frames": seen, "backward_gt10": backward, "readable": readable,
                     "backward_gt10_readable": backward_readable, "flips": flips,
                     "flips_per_1000": round(1000 * flips / max(seen, 1), 1), "backward_frames": worst[:40],
                     "flip_frames": flipped[:40]}
    return res


def _smoothed(frames: list) -> tuple:
    """The recording's frames as the live solve hands them to its hinges: (spec, that input of each frame)."""
    from posetracker.motion.live_solve import LiveSolve
    from posetracker.skeletons import load_skeleton
    from posetracker.tracking import PoseSmoother

    spec = load_skeleton("human18")
    solve = LiveSolve(PoseSmoother(spec, "live"))
    solve.hinges.applies = False  # passes every frame through: what the live solve's smoother made
    return spec, [solve.update(copy.deepcopy(f)) for f in frames]


def cost(path: str, baseline: str | None, runs: int) -> dict:
    import importlib.util

    from posetracker.motion.live_hinges import LiveHinges
    from posetracker.tracking import PoseSmoother

    with open(path, "rb") as fh:
        frames = pickle.load(fh)["frames"]
    spec, inputs = _smoothed(frames)
    stages = {"hinges": LiveHinges}
    if baseline:
        mod_spec = importlib.util.spec_from_file_location("baseline_live_hinges", baseline)
        mod = sys.modules["baseline_live_hinges"] = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(mod)
        stages["baseline"] = mod.LiveHinges
    ms: dict[str, list[float]] = {k: [] for k in [*stages, "smoother"]}
    outs: dict[str, list] = {}
    for _ in range(runs):
        for name, cls in stages.items():
            stage = cls(spec)
            t0 = time.perf_counter()
            outs[name] = [stage.update(f) for f in inputs]
            ms[name].append((time.perf_counter() - t0) / len(inputs) * 1000)
        smoother = PoseSmoother(spec, "live")
        t0 = time.perf_counter()
        for f in frames:
            smoother.update(f)
        ms["smoother"].append((time.perf_counter() - t0) / len(frames) * 1000)
    med = {k: float(np.median(v)) for k, v in ms.items()}
    res = {"recording": path, "frames": len(inputs), "runs": runs,
           "ms_per_frame": {k: round(v, 4) for k, v in med.items()},
           "ratio_to_smoother": {k: round(med[k] / med["smoother"], 3) for k in stages},
           "moved_frames": sum(not np.array_equal(a.world, b.world, equal_nan=True) for a, b in zip(outs["hinges"], inputs))}
    if baseline:
        def gap(x: np.ndarray, y: np.ndarray) -> float:
            d = np.abs(x.astype(np.float64) - y)
            return float(np.where(np.isnan(x) & np.isnan(y), 0.0, np.nan_to_num(d, nan=np.inf)).max(initial=0.0))

        diff = [max(gap(a.world, b.world), gap(a.keypoints, b.keypoints))
                for a, b in zip(outs["hinges"], outs["baseline"])]
        res["max_abs_diff_to_baseline"] = max(diff)
        res["identical_frames"] = sum(d == 0.0 for d in diff)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("clip")
    r.add_argument("--frames", type=int, default=300)
    r.add_argument("--out", required=True)
    m = sub.add_parser("measure")
    m.add_argument("recording")
    m.add_argument("--json")
    c = sub.add_parser("cost")
    c.add_argument("recording")
    c.add_argument("--baseline", help="another live_hinges.py, timed and compared in the same runs")
    c.add_argument("--runs", type=int, default=5)
    c.add_argument("--json")
    a = ap.parse_args(argv)
    if a.cmd == "record":
        record(a.clip, a.frames, a.out)
        return 0
    res = measure(a.recording) if a.cmd == "measure" else cost(a.recording, a.baseline, a.runs)
    text = json.dumps(res, indent=1)
    print(text)
    if a.json:
        with open(a.json, "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
