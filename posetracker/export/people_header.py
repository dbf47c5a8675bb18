"""Each person's stature, where it came from and their bone lengths (``metadata["people"]``, written by
:mod:`posetracker.motion.heights`), as the pose CSVs and the TRC carry them beside the JSON.

- CSV (tidy and wide): columns appended after the existing ones, the same on every row of a person:
  ``stature_m`` (empty where unknown), ``stature_source`` (given / multi-view / floor / estimated / unknown;
  empty for a result that was never finished) and the length of the bone that ends at each joint (from its parent in the
  skeleton; empty for a root and for a bone to a virtual joint, e.g. human18's centre): the tidy CSV's
  ``bone_m``, the wide CSV's ``JOINT_bone_m``. No ``#`` lines: the files stay plain tables for ``csv`` readers,
  spreadsheets and ``pandas.read_csv`` without options.
- TRC: ``key=value`` fields after the file name on the first line (``stature_m=1.720``,
  ``stature_source=given``, ``bones_m=left_hip-left_knee:0.4312,...``): OpenSim 4.6's TRC reader keeps that line
  whole as the table's ``header`` metadata, while lines 2-3 must hold exactly its 8 keys (it refuses others).
"""

from __future__ import annotations

from typing import Any

from posetracker.skeletons import SkeletonSpec
from posetracker.types import PoseSequence


def person_entry(seq: PoseSequence, track_id: int) -> dict[str, Any]:
    """``metadata["people"][id]`` ({} for a result that has none)."""
    return ((seq.metadata or {}).get("people") or {}).get(str(int(track_id))) or {}


def joint_bones(spec: SkeletonSpec) -> list[str | None]:
    """Per joint, the ``"parent-child"`` name of the bone that ends at it (None: a root, or a virtual end)."""
    names = spec.joint_names
    out: list[str | None] = [None] * spec.num_joints
    for a, b in spec.edges.tolist():
        if a not in spec.virtual and b not in spec.virtual:
            out[b] = f"{names[a]}-{names[b]}"
    return out


def stature_cells(entry: dict[str, Any]) -> tuple[str, str]:
    """(stature m with 3 decimals or "", its source or "")."""
    h = entry.get("stature_m")
    return ("" if h is None else f"{float(h):.3f}"), str(entry.get("stature_source", ""))


def bone_cells(entry: dict[str, Any], bones: list[str | None]) -> list[str]:
    """Per joint, the length (m, 4 decimals) of the bone ending at it, or ""."""
    lengths = entry.get("bones_m") or {}
    return ["" if b is None or b not in lengths else f"{float(lengths[b]):.4f}" for b in bones]


def trc_fields(seq: PoseSequence, track_id: int) -> list[str]:
    """The first line's extra ``key=value`` fields for one person (none where the result has no entry)."""
    entry = person_entry(seq, track_id)
    if not entry:
        return []
    stature, source = stature_cells(entry)
    bones = ",".join(f"{k}:{float(v):.4f}" for k, v in (entry.get("bones_m") or {}).items())
    return [f"person={int(track_id)}", f"stature_m={stature}", f"stature_source={source}", f"bones_m={bones}"]


__all__ = ["bone_cells", "joint_bones", "person_entry", "stature_cells", "trc_fields"]
