"""What a fly13 held-out error is made of: each joint's bias in the fly's body frame, and each side's frame-to-frame
noise (studies/fly13.md).

    python studies/tools/fly_error_parts.py EVAL.json [--run none] [--sheet OUT.jpg --joint midlegL4 --video VIDEO]

EVAL.json: ``posetracker train held-out-eval ... --out EVAL.json`` (its per_instance offsets and labelled points).
Per joint: the median offset (reading - reference) along the fly (abdomen -> thorax of the reference) and across
it, the error with and without it; then the median |second difference| of each joint over consecutive labelled
frames, the reference's against ours (each fly followed by its nearest reference thorax). ``--sheet``: 8 of the
readings of ``--joint`` more than 15 px off, evenly over the run, each a 120 px crop around the reference's thorax
(4x): the reference's points green, ours red, the joint ringed (``--video``: the held-out frames' video; default the
centred pair's).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np

NAMES = ["head", "thorax", "abdomen", "wingL", "wingR", "forelegL4", "forelegR4", "midlegL4", "midlegR4", "hindlegL4",
         "hindlegR4"]
K = len(NAMES)


def _points(row: dict, key: str) -> np.ndarray:
    """(K, 2) px of one instance's ``key`` list, nan where None."""
    return np.array([x if x is not None else [np.nan, np.nan] for x in row[key][:K]], float)


def bias(rows: list[dict]) -> None:
    lab = np.stack([_points(r, "labelled") for r in rows])  # (N, K, 2)
    off = np.stack([_points(r, "offsets") for r in rows])
    fwd = lab[:, 1] - lab[:, 2]
    length = np.linalg.norm(fwd, axis=-1)
    fwd = fwd / length[:, None]
    side = np.stack([-fwd[:, 1], fwd[:, 0]], -1)
    body = np.stack([(off * fwd[:, None]).sum(-1), (off * side[:, None]).sum(-1)], -1)  # (N, K, 2) px
    print(f"thorax-abdomen length median {np.nanmedian(length):.1f} px; instances {len(rows)}")
    before, after = [], []
    for j in range(K):
        b = body[:, j]
        b = b[np.isfinite(b).all(-1)]
        med = np.median(b, 0)
        e, e2 = np.linalg.norm(b, axis=-1), np.linalg.norm(b - med, axis=-1)
        before += list(e)
        after += list(e2)
        print(f"{NAMES[j]:10s} median offset along {med[0]:+5.2f} across {med[1]:+5.2f} px | error median "
              f"{np.median(e):5.2f} mean {e.mean():5.2f} -> without the offset: median {np.median(e2):5.2f} "
              f"mean {e2.mean():5.2f} | > 15 px {np.mean(e > 15) * 100:4.1f} %")
    print(f"all: mean {np.mean(before):.2f} median {np.median(before):.2f} -> without each joint's offset: mean "
          f"{np.mean(after):.2f} median {np.median(after):.2f}")


def noise(rows: list[dict]) -> None:
    by_frame = defaultdict(list)
    for r in rows:
        by_frame[r["frame"]].append(r)
    acc = {False: defaultdict(list), True: defaultdict(list)}
    for f in sorted(by_frame):
        if f - 1 not in by_frame or f + 1 not in by_frame:
            continue
        for r in by_frame[f]:
            c = _points(r, "labelled")[1]
            near = [min(by_frame[g], key=lambda q: np.nan_to_num(np.linalg.norm(_points(q, "labelled")[1] - c), nan=1e9))
                    for g in (f - 1, f + 1)]
            for ours in (False, True):
                pts = [_points(q, "labelled") + (_points(q, "offsets") if ours else 0) for q in (near[0], r, near[1])]
                second = np.linalg.norm(pts[0] - 2 * pts[1] + pts[2], axis=-1)
                for j in range(K):
                    acc[ours][j].append(second[j])
    print("median |second difference| px, reference / ours:")
    for j in range(K):
        print(f"{NAMES[j]:10s} {np.nanmedian(acc[False][j]):5.2f} / {np.nanmedian(acc[True][j]):5.2f}")


def sheet(rows: list[dict], joint: str, video: str, out: str) -> None:
    import av
    import cv2

    j = NAMES.index(joint)
    bad = [r for r in rows if r["offsets"][j] is not None and np.linalg.norm(r["offsets"][j]) > 15]
    pick = bad[::max(1, len(bad) // 8)][:8]
    wanted, images = {r["frame"] for r in pick}, {}
    with av.open(video) as container:
        for i, frame in enumerate(container.decode(video=0)):
            if i in wanted:
                images[i] = frame.to_ndarray(format="bgr24")
            if i >= max(wanted, default=-1):
                break
    tiles, scale, half = [], 4, 60
    for r in pick:
        lab, off = _points(r, "labelled"), _points(r, "offsets")
        x0, y0 = int(lab[1, 0]) - half, int(lab[1, 1]) - half
        padded = cv2.copyMakeBorder(images[r["frame"]], 2 * half, 2 * half, 2 * half, 2 * half, cv2.BORDER_CONSTANT)
        crop = cv2.resize(padded[y0 + 2 * half:y0 + 4 * half, x0 + 2 * half:x0 + 4 * half], None, fx=scale, fy=scale,
                          interpolation=cv2.INTER_CUBIC)
        for pts, colour in ((lab, (0, 255, 0)), (lab + off, (0, 0, 255))):
            for k, p in enumerate(pts):
                if np.isfinite(p).all():
                    at = (int((p[0] - x0) * scale), int((p[1] - y0) * scale))
                    cv2.circle(crop, at, 9 if k == j else 4, colour, 2 if k == j else -1)
        cv2.putText(crop, f"frame {r['frame']}: {np.linalg.norm(off[j]):.0f} px", (5, 25), cv2.FONT_HERSHEY_SIMPLEX, 0.8,
                    (255, 255, 255), 2)
        tiles.append(crop)
    tiles += [np.zeros_like(tiles[0])] * (-len(tiles) % 4)
    grid = np.vstack([np.hstack(tiles[i:i + 4]) for i in range(0, len(tiles), 4)])
    cv2.imwrite(out, cv2.resize(grid, None, fx=0.75, fy=0.75, interpolation=cv2.INTER_AREA), [cv2.IMWRITE_JPEG_QUALITY, 85])
    print(f"{len(bad)} readings of {joint} > 15 px off; sheet of {len(pick)} -> {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("eval_json")
    ap.add_argument("--run", default="none", help="the refiners' key in EVAL.json")
    ap.add_argument("--sheet", help="a sheet of the joint's readings > 15 px off (JPEG)")
    ap.add_argument("--joint", default="midlegL4", choices=NAMES)
    ap.add_argument("--video", default="../shared/data/animal/video_sleap_flies_centered_pair/centered_pair_low_quality.mp4")
    args = ap.parse_args()
    rows = [r for r in json.load(open(args.eval_json))[args.run]["per_instance"] if "offsets" in r]
    bias(rows)
    noise(rows)
    if args.sheet:
        sheet(rows, args.joint, args.video, args.sheet)


if __name__ == "__main__":
    main()
