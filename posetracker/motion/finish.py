"""Finishing a tracked sequence: the one step after ``TrackingSession.run`` that every front end takes
(``posetracker process``, a batch once its chunks are joined, the app's whole-file processing and its export of
the live view), so that the same clip with the same settings gives the same files from each.

Before tracking, :func:`camera_before` decides the camera a front end tracks with (:func:`fov_to_track`) and
:func:`source_metadata` names what was tracked (``session.run``'s ``metadata``). After it,
:func:`finish_sequence` does, in this order:

1. a live result's legs: exchanged back where the feet's left / right labels swapped (``motion.sides``, as the
   offline session does before its solve; ``metadata["feet_swaps"]``), then its bones: one length per bone and
   track over the recording (``tracking.bones.settle_bones``);
2. the camera: the one given or tagged is kept (the sequence re-lifted with it when it was tracked with another
   field of view); none (``auto`` without a tag): estimated from the people and the sequence re-lifted with the
   estimate (``analysis.camera_fov.fov_after_tracking``), bones made rigid again where they were;
3. where a track's distance runs away at the image border (a person leaving, their id handed to someone
   behind), those frames dropped and the track split there (``motion.border_exits``; ``metadata["border_exits"]``
   where any); ``metadata["camera"]``: the field of view used and where it came from (``CameraFov.as_dict``);
   then the heights the user gave (each such person scaled to theirs about the camera's centre; triangulated
   people about the floor point under their root, where the cameras measured them) and everyone's
   stature and bone lengths with where they came from, ``metadata["people"]`` (``motion.heights``);
4. close encounters of two tracks into ``metadata["encounters"]`` (``tracking.encounters``, from the 2-D
   keypoints); with ``repair_swaps`` the suspected id swaps are swapped back and listed in
   ``metadata["swaps_repaired"]``;
5. one pelvis per person (with ``rigid_bones``): the hips a constant width apart along a hip line solved over the
   track, each leg moved with its hip (``motion.pelvis``), so that a rig of constant bones (the BVH's) stands on
   the same joints;
6. one floor for everyone: each person scaled about the camera's centre so that their stance feet stand on one
   floor (``motion.shared_floor``; their scales in ``metadata["shared_floor"]`` and ``metadata["people"]``; after
   step 7 they are scaled onto the floor it ended with);
7. the standing feet: one floor fitted to everyone's stance feet and each person's stance feet held still on it,
   the body moved with them, in the world coordinates every output reads (``motion.feet``); the floor, the
   stance phases and the points held go into ``metadata["feet"]``, which every export reads instead of fitting
   them again (``analysis.held_ground``; last, so that they belong to the track ids as repaired). Where one
   floor fits the stance feet only with each frame turned (a handheld camera that tilts), steps 6 and 7 are done
   on the turned frames and the turn is recorded with the floor (``motion.moving_floor``).

Sequences hold T frames of P people with K joints: keypoints (P, K, 3) x, y px and depth m, world (P, K, 3)
camera-space m, per frame (``posetracker.types.PoseFrame``); re-lifting changes depth and world, never x, y.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from posetracker.depth.camera_meta import CameraFov
from posetracker.motion.border_exits import split_border_exits
from posetracker.motion.heights import Heights, apply_heights
from posetracker.types import PoseSequence

FOV_USER_DETAIL = "--fov"  # CameraFov.detail of a field of view the user gave (``--fov``, BatchSettings.fov_deg)
MAX_SWAPS_LISTED = 5  # suspected swaps named in the warning


def camera_before(path: str | Path | None, fov: float | str) -> CameraFov | None:
    """The camera to track ``path`` with: ``fov`` degrees (across the long side) when given, else (``fov ==
    "auto"``) the file's focal-length tag (``depth.camera_meta.fov_from_metadata``); None: auto without a tag
    (no file, a camera, an untagged file), tracked with the default and estimated from the people after."""
    from posetracker.depth.camera_meta import fov_from_metadata

    if fov != "auto":
        return CameraFov(float(fov), "user", FOV_USER_DETAIL)
    return None if path is None else fov_from_metadata(path)


def fov_to_track(camera: CameraFov | None) -> float:
    """Degrees the session tracks with for :func:`camera_before`'s answer (None: the default, 60)."""
    from posetracker.analysis.camera_fov import DEFAULT_FOV_DEG

    return DEFAULT_FOV_DEG if camera is None else float(camera.fov_deg)


