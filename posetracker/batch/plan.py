"""What a batch does: its settings, its inputs (files, folders, globs), their output paths and hashes, and
how a long video is cut into chunks (see :mod:`posetracker.batch`)."""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

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
    height: str | None = None  # people's statures as ``posetracker process --height`` takes them (motion.heights)

    def __post_init__(self) -> None:
        if self.fov_deg != "auto" and (isinstance(self.fov_deg, str) or not 0.0 < float(self.fov_deg) < 180.0):
            raise ValueError(f"fov_deg is degrees in (0, 180) or 'auto', got {self.fov_deg!r}")
        if self.chunk_s < 0 or self.chunk_overlap_s < 0:
            raise ValueError("chunk_s and chunk_overlap_s must be >= 0 (chunk_s 0: never split a video)")
        if self.chunk_s > 0 and not 0 < self.chunk_overlap_s < self.chunk_s:
            raise ValueError("chunks need an overlap: 0 < chunk_overlap_s < chunk_s")
        from posetracker.motion.heights import parse_heights

        parse_heights(self.height)  # HeightError (a ValueError) for a height that is no stature in metres

    def key(self) -> str:
        """16 hex digits naming these settings (the weights are named by their content, see ``model``; no height
        given leaves the key as it was before heights existed, so earlier manifests resume)."""
        doc = {k: v for k, v in asdict(self).items() if k != "weights" and not (k == "height" and v is None)}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BatchInput:
    """One video: its path and its place in the output tree (relative, with its suffix)."""

    path: Path
    rel: Path


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
    """sha256 (16 hex digits) of the weights file the settings use (the driver does not import torch)."""
    from posetracker.resources import default_weights_path

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
