"""Picking one person (issue #50 item 5): a click in the video or the Person list; the 3-D view fades the
others and follows the one picked. Without a pick everything is drawn as before."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from gui_helpers import FakeSession, isolated_settings, make_video, no_modal_dialogs  # noqa: F401
from posetracker.types import Frame

pytestmark = [pytest.mark.gui, pytest.mark.qt_log_ignore("propagateSizeHints")]


def _pose(people: int = 3, ids=(3, 7, 9)):
    pose = FakeSession(people=people).pose_for(Frame(0, 0.0, np.zeros((240, 320, 3), np.uint8)))
    pose.track_ids[:] = ids[:people]
    return pose


def test_the_others_fade_only_while_someone_is_picked():
    from ui.skeleton_view import FADED_ALPHA, person_alphas

    ids = np.array([3, 7, 9])
    np.testing.assert_array_equal(person_alphas(ids, None), [1, 1, 1])  # no pick: as before
    np.testing.assert_array_equal(person_alphas(ids, -1), [1, 1, 1])  # "Auto"
    np.testing.assert_array_equal(person_alphas(ids, 7), [FADED_ALPHA, 1, FADED_ALPHA])
    np.testing.assert_array_equal(person_alphas(ids, 5), [1, 1, 1])  # picked, but out of view: nobody faded
    assert 0 < FADED_ALPHA < 0.5


def test_the_camera_centres_on_the_picked_persons_visible_joints():
    from ui.skeleton_view import follow_centre, follow_index, to_scene

    assert follow_index(np.array([3, 7, 9]), 9) == 2
    assert follow_index(np.array([3, 7, 9]), None) == 0 and follow_index(np.array([3, 7]), 5) == 0  # as before
    assert follow_index(np.zeros(0, int), 3) is None
    world = np.array([[0.0, -1.0, 4.0], [0.2, 0.0, 4.0], [0.4, 1.0, 4.0], [9.0, 9.0, 9.0]])
    visible = np.array([True, True, True, False])  # a joint not seen (far off) does not drag the camera
    np.testing.assert_allclose(follow_centre(to_scene(world), visible), to_scene(world[1]))
    np.testing.assert_allclose(follow_centre(to_scene(world), np.zeros(4, bool)), to_scene(np.median(world, axis=0)))
    assert follow_centre(np.full((4, 3), np.nan), visible) is None


def test_the_3d_view_fades_the_others_and_follows_the_picked_one(qtbot):
    """Runs where a GL context exists (xvfb-run); skipped offscreen."""
    from ui.skeleton_view import FADED_ALPHA, SkeletonView, follow_centre, gl_available, to_scene
    from ui.overlay import visible_joints

    if not gl_available():
        pytest.skip("no OpenGL context on this platform (offscreen)")
    view = SkeletonView()
    qtbot.addWidget(view)
    pose = _pose()
    view.set_spec(FakeSession().spec)
    view.show()
    view.set_pose(pose)
    assert [lines.color[3] for lines, _ in view._people[:3]] == [1.0, 1.0, 1.0]  # no pick: as before
    view.follow.setChecked(True)
    view.set_pose(pose, 3, chosen=7)
    assert [lines.color[3] for lines, _ in view._people[:3]] == [FADED_ALPHA, 1.0, FADED_ALPHA]
    c = view.gl.opts["center"]
    want = follow_centre(to_scene(pose.world[1]), visible_joints(pose.confidence[1], pose.world[1], view._spec, 0.3))
    np.testing.assert_allclose([c.x(), c.y(), c.z()], want, atol=1e-5)
    assert view.gl.opts["distance"] < 6.0  # framed on the one person


def test_a_click_in_the_video_picks_that_person_and_beside_them_unpicks(qtbot, tmp_path):
    from ui.main_window import MainWindow
    from ui.services import Services

    services = Services(make_session=lambda choice: FakeSession(people=2), list_cameras=lambda: [])
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.open_source(str(make_video(tmp_path / "two.mp4", frames=20, size=(320, 240))))
    qtbot.waitUntil(lambda: window.latest is not None and window.video._pose is not None, timeout=8000)
    window.controller.pause()
    qtbot.wait(100)
    video = window.video
    pose = video._pose
    assert not window.skeleton_view.follow.isChecked() and video.selected is None

    def click(x: float, y: float) -> None:
        from PySide6.QtTest import QTest

        at = video.graphics.mapFromScene(video.view.mapViewToScene(QPointF(x, y)))
        QTest.mouseClick(video.graphics.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at)

    hips = pose.keypoints[1, 17, :2]  # the second person's middle
    click(*hips)
    tid = int(pose.track_ids[1])
    assert window.state.person == tid and video.selected == tid
    assert window.plots.people.currentData() == tid and window.plots.current_person() == tid
    assert window.skeleton_view.follow.isChecked()  # the 3-D view follows whom the user picked
    assert any(items.selected for items in video._people)  # their label is bordered
    click(2.0, 2.0)  # nobody there: back to automatic, nobody faded
    assert window.state.person == -1 and video.selected is None and window.plots.chosen_person() is None
    window.close()
