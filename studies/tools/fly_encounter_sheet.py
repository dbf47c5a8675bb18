"""Contact sheet of the closest encounters of two tracked flies in the unlabelled part of SLEAP's two-fly clip.

    posetracker process ../shared/data/animal/sleap_flies_clip_train/clip.mp4 --skeleton FLY13_TOP_DOWN.yaml \
        --weights CENTRE_MODEL --max-people 2 --refiners --out clip.json
    python studies/tools/fly_encounter_sheet.py clip.json sheet.png

Picks the 8 frames from 1000 on (the labels end at 999) where the two thoraxes are closest, at least 25 frames
apart; draws each fly's points in its track's colour with its id; prints the ids seen over the clip.
``--spread``: instead, 8 frames evenly spread over the eligible ones with both flies read (walking, not touching).
``--cut FIRST``: clip.json is of a cut of the clip starting at its frame FIRST (e.g. frames 1000-1499 cut by
``studies/tools/fly_live_bench.py --cut``): every frame is eligible and the tiles say the clip's frame numbers.
"""
import json, sys, av, cv2, numpy as np
d = json.load(open(sys.argv[1])); out = sys.argv[2]
cut = int(sys.argv[sys.argv.index("--cut") + 1]) if "--cut" in sys.argv else None
fr = {f["index"]: f for f in d["frames"]}
dist = []
for i, f in fr.items():
    if (cut is not None or i >= 1000) and len(f["people"]) == 2:
        a, b = (np.array(p["keypoints"])[:, :2] for p in f["people"])
        dist.append((float(np.linalg.norm(a[1] - b[1])), i))  # thorax to thorax
dist.sort()
pick = []
if "--spread" in sys.argv:
    both = sorted(i for _, i in dist)
    pick = [both[int(round(k * (len(both) - 1) / 7))] for k in range(8)]
for dd, i in dist if not pick else []:
    if all(abs(i - j) > 25 for j in pick):
        pick.append(i)
    if len(pick) == 8: break
pick.sort()
print("closest frames from 1000:", [(i, round(dd)) for dd, i in dist[:3]], "picked", pick)
c = av.open(d["metadata"]["source"]); imgs = {}
for i, f in enumerate(c.decode(video=0)):
    if i in pick: imgs[i] = f.to_ndarray(format="bgr24")
    if i > max(pick): break
cols = {0: (0, 0, 255), 1: (255, 128, 0)}
tiles = []
for i in pick:
    img = imgs[i].copy(); ppl = fr[i]["people"]
    allk = np.concatenate([np.array(p["keypoints"])[:, :2] for p in ppl]); cx, cy = np.nanmean(allk, 0)
    for p in ppl:
        k = np.array(p["keypoints"])[:, :2]; col = cols.get(p["id"] % 2, (0, 255, 0))
        for x, y in k:
            if np.isfinite(x): cv2.circle(img, (int(x), int(y)), 3, col, -1)
        cv2.putText(img, str(p["id"]), (int(k[1, 0]) + 6, int(k[1, 1]) - 6), 0, 0.7, col, 2)
    S = 300; x0 = int(np.clip(cx - S / 2, 0, img.shape[1] - S)); y0 = int(np.clip(cy - S / 2, 0, img.shape[0] - S))
    t = cv2.resize(img[y0:y0 + S, x0:x0 + S], (240, 240)); cv2.putText(t, str(i + (cut or 0)), (5, 18), 0, 0.6, (0, 255, 0), 2)
    tiles.append(t)
while len(tiles) < 8: tiles.append(np.zeros_like(tiles[0]))
cv2.imwrite(out, np.vstack([np.hstack(tiles[:4]), np.hstack(tiles[4:])]))
ids = sorted({p["id"] for f in d["frames"] for p in f["people"]})
print("track ids over the clip:", ids, "frames with two flies:", sum(len(f["people"]) == 2 for f in d["frames"]), "of", len(d["frames"]))
