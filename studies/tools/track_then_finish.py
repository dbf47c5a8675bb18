"""Track clips once, then finish them with any version of the code: before / after comparisons of the finishing step
(``motion.finish.finish_sequence``) on the same tracked sequences (studies/floor-and-feet.md).

    python studies/tools/track_then_finish.py track DIR NAME CLIP [NAME CLIP ...]   # DIR/NAME.pkl: session.run, offline
    python studies/tools/track_then_finish.py finish DIR CODE OUT NAME [NAME ...]   # OUT/NAME.json finished by CODE

``track`` runs the session as ``posetracker process CLIP`` does (offline, its defaults, the camera from the file's
tag or, untagged, estimated after tracking) and pickles the tracked sequence with the camera; ``finish`` puts CODE
(a tree of the repository, e.g. ``git archive REV | tar -x -C CODE``) first on the path, finishes each sequence with
rigid bones as ``process`` does and writes the result JSON every export reads. One thread (OMP_NUM_THREADS=1).
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")


def track(out: Path, pairs: list[str]) -> None:
    from posetracker.capture import open_source
    from posetracker.motion.finish import camera_before, fov_to_track, source_metadata
    from posetracker.session import DepthSettings, SessionConfig, TrackingSession

    out.mkdir(parents=True, exist_ok=True)
    for name, path in zip(pairs[::2], pairs[1::2]):
        camera = camera_before(path, "auto")
        config = SessionConfig(mode="offline", depth=DepthSettings(fov_deg=fov_to_track(camera)))
        session = TrackingSession.open(config=config)
        with open_source(path) as src:
            seq = session.run(src, fps=src.fps, metadata=source_metadata(path, src.size, session))
        (out / f"{name}.pkl").write_bytes(pickle.dumps((seq, camera)))
        print(f"tracked {name}: {len(seq)} frames -> {out / name}.pkl", flush=True)


def finish(tracked: Path, code: Path, out: Path, names: list[str]) -> None:
    sys.path.insert(0, str(code.resolve()))
    import posetracker

    if not Path(posetracker.__file__).resolve().is_relative_to(code.resolve()):
        raise SystemExit(f"posetracker imported from {posetracker.__file__}, not {code}")
    from posetracker.export import get_exporter
    from posetracker.motion.finish import finish_sequence

    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        seq, camera = pickle.loads((tracked / f"{name}.pkl").read_bytes())
        seq, _ = finish_sequence(seq, camera, rigid_bones=True)
        get_exporter("json").write(seq, out / f"{name}.json", force=True)
        print(f"finished {name} -> {out / name}.json", flush=True)


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "track" and len(sys.argv) % 2 == 1:
        track(Path(sys.argv[2]), sys.argv[3:])
    elif len(sys.argv) >= 6 and sys.argv[1] == "finish":
        finish(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5:])
    else:
        raise SystemExit(__doc__)
