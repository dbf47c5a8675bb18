"""MoveNet MultiPose's own decode, re-implemented from its TF.js graph (the baseline).

The original graph ends with a post-processing stage after its heads; this is
that stage in numpy, constant for constant (see tools/tfjs_reference/README.md;
``tools/tfjs_reference/check_decode.py`` checks it against the graph's own
output to ~1e-7). It is used to score the original MoveNet next to our
skeleton-tree decoder in ``posetracker eval --baseline movenet``.
"""

from __future__ import annotations

import numpy as np

F = np.float32

# Constants as stored in the graph (fp16-quantised in the .bin, widened to f32).
PEAK_EPS = F(1.0132789611816406e-06)  # Less/y: |sigmoid - maxpool| < eps  => local maximum
NMS_KERNEL = 5                        # MaxPool ksize 5x5, stride 1, SAME
TOP_K = 6                             # TopKV2/k
SIGMA_FRAC = F(0.300048828125)        # mul_6/y (0.3 in fp16): denominator = 0.3 * min(H, W)
KPT_THRESH = F(0.126953125)           # Greater_1/y (fp16 of 0.127)
STRIDE = F(4.0)                       # truediv_8/x, mul_5/y: feature cell -> input pixel


def sigmoid(x: np.ndarray) -> np.ndarray:
    x = x.astype(F)
    return (F(1) / (F(1) + np.exp(-x))).astype(F)


def maxpool_same(x: np.ndarray, k: int) -> np.ndarray:
    """x: (H, W), k x k max-pool, stride 1, SAME padding (pad with -inf)."""
    p = k // 2
    xp = np.pad(x, p, constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k))
    return win.max(axis=(-1, -2)).astype(F)


def decode(centre, heatmap, regress, offset, box_scale, box_offset, in_h=256, in_w=256) -> np.ndarray:
    """All inputs NHWC with N=1, raw head outputs. Returns (1, 6, 56) float32."""
    centre, heatmap, regress, offset = (a[0].astype(F) for a in (centre, heatmap, regress, offset))
    box_scale, box_offset = box_scale[0].astype(F), box_offset[0].astype(F)
    H, W, K = heatmap.shape

    # 1. person centres: sigmoid, 5x5 max-pool peak test, top-6 over the flattened HxW map.
    c = sigmoid(centre[..., 0])
    peak = (np.abs(c - maxpool_same(c, NMS_KERNEL)) < PEAK_EPS).astype(F)
    flat = (c * peak).reshape(-1)
    order = np.argsort(-flat, kind="stable")[:TOP_K]  # sorted desc, ties -> lower index first
    cscore = flat[order]
    cy, cx = order // W, order % W  # integer cell of each centre

    # 2. box: box_offset (dy, dx) + box_scale (h, w) read at the centre cell, in cell units.
    bo = box_offset[cy, cx]                      # (6, 2)
    bs = np.maximum(box_scale[cy, cx], F(0))      # (6, 2)
    yc, xc = cy.astype(F) + bo[:, 0], cx.astype(F) + bo[:, 1]
    hh, hw = bs[:, 0] * F(0.5), bs[:, 1] * F(0.5)
    ymin = np.clip(yc - hh, F(0), F(H))
    xmin = np.clip(xc - hw, F(0), F(W))
    ymax = np.clip(cy.astype(F) + bo[:, 0] + hh, F(0), F(H))
    xmax = np.clip(cx.astype(F) + bo[:, 1] + hw, F(0), F(W))
    box_cells = np.stack([ymin, xmin, ymax, xmax], axis=1)  # (6, 4)
    box_norm = np.clip(box_cells * STRIDE / np.array([in_h, in_w, in_h, in_w], F), F(0), F(1))

    # 3. regressed keypoints: centre cell + regress[cy, cx, 2k:2k+2] = (dy, dx), cell units.
    reg = regress[cy, cx].reshape(TOP_K, K, 2)
    ry = cy.astype(F)[:, None] + reg[..., 0]   # (6, 17)
    rx = cx.astype(F)[:, None] + reg[..., 1]

    # 4. weight the keypoint heatmaps by exp(-d^2 / (0.3*min(H,W))) around the regressed
    #    keypoint, and by "pixel inside this person's box"; argmax per (person, keypoint).
    yy = np.arange(H, dtype=F)[:, None, None, None]
    xx = np.arange(W, dtype=F)[None, :, None, None]
    d2 = np.square(yy - ry[None, None]) + np.square(xx - rx[None, None])  # (H, W, 6, 17)
    denom = F(min(H, W)) * SIGMA_FRAC
    wgt = np.exp((F(-1) * d2) / denom).astype(F)
    hm = sigmoid(heatmap)[:, :, None, :]                                  # (H, W, 1, 17)
    gy = np.arange(H, dtype=F)[:, None, None]
    gx = np.arange(W, dtype=F)[None, :, None]
    inside = ((gy >= ymin) & (gy < ymax) & (gx >= xmin) & (gx < xmax)).astype(F)  # (H, W, 6)
    score_map = (hm * wgt) * inside[..., None]                            # (H, W, 6, 17)
    flat_sm = score_map.reshape(H * W, TOP_K * K)
    am = flat_sm.argmax(axis=0)                  # first maximum
    py, px = am // W, am % W                     # (102,)
    kidx = np.tile(np.arange(K), TOP_K)

    # 5. refine with the keypoint offset head at the chosen cell; normalise by the input size.
    off = offset.reshape(H, W, K, 2)[py, px, kidx]  # (102, 2) = (dy, dx)
    ky = (py.astype(F) + off[:, 0]) * (STRIDE / F(in_h))
    kx = (px.astype(F) + off[:, 1]) * (STRIDE / F(in_w))
    # keypoint score: max over the 6 persons of the weighted map at the chosen cell
    kscore = score_map.max(axis=2)[py, px, kidx]    # (102,)
    kpts = np.stack([ky, kx, kscore], axis=1).reshape(TOP_K, K * 3)

    # 6. person score: centre score * mean of the keypoint scores above the threshold.
    ks = kscore.reshape(TOP_K, K)
    good = ks > KPT_THRESH
    s = (cscore[:, None] * np.where(good, ks, F(0))).sum(axis=1, dtype=F)
    n = np.maximum(good.astype(F).sum(axis=1), F(1))
    pscore = (F(1) / n) * s

    out = np.concatenate([kpts, box_norm, pscore[:, None]], axis=1).astype(F)
    return out[None]
