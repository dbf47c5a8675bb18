"""Whole archives: every video of some files, folders and glob patterns, processed on Ray, resumable.

    from posetracker.batch import BatchSettings, run_batch
    summary = run_batch(["archive/", "extra/*.mp4"], "out/", BatchSettings(formats=("csv", "bvh")))

Each input video is tracked as ``posetracker process`` would (same :class:`posetracker.session.SessionConfig`)
and its outputs written under the output folder, mirroring the input tree: ``archive/a/walk.mp4`` ->
``out/a/walk.poses.csv`` (``.poses.json``, ``.poses.bvh`` / ``.poses_person<ID>.bvh``, ...), each file written
atomically. Every task takes one CPU and runs torch on one thread.

- A video up to ``BatchSettings.chunk_s`` long (default 300 s), or any video in live mode, is one Ray task,
  :func:`process_file`.
- A longer one (offline; its header must state its frame count) is split into :class:`Chunk` s of about
  ``chunk_s``. Each chunk is a :func:`track_chunk` task that seeks to its start less ``chunk_overlap_s``
  (default 2 s) and tracks on to its end plus as much again, on its own (ids from 0). A
  :func:`finish_chunks` task, started by Ray once they are done, joins them (``tracking.join.join_parts``):
  each frame comes from the chunk whose own part holds it, tracks are matched in the overlaps (mean OKS,
  Hungarian) so a person keeps one id and no id names two people, left/right sides are made to agree, and bone
  lengths are set over the whole video. It then writes the outputs as for a video in one piece. Poses equal a
  one-piece run's in the first chunk away from its end and differ by ~1e-4 px elsewhere (the network's state
  starts afresh at each chunk), except where a per-frame decision goes the other way on such a near-tie (the
  tracker swapping back a close left/right pair, a joint at a confidence cut-off): then a joint moves by a few
  pixels over a smoothing window. The default overlap spans the smoothing window (0.35 s), the tracker's
  confirmation (3 frames) and, at 30 fps or more, the far-depth blend's 60-frame history (a shorter overlap
  moves far people's depth).

``OUT/manifest.jsonl`` gets one JSON line per finished input (chunked or not), appended by the driver as results
arrive: ``input`` (path), ``rel`` (its place in the output tree), ``size``, ``sha256`` (content),
``model`` (sha256 of the weights file), ``settings`` (hash of :class:`BatchSettings`), ``status``
(``done`` / ``failed``), ``frames``, ``chunks``, ``seconds`` (its tasks' time, summed), ``outputs``, ``error``,
``time``. A re-run skips an input whose last entry is ``done`` with the same content, model and settings and
whose outputs are all there; it redoes failed, changed and missing ones. Killing the driver loses at most the
inputs in flight; a worker that dies is retried by Ray (``max_retries``). One bad file never stops the batch:
it is recorded with its error (a failed chunk fails its input, with the chunk's error), and :func:`run_batch`'s
summary counts it. ``cancel`` (a callable polled by the driver) stops a batch early: what finished is in the
manifest, the rest is done by a re-run.

Progress: ``progress`` is called with each input's record as it arrives; ``frame_progress`` with the frames
tracked so far, which the tasks report to a :class:`FrameCounter` actor every ``REPORT_S`` (per frame, not
per chunk), polled by the driver.

Ray runs locally by default (``ray.init`` with ``workers`` CPUs) or joins a cluster at ``address``
(``ray://HOST:PORT`` or ``RAY_ADDRESS``); nothing else changes. Ray is the ``batch`` extra
(``pip install "posetracker[batch]"``).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from posetracker.defaults import DEFAULT_MAX_PEOPLE

VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg", ".ts", ".gif", ".wmv", ".flv")
MANIFEST = "manifest.jsonl"


class BatchError(RuntimeError):
    """The batch cannot start (no inputs, Ray missing or unreachable, output folder unusable)."""


@dataclass(frozen=True)
class BatchSettings:
    """What every input is processed with (the same meaning as ``posetracker process``'s options)."""

    formats: tuple[str, ...] = ("csv",)
    mode: str = "offline"
    skeleton: str = "human18"
    weights: str | None = None  # None: the shipped model of the skeleton
    max_people: int = DEFAULT_MAX_PEOPLE
    refiners: tuple[str, ...] | None = None
    tile_grid: int | None = None
    fov_deg: float | str = "auto"  # degrees across the long side, or "auto": the file's tag, else the people's estimate
    chunk_s: float = 300.0  # offline: a longer video is split into chunks of about this length (0: never)
    chunk_overlap_s: float = 2.0  # each chunk also tracks this much of its neighbours, to join them on

    def __post_init__(self) -> None:
        if self.fov_deg != "auto" and (isinstance(self.fov_deg, str) or not 0.0 < float(self.fov_deg) < 180.0):
            raise ValueError(f"fov_deg is degrees in (0, 180) or 'auto', got {self.fov_deg!r}")
        if self.chunk_s < 0 or self.chunk_overlap_s < 0:
            raise ValueError("chunk_s and chunk_overlap_s must be >= 0 (chunk_s 0: never split a video)")
        if self.chunk_s > 0 and not 0 < self.chunk_overlap_s < self.chunk_s:
            raise ValueError("chunks need an overlap: 0 < chunk_overlap_s < chunk_s")

    def key(self) -> str:
        """16 hex digits naming these settings (the weights are named by their content, see ``model``)."""
        doc = {k: v for k, v in asdict(self).items() if k != "weights"}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BatchInput:
    """One video: its path and its place in the output tree (relative, with its suffix)."""

    path: Path
    rel: Path


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


def collect_inputs(inputs: Iterable[str]) -> list[BatchInput]:
    """Videos of ``inputs`` (files, folders searched recursively, glob patterns), each once, sorted.

    A folder's videos keep their path below it; a file or a glob match keeps its name (a pattern keeps
    the path below its fixed leading part). Raises BatchError for an input that matches nothing.
    """
    found: dict[Path, Path] = {}
    for spec in inputs:
        p = Path(spec)
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.suffix.lower() in VIDEO_SUFFIXES:
                    found.setdefault(f.resolve(), f.relative_to(p))
        elif p.is_file():
            found.setdefault(p.resolve(), Path(p.name))
        elif glob.has_magic(spec):
            fixed = Path(spec).parts[:_fixed_parts(spec)]
            root = Path(*fixed) if fixed else Path()
            matches = [Path(m) for m in sorted(glob.glob(spec, recursive=True)) if Path(m).is_file()]
            if not matches:
                raise BatchError(f"no file matches {spec!r}")
            for m in matches:
                found.setdefault(m.resolve(), m.relative_to(root))
        else:
            raise BatchError(f"input not found: {spec}")
    rels: dict[Path, Path] = {}
    for path, rel in found.items():  # two inputs on one output name: keep them apart
        if rel in rels.values():
            rel = rel.with_name(f"{rel.stem}-{hashlib.sha256(str(path).encode()).hexdigest()[:6]}{rel.suffix}")
        rels[path] = rel
    return sorted((BatchInput(p, r) for p, r in rels.items()), key=lambda b: str(b.rel))


def _fixed_parts(pattern: str) -> int:
    """Number of leading path parts of a glob pattern without a wildcard."""
    n = 0
    for part in Path(pattern).parts:
        if glob.has_magic(part):
            break
        n += 1
    return n


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def model_hash(settings: BatchSettings) -> str:
    """sha256 (16 hex digits) of the weights file the settings use."""
    from posetracker.model.weights import default_weights_path

    path = Path(settings.weights) if settings.weights else default_weights_path(settings.skeleton)
    if not path.is_file():
        raise BatchError(f"model weights not found: {path}")
    return file_sha256(path)[:16]


def output_paths(out_dir: Path, rel: Path, formats: Iterable[str]) -> dict[str, Path]:
    """{format: output path} of one input: ``OUT/<rel without suffix>.poses<the format's name suffix>``
    (``walk.poses.csv``, ``walk.poses.json``, ``walk.poses.gait.csv``: formats that share a file suffix get
    their own, ``export.default_name_suffix``)."""
    from posetracker.export import default_name_suffix

    base = out_dir / rel.parent / f"{rel.stem}.poses"
    return {fmt: base.with_name(base.name + default_name_suffix(fmt).removeprefix(".poses")) for fmt in formats}


@dataclass(frozen=True)
class Chunk:
    """Part ``index`` of a video: its own frames [start, stop) (``stop`` None: to the end of the video), tracked
    over [first, last), i.e. with ``overlap`` frames of each neighbour, where the join matches the tracks."""

    index: int
    start: int
    stop: int | None
    overlap: int = 0

    @property
    def first(self) -> int:
        return max(0, self.start - self.overlap)

    @property
    def last(self) -> int | None:
        return None if self.stop is None else self.stop + self.overlap


WHOLE = Chunk(0, 0, None)  # a video tracked in one piece


def video_length(path: str | Path) -> tuple[int | None, bool, float]:
    """(frame count, whether the header states it exactly, fps) of a video; (None, False, 0.0) when it cannot
    be opened (its task then reports why)."""
    from posetracker.capture import CaptureError, VideoFileSource

    try:
        with VideoFileSource(path) as src:
            return src.frame_count, src.frame_count_exact, src.fps
    except (CaptureError, OSError, ValueError):
        return None, False, 0.0


def plan_chunks(frame_count: int | None, fps: float, settings: BatchSettings) -> list[Chunk]:
    """The chunks of a video of ``frame_count`` frames (its exact count; None: unknown) at ``fps``.

    Offline, a video longer than ``settings.chunk_s`` is split into ``ceil(length / chunk_s)`` chunks of
    equal length, each with ``chunk_overlap_s`` (at least one frame) of its neighbours on both sides; otherwise
    (live mode, ``chunk_s`` 0, an unknown or estimated frame count) it is one chunk, :data:`WHOLE`.
    """
    if settings.mode != "offline" or settings.chunk_s <= 0 or not frame_count or fps <= 0:
        return [WHOLE]
    n = -(-frame_count // max(1, round(settings.chunk_s * fps)))
    if n <= 1:
        return [WHOLE]
    overlap = max(1, round(settings.chunk_overlap_s * fps))
    cuts = [round(i * frame_count / n) for i in range(n)] + [None]
    return [Chunk(i, cuts[i], cuts[i + 1], overlap) for i in range(n)]


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


def _camera_before(path: str, settings: BatchSettings):
    """The field of view to track ``path`` with (as ``posetracker process``): given, or its file's tag with
    ``fov_deg="auto"``; None: auto without a tag (tracked at the default, estimated from the people after)."""
    from posetracker.depth.camera_meta import CameraFov, fov_from_metadata

    if settings.fov_deg != "auto":
        return CameraFov(float(settings.fov_deg), "user", "--fov")
    return fov_from_metadata(path)


def _camera_after(seq, camera_dict: dict[str, Any] | None):
    """(sequence, CameraFov) of a whole video once tracked: the camera it was tracked with, or (auto without a
    tag) the people's estimate, the sequence re-lifted with it (bones rigid again)."""
    from posetracker.analysis.camera_fov import DEFAULT_FOV_DEG, fov_after_tracking
    from posetracker.depth.camera_meta import CameraFov

    if camera_dict is not None:
        return seq, CameraFov(**camera_dict)
    return fov_after_tracking(seq, DEFAULT_FOV_DEG, rigid_bones=True)


def _session(settings: BatchSettings, fov_deg: float):
    """This worker's TrackingSession for ``settings`` and a camera of ``fov_deg``. Its bones are not made rigid
    (``rigid_bones`` False): one length per bone over the whole recording is ``tracking.join.join_parts``' step,
    once the chunks are one."""
    from posetracker.session import SessionConfig, TrackingSession

    config = SessionConfig(mode=settings.mode, threads=1, fov_deg=fov_deg, max_people=settings.max_people,
                           refiners=None if settings.refiners is None else tuple(settings.refiners),
                           tile_grid=settings.tile_grid, rigid_bones=False)
    key = (settings.skeleton, settings.weights, config)
    if key not in _SESSIONS:
        _SESSIONS[key] = TrackingSession.open(settings.skeleton, settings.weights, config)
    return _SESSIONS[key]


def track_chunk(path: str, settings: BatchSettings, chunk: Chunk = WHOLE, counter: Any = None) -> dict[str, Any]:
    """Track frames [chunk.first, chunk.last) of a video on their own (a Ray task's body; runs in-process too):
    seek to ``chunk.first``, stop before ``chunk.last``. ``counter``: a FrameCounter actor told the frames done.

    Returns {"sequence": the PoseSequence (ids from 0, bones not yet rigid) or None, "camera": the CameraFov it
    was tracked with as a dict (None: ``fov_deg`` auto and no tag: the default, estimated once joined), "seconds",
    "error"}; a
    failure is caught and returned in ``error``, never raised. A chunk that starts past the end of the video
    (its header's count was high) comes back empty, without an error.
    """
    import torch

    from posetracker.analysis.camera_fov import DEFAULT_FOV_DEG
    from posetracker.capture import open_source

    t0 = time.time()
    result: dict[str, Any] = {"sequence": None, "camera": None, "seconds": 0.0, "error": ""}
    report = None if counter is None else _FrameReporter(counter, (str(path), chunk.index), chunk)
    try:
        torch.set_num_threads(1)
        camera = _camera_before(path, settings)
        result["camera"] = None if camera is None else camera.as_dict()
        session = _session(settings, DEFAULT_FOV_DEG if camera is None else camera.fov_deg)
        with open_source(str(path)) as src:
            try:
                if chunk.first > 0:
                    src.seek(chunk.first)
            except IndexError:
                frames: Iterable = ()
            else:
                frames = src if chunk == WHOLE else _frames_before(src, chunk.last)
            total = getattr(src, "frame_count", None) if chunk.last is None else chunk.last - chunk.first
            seq = session.run(frames, fps=src.fps, total=total, progress=report, metadata={"source": str(path)})
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
    record: ``failed`` with the first failed chunk's error, if any; ``seconds`` is the chunks' time and its own."""
    from posetracker.export import get_exporter
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
        seq, camera = _camera_after(seq, results[0].get("camera"))
        seq.metadata["camera"] = camera.as_dict()
        written: list[str] = []
        for fmt, target in output_paths(Path(out_dir), Path(rel), settings.formats).items():
            target.parent.mkdir(parents=True, exist_ok=True)
            written += [str(p) for p in get_exporter(fmt).write(seq, target, force=True)]
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


def read_manifest(out_dir: str | Path) -> dict[str, dict[str, Any]]:
    """{input path: its last record} of ``OUT/manifest.jsonl`` (a cut-off last line is ignored)."""
    path = Path(out_dir) / MANIFEST
    last: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            last[rec.get("input", "")] = rec
    return last


def is_done(rec: dict[str, Any] | None, sha256: str, model: str, settings: BatchSettings) -> bool:
    """The record says this input is processed already, as it is now, and its outputs are still there."""
    return bool(rec and rec.get("status") == "done" and rec.get("sha256") == sha256 and rec.get("model") == model
                and rec.get("settings") == settings.key() and all(Path(p).exists() for p in rec.get("outputs", [])))


def _append(out_dir: Path, record: dict[str, Any]) -> None:
    with open(out_dir / MANIFEST, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


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
            _append(out, rec)
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
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"address": address} if address else {"num_cpus": workers or os.cpu_count() or 1}
        try:
            ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR", **kwargs)
        except Exception as exc:
            raise BatchError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {exc}") from None
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


__all__ = ["WHOLE", "BatchError", "BatchInput", "BatchSettings", "BatchSummary", "Chunk", "FrameCounter", "MANIFEST",
           "collect_inputs", "finish_chunks", "is_done", "output_paths", "plan_chunks",
           "process_file", "read_manifest", "run_batch", "track_chunk", "video_length"]
