"""The video overlay's drawing options (ui.overlay, ui.video_view)."""

from __future__ import annotations

import numpy as np


def test_sides_draws_the_right_side_white(qtbot):
    """Toolbar "Sides": each body's right-side joints white, the rest in the track's colour (left / right of
    a person seen from behind can be checked by eye); off by default."""
    from gui_helpers import FakeSession
    from posetracker.skeletons import load_skeleton
    from posetracker.types import Frame
    from ui.overlay import OverlayOptions, right_side, track_colour
    from ui.video_view import VideoView

    human = load_skeleton("human18")
    right = right_side(human)
    assert [n for n, r in zip(human.joint_names, right) if r] == [
        "right_eye", "right_ear", "right_shoulder", "right_elbow", "right_wrist", "right_hip", "right_knee",
        "right_ankle"]
    assert [n for n, r in zip(load_skeleton("fly13").joint_names, right_side(load_skeleton("fly13"))) if r] == [
        "wingR", "forelegR4", "midlegR4", "hindlegR4", "eyeR"]
    view = VideoView()
    qtbot.addWidget(view)
    session = FakeSession(people=1)
    view.set_spec(session.spec)
    frame = Frame(0, 0.0, np.full((240, 320, 3), 90, np.uint8))
    pose = session.pose_for(frame)
    sides = right_side(session.spec)

    def colours() -> list[tuple[int, int, int]]:
        view.show_frame(frame.image, pose)
        return [b.color().getRgb()[:3] for b in view.joints.data["brush"]]

    plain = colours()
    assert all(c == track_colour(int(pose.track_ids[0])) for c in plain)
    view.options = OverlayOptions(sides=True)
    view._drawn_options = None
    pose = session.pose_for(Frame(1, 0.03, frame.image))  # a new pose: the view redraws
    shown = colours()
    drawn = np.flatnonzero(np.isfinite(pose.keypoints[0, :, :2]).all(-1) & (pose.confidence[0] >= 0.3))
    drawn = [k for k in drawn if k not in session.spec.virtual]
    assert len(shown) == len(drawn) and sides[drawn].any() and (~sides[drawn]).any()
    assert [c == (255, 255, 255) for c in shown] == [bool(sides[k]) for k in drawn]
