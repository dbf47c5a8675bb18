"""User-trained animal modes: train a detector from the user's own labels, score it, install it as a mode.

    from posetracker.train.user_mode import create_user_mode, user_modes
    result = create_user_mode("flies.slp", "flies", steps=400, progress=print_progress)  # import, train, install
    [m.name for m in user_modes()]                                                       # ['flies']

The pieces, usable one by one (what ``posetracker import-labels`` + ``train detector`` + ``train
held-out-eval`` do on the command line):

- :func:`~posetracker.train.detector_run.train_detector`: the shared training of ``posetracker train
  detector`` (samples, FPN + heads + graph refiner jointly, the detector and its graph refiner saved side
  by side);
- :func:`train_user_mode`: that, then the heatmap refiner (method B) on the frozen detector (``train refiner
  --kind heatmap``), the held-out report (no refiner, each refiner, both) written beside the weights as
  ``report.json``, and the combination that read the held-out frames better than none
  (``detector_run.helping_refiners``) made the mode's default (``refiners:`` in its skeleton YAML, as the
  shipped modes have it); with progress and cancel for the app;
- :func:`install_user_mode`: an import folder's skeleton, weights, refiners and report -> a mode folder.

The user modes folder (:func:`user_modes_dir`): ``$POSETRACKER_MODES`` or ``~/.local/share/posetracker/modes``::

    <modes>/<name>/
        <name>.yaml                        the skeleton (its ``name:`` is <name>)
        posenet-<name>.safetensors         the detector: written LAST, a mode is listed once it is there
        refiner-graph-<name>.safetensors   its graph refiner (read beside the weights, like models/)
        refiner-heatmap-<name>.safetensors its heatmap refiner
        report.json                        held-out scores, steps, sizes, source project
        training/                          (modes made by create_user_mode) the import: normalized.json,
                                           train.yaml, <name>.yaml, for ``posetracker train ... --config
                                           <modes>/<name>/training/train.yaml`` (writes into training/)

A session opens a mode with ``TrackingSession.open(str(mode.skeleton), mode.weights, config)``: the
skeleton is loaded from its YAML path and the refiners are read from the weights' folder.

No Qt here: the app (ui/train_dialog.py) runs :func:`create_user_mode` in a worker thread.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from posetracker.train.detector_run import (  # noqa: F401 - TrainingCancelled, TrainingError: this API's errors too
    REPORT_REFINERS, Cancel, Log, Progress, TrainingCancelled, TrainingError, _stderr, detector_samples, held_out_report,
    helping_refiners, load_training, train_detector, train_refiner,
)

REPORT = "report.json"
TRAINING = "training"  # the import's folder inside a mode made by create_user_mode


@dataclass(frozen=True)
class UserMode:
    """A trained mode in the user modes folder."""

    name: str
    folder: Path
    skeleton: Path  # <folder>/<name>.yaml
    weights: Path  # <folder>/posenet-<name>.safetensors
    report: dict = field(default_factory=dict, compare=False)


@dataclass
class UserModeResult:
    """A trained (and, from :func:`create_user_mode`, installed) mode: files, scores, loss history."""

    name: str
    weights: Path
    refiner: Path  # the graph refiner, trained with the detector
    report: dict
    report_path: Path
    history: list[dict[str, float]] = field(default_factory=list)
    mode: UserMode | None = None  # set once installed


def _plain(value: Any) -> Any:
    """``value`` with NaN / infinite floats as None (report.json is strict JSON: a mode that found nothing
    has no pixel error)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ---------------------------------------------------------------------------------------- the modes folder


def user_modes_dir() -> Path:
    """``$POSETRACKER_MODES`` or ``~/.local/share/posetracker/modes`` (not created here)."""
    env = os.environ.get("POSETRACKER_MODES")
    return Path(env).expanduser() if env else Path.home() / ".local" / "share" / "posetracker" / "modes"


def _mode_files(folder: Path, name: str) -> tuple[Path, Path]:
    return folder / f"{name}.yaml", folder / f"posenet-{name}.safetensors"


