"""What a BVH export holds per person: its options (:class:`BvhOptions`), the solved motion (:class:`BvhMotion`,
one take of it, a shared origin for several people) and the file's text (:func:`bvh_text`).

:mod:`posetracker.export.bvh` solves the motion (``solve_person``) and writes the files (``BvhExporter``); its
docstring gives the conventions (BVH space, units, takes, origin). Everything here is re-exported there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from posetracker.export.bvh_rig import BVH_FROM_CAMERA, Rig
from posetracker.export.registry import ExportError

UNITS = {"cm": 100.0, "m": 1.0, "mm": 1000.0}
ORDERS = ("ZXY", "ZYX", "XYZ", "XZY", "YXZ", "YZX")


@dataclass(frozen=True)
class BvhOptions:
    """rotation_order: channel order (intrinsic); units: cm, m or mm; rig: auto, humanoid or skeleton;
    max_gap_s: longest gap interpolated; min_confidence: below it a joint counts as missing;
    symmetric: equal left/right bone lengths; origin: floor or camera; min_take_s: shorter takes are not written;
    floor: fit (to the stance feet) or percentile (level camera, as before). The standing feet are the sequence's
    (the session held them on the floor: :mod:`posetracker.motion.feet`), and so are the legs: where a side view's left / right labels of the feet swapped,
    the session exchanged them back in the motion itself (:mod:`posetracker.motion.sides`), for every output."""

    rotation_order: str = "ZXY"
    units: str = "cm"
    rig: str = "auto"
    max_gap_s: float = 0.5
    min_confidence: float = 0.2
    symmetric: bool = False
    origin: str = "floor"
    min_take_s: float = 0.25
    floor: str = "fit"

    def __post_init__(self) -> None:
        if self.rotation_order.upper() not in ORDERS:
            raise ExportError(f"rotation order {self.rotation_order!r}: choose one of {list(ORDERS)}")
        if self.units not in UNITS:
            raise ExportError(f"units {self.units!r}: choose one of {sorted(UNITS)}")
        if self.rig not in ("auto", "humanoid", "skeleton"):
            raise ExportError(f"rig {self.rig!r}: choose auto, humanoid or skeleton")
        if self.origin not in ("floor", "camera"):
            raise ExportError(f"origin {self.origin!r}: choose floor or camera")
        if self.floor not in ("fit", "percentile"):
            raise ExportError(f"floor {self.floor!r}: choose fit or percentile")


@dataclass
class BvhMotion:
    """A rig and its animation, ready to be written.

    rig:       joint tree and rest pose (metres)
    root:      (T, 3) root positions, metres, BVH space (origin applied)
    euler:     (T, J, 3) local rotations, degrees, in ``order``
    frame_time: seconds per motion line
    report:    sidecar content (gaps, lengths, conventions)
    floor:     BVH Y (m, before the origin shift) of this person's floor
    shift:     (3,) metres added to the root for the origin
    own_floor: the person stands on their own floor (fitted floor): a shared origin keeps their floor
    rotation, translation: (3, 3), (3,) m: camera space -> BVH space before the origin shift
    takes:     [(start, stop)) motion lines of each take (the module docstring), in time order
    """

    rig: Rig
    root: np.ndarray
    euler: np.ndarray
    frame_time: float
    order: str
    report: dict[str, Any] = field(default_factory=dict)
    floor: float = 0.0
    shift: np.ndarray = field(default_factory=lambda: np.zeros(3))
    own_floor: bool = False
    rotation: np.ndarray = field(default_factory=lambda: BVH_FROM_CAMERA.copy())
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    takes: list[tuple[int, int]] = field(default_factory=list)

    def take(self, k: int) -> BvhMotion:
        """Take ``k`` alone (its motion lines; the report's ``take``, ``frames`` and ``start_time_s`` its own,
        ``takes`` all of the person's)."""
        a, b = self.takes[k]
        info = self.report["takes"][k]
        report = {**self.report, "take": k + 1, "frames": b - a, "start_frame": info["start_frame"],
                  "start_time_s": info["time_s"][0]}
        return dataclasses.replace(self, root=self.root[a:b], euler=self.euler[a:b], report=report, takes=[(0, b - a)])

    def move_origin(self, shift: np.ndarray, units: str) -> None:
        """Use ``shift`` (3,) metres as the origin shift instead of this person's own (a person on their own
        floor keeps their Y shift)."""
        shift = np.array(shift, np.float64)
        if self.own_floor:
            shift[1] = self.shift[1]
        self.root = self.root + (shift - self.shift)
        self.shift = shift
        self.report["origin_shift"] = (self.shift * UNITS[units]).round(4).tolist()
        self.report["bvh_from_camera"] = map_report(self.rotation, self.translation + self.shift, units)


def map_report(rotation: np.ndarray, translation: np.ndarray, units: str) -> dict[str, Any]:
    """The report's ``bvh_from_camera``: BVH = rotation @ camera + translation, the translation in ``units``."""
    return {"rotation": np.round(rotation, 8).tolist(), "translation": (translation * UNITS[units]).round(4).tolist(),
            "formula": f"BVH = rotation @ camera + translation ({units}; camera x right, y down, z forward)"}


def shared_origin(motions: list[BvhMotion]) -> np.ndarray:
    """(3,) one origin shift for several people (``origin="floor"``): the first one's first root at X = Z = 0
    (the motions before any shift: ``root - shift``), the median of their floors at Y = 0 (people on their own
    fitted floor keep theirs, :meth:`BvhMotion.move_origin`)."""
    first = motions[0].root[0] - motions[0].shift
    return np.array([-first[0], -float(np.median([m.floor for m in motions])), -first[2]])


def _num(v: float) -> str:
    s = f"{v:.6f}"
    return "0.000000" if s == "-0.000000" else s


def bvh_text(motion: BvhMotion, units: str = "cm") -> str:
    """The BVH file for ``motion`` (positions scaled to ``units``)."""
    rig, scale = motion.rig, UNITS[units]
    rot = " ".join(f"{a}rotation" for a in motion.order)
    lines = ["HIERARCHY"]
    order: list[int] = []

    def joint(j: int, depth: int) -> None:
        pad = "\t" * depth
        order.append(j)
        lines.append(f"{pad}{'ROOT' if rig.parents[j] < 0 else 'JOINT'} {rig.names[j]}")
        lines.append(f"{pad}{{")
        lines.append(f"{pad}\tOFFSET {' '.join(_num(v * scale) for v in rig.offsets[j])}")
        chans = f"6 Xposition Yposition Zposition {rot}" if rig.parents[j] < 0 else f"3 {rot}"
        lines.append(f"{pad}\tCHANNELS {chans}")
        kids = rig.children(j)
        for c in kids:
            joint(c, depth + 1)
        if not kids:
            end = rig.end_sites.get(j, np.array([0.0, 0.1, 0.0]))
            lines.extend([f"{pad}\tEnd Site", f"{pad}\t{{", f"{pad}\t\tOFFSET {' '.join(_num(v * scale) for v in end)}", f"{pad}\t}}"])
        lines.append(f"{pad}}}")

    joint(rig.parents.index(-1), 0)
    values = np.concatenate([motion.root * scale, motion.euler[:, order].reshape(len(motion.root), -1)], axis=1)
    if not np.all(np.isfinite(values)):
        raise ValueError("internal error: non-finite motion values")
    lines += ["MOTION", f"Frames: {len(values)}", f"Frame Time: {motion.frame_time:.10f}"]
    lines += [" ".join(_num(v) for v in row) for row in values]
    return "\n".join(lines) + "\n"
