"""The floor's pitch and people's height above it over the frames before the first stance feet (issue #46, the
crowd clip's start).

    python studies/tools/tilt_start_check.py VIDEO RESULT.json [RESULT.json ...] [--last 15] [--anchor 12]

For each result and each frame 0..``--last``: the floor's pitch (``camera_angles`` of the floor's normal in that
frame's camera, as ``camera_turn_check.py``) less its pitch at frame ``--anchor`` (the first frame with stance
feet), the background's tilt (its summed vertical shift, ``camera_turn_check.background_motion``, as an angle at
the result's focal length) less its tilt there, negated (looking further down moves the background up), and each
person's lowest ankle above the floor drawn (cm, as ``crowd_floor.py``). Then, over frames 0..anchor: the largest
gap between the floor's pitch change and the background's (degrees) and the RMS gap; and the same over the whole
clip after removing each one's mean (correlation as ``camera_turn_check.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "studies" / "tools"))


def pitch_and_heights(path: Path) -> tuple[np.ndarray, dict[int, np.ndarray], object]:
    """(pitch (T,) degrees, {track: (T,) lowest ankle above the floor, m, NaN where unseen}, sequence)."""
    from crowd_floor import _floor_points

    from posetracker.analysis.floor_plane import camera_angles
    from posetracker.analysis.foot_contact import FEET
    from posetracker.analysis.held_ground import held_ground
    from posetracker.export import read_sequence
    from posetracker.tracks import person_tracks

    seq = read_sequence(path)
    frame = held_ground(seq).frame
    turn = getattr(frame, "turn", None)
    normals = np.tile(frame.rotation[1], (len(seq.frames), 1)) if turn is None \
        else np.einsum("tji,j->ti", turn, frame.rotation[1])
    pitch = np.array([camera_angles(n)[0] for n in normals])
    idx = [seq.skeleton.index(f"{s}_ankle") for s in FEET]
    heights = {}
    for tid, tr in person_tracks(seq).items():
        ok = tr.valid_world(0.2)[:, idx]
        h = _floor_points(frame, tr.world[:, idx], None)[..., 1] - frame.ankle_height.get(tid, 0.0)
        h[~ok] = np.nan
        heights[tid] = np.where(ok.any(1), np.nanmin(np.where(ok, h, np.inf), axis=1), np.nan)
    return pitch, heights, seq


def main(argv: list[str] | None = None) -> int:
    from camera_turn_check import background_motion

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("video")
    p.add_argument("results", type=Path, nargs="+")
    p.add_argument("--last", type=int, default=15)
    p.add_argument("--anchor", type=int, default=12)
    p.add_argument("--rows", type=int, default=240)
    args = p.parse_args(argv)
    bg = None
    for path in args.results:
        pitch, heights, seq = pitch_and_heights(path)
        if bg is None:
            bg = background_motion(args.video, args.rows)[[f.index for f in seq.frames]]
        size = seq.frames[0].image_size
        focal = max(size) / 2 / np.tan(np.radians(seq.metadata["camera"]["fov_deg"]) / 2)
        tilt = -np.degrees(np.arctan(bg[:, 0] / focal))
        a = args.anchor
        dp, dt = pitch - pitch[a], tilt - tilt[a]
        print(f"== {path}")
        people = [k for k, h in heights.items() if np.isfinite(h[:args.last + 1]).any()]
        print("frame | pitch - pitch[anchor] | background tilt - tilt[anchor] | "
              + " | ".join(f"p{k} cm" for k in people))
        for t in range(args.last + 1):
            hs = " | ".join("-" if not np.isfinite(heights[k][t]) else f"{100 * heights[k][t]:.1f}" for k in people)
            print(f"{t} | {dp[t]:+.2f} | {dt[t]:+.2f} | {hs}")
        gap = dp[:a + 1] - dt[:a + 1]
        print(f"frames 0-{a}: pitch change {dp[0]:+.2f} deg against the background's {dt[0]:+.2f}; gap max "
              f"{np.abs(gap).max():.2f}, rms {np.sqrt(np.mean(gap ** 2)):.2f} deg")
        r = float(np.corrcoef(pitch, tilt)[0, 1])
        slope = float(np.polyfit(tilt, pitch, 1)[0])
        rest = slice(a, None)
        r2 = float(np.corrcoef(pitch[rest], tilt[rest])[0, 1])
        print(f"whole clip: correlation {r:+.3f} (slope {slope:+.2f}); frames {a}-: correlation {r2:+.3f}")
        for k in people:
            h = heights[k][:args.last + 1]
            print(f"person {k}: lowest ankle above the floor frames 0-{args.last}: median {100 * np.nanmedian(h):.1f}, "
                  f"max {100 * np.nanmax(h):.1f} cm")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
