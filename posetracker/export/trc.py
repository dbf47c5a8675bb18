"""OpenSim marker file (.trc), one file per person.

Layout (tab-separated, per the TRC format OpenSim reads)::

    PathFileType  4  (X/Y/Z)  NAME.trc  person=0  stature_m=1.720  stature_source=given  bones_m=...
    DataRate  CameraRate  NumFrames  NumMarkers  Units  OrigDataRate  OrigDataStartFrame  OrigNumFrames
    30.00  30.00  120  17  mm  30.00  1  120
    Frame#  Time  nose  <tab>  <tab>  left_eye ...          (each name spans its X, Y, Z columns)
    <tab>  <tab>  X1  Y1  Z1  X2  Y2  Z2 ...
    <blank line>
    1  0.000000  x  y  z ...

The first line's fields after the name: the person's stature, where it came from and their bone lengths
(:mod:`.people_header`; OpenSim keeps the line as the table's ``header`` metadata).
Markers: the skeleton's labelled joints (virtual ones, e.g. human18's box
centre, are left out), named as in the skeleton. Coordinates in millimetres,
Y up (OpenSim's convention): ``X = x, Y = -y, Z = -z`` of camera space
(``origin="camera"``, the default), or with ``origin="floor"`` in the floor
frame the session stood everyone on (``metadata["feet"]``,
:mod:`posetracker.analysis.held_ground`; fitted again, :mod:`posetracker.analysis.ground`,
only for a sequence without it): a calibration's world turned Y up (``X = x, Y = z, Z = -y``)
where the sequence has one (``metadata["floor"]``), else the floor fitted to everyone's
stance feet:
Y up along the floor's normal from each person's own floor, so OpenSim's
gravity (-Y) is the clip's whatever the camera's pitch and roll; X the
camera's right along the floor, origin on the floor below the camera (where the
camera tilts, each frame turned first: :mod:`posetracker.motion.moving_floor`). When the
feet give no floor, ``origin="floor"`` keeps the level camera's axes with the
floor at the 2nd percentile of the lowest joint, and says so in an
ExportWarning. The markers are the session's motion as it is (its standing feet held on
that floor, :mod:`posetracker.motion.feet`): the export moves none.
Time starts at the sequence's first timestamp; a frame where a marker is
missing (absent person, nan, confidence below ``min_confidence``) has empty
cells, which OpenSim reads as missing markers. Needs ``world`` (3-D).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from posetracker.analysis.held_ground import held_ground
from posetracker.export.bvh_rig import BVH_FROM_CAMERA
from posetracker.export.files import person_path, write_files
from posetracker.export.people_header import trc_fields
from posetracker.export.registry import ExportError, ExportWarning
from posetracker.tracks import TrackError, frame_time, person_tracks
from posetracker.types import PoseSequence


def trc_text(name: str, times: np.ndarray, markers: list[str], xyz_mm: np.ndarray, rate: float,
             fields: list[str] | None = None) -> str:
    """TRC text; times (T,) seconds, xyz_mm (T, M, 3) with nan = missing, written as ``NaN`` (empty
    cells end a row early, and OpenSim's TimeSeriesTableVec3 rejects the file); ``fields``: ``key=value``
    fields after the name on the first line (:func:`.people_header.trc_fields`)."""
    t, m = xyz_mm.shape[:2]
    lines = [
        "\t".join([f"PathFileType\t4\t(X/Y/Z)\t{name}", *(fields or [])]),
        "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames",
        f"{rate:.6f}\t{rate:.6f}\t{t}\t{m}\tmm\t{rate:.6f}\t1\t{t}",
        "\t".join(["Frame#", "Time"] + [f"{n}\t\t" for n in markers]),
        "\t".join(["", ""] + [f"X{i}\tY{i}\tZ{i}" for i in range(1, m + 1)]),
        "",
    ]
    for i in range(t):
        vals = ["NaN" if not np.isfinite(v) else f"{v:.4f}" for v in xyz_mm[i].ravel()]  # OpenSim reads NaN, not empty cells
        lines.append("\t".join([str(i + 1), f"{times[i]:.6f}"] + vals))
    return "\n".join(lines) + "\n"


class TrcExporter:
    name = "trc"
    suffixes = (".trc",)
    description = "OpenSim TRC marker file (mm, Y up), one file per person"

    def write(self, seq: PoseSequence, path: Path, force: bool = False, person: int | None = None,
              min_confidence: float = 0.0, origin: str | None = None, **_: object) -> list[Path]:
        """One TRC per person, its legs as the sequence names them (the session decided left and right:
        :mod:`posetracker.motion.sides`)."""
        path = Path(path)
        origin = origin or "camera"
        if origin not in ("camera", "floor"):
            raise ExportError(f"TRC: origin {origin!r}: choose camera or floor")
        try:
            tracks = person_tracks(seq, person)
        except TrackError as exc:
            raise ExportError(f"TRC: {exc}") from None
        frame = None
        if origin == "floor":  # the session's floor of everyone's stance feet, whoever is written
            frame = held_ground(seq).frame
            if not frame.fitted:
                warnings.warn(ExportWarning(f"TRC: no floor fitted ({frame.report['reason']}): level camera, floor at "
                                            "the 2nd percentile of the lowest joint"), stacklevel=2)
        spec = seq.skeleton
        joints = list(spec.labelled_joints)
        markers = [spec.joint_names[j] for j in joints]
        texts = {}
        for tid, tr in tracks.items():
            ok = tr.valid_world(min_confidence)[:, joints]
            if not ok.any():
                raise ExportError(f"TRC: person {tid} has no 3-D marker in any frame (world coordinates missing)")
            world = tr.world[:, joints]
            xyz = (world @ BVH_FROM_CAMERA.T if frame is None else frame.world_to_floor(world, tid)) * 1000.0
            xyz[~ok] = np.nan
            out = person_path(path, tid, len(tracks) > 1)
            rate = 1.0 / frame_time(tr.times, seq.fps)
            texts[out] = trc_text(out.name, tr.times - tr.times[0], markers, xyz, rate, trc_fields(seq, tid))
        return write_files(texts, force)
