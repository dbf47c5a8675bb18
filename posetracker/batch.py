"""Whole archives: every video of some files, folders and glob patterns, processed on Ray, resumable.

    from posetracker.batch import BatchSettings, run_batch
    summary = run_batch(["archive/", "extra/*.mp4"], "out/", BatchSettings(formats=("csv", "bvh")))

Each input video is one Ray task (``process_file``, one CPU, one torch thread) that tracks it as
``posetracker process`` would (same :class:`posetracker.session.SessionConfig`) and writes its outputs
under the output folder, mirroring the input tree: ``archive/a/walk.mp4`` -> ``out/a/walk.poses.csv``
(``.poses.json``, ``.poses.bvh`` / ``.poses_person<ID>.bvh``, ...), each file written atomically.

``OUT/manifest.jsonl`` gets one JSON line per finished input, appended by the driver as results
arrive: ``input`` (path), ``rel`` (its place in the output tree), ``size``, ``sha256`` (content),
``model`` (sha256 of the weights file), ``settings`` (hash of :class:`BatchSettings`), ``status``
(``done`` / ``failed``), ``frames``, ``seconds``, ``outputs``, ``error``, ``time``. A re-run skips
an input whose last entry is ``done`` with the same content, model and settings and whose outputs
are all there; it redoes failed, changed and missing ones. Killing the driver loses at most the
inputs in flight; a worker that dies is retried by Ray (``max_retries``). One bad file never stops
the batch: it is recorded with its error, and :func:`run_batch`'s summary counts it. ``cancel`` (a callable
polled by the driver) stops a batch early: what finished is in the manifest, the rest is done by a re-run.

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
    fov_deg: float = 60.0

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
    """{format: output path} of one input: ``OUT/<rel without suffix>.poses<format suffix>``."""
    from posetracker.export import get_exporter

    base = out_dir / rel.parent / f"{rel.stem}.poses"
    return {fmt: base.with_name(base.name + get_exporter(fmt).suffixes[0]) for fmt in formats}


_SESSIONS: dict[str, Any] = {}  # per worker process: one session per settings (the model loads once)


def process_file(path: str, rel: str, out_dir: str, settings: BatchSettings, model: str, sha256: str) -> dict[str, Any]:
    """Track one video (content hash ``sha256``, taken by the driver) and write its outputs (a Ray task's
    body; runs in-process too). Returns its manifest record; any failure is caught and recorded (status
    ``failed``, ``error``), never raised."""
    import torch

    from posetracker.capture import open_source
    from posetracker.export import get_exporter
    from posetracker.session import SessionConfig, TrackingSession

    t0 = time.time()
    record: dict[str, Any] = {"input": str(path), "rel": str(rel), "sha256": sha256, "model": model,
                              "settings": settings.key(), "status": "failed", "frames": 0, "seconds": 0.0,
                              "outputs": [], "error": ""}
    try:
        record["size"] = os.path.getsize(path)
        torch.set_num_threads(1)
        key = json.dumps(asdict(settings), sort_keys=True)
        if key not in _SESSIONS:
            config = SessionConfig(mode=settings.mode, threads=1, fov_deg=settings.fov_deg, max_people=settings.max_people,
                                   refiners=None if settings.refiners is None else tuple(settings.refiners),
                                   tile_grid=settings.tile_grid)
            _SESSIONS[key] = TrackingSession.open(settings.skeleton, settings.weights, config)
        session = _SESSIONS[key]
        with open_source(str(path)) as src:
            seq = session.run(src, fps=src.fps, total=getattr(src, "frame_count", None),
                              metadata={"source": str(path)})
        if "incomplete" in seq.metadata:
            raise RuntimeError(f"the video stops part-way: {seq.metadata['incomplete']}")
        if len(seq) == 0:
            raise RuntimeError("no frame could be read")
        written: list[str] = []
        for fmt, target in output_paths(Path(out_dir), Path(rel), settings.formats).items():
            target.parent.mkdir(parents=True, exist_ok=True)
            written += [str(p) for p in get_exporter(fmt).write(seq, target, force=True)]
        record.update(status="done", frames=len(seq), outputs=written,
                      video_seconds=float(seq.frames[-1].timestamp - seq.frames[0].timestamp) + 1.0 / seq.fps)
    except Exception as exc:  # one bad file never stops the batch: its error goes into the manifest
        record["error"] = f"{type(exc).__name__}: {exc}"
    record["seconds"] = round(time.time() - t0, 3)
    record["time"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    return record


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


def run_batch(inputs: Iterable[str], out_dir: str | Path, settings: BatchSettings = BatchSettings(),
              workers: int | None = None, address: str | None = None, progress: Progress | None = None,
              max_retries: int = 2, cancel: Callable[[], bool] | None = None) -> BatchSummary:
    """Process every video of ``inputs`` into ``out_dir`` on Ray (see the module docstring).

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
    todo, summary = [], BatchSummary()
    for item in items:  # each video is read once here for its hash; the task gets the hash
        if cancel is not None and cancel():
            summary.cancelled = True
            summary.seconds = time.time() - t0
            return summary
        sha = file_sha256(item.path)
        if is_done(previous.get(str(item.path)), sha, model, settings):
            summary.skipped += 1
        else:
            todo.append((item, sha))
    if todo:
        finished = 0
        for rec in _run_on_ray(todo, out, settings, model, workers, address, max_retries, progress, len(todo),
                               cancel):
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


CANCEL_POLL_S = 0.25  # how often run_batch's ``cancel`` is asked while no task finishes


def _run_on_ray(todo: list[tuple[BatchInput, str]], out: Path, settings: BatchSettings, model: str, workers: int | None,
                address: str | None, max_retries: int, progress: Progress | None, total: int,
                cancel: Callable[[], bool] | None = None):
    """Yield each input's record as its task finishes; stop early (cancelling the unfinished tasks) once
    ``cancel()`` is True."""
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
        task = ray.remote(num_cpus=1, max_retries=max_retries)(process_file)
        pending = {task.remote(str(i.path), str(i.rel), str(out), settings, model, sha): (i, sha) for i, sha in todo}
        finished = 0
        while pending:
            if cancel is not None and cancel():
                for ref in pending:  # queued: never runs; running: interrupted (its record is not collected)
                    try:
                        ray.cancel(ref)
                    except Exception:  # noqa: BLE001 - finished meanwhile, or the cluster is gone: nothing to stop
                        pass
                return
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=CANCEL_POLL_S if cancel is not None else None)
            for ref in ready:
                item, sha = pending.pop(ref)
                try:
                    rec = ray.get(ref)
                except Exception as exc:  # the task died for good (its worker killed more than max_retries times)
                    rec = {"input": str(item.path), "rel": str(item.rel), "sha256": sha, "model": model,
                           "settings": settings.key(),
                           "status": "failed", "frames": 0, "seconds": 0.0, "outputs": [],
                           "error": f"worker lost: {type(exc).__name__}: {exc}", "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
                finished += 1
                if progress:
                    progress(rec, finished, total)
                yield rec
    finally:
        if started:
            ray.shutdown()


__all__ = ["BatchError", "BatchInput", "BatchSettings", "BatchSummary", "MANIFEST", "collect_inputs", "is_done",
           "output_paths", "process_file", "read_manifest", "run_batch"]
