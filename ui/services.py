"""What the window needs from the outside world, injectable for tests:
sessions (model loading), cameras, files. Plus source classification and model discovery."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from posetracker.batch import run_batch
from posetracker.capture import CameraInfo, CameraNotFoundError, FrameSource, WebcamSource, list_cameras, open_source
from posetracker.defaults import DEFAULT_LOOKAHEAD, DEFAULT_MAX_PEOPLE
from posetracker.recording import is_recording_folder
from posetracker.resources import sample_clip
from posetracker.skeletons import available_skeletons, load_skeleton
from posetracker.train.user_mode import UserMode, create_user_mode, user_mode_for, user_modes
from .packets import PoseSession

SAMPLE_CLIP = sample_clip()  # the checkout's, or the installed copy (posetracker.resources)
SourceKind = Literal["camera", "recording", "file"]
CAMERA_PREFIX = "camera:"


@dataclass(frozen=True)
class ModelChoice:
    """Which session to build: skeleton, mode, look-ahead, refiner kinds, the most people (or animals) per
    frame (weights: None = shipped file, or a user mode's own). ``skeleton``: a shipped skeleton's name, or
    a user-trained mode's skeleton YAML path (``<modes>/<name>/<name>.yaml``, see posetracker.train.user_mode)."""

    skeleton: str = "human18"
    mode: Literal["live", "offline"] = "live"
    lookahead: int = DEFAULT_LOOKAHEAD
    weights: Path | None = None
    refiners: tuple[str, ...] | None = ()  # None: the mode's defaults, as ``posetracker process`` without --refiners
    max_people: int = DEFAULT_MAX_PEOPLE
    exact_count: bool = False  # max_people is the exact number in every frame (PeopleSettings.known_count)
    fov_deg: float = 60.0  # the camera's field of view across the long side (DepthSettings.fov_deg's default)
    smoothing: bool = True  # the motion solve (False: a live view of several cameras, smoothed once fused in 3-D)


def with_camera(make_session: Callable[[ModelChoice], PoseSession], choice: ModelChoice,
                fov_deg: float) -> PoseSession:
    """``make_session`` for ``choice`` tracking with a camera of ``fov_deg`` degrees: the whole-file worker's
    factory (it picks the camera once the file is open, as ``posetracker process`` does)."""
    return make_session(replace(choice, fov_deg=float(fov_deg)))


def real_session(choice: ModelChoice) -> PoseSession:
    """A TrackingSession with the skeleton's weights, one torch thread (runs in a worker thread).
    Refiners come from models/, or from the folder of custom ``weights`` (a user mode: its own folder)."""
    from posetracker.session import TrackingSession

    spec, weights, config = session_config(choice)
    return TrackingSession.open(spec, weights, config)


def session_config(choice: ModelChoice):
    """(skeleton spec, weights path or None, ``posetracker.session.SessionConfig``) of ``choice``: its refiners
    (whole-file processing adds the offline defaults; None: the mode's defaults, what ``posetracker process``
    runs without --refiners), one torch thread."""
    from posetracker.refiners import default_refiners
    from posetracker.session import (
        DepthSettings, MotionSettings, NetworkSettings, PeopleSettings, RefineSettings, SessionConfig,
    )

    spec = load_skeleton(choice.skeleton)  # a name, or a user mode's YAML path
    mode = user_mode_for(choice.skeleton)
    weights = choice.weights or (mode.weights if mode is not None else None)
    kinds = None if choice.refiners is None else tuple(choice.refiners)
    if kinds is not None and choice.mode == "offline":  # whole-file processing adds the offline defaults
        folder = Path(weights).parent if weights else None
        kinds += tuple(k for k in default_refiners(spec, "offline", folder) if k not in kinds)
    config = SessionConfig(mode=choice.mode, network=NetworkSettings(lookahead=choice.lookahead, threads=1),
                           people=PeopleSettings(max_people=choice.max_people,
                                                 known_count=choice.max_people if choice.exact_count else None),
                           refine=RefineSettings(refiners=kinds), depth=DepthSettings(fov_deg=choice.fov_deg),
                           motion=MotionSettings(smoothing=choice.smoothing))
    return spec, weights, config


def mode_refiners(skeleton: str, mode: str) -> tuple[str, ...]:
    """The refiners a ``skeleton`` session (a shipped name, or a user mode's YAML path: its own folder's) runs by
    default in ``mode``, as ``posetracker process`` without --refiners; () where it cannot be read."""
    from posetracker.refiners import default_refiners

    user = user_mode_for(skeleton)
    try:
        spec = load_skeleton(user.skeleton if user is not None else skeleton)
    except Exception:  # noqa: BLE001 - an unreadable skeleton is said where it is opened
        return ()
    return default_refiners(spec, mode, user.folder if user is not None else None)


def open_camera(index: int) -> FrameSource:
    return WebcamSource(index)


def _default_weights(skeleton: str) -> Path:
    from posetracker.model.weights import default_weights_path

    mode = user_mode_for(skeleton)
    return mode.weights if mode is not None else default_weights_path(skeleton)


RefinerLister = Callable[[str], tuple[list[str], str | None]]


def refiner_names(skeleton: str = "human18") -> tuple[list[str], str | None]:
    """Refiner kinds with trained weights for ``skeleton`` (a user mode's: in its folder), and a note for the
    user (or None): which of them whole-file processing always runs (the mode's offline defaults,
    :func:`session_config`). Never raises: a broken registry or plug-in becomes the note."""
    mode = None
    try:
        from posetracker import refiners

        mode = user_mode_for(skeleton)
        if mode is not None:
            names = list(refiners.available_refiners(load_skeleton(mode.skeleton).name, mode.folder))
        else:
            names = list(refiners.available_refiners(skeleton))
        always = [refiners.refiner_label(k).split(" (")[0] for k in mode_refiners(skeleton, "offline") if k in names]
        errors = refiners.plugin_errors()
    except Exception as exc:  # noqa: BLE001 - a broken plug-in must not stop the app
        return [], f"Refiners could not be loaded: {exc}"
    notes = [] if names else [f"No refiners are trained for {mode.name if mode else skeleton}."]
    if errors:
        notes.append("Broken refiner plug-ins: " + "; ".join(f"{n}: {e}" for n, e in sorted(errors.items())))
    if always:
        notes.append(f"Process whole file always runs: {', '.join(always)}.")
    return names, " ".join(notes) or None


@dataclass
class Services:
    """Factories the window calls; tests replace them with fakes."""

    make_session: Callable[[ModelChoice], PoseSession] = real_session
    open_camera: Callable[[int], FrameSource] = open_camera
    list_cameras: Callable[[], list[CameraInfo]] = list_cameras
    open_file: Callable[[str], FrameSource] = open_source
    weights_path: Callable[[str], Path] = _default_weights
    refiner_names: RefinerLister = refiner_names
    # Tools > Train animal mode: (project, name, steps=, progress=, cancel=, log=) -> UserModeResult, run in a
    # worker thread (posetracker.train.user_mode.create_user_mode: import, train, score, install)
    train_mode: Callable[..., object] = create_user_mode
    # Tools > Batch process videos: (inputs, out_dir, settings, workers=, progress=, cancel=) -> BatchSummary, run
    # in a worker thread (posetracker.batch.run_batch: the same call as `posetracker batch`, on a local Ray)
    run_batch: Callable[..., object] = run_batch


def stand_in_cameras(services: Services, sources: list[str]) -> Services:
    """``services`` whose connected cameras are ``sources`` (``main.py --stand-in-cameras``: demos and screenshots
    without hardware): ``camera:N`` opens ``sources[N]`` (a ``lavfi:GRAPH`` or a video, ``capture.open_source``) and
    the Cameras lists show them, named after them."""

    def open_stand_in(index: int) -> FrameSource:
        if not 0 <= index < len(sources):
            raise CameraNotFoundError(f"No camera found at camera index {index} (stand-ins: 0 to {len(sources) - 1})")
        return open_source(sources[index])

    def name(source: str) -> str:  # a video's file name (lavfi:movie=/a/cam01.mp4,...: cam01.mp4), else the graph
        movie = re.search(r"movie=([^:,]+)", source) if source.startswith("lavfi:") else None
        shown = Path(movie[1]).name if movie else source if source.startswith("lavfi:") else Path(source).name
        return f"stand-in: {shown}"

    listed = [CameraInfo(i, name(s)) for i, s in enumerate(sources)]
    return replace(services, open_camera=open_stand_in, list_cameras=lambda: list(listed))


def classify(spec: str) -> SourceKind:
    if spec.startswith(CAMERA_PREFIX):
        return "camera"
    if is_recording_folder(spec):
        return "recording"
    return "file"


def camera_index(spec: str) -> int:
    rest = spec[len(CAMERA_PREFIX):].strip()
    if not rest.isdigit():
        raise ValueError(f"bad camera source {spec!r}: expected camera:N")
    return int(rest)


@dataclass(frozen=True)
class ModelOption:
    skeleton: str  # a shipped skeleton's name, or a user mode's skeleton YAML path (what ModelChoice takes)
    kind: str  # "human" | "animal"
    has_weights: bool
    user: bool = False  # trained by the user (Tools > Train animal mode), from posetracker.train.user_mode
    name: str = ""  # the mode's name where ``skeleton`` is a path

    @property
    def label(self) -> str:
        """What the skeleton selector shows, e.g. "Animal (mouse4)", "Animal (flies, user-trained)"."""
        kind = "Human" if self.kind == "human" else self.kind.capitalize()
        text = f"{kind} ({self.name or self.skeleton}{', user-trained' if self.user else ''})"
        return text if self.has_weights else f"{text}: no weights"


def user_mode_option(mode: UserMode) -> ModelOption:
    try:
        kind = load_skeleton(mode.skeleton).kind
    except ValueError:
        kind = "animal"
    return ModelOption(str(mode.skeleton), kind, mode.weights.is_file(), user=True, name=mode.name)


def model_options(weights_path: Callable[[str], Path] = _default_weights,
                  modes_dir: str | Path | None = None) -> list[ModelOption]:
    """Every shipped skeleton, human first, with whether weights exist for it; then the user-trained modes
    (in ``modes_dir``, default ``$POSETRACKER_MODES`` or ``~/.local/share/posetracker/modes``), by name."""
    options = []
    for name in available_skeletons():
        try:
            kind = load_skeleton(name).kind
        except ValueError:
            continue
        options.append(ModelOption(name, kind, weights_path(name).is_file()))
    options.sort(key=lambda o: (o.kind != "human", o.skeleton))
    return options + [user_mode_option(m) for m in user_modes(modes_dir)]
