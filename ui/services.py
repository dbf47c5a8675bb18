"""What the window needs from the outside world, injectable for tests:
sessions (model loading), cameras, files. Plus source classification and model discovery."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from posetracker.capture import CameraInfo, FrameSource, WebcamSource, list_cameras, open_source
from posetracker.defaults import DEFAULT_LOOKAHEAD, DEFAULT_MAX_PEOPLE
from posetracker.recording import is_recording_folder
from posetracker.resources import sample_clip
from posetracker.skeletons import available_skeletons, load_skeleton
from ui.packets import PoseSession

SAMPLE_CLIP = sample_clip()  # the checkout's, or the installed copy (posetracker.resources)
SourceKind = Literal["camera", "recording", "file"]
CAMERA_PREFIX = "camera:"


@dataclass(frozen=True)
class ModelChoice:
    """Which session to build: skeleton, mode, look-ahead, refiner kinds, the most people (or animals) per
    frame (weights: None = shipped file)."""

    skeleton: str = "human18"
    mode: Literal["live", "offline"] = "live"
    lookahead: int = DEFAULT_LOOKAHEAD
    weights: Path | None = None
    refiners: tuple[str, ...] = ()
    max_people: int = DEFAULT_MAX_PEOPLE


def real_session(choice: ModelChoice) -> PoseSession:
    """A TrackingSession with the skeleton's weights, one torch thread (runs in a worker thread).
    Refiners come from models/, or from the folder of custom ``weights``."""
    from posetracker.session import SessionConfig, TrackingSession

    from posetracker.refiners import default_refiners

    kinds = tuple(choice.refiners)
    if choice.mode == "offline":  # whole-file processing adds the offline defaults (the precision stage)
        folder = Path(choice.weights).parent if choice.weights else None
        kinds += tuple(k for k in default_refiners(choice.skeleton, "offline", folder) if k not in kinds)
    config = SessionConfig(mode=choice.mode, lookahead=choice.lookahead, threads=1, refiners=kinds,
                           max_people=choice.max_people)
    return TrackingSession.open(choice.skeleton, choice.weights, config)


def open_camera(index: int) -> FrameSource:
    return WebcamSource(index)


def _default_weights(skeleton: str) -> Path:
    from posetracker.model.weights import default_weights_path

    return default_weights_path(skeleton)


RefinerLister = Callable[[str], tuple[list[str], str | None]]


def refiner_names(skeleton: str = "human18") -> tuple[list[str], str | None]:
    """Refiner kinds with trained weights for ``skeleton``, and a note for the user (or None).
    Never raises: a broken registry or plug-in becomes the note."""
    try:
        from posetracker import refiners

        names = list(refiners.available_refiners(skeleton))
        errors = refiners.plugin_errors()
    except Exception as exc:  # noqa: BLE001 - a broken plug-in must not stop the app
        return [], f"Refiners could not be loaded: {exc}"
    notes = [] if names else [f"No refiners are trained for {skeleton}."]
    if errors:
        notes.append("Broken refiner plug-ins: " + "; ".join(f"{n}: {e}" for n, e in sorted(errors.items())))
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
    skeleton: str
    kind: str  # "human" | "animal"
    has_weights: bool


def model_options(weights_path: Callable[[str], Path] = _default_weights) -> list[ModelOption]:
    """Every shipped skeleton, human first, with whether weights exist for it."""
    options = []
    for name in available_skeletons():
        try:
            kind = load_skeleton(name).kind
        except ValueError:
            continue
        options.append(ModelOption(name, kind, weights_path(name).is_file()))
    return sorted(options, key=lambda o: (o.kind != "human", o.skeleton))
