#!/usr/bin/env python3
"""Probe (not part of the product yet): a per-person crop stage for left/right depth order.

    python3 tools/crop_depth_probe.py --clips all --steps 4000 --name all     # ~25 min training, 2 threads

Each teacher person (BlazePose heavy labels, cached as by ``posetracker train distill``) is cropped
square around its visible joints (192 px, flipped copies with left/right swapped), the frozen
shipped backbone runs on the crop, and a small head (convs -> features sampled at the joints ->
2-layer transformer over the 18 joints) predicts each joint's depth relative to the body mean.
Every ``--every`` steps it prints depth order vs heavy (and on the pairs BlazePose full agrees with)
on the config's held-out clips, cropping at heavy's own 2-D; at the end it runs the shipped model
offline on those clips and crops at the model's own 2-D (the realistic case); with
``--clips quick --eval-clips held-out`` that last step runs on every clip the config does not train
on and prints the pooled agreement (shipped model vs crop stage).
"""
import argparse, json, time, os
from pathlib import Path
from dataclasses import replace
import numpy as np, torch, cv2
from torch import nn
import torch.nn.functional as F
from posetracker.model.weights import load_posenet
from posetracker.train.config import load_config
from posetracker.train.features import iter_frames
from posetracker.train.clip_labels import cached_clip_labels
from posetracker.train.metrics import depth_order_agreement, depth_order_counts, mirror_pairs
from posetracker.train.prepare import make_teacher, selection_for

ap = argparse.ArgumentParser()
ap.add_argument("--config", default="configs/distill_quick.yaml")
ap.add_argument("--teacher", default="heavy")
ap.add_argument("--size", type=int, default=192)
ap.add_argument("--steps", type=int, default=3000)
ap.add_argument("--name", default="a")
ap.add_argument("--every", type=int, default=500)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--from-input", action="store_true", help="crop from the 256 px network input (the source "
                "scaled down and up again) instead of the source frame")
ap.add_argument("--clips", default="quick")
ap.add_argument("--eval-clips", choices=("val", "held-out"), default="val",
                help="held-out: the final evaluation runs on every clip the config does not train on, pooled")
a = ap.parse_args()
torch.set_num_threads(2); torch.manual_seed(a.seed)
cfg = load_config(a.config)
net = load_posenet("models/posenet-human18.safetensors").eval()
spec = net.spec
K = spec.num_joints
mirror = np.array(spec.mirror_index)
pairs = mirror_pairs(spec)
teacher = make_teacher(replace(cfg, blazepose=a.teacher))
S = a.size


def crop_box(xy):
    ok = np.isfinite(xy).all(-1)
    p = xy[ok]
    lo, hi = p.min(0), p.max(0)
    c = (lo + hi) / 2
    side = max(hi - lo) * 1.25 + 10
    return c, side


def crop(img, c, side, flip):
    if a.from_input:  # only what the letterboxed network input holds
        from posetracker.model.preprocess import INPUT_SIZE
        h, w = img.shape[:2]
        k = INPUT_SIZE / max(h, w)
        if k < 1:
            small = cv2.resize(img, (max(1, round(w * k)), max(1, round(h * k))), interpolation=cv2.INTER_AREA)
            img = cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
    s = S / side
    M = np.array([[s, 0, S / 2 - s * c[0]], [0, s, S / 2 - s * c[1]]], np.float64)
    if flip:
        M = np.array([[-1, 0, S], [0, 1, 0]]) @ np.vstack([M, [0, 0, 1]])
    out = cv2.warpAffine(img, M, (S, S), flags=cv2.INTER_LINEAR, borderValue=(0, 0, 0))
    return out, M


@torch.no_grad()
def feats_of(imgs):
    x = torch.from_numpy(np.stack(imgs)).permute(0, 3, 1, 2).float()
    return net.backbone(x).half().numpy()


def build(rels, flips):
    import zlib
    h = zlib.crc32(str(rels).encode()) & 0xffff
    cache = str(Path.home() / ".cache" / "posetracker" / f"crop_probe_{a.teacher}_{S}_{h}_{len(flips)}{'_input' if a.from_input else ''}.npz")
    if os.path.exists(cache):
        d = np.load(cache)
        return {k: d[k] for k in d}
    F_, XY, Z, OK, CL, TN = [], [], [], [], [], []
    for ci, rel in enumerate(rels):
        path = cfg.data_path / rel
        sel = selection_for(path, cfg)
        lab = cached_clip_labels(teacher, path, spec, sel.key(), lambda: iter_frames(path, sel))
        t0 = time.time()
        for t, fr in enumerate(iter_frames(path, sel)):
            if t >= lab.num_frames:
                break
            for n in range(lab.num_tracks):
                xy, z = lab.xy[t, n], lab.depth[t, n]
                ok = np.isfinite(xy).all(-1) & np.isfinite(z) & lab.visible[t, n]
                if ok.sum() < 8:
                    continue
                c, side = crop_box(np.where(ok[:, None], xy, np.nan))
                if side < 120:
                    continue
                for flip in flips:
                    im, M = crop(fr.image, c, side, flip)
                    cxy = xy @ M[:2, :2].T + M[:2, 2]
                    zz = z.copy()
                    okk = ok.copy()
                    if flip:
                        cxy, zz, okk = cxy[mirror], zz[mirror], okk[mirror]
                    F_.append(im); XY.append(cxy); Z.append(zz); OK.append(okk); CL.append(ci); TN.append((t, n))
        print(rel, len(F_), f"{time.time()-t0:.0f}s", flush=True)
        if len(F_) > 40000: break
    feats = []
    for i in range(0, len(F_), 32):
        feats.append(feats_of(F_[i:i + 32]))
    d = dict(feats=np.concatenate(feats), xy=np.array(XY, np.float32), z=np.array(Z, np.float32),
             ok=np.array(OK), clip=np.array(CL), tn=np.array(TN))
    np.savez(cache, **d)
    return d


