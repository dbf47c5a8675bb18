"""Several calibrated cameras live, end to end: what ``posetracker process SRC1 SRC2 ... --mode live --calibration
FILE`` and the app's File > Open several cameras with Live ticked run.

:func:`run_live_sources` opens the sources (``camera:N``, video files, ``lavfi:GRAPH``), makes one live session per
camera (``make_session(fov_deg)``, the camera's calibrated field of view), pays the runtime's first-call costs
before the sources start (:meth:`.live.LiveViews.warm_up`), pairs the sources' frames by time
(:func:`.live_sources.paired_frames`: cameras always, files when ``paced``, else in lock step), fuses each instant
(:class:`.live.LiveViews`) and finishes the result (:func:`.live.live_sequence`) as a
:class:`.process.ViewsResult`, like the offline :func:`.process.process_views`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from posetracker.multiview.calibration import CameraCalibration
from posetracker.multiview.live_sources import PairStats
from posetracker.multiview.one_view import fit_camera
from posetracker.multiview.process import NO_PEOPLE, ViewsError, ViewsResult

# progress(the pairing so far, seconds since the sources started)
LiveProgress = Callable[[PairStats, float], None]


def run_live_sources(sources: Sequence[str], cameras: Sequence[CameraCalibration], make_session: Callable[[float], Any],
                     *, calibration_name: str, paced: bool = False, smoothing: bool = True, rigid_bones: bool = True,
                     heights=None, repair_swaps: bool = False, cancel: Callable[[], bool] | None = None,
                     progress: LiveProgress | None = None, opener: Callable[[str], Any] | None = None,
                     keep_frames: str | Path | None = None) -> ViewsResult:
    """Track ``sources`` (one per camera of ``cameras``, in order; the first the reference) live (module
    docstring). ``smoothing``: the live motion solve of the fused people; ``rigid_bones``, ``heights``,
    ``repair_swaps``: the finishing step's. ``cancel()`` True stops after the instant in hand (the instants so far
    are finished and returned, ``metadata["incomplete"]`` says so); ``progress`` is called after each instant. A
    source failing part-way (a camera unplugged) ends the run: the instants before it are finished and returned,
    ``metadata["incomplete"]`` and ``metadata["failure"]`` say why.
    ``opener``: a source's text -> its FrameSource (default ``capture.open_source``; the app passes its own, which
    its tests point at fake cameras). ``keep_frames``: a folder where each connected camera's paired frames are kept
    as a video (``live_videos.ViewVideos``; ``ViewsResult.kept``), so the result can be played over them; a fault
    there is a warning, the tracking goes on.
    Raises ViewsError (a source or a session that cannot be opened, a source whose frames have another aspect than
    its camera's: code 2; no instant tracked, a source failing before the first: code 1)."""
    from posetracker.capture import CaptureError, open_source
    from posetracker.multiview.fuse import calibrated_fov
    from posetracker.multiview.live import LiveViews, describe_live, live_sequence, run_live_views
    from posetracker.multiview.live_sources import paired_frames
    from posetracker.multiview.live_videos import ViewVideosError
    from posetracker.refiners import RefinerError

    opened = []
    try:
        for spec in sources:
            opened.append((opener or open_source)(spec))
        sessions = [make_session(calibrated_fov(cam)) for cam in cameras]
    except (CaptureError, RefinerError) as exc:
        for s in opened:
            s.close()
        raise ViewsError(str(exc)) from None
    fitted = [fit_camera(c, tuple(s.size)) for s, c in zip(opened, cameras)]
    if other := [n for (c, n), s in zip(fitted, opened) if c.image_size != tuple(s.size)]:  # another aspect
        for s in opened:
            s.close()
        raise ViewsError(f"{other[0]}; set the source to its calibrated size or calibrate it at this one")
    scaled = [n for _, n in fitted if n]  # the same camera scaled: said
    notes: list[str] = []
    cameras = [c for c, _ in fitted]
    paced = paced or any(s.is_live for s in opened)
    kept, keeping = [None] * len(opened), [v for v, s in enumerate(opened) if s.is_live]
    try:
        videos = _keeper(keep_frames, opened, cameras, keeping)
    except ViewVideosError as exc:
        videos, notes = None, [*notes, str(exc)]
    views = LiveViews(sessions, cameras, smoothing=smoothing, rigid_bones=rigid_bones)
    views.warm_up([s.size for s in opened])
    stats, stopped = PairStats(), [False]
    t0 = time.perf_counter()

    def stop() -> bool:
        stopped[0] = bool(cancel and cancel())
        return stopped[0]

    def step(_pose) -> None:
        if progress is not None:
            progress(stats, time.perf_counter() - t0)

    failed: list[CaptureError] = []

    def pairs():  # a source failing part-way (a camera unplugged) ends the pairing: the instants before it are kept
        try:
            for frames in paired_frames(opened, paced, stats):
                if videos is not None:
                    videos.write(frames[0].index, [frames[v].image for v in keeping])
                yield frames
        except CaptureError as exc:
            failed.append(exc)

    try:
        poses = run_live_views(views, pairs(), cancel=stop, on_pose=step)
    finally:
        for s in opened:
            s.close()
        if videos is not None:
            for v, path in zip(keeping, videos.close()):
                kept[v] = str(path) if path.is_file() else None
            notes = [*notes, videos.problem()] if videos.problem() else notes
    seconds = time.perf_counter() - t0
    if not poses:
        raise ViewsError(str(failed[0]) if failed else "no instant was tracked", code=1)
    span = poses[-1].timestamp - poses[0].timestamp
    fps = (len(poses) - 1) / span if paced and span > 0 else float(opened[0].fps or 30.0)
    spread = sorted(stats.spread_ms)
    pairing = {**dataclasses.asdict(stats), "paced": paced, "seconds": round(seconds, 2),
               "instants_per_s": round(stats.instants / seconds, 2),
               "spread_ms": round(float(spread[len(spread) // 2]), 2) if spread else 0.0}  # the median instant's
    seq, warnings = live_sequence(poses, views, fps=fps, sources=[str(s) for s in sources],
                                  calibration_name=calibration_name, pairing=pairing, rigid_bones=rigid_bones,
                                  heights=heights, repair_swaps=repair_swaps)
    if failed:  # kept, with why it stopped (the CLI writes them and exits 1, as for one source)
        seq.metadata["incomplete"] = f"{failed[0]} (the {len(seq)} instants before it are kept)"
        seq.metadata["failure"] = str(failed[0])
    elif stopped[0]:
        seq.metadata["incomplete"] = f"stopped after {len(seq)} instants"
    if videos is not None:  # where each camera's frames are (frame i = the instant of index i)
        seq.metadata["multiview"]["kept_frames"] = {"rate": videos.rate,
                                                    "files": {cameras[v].name: kept[v] for v in keeping}}
    people = len(seq.track_ids())
    lines = [*scaled, *describe_live(seq.metadata["multiview"]["people"]),
             f"{len(seq)} instants in {seconds:.1f} s ({stats.instants / seconds:.1f} per s; frames dropped per "
             f"source {stats.dropped}; {'paired by time' if paced else 'in lock step'}), {len(cameras)} views, "
             f"{people} {'person' if people == 1 else 'people'} in 3-D"]
    nobody = [] if people else [NO_PEOPLE]  # written as asked, but said, as offline
    return ViewsResult([str(s) for s in sources], seq, nobody + notes + warnings, list(cameras), [0] * len(cameras),
                       lines, kept if videos is not None else None)


def _keeper(folder, opened, cameras, keeping):
    """The ViewVideos keeping the ``keeping`` sources' frames in ``folder`` (None: no folder, or no camera)."""
    from posetracker.multiview.live_videos import ViewVideos

    if folder is None or not keeping:
        return None
    return ViewVideos(folder, [cameras[v].name for v in keeping], [tuple(opened[v].size) for v in keeping],
                      float(opened[0].fps or 30.0))


__all__ = ["LiveProgress", "fit_camera", "run_live_sources"]
