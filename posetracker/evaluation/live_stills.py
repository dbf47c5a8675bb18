"""``posetracker eval --mode live``: the live pipeline scored on labelled frames, like the offline one.

A labelled photo has no clip around it, so the live session sees it as a camera would see a still scene:
the same frame ``hold`` times in a row at 30 fps (look-ahead, smoothing, the tracker's confirmation and the
fast precision stage's one-crop-a-frame budget all run as in the app), and the pose given out for the last
frame is scored. Each photo starts a fresh session (no state carried between photos).
"""

from __future__ import annotations

import numpy as np

from posetracker.types import Frame, PoseFrame

HOLD_FRAMES = 8  # frames a still is shown: past a look-ahead of 1-3 and the tracker's confirmation


def live_still_predictor(session, hold: int = HOLD_FRAMES):
    """A ``Predictor`` (``evaluation.runner``): (H, W, 3) uint8 RGB -> the live ``session``'s PoseFrame of the
    last of ``hold`` copies of it. ``session``: a live-mode ``TrackingSession``."""
    if session.config.mode != "live":
        raise ValueError("live_still_predictor needs a live-mode session")
    if hold < 1:
        raise ValueError(f"hold must be at least 1 frame, got {hold}")

    def predict(rgb: np.ndarray) -> PoseFrame:
        session.reset()
        poses = [session.step(Frame(i, i / 30.0, rgb)) for i in range(hold)]
        poses = [p for p in poses if p is not None] + session.flush()
        return poses[-1]

    return predict
