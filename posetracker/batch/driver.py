"""The driver of a batch: :func:`run_batch` hashes the inputs, skips what the manifest has done, submits the
rest to Ray and records each result as it arrives (see :mod:`posetracker.batch`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from posetracker.batch.manifest import append_record, is_done, read_manifest
from posetracker.batch.plan import (WHOLE, BatchError, BatchInput, BatchSettings, Chunk, collect_inputs,
                                    file_sha256, model_hash, plan_chunks, video_length)
from posetracker.batch.ray_start import start_ray
from posetracker.batch.tasks import FrameCounter, finish_chunks, process_file, track_chunk


@dataclass
class BatchSummary:
    """How a batch went: counts, and the manifest records of the failed inputs."""

    done: int = 0
    skipped: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    frames: int = 0
    seconds: float = 0.0  # wall time of the whole batch
    video_seconds: float = 0.0  # duration of the processed videos
    cancelled: bool = False  # run_batch's ``cancel`` stopped it before every input was processed

    @property
    def ok(self) -> bool:
        return not self.failed



Progress = Callable[[dict[str, Any], int, int], None]  # (record just finished, finished so far, to do)
FrameProgress = Callable[[int, int], None]  # (frames tracked so far, frames of the videos to do)


@dataclass(frozen=True)
class _Work:
    """One input to process: its video, content hash, chunks and header frame count (0: unknown)."""

    item: BatchInput
    sha256: str
    chunks: list[Chunk]
    frames: int


def run_batch(inputs: Iterable[str], out_dir: str | Path, settings: BatchSettings = BatchSettings(),
              workers: int | None = None, address: str | None = None, progress: Progress | None = None,
              max_retries: int = 2, cancel: Callable[[], bool] | None = None,
              frame_progress: FrameProgress | None = None) -> BatchSummary:
    """Process every video of ``inputs`` into ``out_dir`` on Ray (see the module docstring).

    ``progress(record, finished, to do)``: called as each input's record arrives. ``frame_progress(frames,
    total)``: called from the polling loop (at least every ``CANCEL_POLL_S``) when the frames tracked so far
    changed; ``total`` is the sum of the videos' header frame counts. Each task tells a :class:`FrameCounter`
    actor its own frames every ``REPORT_S`` (frames of a chunk's overlap with its neighbours are not counted),
    so the count is per frame, a fraction of a second late; a retried task counts again from 0.

    ``cancel``: polled (from the calling thread) before each input is hashed and, once the tasks are
    submitted, at least every ``CANCEL_POLL_S`` while waiting for them. When it returns True the batch stops:
    no further input is hashed or submitted, the tasks not finished yet are cancelled with ``ray.cancel``
    (a queued one never runs, a running one is interrupted; their outputs may or may not have been written,
    they are not in the manifest, so a re-run redoes them), no further result is collected, and the summary
    so far comes back with ``cancelled=True``. The inputs that finished before are recorded in the manifest
    as usual. A ``cancel`` that is True from the start returns an empty cancelled summary without starting
    Ray. Setup errors (BatchError) are raised as without ``cancel``.
    """
    from posetracker.export import get_exporter

    for fmt in settings.formats:
        get_exporter(fmt)  # an unknown format fails before any work
    t0 = time.time()
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BatchError(f"cannot create the output folder {out}: {exc}") from None
    items = collect_inputs(inputs)
    if not items:
        raise BatchError("no video among the inputs")
    model = model_hash(settings)
    previous = read_manifest(out)
    todo: list[_Work] = []
    summary = BatchSummary()
    for item in items:  # each video is read once here for its hash; the task gets the hash
        if cancel is not None and cancel():
            summary.cancelled = True
            summary.seconds = time.time() - t0
            return summary
        sha = file_sha256(item.path)
        if is_done(previous.get(str(item.path)), sha, model, settings):
            summary.skipped += 1
        else:
            count, exact, fps = video_length(item.path)
            todo.append(_Work(item, sha, plan_chunks(count if exact else None, fps, settings), count or 0))
    if todo:
        finished = 0
        for rec in _run_on_ray(todo, out, settings, model, workers, address, max_retries, progress, cancel,
                               frame_progress):
            finished += 1
            append_record(out, rec)
            if rec["status"] == "done":
                summary.done += 1
                summary.frames += int(rec["frames"])
                summary.video_seconds += float(rec.get("video_seconds", 0.0))
            else:
                summary.failed.append(rec)
        summary.cancelled = finished < len(todo)  # only a cancel ends the results early
    summary.seconds = time.time() - t0
    return summary


CANCEL_POLL_S = 0.25  # how often run_batch's ``cancel`` and the frame count are asked while no task finishes


def _submit(tasks: tuple[Any, Any, Any], work: _Work, out: Path, settings: BatchSettings, model: str,
            counter: Any) -> list[Any]:
    """Start an input's tasks (``tasks``: ``process_file``, ``track_chunk`` and ``finish_chunks`` as Ray remote
    functions); returns their refs, the one whose result is its record last. A video in one piece is one
    ``process_file`` task; a chunked one a ``track_chunk`` task per chunk and a ``finish_chunks`` task that joins
    them (Ray starts it when they are done and passes it their results)."""
    whole, track, finish = tasks
    args = (str(work.item.path), str(work.item.rel), str(out), settings, model, work.sha256)
    if work.chunks == [WHOLE]:
        return [whole.remote(*args, counter)]
    parts = [track.remote(args[0], settings, chunk, counter) for chunk in work.chunks]
    return [*parts, finish.remote(*args, work.chunks, *parts)]


def _run_on_ray(todo: list[_Work], out: Path, settings: BatchSettings, model: str, workers: int | None,
                address: str | None, max_retries: int, progress: Progress | None,
                cancel: Callable[[], bool] | None = None, frame_progress: FrameProgress | None = None):
    """Yield each input's record as its task finishes; stop early (cancelling the unfinished tasks) once
    ``cancel()`` is True. With ``frame_progress``, a FrameCounter actor counts the frames tracked."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if not address:  # a local cluster: its processes talk over the loopback interface only (read by Ray when it
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # is first imported: keep `import ray` below)
    try:
        import ray
    except ImportError:
        raise BatchError('posetracker batch runs on Ray: pip install "posetracker[batch]" (or ray)') from None
    started = False
    reaper = None
    if not ray.is_initialized():
        reaper = start_ray(ray, address, workers)
        started = True
    try:
        counter = ray.remote(num_cpus=0)(FrameCounter).remote() if frame_progress is not None else None
        tasks = tuple(ray.remote(num_cpus=1, max_retries=max_retries)(fn) for fn in (process_file, track_chunk,
                                                                                     finish_chunks))
        pending: dict[Any, tuple[_Work, list[Any]]] = {}
        for work in todo:
            refs = _submit(tasks, work, out, settings, model, counter)
            pending[refs[-1]] = (work, refs)
        frame_poll = None if counter is None else _FramePoll(ray, counter, frame_progress, sum(w.frames for w in todo))
        poll = CANCEL_POLL_S if cancel is not None or frame_progress is not None else None
        finished = 0
        while pending:
            if cancel is not None and cancel():
                for _, refs in pending.values():  # queued: never runs; running: interrupted (no record collected)
                    for ref in refs:
                        try:
                            ray.cancel(ref)
                        except Exception:  # noqa: BLE001 - finished meanwhile, or the cluster is gone: nothing to stop
                            pass
                return
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=poll)
            if frame_poll is not None:
                frame_poll.poll()
            for ref in ready:
                work, refs = pending.pop(ref)
                try:
                    rec = ray.get(ref)
                except Exception as exc:  # a task died for good (its worker killed more than max_retries times)
                    rec = {"input": str(work.item.path), "rel": str(work.item.rel), "sha256": work.sha256,
                           "model": model, "settings": settings.key(), "status": "failed", "frames": 0,
                           "seconds": 0.0, "chunks": len(work.chunks), "outputs": [],
                           "error": _lost_worker_error(ray, work, refs, exc),
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
                finished += 1
                if progress:
                    progress(rec, finished, len(todo))
                yield rec
        if frame_poll is not None:
            frame_poll.last()
    finally:
        if started:
            ray.shutdown()
        _stop(reaper)


def _stop(reaper) -> None:
    from posetracker.batch.reaper import stop_reaper

    stop_reaper(reaper)


def _lost_worker_error(ray: Any, work: _Work, refs: list[Any], exc: Exception) -> str:
    """The manifest's error for an input whose task, or one of whose chunk tasks, died for good: which chunk
    (the first whose task failed; a chunk's own errors are in its result, not raised), and the cause's first line
    (Ray's message goes on for a page)."""
    where = ""
    if len(refs) > 1:
        for chunk, part in zip(work.chunks, refs[:-1]):
            try:
                ray.get(part, timeout=0)
            except Exception as part_exc:  # noqa: BLE001 - this part is the one lost (or still unknown: skip it)
                if type(part_exc).__name__ != "GetTimeoutError":
                    where, exc = f"chunk {chunk.index + 1} of {len(work.chunks)} (from frame {chunk.first}): ", part_exc
                    break
    cause = getattr(exc, "cause", None) or exc  # a RayTaskError wraps the worker's own exception
    first = (str(cause).strip().splitlines() or [""])[0]
    return f"{where}worker lost: {type(cause).__name__}: {first}"


class _FramePoll:
    """The FrameCounter's total for ``frame_progress(frames, total)``, asked without holding up the driver's loop:
    ``poll`` reports an answer that came in (when it changed) and asks again; ``last`` waits for a final one."""

    def __init__(self, ray: Any, counter: Any, frame_progress: FrameProgress, total: int):
        self.ray, self.counter, self.frame_progress, self.total = ray, counter, frame_progress, total
        self.asked = counter.total.remote()
        self.seen = -1

    def poll(self) -> None:
        try:
            ready, _ = self.ray.wait([self.asked], timeout=0)
            if ready:
                self._report(self.ray.get(self.asked))
                self.asked = self.counter.total.remote()
        except Exception:  # noqa: BLE001 - the count is only for show: a lost counter stops the reports
            pass

    def last(self) -> None:
        try:
            self._report(self.ray.get(self.counter.total.remote(), timeout=10))
        except Exception:  # noqa: BLE001 - as in poll
            pass

    def _report(self, frames: int) -> None:
        if frames != self.seen:
            self.seen = int(frames)
            self.frame_progress(self.seen, self.total)
