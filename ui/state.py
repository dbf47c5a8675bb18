"""AppState: the window's typed state, persisted with QSettings (as JSON) in ui/ only."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, QStandardPaths

from posetracker.defaults import DEFAULT_LOOKAHEAD, DEFAULT_MAX_PEOPLE, MAX_PEOPLE_LIMIT

ORGANISATION = "PoseTracker"
APPLICATION = "PoseTracker"
MAX_RECENT = 8
DEFAULT_ANGLES = ("left knee flexion", "right knee flexion", "left elbow flexion", "right elbow flexion")


def default_live_refiners() -> tuple[str, ...]:
    """The refiners a new user's live sessions run (the library's live defaults for human18)."""
    from posetracker.refiners import default_refiners

    return default_refiners("human18", "live")


def default_recordings_dir() -> str:
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation) or str(Path.home())
    return str(Path(docs) / "PoseTracker" / "recordings")


@dataclass
class AppState:
    """Everything the user chooses; MainWindow owns one."""

    source: str = ""
    skeleton: str = "human18"
    mode: str = "live"  # live | offline
    lookahead: int = DEFAULT_LOOKAHEAD
    speed: float = 1.0
    loop: bool = False
    # refiner kinds switched on (those the skeleton lacks are dropped); first run: the live defaults
    refiners: tuple[str, ...] = field(default_factory=default_live_refiners)
    max_people: int = DEFAULT_MAX_PEOPLE  # most people / animals per frame
    exact_count: bool = False  # Max people is the exact number in every frame (animals known to be there)
    sync_overlay: bool = True  # draw poses on the frame they were computed from
    show_labels: bool = True
    show_low_confidence: bool = False
    show_boxes: bool = False
    show_sides: bool = False  # the overlay draws the right side's joints white
    confidence_threshold: float = 0.3
    follow_person: bool = False
    person: int = -1  # selected track id, -1 = automatic
    plot_seconds: float = 10.0
    plot_angles: list[str] = field(default_factory=lambda: list(DEFAULT_ANGLES))
    recent_files: list[str] = field(default_factory=list)
    recordings_dir: str = field(default_factory=lambda: default_recordings_dir())

    def add_recent(self, spec: str) -> None:
        self.recent_files = [spec] + [r for r in self.recent_files if r != spec]
        del self.recent_files[MAX_RECENT:]


def open_settings() -> QSettings:
    """INI settings in the user scope (tests redirect them with QSettings.setPath)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANISATION, APPLICATION)


def load_state(settings: QSettings) -> AppState:
    """The saved state; unknown or mistyped entries fall back to defaults."""
    state = AppState()
    try:
        saved = json.loads(str(settings.value("state", "{}")))
    except ValueError:
        return state
    if not isinstance(saved, dict):
        return state
    for f in dataclasses.fields(AppState):
        value = saved.get(f.name)
        default = getattr(state, f.name)
        if value is not None and isinstance(value, type(default)):
            setattr(state, f.name, value)
        elif isinstance(default, float) and isinstance(value, int):
            setattr(state, f.name, float(value))
        elif isinstance(default, tuple) and isinstance(value, list):  # JSON has no tuples
            setattr(state, f.name, tuple(str(v) for v in value))
    state.max_people = min(max(state.max_people, 1), MAX_PEOPLE_LIMIT)  # the panel's range
    return state


def save_state(settings: QSettings, state: AppState) -> None:
    settings.setValue("state", json.dumps(dataclasses.asdict(state)))


def save_layout(settings: QSettings, geometry: QByteArray, window_state: QByteArray) -> None:
    settings.setValue("geometry", geometry)
    settings.setValue("windowState", window_state)


def load_layout(settings: QSettings) -> tuple[QByteArray | None, QByteArray | None]:
    geometry, window_state = settings.value("geometry"), settings.value("windowState")
    return (geometry if isinstance(geometry, QByteArray) else None,
            window_state if isinstance(window_state, QByteArray) else None)
