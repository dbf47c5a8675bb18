"""Where the tree walk's predictions go wrong: centre read against the walk (head), on held-out clip frames.

    python tools/walk_vectors_check.py --weights /tmp/posenet-walkhead.safetensors [--config configs/walk_head.yaml]

For every val clip of the config (its cached teacher labels and first features; the offline target features
through the frozen temporal block, as ``train walk-head`` caches them) and every labelled joint k with a
labelled parent p, in feature cells u = source px * letterbox scale / stride (the decoder's coordinates):

- centre read: u_root + the centre-read vectors (``vectors``) along the root -> k path, read at the root's cell
  (MoveNet's centre + r(k));
- walk, one step from the true parent: u_p + the centre-read vector of edge p -> k read at the root's cell +
  the walk head's correction ``walk_vectors`` read (bilinear) at u_p;
- walk chained without heatmaps: from u_root, each step's correction read at the previous *predicted* position;
- anchored, one step from the true parent: u_p + the centre-read vector of edge p -> k read at the root's cell
  (the decoder's ``--vector-read anchored``; needs no walk head, the only reading besides the centre's
  for weights without one).

Prints the mean error (cells) per tree depth (1: nose, shoulders, hips; 2: eyes, elbows, knees; 3: ears,
wrists, ankles) and per joint group. The decoder's heatmap search corrects each located joint, so its real walk lies between the
one-step and the chained errors.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from posetracker.decoding.sampling import read_cells, sample_bilinear
from posetracker.model.weights import load_posenet
from posetracker.train.config import load_config
from posetracker.train.prepare import build_entries
from posetracker.train.head_fit import target_entry


def errors(net, entry, stride: int = 4) -> dict[str, list[np.ndarray]]:
    """Per-joint errors (cells) of one entry, keyed by reading; each a list of (tree depth, joint, error)."""
    spec = net.spec
    parents, edge_of, root = np.asarray(spec.parents), np.asarray(spec.edge_of_child), spec.root
    depth = np.zeros(spec.num_joints, int)
    for k in spec.first_keypoints + spec.second_keypoints:
        depth[k] = depth[parents[k]] + 1
    has_walk = net.walk is not None
    out: dict[str, list] = {"centre": [], "anchored_step": []}
    if has_walk:
        out.update({"walk_step": [], "walk_chain": []})
    feats = torch.from_numpy(np.asarray(entry.feats.feats, np.float32))
    with torch.no_grad():
        maps = net.decode_heads(feats[:, None])
    vec = maps["vectors"][:, 0].numpy()
    walk = maps["walk_vectors"][:, 0].numpy() if has_walk else None
    order = spec.first_keypoints + spec.second_keypoints
    for t in range(len(feats)):
        xy, vis, _ = entry.labels.frame_people(t)
        u = xy * entry.feats.scales[t] / stride  # (P, K, 2) cells
        for p in range(len(u)):
            if not np.isfinite(u[p, root]).all():
                continue
            r = u[p, root]
            at_c = read_cells(vec[t], np.floor(r[:1]), np.floor(r[1:])).reshape(-1, 2)  # (E, 2)
            chain = {root: r}
            for k in order:
                e, par = edge_of[k], parents[k]
                if has_walk:
                    chain[k] = chain[par] + at_c[e] + sample_bilinear(walk[t][2 * e:2 * e + 2], chain[par][None])[0]
                if not (vis[p, k] and np.isfinite(u[p, k]).all() and np.isfinite(u[p, par]).all()):
                    continue
                path, j = [], k
                while j != root:
                    path.append(edge_of[j])
                    j = parents[j]
                centre = r + at_c[path].sum(0)
                reads = {"centre": centre, "anchored_step": u[p, par] + at_c[e]}
                if has_walk:
                    reads["walk_step"] = u[p, par] + at_c[e] + sample_bilinear(walk[t][2 * e:2 * e + 2], u[p, par][None])[0]
                    reads["walk_chain"] = chain[k]
                for name, pred in reads.items():
                    out[name].append((depth[k], k, float(np.linalg.norm(pred - u[p, k]))))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True, help="weights (with a walk head for the walk's rows)")
    ap.add_argument("--config", default="configs/walk_head.yaml")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = load_config(args.config)
    net = load_posenet(args.weights)
    _, val = build_entries(cfg, net, lambda s: None, only=list(cfg.val))
    for features in ("first", "target"):
        rows: dict[str, list] = {}
        for entry in val:
            e = entry if features == "first" else target_entry(net, entry)
            for k, v in errors(net, e).items():
                rows.setdefault(k, []).extend(v)
        print(f"{features} features ({len(val)} val clips): mean error in cells by tree depth 1 / 2 / 3 (joints)")
        for name, v in rows.items():
            a = np.asarray(v)
            parts = [f"{a[a[:, 0] == d, 2].mean():.2f} ({int((a[:, 0] == d).sum())})" for d in (1, 2, 3)]
            print(f"  {name:10s} " + " / ".join(parts) + f"   all {a[:, 2].mean():.2f}")
        groups = ("eye", "ear", "elbow", "wrist", "knee", "ankle")
        print("  by joint (" + ", ".join(groups) + "): " + "; ".join(
            f"{name} " + " ".join(f"{np.mean([e for _, k, e in v if g in net.spec.joint_names[int(k)]]):.2f}"
                                  for g in groups) for name, v in rows.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