def _read_report(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_user_mode(folder: str | Path) -> UserMode | None:
    """The mode in ``folder`` (named after it), or None when it has no skeleton or no weights (yet)."""
    folder = Path(folder)
    skeleton, weights = _mode_files(folder, folder.name)
    if not (skeleton.is_file() and weights.is_file()):
        return None
    return UserMode(folder.name, folder, skeleton, weights, _read_report(folder / REPORT))


def user_modes(modes_dir: str | Path | None = None) -> list[UserMode]:
    """Every complete mode in ``modes_dir`` (default :func:`user_modes_dir`), by name; never raises."""
    root = Path(modes_dir) if modes_dir is not None else user_modes_dir()
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []
    return [m for m in map(read_user_mode, folders) if m is not None]


def user_mode_for(skeleton: str | Path) -> UserMode | None:
    """The user mode whose skeleton YAML is ``skeleton`` (a path), else None (a shipped name, another file)."""
    path = Path(skeleton)
    if path.suffix not in (".yaml", ".yml"):
        return None
    mode = read_user_mode(path.parent)
    return mode if mode is not None and mode.skeleton.resolve() == path.resolve() else None


def mode_name(text: str, modes_dir: str | Path | None = None, exists_ok: bool = False) -> str:
    """``text`` as a mode name (letters, digits, ``_``, ``-``); TrainingError when it is empty, names a
    shipped skeleton or (unless ``exists_ok``) an installed user mode."""
    from posetracker.importers.common import slug
    from posetracker.importers import RESERVED_NAMES
    from posetracker.skeletons import available_skeletons

    if not str(text).strip():
        raise TrainingError("Give the mode a name.")
    name = slug(text)
    if name in RESERVED_NAMES or name == TRAINING:
        raise TrainingError(f"{name!r} cannot be a mode name; choose another.")
    if name in available_skeletons():
        raise TrainingError(f"{name!r} is a mode shipped with PoseTracker; choose another name.")
    root = Path(modes_dir) if modes_dir is not None else user_modes_dir()
    if not exists_ok and read_user_mode(root / name) is not None:
        raise TrainingError(f"A mode called {name!r} already exists in {root}; choose another name.")
    return name


def _place(src: Path, dst: Path, move: bool) -> None:
    """``src`` -> ``dst`` through a temporary file beside ``dst`` and a rename (no half-written ``dst``)."""
    tmp = dst.with_name(dst.name + ".partial")
    if move:
        try:
            os.replace(src, tmp)
        except OSError:  # another file system
            shutil.copy2(src, tmp)
            src.unlink()
    else:
        shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def install_user_mode(import_dir: str | Path, name: str, modes_dir: str | Path | None = None,
                      replace: bool = False, move: bool = False) -> UserMode:
    """Copy (``move``: move) a trained import's ``<name>.yaml``, ``posenet-<name>.safetensors``,
    ``refiner-graph-<name>.safetensors``, ``refiner-heatmap-<name>.safetensors`` (where trained) and ``report.json``
    into ``<modes_dir>/<name>/``. The weights go last, so the mode is listed only once whole. TrainingError when a file is missing or the mode exists
    (unless ``replace``)."""
    from posetracker.refiners import refiner_path

    src = Path(import_dir)
    root = Path(modes_dir) if modes_dir is not None else user_modes_dir()
    folder = root / name
    if not replace and read_user_mode(folder) is not None:
        raise TrainingError(f"A mode called {name!r} already exists in {root}; choose another name.")
    skeleton, weights = _mode_files(src, name)
    refiners = [refiner_path(kind, name, src) for kind in ("graph", "heatmap")]
    missing = [str(p) for p in (skeleton, weights) if not p.is_file()]
    if missing:
        raise TrainingError(f"cannot install mode {name!r}: missing {', '.join(missing)} (train it first)")
    folder.mkdir(parents=True, exist_ok=True)
    _place(skeleton, folder / skeleton.name, move=False)  # the import keeps its skeleton (train.yaml names it)
    for extra in (*refiners, src / REPORT):
        if extra.is_file():
            _place(extra, folder / extra.name, move)
    _place(weights, folder / weights.name, move)
    mode = read_user_mode(folder)
    assert mode is not None
    return mode


# ---------------------------------------------------------------------------------------- training


def train_user_mode(config_path: str | Path, steps: int | None = None, progress: Progress | None = None,
                    cancel: Cancel | None = None, log: Log | None = None, out: str | Path | None = None,
                    threads: int = 1) -> UserModeResult:
    """Train the detector and graph refiner of a ``train detector`` config (:func:`train_detector`), then the
    heatmap refiner on the frozen detector (``heatmap_steps``, or as many of ``steps`` in the config's
    proportion), score them on its held-out frames with each refiner combination and make the one that beats
    none the mode's default (module docstring); writes ``report.json`` beside the weights. ``progress(done,
    total, message)``: per frame while reading features, per training step, per held-out frame. ``cancel()``
    True raises :class:`TrainingCancelled` (between steps, or held-out frames; each weights file is written only
    after its last step, atomically, and those of a run cancelled later are removed: it leaves no detector behind)."""
    import torch

    log = log or _stderr
    previous_threads = torch.get_num_threads()
    try:
        cfg, spec, train_items, val_items, cols = load_training(config_path, threads)
        if cfg.teacher_config:
            raise TrainingError(f"{config_path} trains on teacher-labelled clips; a user mode needs labelled frames")

        def features(done: int, total: int) -> None:
            if cancel is not None and cancel():
                raise TrainingCancelled("cancelled while reading the labelled frames")
            if progress is not None:
                progress(done, total, f"Reading labelled frames: {done} / {total}")

        def stage(what: str):
            def step(done: int, total: int, losses: dict[str, float]) -> None:
                if progress is not None:
                    progress(done, total, f"{what}: step {done} / {total}, loss {losses['loss']:.3f}")
            return step

        kept = {}

        def samples(net):
            kept["data"] = detector_samples(cfg, spec, net, train_items, cols, log, features)
            return kept["data"]

        features(0, len(train_items))
        run = train_detector(cfg, spec, train_items, val_items, cols, steps, out, log, samples,
                             stage("Training"), cancel)
        heatmap_steps = cfg.heatmap_steps if steps is None else max(1, round(steps * cfg.heatmap_steps / cfg.steps))
        try:
            train_refiner(cfg, spec, run.weights, kept["data"], "heatmap", heatmap_steps, log=log,
                          step_progress=stage("Training the heatmap refiner"), cancel=cancel)
            scores = held_out_report(spec, run.weights, val_items, cols, REPORT_REFINERS, threads, progress, cancel,
                                     log) if val_items else {}
        except TrainingCancelled:  # a run cancelled after its detector: no half-trained mode left to install
            for done in (run.weights, run.refiner, run.weights.parent / f"refiner-heatmap-{spec.name}.safetensors"):
                done.unlink(missing_ok=True)
            raise
    finally:
        torch.set_num_threads(previous_threads)
    default = helping_refiners(scores)
    if Path(cfg.skeleton).suffix in (".yaml", ".yml") and Path(cfg.skeleton).is_file():  # an import's skeleton
        set_default_refiners(Path(cfg.skeleton), default)
    report = {
        "name": spec.name, "keypoints": [spec.joint_names[k] for k in spec.labelled_joints],
        "data": str(cfg.data_path), "trained": time.strftime("%Y-%m-%d %H:%M:%S"),
        "steps": len(run.history), "minutes": round(run.minutes, 2), "train_items": run.train_items,
        "samples": run.samples, "held_out_items": len(val_items),
        "final_loss": run.history[-1]["loss"] if run.history else None,
        "heatmap_refiner_steps": heatmap_steps, "held_out": scores, "default_refiners": list(default),
    }
    report = _plain(report)
    path = run.weights.parent / REPORT
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return UserModeResult(spec.name, run.weights, run.refiner, report, path, run.history)


def set_default_refiners(skeleton_yaml: Path, kinds: tuple[str, ...]) -> None:
    """``refiners: {offline: kinds, live: kinds}`` as the last top-level key of a mode's skeleton YAML (any
    earlier ``refiners:`` line replaced; comments kept), which ``refiners.default_refiners`` reads for a session
    of the mode (live mode runs them only where two CPUs are usable, as for the shipped modes)."""
    lines = [ln for ln in skeleton_yaml.read_text(encoding="utf-8").splitlines() if not ln.startswith("refiners:")]
    listed = "[" + ", ".join(kinds) + "]"
    lines.append(f"refiners: {{offline: {listed}, live: {listed}}}  # what read the held-out frames better than "
                 "no refiner (report.json)")
    skeleton_yaml.write_text("\n".join(lines) + "\n", encoding="utf-8")


def create_user_mode(project: str | Path, name: str, steps: int | None = None, progress: Progress | None = None,
                     cancel: Cancel | None = None, log: Log | None = None, threads: int = 1,
                     modes_dir: str | Path | None = None, include_predicted: bool = False,
                     config: Callable[[Path], None] | None = None) -> UserModeResult:
    """The app's "train a new animal mode": import ``project`` (a SLEAP .slp or a DeepLabCut folder) into
    ``<modes>/<name>/training/``, :func:`train_user_mode` it, install it (:func:`install_user_mode`, the
    files moved up into ``<modes>/<name>/``). ``config(train_yaml)`` may edit the training config before
    training (tests: fewer variants). Raises TrainingError (bad name, unreadable project: LabelImportError
    is one) and TrainingCancelled; on either nothing is left as a mode (the training folder is removed)."""
    from posetracker.importers import LabelImportError, import_project

    root = Path(modes_dir) if modes_dir is not None else user_modes_dir()
    name = mode_name(name, root)
    folder = root / name
    work = folder / TRAINING
    say = progress or (lambda d, t, m: None)
    try:
        say(0, 0, "Importing the labels…")
        try:
            import_project(project, work, name=name, include_predicted=include_predicted, force=True)
        except LabelImportError as exc:
            raise TrainingError(str(exc)) from None
        if config is not None:
            config(work / "train.yaml")
        if cancel is not None and cancel():
            raise TrainingCancelled("training cancelled")
        result = train_user_mode(work / "train.yaml", steps, progress, cancel, log, threads=threads)
        result.report["project"] = str(Path(project).expanduser().resolve())
        result.report_path.write_text(json.dumps(result.report, indent=2), encoding="utf-8")
        say(0, 0, "Installing the mode…")
        result.mode = install_user_mode(work, name, root, replace=True, move=True)
    except BaseException:
        if read_user_mode(folder) is None:  # never installed: leave nothing behind
            shutil.rmtree(work, ignore_errors=True)
            try:
                folder.rmdir()
            except OSError:
                pass
        raise
    result.weights, result.refiner = result.mode.weights, folder / result.refiner.name
    result.report_path = folder / REPORT
    return result


# ---------------------------------------------------------------------------------------- the report as text


def _cell(v: Any, fmt: str) -> str:
    try:
        return format(float(v), fmt) if v == v else "-"  # nan -> "-"
    except (TypeError, ValueError):
        return "-"


def format_report(report: dict) -> str:
    """The held-out table of a report, as fixed-width text (the Train dialog shows it)."""
    scores = report.get("held_out") or {}
    lines = [f"Mode {report.get('name', '?')}: {report.get('steps', '?')} training steps "
             f"({_cell(report.get('minutes'), '.1f')} min)",
             f"on {report.get('train_items', '?')} labelled frames ({report.get('samples', '?')} samples with "
             "augmentation)."]
    if not scores:
        lines.append("No held-out frames to score (the project has too few labelled frames).")
        return "\n".join(lines)
    lines.append(f"Held-out frames: {report.get('held_out_items', '?')} (never trained on).")
    lines.append("")
    lines.append(f"{'refiner':<14}{'PCK@0.1':>9}{'PCK@0.2':>9}{'mean px':>9}{'median px':>11}{'found':>9}")
    for combo, r in scores.items():
        found = f"{r.get('found', 0)}/{r.get('instances', 0)}"
        lines.append(f"{combo:<14}{_cell(r.get('pck@0.1'), '.3f'):>9}{_cell(r.get('pck@0.2'), '.3f'):>9}"
                     f"{_cell(r.get('mean_px'), '.1f'):>9}{_cell(r.get('median_px'), '.1f'):>11}{found:>9}")
    if "default_refiners" in report:
        chosen = report["default_refiners"]
        lines.append("Runs by default: " + (" + ".join(chosen) + " (better than no refiner on these frames)" if chosen
                                            else "no refiner (none read these frames better)"))
    lines.append("")
    lines.append("PCK@t: share of labelled keypoints within t x the animal's size")
    lines.append("(the longer side of the box around its labelled keypoints).")
    return "\n".join(lines)
