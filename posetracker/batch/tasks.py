"""The worker side of a batch: Ray tasks that track a video or a chunk of it, join the chunks and write the
outputs, and the actor that counts the frames done (see :mod:`posetracker.batch`)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from posetracker.batch.plan import WHOLE, BatchSettings, Chunk, output_paths


class FrameCounter:
    """Frames tracked so far (a Ray actor, one per batch): each task ``set``s its own count under its key (a
    retried task counts again from 0 under the same key), the driver asks the ``total``."""

    def __init__(self) -> None:
        self._frames: dict[Any, int] = {}

    def set(self, key: Any, frames: int) -> None:
        self._frames[key] = int(frames)

    def total(self) -> int:
        return sum(self._frames.values())


REPORT_S = 0.5  # a task tells the FrameCounter its frames at most this often


class _FrameReporter:
    """``session.run``'s progress (frames read of the chunk's range) -> ``counter.set(key, frames of the
    chunk's own part done)``, at most every REPORT_S and once at the end (``close``, waited for: when the task's
    result is there, so is its count)."""

    def __init__(self, counter: Any, key: Any, chunk: Chunk):
        self.counter, self.key = counter, key
        self.skip = chunk.start - chunk.first  # leading frames of the previous chunk
        self.size = None if chunk.stop is None else chunk.stop - chunk.start
        self.done, self.sent = 0, 0.0

    def __call__(self, read: int, total: int | None = None) -> None:
        own = max(0, read - self.skip)
        self.done = own if self.size is None else min(own, self.size)
        if time.monotonic() - self.sent >= REPORT_S:
            self.counter.set.remote(self.key, self.done)
            self.sent = time.monotonic()

    def close(self) -> None:
        import ray

        ray.get(self.counter.set.remote(self.key, self.done))


_SESSIONS: dict[Any, Any] = {}  # per worker process: one session per settings (the model loads once)


def _session(settings: BatchSettings, fov_deg: float):
    """This worker's TrackingSession for ``settings`` and a camera of ``fov_deg``. Its bones are not made rigid
    (``rigid_bones`` False): one length per bone over the whole recording is ``tracking.join.join_parts``' step,
    once the chunks are one."""
    from posetracker.session import (
        DepthSettings, MotionSettings, NetworkSettings, PeopleSettings, RefineSettings, SessionConfig, TrackingSession,
    )

    config = SessionConfig(mode=settings.mode, network=NetworkSettings(threads=1),
                           people=PeopleSettings(max_people=settings.max_people),
                           refine=RefineSettings(refiners=None if settings.refiners is None else tuple(settings.refiners),
                                                 tile_grid=settings.tile_grid),
                           motion=MotionSettings(rigid_bones=False), depth=DepthSettings(fov_deg=fov_deg))
    key = (settings.skeleton, settings.weights, config)
    if key not in _SESSIONS:
        _SESSIONS[key] = TrackingSession.open(settings.skeleton, settings.weights, config)
    return _SESSIONS[key]


def track_chunk(path: str, settings: BatchSettings, chunk: Chunk = WHOLE, counter: Any = None) -> dict[str, Any]:
    """Track frames [chunk.first, chunk.last) of a video on their own (a Ray task's body; runs in-process too):
    seek to ``chunk.first``, stop before ``chunk.last``. ``counter``: a FrameCounter actor told the frames done.

    Returns {"sequence": the PoseSequence (ids from 0, bones not yet rigid) or None, "camera": the CameraFov it
    was tracked with (``motion.finish.camera_before``; None: ``fov_deg`` auto and no tag: tracked with the
    default, estimated once joined), "seconds", "error"}; a failure is caught and returned in ``error``, never
    raised. A chunk that starts past the end of the video
    (its header's count was high) comes back empty, without an error.
    """
    import torch

    from posetracker.capture import open_source
    from posetracker.motion.finish import camera_before, fov_to_track, source_metadata

    t0 = time.time()
    result: dict[str, Any] = {"sequence": None, "camera": None, "seconds": 0.0, "error": ""}
    report = None if counter is None else _FrameReporter(counter, (str(path), chunk.index), chunk)
    try:
        torch.set_num_threads(1)
        camera = camera_before(path, settings.fov_deg)
        result["camera"] = camera
        session = _session(settings, fov_to_track(camera))
        with open_source(str(path)) as src:
            try:
                if chunk.first > 0:
                    src.seek(chunk.first)
            except IndexError:
                frames: Iterable = ()
            else:
                frames = src if chunk == WHOLE else _frames_before(src, chunk.last)
            total = getattr(src, "frame_count", None) if chunk.last is None else chunk.last - chunk.first
            seq = session.run(frames, fps=src.fps, total=total, progress=report,
                              metadata=source_metadata(path, src.size, session))
        if "incomplete" in seq.metadata:
            raise RuntimeError(f"the video stops part-way: {seq.metadata['incomplete']}")
        result["sequence"] = seq
        if report is not None:
            report.close()
    except Exception as exc:  # one bad file never stops the batch: its error goes into the manifest
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["seconds"] = time.time() - t0
    return result


def _frames_before(src: Iterable, last: int | None) -> Iterable:
    """The frames of ``src`` (a FrameSource, already at the chunk's first frame) with index below ``last``."""
    for frame in src:
        if last is not None and frame.index >= last:
            return
        yield frame


def process_file(path: str, rel: str, out_dir: str, settings: BatchSettings, model: str, sha256: str,
                 counter: Any = None) -> dict[str, Any]:
    """Track one video in one piece (content hash ``sha256``, taken by the driver) and write its outputs (a Ray
    task's body; runs in-process too). ``counter``: a FrameCounter actor told the frames done. Returns its
    manifest record; any failure is caught and recorded (status ``failed``, ``error``), never raised."""
    return finish_chunks(path, rel, out_dir, settings, model, sha256, [WHOLE], track_chunk(path, settings, WHOLE,
                                                                                            counter))


def finish_chunks(path: str, rel: str, out_dir: str, settings: BatchSettings, model: str, sha256: str,
                  chunks: list[Chunk], *results: dict[str, Any]) -> dict[str, Any]:
    """Join a video's chunks (``results``: :func:`track_chunk`'s, in order) and write its outputs, atomically
    each, as for a video tracked in one piece (a Ray task's body; runs in-process too). Returns its manifest
    record: ``failed`` with the first failed chunk's error, if any; ``seconds`` is the chunks' time and its own;
    ``warnings``, where there are any: the finishing step's (``motion.finish``: ids that may have swapped) and the
    exports' (a person a format could not take)."""
    from posetracker.export import get_exporter, write_reporting
    from posetracker.motion.finish import finish_sequence
    from posetracker.motion.heights import parse_heights
    from posetracker.tracking.join import join_parts

    t0 = time.time()
    record: dict[str, Any] = {"input": str(path), "rel": str(rel), "sha256": sha256, "model": model,
                              "settings": settings.key(), "status": "failed", "frames": 0, "seconds": 0.0,
                              "chunks": len(chunks), "outputs": [], "error": ""}
    try:
        record["size"] = os.path.getsize(path)
        for k, (chunk, res) in enumerate(zip(chunks, results)):
            if res["error"]:
                where = "" if len(chunks) == 1 else f"chunk {k + 1} of {len(chunks)} (from frame {chunk.first}): "
                raise _ChunkFailed(where + res["error"])
        seq = join_parts([r["sequence"] for r in results], [c.start for c in chunks])
        # as posetracker process finishes it (bones rigid since the join; no swap repair: process's default)
        seq, warnings = finish_sequence(seq, results[0].get("camera"), rigid_bones=True,
                                        heights=parse_heights(settings.height))
        written: list[str] = []
        for fmt, target in output_paths(Path(out_dir), Path(rel), settings.formats).items():
            target.parent.mkdir(parents=True, exist_ok=True)
            files, warned = write_reporting(get_exporter(fmt), seq, target, force=True)
            written += [str(p) for p in files]
            warnings = [*warnings, *warned]  # a person a format could not take (BVH: a joint never seen)
        if warnings:
            record["warnings"] = warnings
        record.update(status="done", frames=len(seq), outputs=written,
                      video_seconds=float(seq.frames[-1].timestamp - seq.frames[0].timestamp) + 1.0 / seq.fps)
    except _ChunkFailed as exc:
        record["error"] = str(exc)
    except Exception as exc:  # one bad file never stops the batch: its error goes into the manifest
        record["error"] = f"{type(exc).__name__}: {exc}"
    record["seconds"] = round(time.time() - t0 + sum(float(r.get("seconds", 0.0)) for r in results), 3)
    record["time"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    return record


class _ChunkFailed(Exception):
    """A chunk's own error (already 'Type: message'), passed on as it is."""