class CropDepth(nn.Module):
    def __init__(self, c=24, h=64):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(c, h, 3, padding=1), nn.ReLU(),
            nn.Conv2d(h, h, 3, padding=2, dilation=2), nn.ReLU(),
            nn.Conv2d(h, h, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(h, h, 3, padding=2, dilation=2), nn.ReLU())
        self.joint = nn.Embedding(K, h)
        self.pos = nn.Linear(2, h)
        layer = nn.TransformerEncoderLayer(h, 4, 2 * h, dropout=0.1, batch_first=True)
        self.tr = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(h, 1)

    def forward(self, f, xy):
        g = self.conv(f)  # (B, h, S/8, S/8)
        grid = (xy / S * 2 - 1)[:, :, None, :]  # (B, K, 1, 2)
        s = F.grid_sample(g, grid, align_corners=False).squeeze(-1).transpose(1, 2)  # (B, K, h)
        gp = g.mean((2, 3))[:, None]
        x = s + gp + self.joint.weight[None] + self.pos(xy / S - 0.5)
        return self.out(self.tr(x)).squeeze(-1)


def rel(z, ok):
    zm = np.where(ok, z, np.nan)
    return zm - np.nanmean(zm, 1, keepdims=True)


if a.clips == "all":
    from posetracker.train.clips import list_clips, split_clips
    dcfg = load_config("configs/distill.yaml")
    trl, _ = split_clips(list_clips(dcfg.data_path, dcfg.min_frames), list(dcfg.val), dcfg.train, list(dcfg.exclude))
else:
    trl = list(cfg.train)
train = build(trl, (False, True))
val = build(list(cfg.val), (False,))
fullt = make_teacher(replace(cfg, blazepose="full"))
keep = np.zeros((len(val["z"]), len(pairs)), bool)
for ci, rel_ in enumerate(cfg.val):
    path = cfg.data_path / rel_
    sel = selection_for(path, cfg)
    lf = cached_clip_labels(fullt, path, spec, sel.key(), lambda: iter_frames(path, sel))
    for i in np.nonzero(val["clip"] == ci)[0]:
        t, n = val["tn"][i]
        if n < lf.num_tracks:
            zf = lf.depth[t, n]
            keep[i] = np.sign(zf[pairs[:, 0]] - zf[pairs[:, 1]]) == np.sign(val["z"][i, pairs[:, 0]] - val["z"][i, pairs[:, 1]])
val["keep"] = keep
print("train crops", len(train["z"]), "val", len(val["z"]), flush=True)
model = CropDepth()
opt = torch.optim.AdamW(model.parameters(), 1e-3, weight_decay=1e-2)
tf, txy = torch.from_numpy(train["feats"]), torch.from_numpy(train["xy"])
tz = torch.from_numpy(np.nan_to_num(rel(train["z"], train["ok"])))
tok = torch.from_numpy(train["ok"]).float()
P = torch.from_numpy(pairs)
g = torch.Generator().manual_seed(a.seed)
t0 = time.time()


def evaluate(d):
    model.eval()
    with torch.no_grad():
        pr = []
        for i in range(0, len(d["z"]), 64):
            pr.append(model(torch.from_numpy(d["feats"][i:i + 64]).float(), torch.from_numpy(np.nan_to_num(d["xy"][i:i + 64]))).numpy())
    model.train()
    pr = np.concatenate(pr)
    res = {}
    for ci, rel_ in enumerate(cfg.val):
        m = d["clip"] == ci
        ref = np.where(d["ok"][m], d["z"][m], np.nan)
        name = rel_.split("/")[-1]
        res[name] = round(depth_order_agreement(pr[m], ref, pairs, 0.05), 3)
        if "keep" in d:
            res[name + "/both"] = round(depth_order_agreement(pr[m], ref, pairs, 0.05, keep=d["keep"][m]), 3)
    return res, pr


