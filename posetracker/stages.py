"""The stages of a live frame and what passes between them, for the session and the drivers that run it.

``TrackingSession.step`` (``posetracker.session``) is three calls: ``prepare(frame) -> Prepared``,
``infer(prepared) -> Inferred | None`` and ``finish(inferred) -> PoseFrame`` (see ``posetracker.pipeline_live``,
which runs them on one or two threads). This module holds the values that pass between them (:class:`Pending`,
:class:`Prepared`, :class:`Inferred`), the per-stage times (:class:`StageTimes`), the progress callback's type and
:class:`LiveStages`, what a driver calls of a session; it imports nothing of the package above ``types``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch

if TYPE_CHECKING:
    from posetracker.model.preprocess import Letterbox
    from posetracker.types import Frame, PoseFrame

Progress = Callable[[int, int | None], None]


@dataclass
class StageTimes:
    """Milliseconds spent in each stage for the last frame (network includes pre-processing)."""

    network_ms: float = 0.0
    decode_ms: float = 0.0
    track_ms: float = 0.0
    history: deque = field(default_factory=lambda: deque(maxlen=120))

    @property
    def total_ms(self) -> float:
        return self.network_ms + self.decode_ms + self.track_ms


@dataclass(frozen=True)
class Pending:
    """What the decoding of a frame needs besides the network's outputs."""

    index: int
    timestamp: float
    box: Letterbox
    image: torch.Tensor | None = None  # network input, kept only for a maps-stage refiner
    frame: np.ndarray | None = None  # source frame, kept only for a frame-stage refiner, tiles or top-down
    tiles: int = 1  # tile grid of this frame (1: the whole frame only)


@dataclass(frozen=True)
class Prepared:
    """A frame letterboxed for the network: ``x`` its input, ``meta`` the rest, ``ms`` the time it took."""

    x: torch.Tensor
    meta: Pending
    ms: float


@dataclass(frozen=True)
class Inferred:
    """The network's outputs of one frame (``out``) with what its decoding needs; ``network_ms``: its
    preparation and network time."""

    out: dict[str, torch.Tensor]
    meta: Pending
    network_ms: float


class LiveStages(Protocol):
    """What the drivers of ``posetracker.pipeline_live`` call of a session (``TrackingSession`` is one):
    the three stages, ``step`` and ``flush`` (the three in a row), and ``config.network.two_stage``."""

    config: Any

    def prepare(self, frame: Frame) -> Prepared: ...

    def infer(self, prepared: Prepared) -> Inferred | None: ...

    def infer_flush(self) -> list[Inferred]: ...

    def finish(self, item: Inferred) -> PoseFrame: ...

    def step(self, frame: Frame) -> PoseFrame | None: ...

    def flush(self) -> list[PoseFrame]: ...
