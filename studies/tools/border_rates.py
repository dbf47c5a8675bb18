"""How fast each track's distance changes where its body is at the image border (studies/floor-and-feet.md, people
leaving the image; the thresholds of posetracker/motion/border_exits.py).

    python studies/tools/border_rates.py RESULT.json [RESULT.json ...]

Per track of a result file: its frames, the fastest change of its distance (``border_exits.track_distance``: the
median depth of its joints at least 0.3 sure) between two consecutive frames where either frame is at the border
(a sure joint within 1 % of the image's long side from an edge), and the same away from the border, in m/s; then
the frames at the border where it is faster than ``border_exits.WALK_MS``, and the file's ``border_exits`` report.
Uses the installed (or PYTHONPATH) posetracker.
"""

from __future__ import annotations

import sys

import numpy as np

from posetracker.export.json_io import read_sequence
from posetracker.motion.border_exits import WALK_MS, track_distance


def main(paths: list[str]) -> None:
    for path in paths:
        seq = read_sequence(path)
        rows: dict[int, list[tuple[float, float, bool, int]]] = {}
        for f in seq.frames:
            for p, tid in enumerate(f.track_ids.tolist()):
                if tid >= 0:
                    rows.setdefault(tid, []).append((f.timestamp, *track_distance(f, p), f.index))
        for tid, r in sorted(rows.items()):
            t, d, border, index = (np.array(c) for c in zip(*r))
            if len(t) < 2:
                continue
            with np.errstate(invalid="ignore"):
                rate = np.abs(np.diff(d)) / np.diff(t)  # (n-1,) m/s
            at = border[1:] | border[:-1]
            near = np.nanmax(np.where(at, rate, 0.0))
            away = np.nanmax(np.where(~at, rate, 0.0))
            fast = index[1:][at & (rate > WALK_MS)].tolist()
            print(f"{path} track {tid}: frames {index[0]}-{index[-1]} ({len(t)}), at the border {near:.2f} m/s, "
                  f"away {away:.2f} m/s; at the border faster than {WALK_MS:g} m/s at {fast}")
        print(f"{path} border_exits: {seq.metadata.get('border_exits', {})}")


if __name__ == "__main__":
    main(sys.argv[1:])
