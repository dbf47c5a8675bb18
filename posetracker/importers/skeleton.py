"""A skeleton YAML (see posetracker/skeletons/__init__.py) from an imported project's keypoints and edges.

The tree is rooted at a virtual ``centre`` (the box centre of the labelled points). In each connected
part of the project's edge graph the most connected keypoint (ties: the one nearest the middle of
its part, then the first) hangs from the centre and the rest of the part from a breadth-first
spanning tree of it; keypoints on no edge hang from the centre directly. Edges left out of the tree
become ``extra_edges`` (drawn only). Left/right mirrors are found by name (``wingL``/``wingR``,
``leftear``/``rightear``, ``L_ear``/``R_ear``, ``FL_paw``/``FR_paw``, ``ear_l``/``ear_r``, ...) and
only where the counterpart exists.
"""

from __future__ import annotations

import re
from collections import deque

import yaml

from posetracker.skeletons import spec_from_dict

DEFAULT_SIGMA = 0.1  # OKS sigma of every imported keypoint (the shipped mouse4 uses 0.15, human COCO 0.025-0.107)

_WORD = re.compile(r"left|right", re.IGNORECASE)
_UPPER = re.compile(r"[LR](?![a-z])")  # wingL, forelegL4, L_ear, LEar, FL_paw; not Lip
_LOWER = re.compile(r"(?<![A-Za-z])[lr](?![a-z])")  # ear_l, l_ear, l-ear, lEar; not tail
_SWAP = {"L": "R", "R": "L", "l": "r", "r": "l"}
_SIDED = (re.compile(r"left|right", re.IGNORECASE),  # left_paw, RightEar
          re.compile(r"^[A-Z]?[LR](?![a-z])|^[lr](?![a-z])|[_\-. \d][LlRr]\d*$|[a-z\d][LR]\d*$"))  # L_ear FL_paw ear_l earL


def _swap_word(w: str) -> str:
    out = "right" if w.lower() == "left" else "left"
    if w.isupper():
        return out.upper()
    return out.capitalize() if w[0].isupper() else out


def _variants(name: str) -> list[str]:
    """Names ``name`` would have on the other side: one side token swapped at a time, then all of one kind."""
    out: list[str] = []
    for rx, swap in ((_WORD, _swap_word), (_UPPER, _SWAP.get), (_LOWER, _SWAP.get)):
        matches = list(rx.finditer(name))
        for m in matches:
            out.append(name[: m.start()] + swap(m.group()) + name[m.end():])
        if len(matches) > 1:
            out.append(rx.sub(lambda m: swap(m.group()), name))
    return out


def mirror_pairs(names: list[str]) -> dict[str, str]:
    """{name: its left/right counterpart} for every keypoint whose mirrored name is also a keypoint."""
    present = set(names)
    pairs: dict[str, str] = {}
    for n in names:
        if n in pairs:
            continue
        for v in _variants(n):
            if v != n and v in present and v not in pairs:
                pairs[n], pairs[v] = v, n
                break
    return pairs


def unpaired_sided(names: list[str], pairs: dict[str, str]) -> list[str]:
    """Keypoints whose name looks left/right (``left_paw``, ``earL``) but have no counterpart: a horizontal
    flip would then teach the wrong side, so the training config turns it off."""
    return [n for n in names if n not in pairs and any(rx.search(n) for rx in _SIDED)]


def _bfs_depth(adj: dict[int, list[int]], start: int) -> dict[int, int]:
    depth, queue = {start: 0}, deque([start])
    while queue:
        j = queue.popleft()
        for k in adj[j]:
            if k not in depth:
                depth[k] = depth[j] + 1
                queue.append(k)
    return depth


def tree_parents(n: int, edges: list[tuple[int, int]]) -> tuple[list[int], list[tuple[int, int]]]:
    """(parent per keypoint, -1 = the centre; edges not in the tree) for ``n`` keypoints."""
    adj: dict[int, list[int]] = {i: [] for i in range(n)}
    for a, b in edges:
        if a != b and 0 <= a < n and 0 <= b < n and b not in adj[a]:
            adj[a].append(b)
            adj[b].append(a)
    for v in adj.values():
        v.sort()
    parent = [-1] * n
    seen: set[int] = set()
    for start in range(n):
        if start in seen:
            continue
        part = sorted(_bfs_depth(adj, start))
        seen.update(part)
        most = max(len(adj[j]) for j in part)
        hubs = [j for j in part if len(adj[j]) == most]
        hub = min(hubs, key=lambda j: (max(_bfs_depth(adj, j).values()), j))
        reached, queue = {hub}, deque([hub])
        while queue:
            j = queue.popleft()
            for k in adj[j]:
                if k not in reached:
                    reached.add(k)
                    parent[k] = j
                    queue.append(k)
    tree = {(min(c, p), max(c, p)) for c, p in enumerate(parent) if p >= 0}
    extra, done = [], set()
    for a, b in edges:
        key = (min(a, b), max(a, b))
        if a != b and 0 <= a < n and 0 <= b < n and key not in tree and key not in done:
            done.add(key)
            extra.append((a, b))
    return parent, extra


def centre_name(names: list[str]) -> str:
    for cand in ("centre", "body_centre", "bbox_centre"):
        if cand not in names:
            return cand
    i = 2
    while f"centre{i}" in names:
        i += 1
    return f"centre{i}"


def build_skeleton(names: list[str], edges: list[tuple[int, int]], name: str, *, sigma: float = DEFAULT_SIGMA,
                   kind: str = "animal") -> dict:
    """A skeleton description (the YAML's mapping, checked by ``spec_from_dict``) for keypoints ``names``
    with index-pair ``edges``; the virtual root is appended last."""
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicate keypoint names {dup}")
    parent, extra = tree_parents(len(names), edges)
    centre = centre_name(names)
    pairs = mirror_pairs(names)
    joints = []
    for i, n in enumerate(names):
        j = {"name": n, "parent": centre if parent[i] < 0 else names[parent[i]]}
        if n in pairs:
            j["mirror"] = pairs[n]
        joints.append(j)
    joints.append({"name": centre, "parent": None, "virtual": "bbox_centre"})
    data = {
        "name": name, "kind": kind, "units": "m", "axes": {"x": "right", "y": "down", "z": "forward"},
        "joints": joints,
        "sigmas": [float(sigma)] * len(names) + [None],
        "extra_edges": [[names[a], names[b]] for a, b in extra],
    }
    spec_from_dict(data, source=f"{name} (imported)")  # raises SkeletonError if anything is off
    return data


def _flow(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip().removesuffix("...").strip()


def skeleton_yaml(data: dict, header: str = "") -> str:
    """The YAML text of a :func:`build_skeleton` mapping, laid out like the shipped skeletons."""
    lines = [f"# {ln}" if ln else "#" for ln in header.splitlines()]
    for key in ("name", "kind", "units", "axes"):
        lines.append(f"{key}: {_flow(data[key])}")
    lines.append("joints:")
    lines += [f"  - {_flow(j)}" for j in data["joints"]]
    lines.append(f"sigmas: {_flow(data['sigmas'])}")
    lines.append(f"extra_edges: {_flow(data['extra_edges'])}")
    lines.append("# Small animals (a few feature cells long at the 256 px input) may need a wider search window and")
    lines.append("# fewer weak centre peaks, as the shipped mouse4 has (see posetracker/skeletons/mouse4.yaml):")
    lines.append("# decoder: {window_frac: 1.0, min_window: 4, min_person_score: 0.1, min_centre_distance: 4}")
    return "\n".join(lines) + "\n"
