"""How the people of calibrated views stand on the calibration's floor (studies/metres.md).

    posetracker process $D/cam0N.mp4 --calibration $D/calibration.qca.txt --out viewN.json   # N = 1..4
    python studies/tools/calibration_floor_check.py --calibration $D/calibration.qca.txt view1.json view2.json ...

The views' results (named after their cameras, in the calibration's order of the command line) are aligned,
triangulated and solved (posetracker.multiview.fuse, before the finishing step moves any foot) and each
person's stance ankles are measured against the calibration's z = 0 (analysis.ground with metadata["floor"]),
beside the floor the same stance feet give when fitted without it.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np


def main() -> None:
    from posetracker.analysis.ground import ground_from_sequence
    from posetracker.export import read_sequence
    from posetracker.multiview.calibration import calibration_floor, read_calibrations
    from posetracker.multiview.fuse import fuse_views
    from posetracker.multiview.process import cameras_for_views
    from posetracker.multiview.sync import align, frame_offsets
    from posetracker.tracks import person_tracks

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("views", nargs="+", help="each view's result JSON (its stem names its camera)")
    ap.add_argument("--calibration", required=True)
    args = ap.parse_args()
    cams = cameras_for_views(read_calibrations([args.calibration]), args.views)
    seqs = [read_sequence(v) for v in args.views]
    fused = fuse_views(cams, align(seqs, frame_offsets(cams, seqs)))
    floor = calibration_floor(list(cams), "calibration", people_on_it=True)
    if floor is None:
        raise SystemExit("the calibration has no floor (a camera on z = 0, or cameras on both sides)")
    calibrated = ground_from_sequence(dataclasses.replace(fused, metadata={**fused.metadata, "floor": floor}))
    fitted = ground_from_sequence(fused)
    print("person | stature m | ankle height m | stance ankles above z = 0 m (median, IQR) | own floor m | "
          "fitted floor: person's m")
    spec = fused.skeleton
    tracks = person_tracks(fused)
    for tid, p in calibrated.frame.report["people"].items():
        ankles = tracks[int(tid)].world[:, [spec.index("left_ankle"), spec.index("right_ankle")]]  # (T, 2, 3)
        up = (ankles @ calibrated.frame.rotation.T + calibrated.frame.translation)[..., 1]  # (T, 2) m above z = 0
        phases = calibrated.phases.get(int(tid), [])
        pts = np.concatenate([up[q.start:q.stop, q.foot] for q in phases]) if phases else np.zeros(0)
        iqr = f"{np.percentile(pts, 25):.3f}-{np.percentile(pts, 75):.3f}" if len(pts) else "-"
        print(f"{tid} | {p['stature_m']} | {p['ankle_height_m']:.3f} | {p.get('stance_ankle_height_m')} ({iqr}) | "
              f"{p.get('floor_m')} | {fitted.frame.report['people'][tid].get('floor_m')}")
    r, f = calibrated.frame.report, fitted.frame.report
    angle = np.degrees(np.arccos(np.clip(calibrated.frame.rotation[1] @ fitted.frame.rotation[1], -1, 1)))
    print(f"camera pitch / roll / height: calibration {r['pitch_deg']} / {r['roll_deg']} / {r['camera_height_m']} m; "
          f"fitted to the feet {f.get('pitch_deg')} / {f.get('roll_deg')} / {f.get('camera_height_m')} m; "
          f"normals {angle:.2f} degrees apart")


if __name__ == "__main__":
    main()
