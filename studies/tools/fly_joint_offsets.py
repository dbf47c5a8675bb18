"""Where each fly13 joint sits on the body in each labelled fly set: the mean offset of every joint from the
thorax in body-aligned coordinates (x forward along abdomen -> thorax, y to the fly's side as the image shows it,
in units of the thorax-abdomen length), per set, so that joints labelled at different points of the body (a
head's tip against its middle) show up as a shift.

    python studies/tools/fly_joint_offsets.py [--data-root ../shared/data]

Prints, per joint: mean x, y (sd) for SLEAP's two-fly clip (hand-labelled), SLEAP's centred-pair clip (its
model's readings; its leg tips are ``*3``) and DeepPoseKit's two flies (``mmpose_fly``), and the DeepPoseKit
offset's distance from the two-fly mean in units of the two-fly spread.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

JOINTS = ["head", "thorax", "abdomen", "wingL", "wingR", "forelegL4", "forelegR4", "midlegL4", "midlegR4",
          "hindlegL4", "hindlegR4", "eyeL", "eyeR", "neck"]
CENTRED_NAMES = {f"{leg}{s}4": f"{leg}{s}3" for leg in ("foreleg", "midleg", "hindleg") for s in "LR"}
SETS = [("two-fly (SLEAP, hand)", "animal/sleap_flies_clip_train/normalized.json", {}),
        ("centred pair (SLEAP model)", "animal/video_sleap_flies_centered_pair/normalized_predicted_NOT_GT.json",
         CENTRED_NAMES),
        ("DeepPoseKit (mmpose_fly)", "animal/mmpose_fly/normalized.json", {})]


def body_offsets(path: str, names: dict[str, str]) -> tuple[np.ndarray, float]:
    """((N, len(JOINTS), 2) body-aligned offsets, nan where unlabelled; median thorax-abdomen length in px)."""
    d = json.load(open(path))
    kn = d["keypoint_names"]
    cols = [kn.index(names.get(j, j)) if names.get(j, j) in kn else -1 for j in JOINTS]
    out, lengths = [], []
    for im in d["images"]:
        for inst in im["instances"]:
            kp = np.array(inst["keypoints"], float).reshape(-1, 3)
            xy = np.where(kp[:, 2:3] > 0, kp[:, :2], np.nan)
            pts = np.array([xy[c] if c >= 0 else (np.nan, np.nan) for c in cols])
            th, ab = pts[1], pts[2]
            fwd = th - ab
            n = np.hypot(*fwd)
            if not np.isfinite(n) or n < 1e-6:
                continue
            ex = fwd / n
            ey = np.array([-ex[1], ex[0]])  # image y is down: +y is the fly's right when seen from above
            rel = pts - th
            out.append(np.stack([rel @ ex, rel @ ey], -1) / n)
            lengths.append(n)
    return np.array(out), float(np.median(lengths))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-root", default="../shared/data")
    a = ap.parse_args()
    res = [(name, *body_offsets(f"{a.data_root}/{p}", names)) for name, p, names in SETS]
    for name, o, L in res:
        print(f"{name}: {len(o)} flies, thorax-abdomen {L:.1f} px")
    print(f"{'joint':10s} " + " ".join(f"{n[:26]:>28s}" for n, _, _ in res) + "   DPK-two-fly (sd units)")
    ref = res[0][1]
    for j, joint in enumerate(JOINTS):
        cells = []
        for _, o, _ in res:
            v = o[:, j]
            v = v[np.isfinite(v).all(1)]
            cells.append("—" if len(v) == 0 else f"{v[:, 0].mean():+.2f},{v[:, 1].mean():+.2f} ({v.std(0).max():.2f})")
        r = ref[:, j][np.isfinite(ref[:, j]).all(1)]
        dpk = res[2][1][:, j]
        z = "—"
        if len(r) and np.isfinite(dpk).all():
            sd = r.std(0) + 1e-6
            z = " ".join(f"{np.abs((x - r.mean(0)) / sd).max():.1f}" for x in dpk) + \
                f"  ({np.hypot(*(dpk.mean(0) - r.mean(0))):.2f} body units)"
        print(f"{joint:10s} " + " ".join(f"{c:>28s}" for c in cells) + "   " + z)


if __name__ == "__main__":
    main()