def source_metadata(name: str, size: tuple[int, int] | None, session: Any) -> dict[str, Any]:
    """``session.run``'s ``metadata`` for a source: its ``name`` as the front end was given it (a path, camera:N),
    its frame ``size`` (W, H) px and the model's ``source`` line (its weights file's metadata; "" for a session
    without a network), in this order (JSON keeps it: the same keys in the same order from every front end)."""
    net_meta = getattr(getattr(session, "net", None), "meta", None) or {}
    return {"source": str(name), "size": None if size is None else [int(v) for v in size],
            "model": str(net_meta.get("source", ""))}


def is_finished(seq: PoseSequence) -> bool:
    """Whether :func:`finish_sequence` has run on ``seq`` (its metadata has ``camera`` and ``encounters``)."""
    meta = seq.metadata or {}
    return "camera" in meta and "encounters" in meta


def finish_sequence(seq: PoseSequence, camera: CameraFov | None, *, rigid_bones: bool, repair_swaps: bool = False,
                    tracked_fov: float | None = None, fix_legs: bool = True,
                    heights: Heights | None = None) -> tuple[PoseSequence, list[str]]:
    """The tracked ``seq`` finished (module docstring, steps 1-7) -> (finished sequence, warnings to show).

    camera: :func:`camera_before`'s answer (None: estimate it from the people); rigid_bones: the session's
    (False: the user asked for the lengths as estimated; they stay so when re-lifted); repair_swaps: swap back
    the ids of suspected swaps; tracked_fov: degrees ``seq`` was lifted with (None: :func:`fov_to_track` of
    ``camera``, what every front end tracks with; the app's live view tracks with the default whatever the tag);
    fix_legs: the session's (False: a live result keeps the legs as read); heights: the statures the user gave
    (``motion.heights.parse_heights``; None: every person's estimated).
    A sequence already finished (:func:`is_finished`) is returned as it is. The input is not changed.
    """
    if is_finished(seq):
        return seq, []
    fov_used = fov_to_track(camera) if tracked_fov is None else float(tracked_fov)
    if fix_legs:
        seq = _one_leg_each(seq)  # live: left and right decided once, as offline decides them before its solve
    if rigid_bones:
        from posetracker.tracking.bones import settle_bones

        seq = settle_bones(seq)  # live: one length per bone over the recording, as offline gives
    seq, camera = _with_camera(seq, camera, fov_used, rigid_bones)
    seq, exits = split_border_exits(seq)
    exits = {"border_exits": exits} if exits else {}
    seq = dataclasses.replace(seq, metadata={**(seq.metadata or {}), **exits, "camera": camera.as_dict()})
    seq, height_warnings = apply_heights(seq, heights)
    seq, warnings = _encounters(seq, repair_swaps)
    if rigid_bones:
        from posetracker.motion.pelvis import rigid_pelvis

        seq = rigid_pelvis(seq)
    return _feet(seq), height_warnings + warnings


def _one_leg_each(seq: PoseSequence) -> PoseSequence:
    """A live result (``metadata["mode"] == "live"``) with each track's legs exchanged back from every swap of
    its feet's left / right labels (``motion.sides.one_leg_each``), the swaps in ``metadata["feet_swaps"]``
    ({track id: source frames}) where there are any. Anything else (an offline result: its session decided
    them) is returned as it is."""
    meta = seq.metadata or {}
    if meta.get("mode") != "live" or "feet_swaps" in meta:
        return seq
    from posetracker.motion.sides import one_leg_each

    frames, swaps = one_leg_each(seq.frames, seq.skeleton, seq.fps)
    if not swaps:
        return seq
    return dataclasses.replace(seq, frames=frames,
                               metadata={**meta, "feet_swaps": {str(k): v for k, v in swaps.items()}})