for step in range(a.steps + 1):
    lr = 1e-3 * min(1, step / 100) * 0.5 * (1 + np.cos(np.pi * step / a.steps))
    for pg in opt.param_groups:
        pg["lr"] = lr
    idx = torch.randint(0, len(tz), (32,), generator=g)
    f = tf[idx].float()
    xy = torch.nan_to_num(txy[idx]) + torch.randn(32, K, 2) * 2.0
    pred = model(f, xy)
    ok = tok[idx]
    pred = pred - (pred * ok).sum(1, keepdim=True) / ok.sum(1, keepdim=True).clamp(min=1)
    l1 = ((pred - tz[idx]).abs() * ok).sum() / ok.sum()
    dp = pred[:, P[:, 0]] - pred[:, P[:, 1]]
    dt = tz[idx][:, P[:, 0]] - tz[idx][:, P[:, 1]]
    pw = ok[:, P[:, 0]] * ok[:, P[:, 1]]
    lp = ((dp - dt).abs() * pw).sum() / pw.sum().clamp(min=1)
    loss = l1 + lp
    opt.zero_grad(); loss.backward(); opt.step()
    if step % a.every == 0:
        r, _ = evaluate(val)
        print(step, f"l1 {l1.item():.4f} pair {lp.item():.4f}", r, f"{time.time()-t0:.0f}s", flush=True)
model.eval()
torch.save(model.state_dict(), Path.home() / ".cache" / "posetracker" / f"crop_probe_{a.name}.pt")
m = model
from posetracker.session import SessionConfig, TrackingSession
from posetracker.train.metrics import run_clip
torch.set_num_threads(1)
from posetracker.train.clips import list_clips
if a.eval_clips == "held-out":
    assert a.clips == "quick", "--eval-clips held-out needs --clips quick (the clips the config trains on)"
    trained = {str(c) for c in cfg.train}
    eval_rels = sorted(str(c) for c in list_clips(cfg.data_path, cfg.min_frames) if str(c) not in trained)
else:
    eval_rels = list(cfg.val)


pooled = np.zeros((2, 2), np.int64)
for rel_ in eval_rels:
    path = cfg.data_path / rel_
    sel = selection_for(path, cfg)
    fr = lambda: iter_frames(path, sel)
    lh = cached_clip_labels(teacher, path, spec, sel.key(), fr)
    lf = cached_clip_labels(fullt, path, spec, sel.key(), fr)
    run = run_clip(TrackingSession(net, SessionConfig(mode="offline", smoothing=False, threads=1)), path, lh)
    xy_m, ok_m, z_m = run["matched_xy"], run["matched_ok"], run["matched_depth"]
    pred = np.full(z_m.shape, np.nan)
    for t, f in enumerate(iter_frames(path, sel)):
        if t >= lh.num_frames: break
        for n in range(lh.num_tracks):
            ok = ok_m[t, n] & np.isfinite(xy_m[t, n]).all(-1)
            if ok.sum() < 8: continue
            c, side = crop_box(np.where(ok[:, None], xy_m[t, n], np.nan))
            im, M = crop(f.image, c, side, False)
            cxy = np.nan_to_num(xy_m[t, n] @ M[:2, :2].T + M[:2, 2])
            with torch.no_grad():
                r = m(torch.from_numpy(feats_of([im])).float(), torch.from_numpy(cxy[None]).float())[0].numpy()
            pred[t, n] = np.where(ok, r - r[ok].mean() + np.nanmean(z_m[t, n][ok]), np.nan)
    vis = lambda L: np.where(L.visible, L.depth, np.nan)
    H, Fl = vis(lh), vis(lf)
    base = np.where(ok_m, z_m, np.nan)
    if Fl.shape == H.shape:  # both label runs track the same people
        agree = np.sign(Fl[..., pairs[:, 0]] - Fl[..., pairs[:, 1]]) == np.sign(H[..., pairs[:, 0]] - H[..., pairs[:, 1]])
    else:
        agree = np.zeros(H.shape[:-1] + (len(pairs),), bool)
    res = {w: {"heavy": round(depth_order_agreement(p, H, pairs, 0.05), 3), "both": round(depth_order_agreement(p, H, pairs, 0.05, keep=agree), 3)}
           for w, p in (("shipped", base), ("crop", pred))}
    pooled += np.array([depth_order_counts(base, H, pairs), depth_order_counts(pred, H, pairs)])
    res["crop_per_pair"] = {spec.joint_names[x]: round(depth_order_agreement(pred, H, np.array([[x, y]]), 0.05), 2) for x, y in pairs}
    print(path.name, json.dumps(res), flush=True)
print("pooled over", len(eval_rels), "clips: shipped", round(pooled[0, 0] / max(pooled[0, 1], 1), 3),
      "crop", round(pooled[1, 0] / max(pooled[1, 1], 1), 3), "pair-frames", pooled[:, 1].tolist(), flush=True)
