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


def _two_close_people(w: int = 640, h: int = 480, apart: float = 12.0):
    """Two confirmed people (ids 3 and 7) side by side, ``apart`` pixels from each other: their boxes' tops
    and middles nearly the same (issue #50: their id labels covered each other)."""
    from gui_helpers import FakeSession
    from posetracker.types import Frame, PoseFrame

    session = FakeSession(people=1)
    one = session.pose_for(Frame(0, 0.0, np.zeros((h, w, 3), np.uint8)))
    kp = np.concatenate([one.keypoints, one.keypoints + [apart, 3.0, 0.0]])
    pose = PoseFrame(index=0, timestamp=0.0, keypoints=kp.astype(np.float32),
                     confidence=np.full((2, kp.shape[1]), 0.9, np.float32), scores=np.full(2, 0.9, np.float32),
                     track_ids=np.array([3, 7]), image_size=(w, h))
    return session.spec, Frame(0, 0.0, np.full((h, w, 3), 90, np.uint8)), pose


def test_id_labels_of_people_standing_close_do_not_overlap(qtbot):
    """Issue #50 item 5: two people a few pixels apart; their labels' rectangles on screen do not overlap, and
    the label moved off its place gets a leader line to its person."""
    from ui.video_view import VideoView

    spec, frame, pose = _two_close_people()
    view = VideoView()
    qtbot.addWidget(view)
    view.resize(640, 480)
    view.show()
    qtbot.waitExposed(view)
    view.set_spec(spec)
    view.show_frame(frame.image, pose)
    view.graphics.grab()  # a paint: TextItems take their screen transform there
    labels = [items.label for items in view._people[:2]]
    assert all(label.isVisible() for label in labels)
    a, b = (label.sceneBoundingRect() for label in labels)
    assert a.width() > 0 and b.width() > 0
    assert not a.intersects(b), (a, b)
    assert sum(items.leader.isVisible() for items in view._people[:2]) == 1  # the moved one points at its person


def test_layout_labels_moves_only_what_overlaps():
    """The pure layout: a label stays above its person unless an earlier one is there; then it goes just above
    (or, at the top of the frame, just below) it, keeping its x."""
    from ui.overlay import label_rect, layout_labels

    sizes = np.array([[20.0, 10.0]] * 3)
    apart = np.array([[50.0, 100.0], [100.0, 100.0], [150.0, 100.0]])
    np.testing.assert_array_equal(layout_labels(apart, sizes), apart)  # nothing overlaps: nothing moves
    close = np.array([[50.0, 100.0], [55.0, 101.0], [60.0, 99.0]])
    placed = layout_labels(close, sizes)
    np.testing.assert_array_equal(placed[:, 0], close[:, 0])
    rects = [label_rect(c, s) for c, s in zip(placed, sizes)]
    for i in range(3):
        for j in range(i):
            a, b = rects[i], rects[j]
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (i, j, placed)
    assert placed[0, 1] == 100.0 and placed[1, 1] == 90.0 and placed[2, 1] == 80.0  # stacked upwards
    # order: the label placed first keeps its place (the app passes track-id order, stable between frames)
    assert layout_labels(close[:2], sizes[:2], order=[1, 0])[1, 1] == 101.0
    # at the top of the frame there is no room above: below instead
    top = layout_labels(np.array([[50.0, 12.0], [52.0, 12.0]]), sizes[:2], bounds=(0.0, 480.0))
    assert top[0, 1] == 12.0 and top[1, 1] == 22.0


def test_a_click_picks_the_person_under_it():
    """Clicks in the video select a person: the smallest confirmed box holding the point."""
    from ui.overlay import person_at

    boxes = np.array([[0, 0, 100, 200], [40, 50, 90, 150], [300, 0, 400, 200], [np.nan] * 4], float)
    ids = np.array([4, 9, -1, 2])
    assert person_at(boxes, ids, (10, 10)) == 4
    assert person_at(boxes, ids, (50, 100)) == 9  # inside both: the smaller (nearer) one
    assert person_at(boxes, ids, (350, 100)) is None  # unconfirmed: not selectable
    assert person_at(boxes, ids, (200, 100)) is None