def _feet(seq: PoseSequence) -> PoseSequence:
    """``seq`` with everyone scaled to stand on one floor (``motion.shared_floor.scale_to_floor``) and every
    person's stance feet held on it (``motion.feet.plant_feet``: its report, floor and phases in
    ``metadata["feet"]``); where the camera tilts (one floor fits the stance feet only with each frame turned,
    ``motion.moving_floor``) both are done on the turned frames, which are then turned back, the turn recorded
    with the floor; a sequence without world coordinates is returned as it is."""
    from posetracker.motion.feet import plant_feet
    from posetracker.motion.moving_floor import camera_turn, record_turn, turned
    from posetracker.motion.shared_floor import keep_one_floor, scale_to_floor

    if not any(f.world is not None for f in seq.frames):
        return seq
    turn, report = camera_turn(seq)
    if turn is not None:
        seq = turned(seq, turn)
    seq, shared = scale_to_floor(seq)
    seq = keep_one_floor(plant_feet(seq)[0], shared)
    return seq if turn is None else record_turn(turned(seq, turn, inverse=True), turn, report)


def _with_camera(seq: PoseSequence, camera: CameraFov | None, fov_used: float, rigid_bones: bool
                 ) -> tuple[PoseSequence, CameraFov]:
    """(sequence as lifted with the camera, the camera): ``camera``, or the people's estimate where it is None."""
    from posetracker.analysis.camera_fov import fov_after_tracking, relift_sequence

    if camera is None:
        return fov_after_tracking(seq, fov_used, rigid_bones=rigid_bones)
    if abs(camera.fov_deg - fov_used) > 1e-6:  # tracked with another camera (the app's live view)
        seq = relift_sequence(seq, fov_used, camera.fov_deg)
        if rigid_bones:
            from posetracker.tracking.bones import rigid_tracks

            seq = dataclasses.replace(seq, frames=rigid_tracks(seq.frames, seq.skeleton))
    return seq, camera


def _encounters(seq: PoseSequence, repair: bool) -> tuple[PoseSequence, list[str]]:
    """Close encounters of two tracks into the metadata (``encounters``; with ``repair`` the suspected swaps
    swapped back, ``swaps_repaired``), and a warning where a swap of ids is suspected."""
    from posetracker.tracking.encounters import close_encounters, repair_swaps

    found = close_encounters(seq)
    meta = dict(seq.metadata)
    if repair:
        seq, repaired = repair_swaps(seq, found)
        meta["swaps_repaired"] = [e.as_dict(seq) for e in repaired]
    meta["encounters"] = [e.as_dict(seq) for e in found]
    seq = dataclasses.replace(seq, metadata=meta)
    suspected = [e for e in found if e.swap_suspected]
    if not suspected:
        return seq, []
    where = ", ".join(f"{a}/{b} at {seq.frames[e.start].timestamp:.1f}-{seq.frames[e.end].timestamp:.1f} s"
                      for e in suspected[:MAX_SWAPS_LISTED] for a, b in [e.tracks])
    more = f" and {len(suspected) - MAX_SWAPS_LISTED} more" if len(suspected) > MAX_SWAPS_LISTED else ""
    done = "swapped back" if repair else "review them (posetracker process --repair-swaps swaps them back)"
    return seq, [f"ids may have swapped in {len(suspected)} of {len(found)} close encounters: tracks {where}{more}; "
                 f"{done}"]


__all__ = ["camera_before", "finish_sequence", "fov_to_track", "is_finished", "source_metadata"]
