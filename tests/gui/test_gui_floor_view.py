"""The 3-D view shows a finished result on the floor its finishing step fitted (the floor every export stands
on), so people stand on the grid whatever the camera's pitch; live poses keep the camera's axes."""

from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import FakeSession, isolated_settings, no_modal_dialogs  # noqa: F401
from posetracker.analysis.ground import FloorFrame
from posetracker.analysis.held_ground import floor_as_dict
from posetracker.types import PoseFrame, PoseSequence

PITCH = np.radians(22.0)  # the 4-view trial's phones look down 18-25 degrees
HEIGHT = 1.6  # m, the camera above the floor


def pitched_floor() -> FloorFrame:
    """The floor frame of a camera pitched down by PITCH, HEIGHT above the floor: rows X, Y (up), Z (to the camera)
    in camera axes (x right, y down, z forward)."""
    c, s = np.cos(PITCH), np.sin(PITCH)
    rotation = np.array([[1.0, 0.0, 0.0], [0.0, -c, -s], [0.0, s, -c]])
    return FloorFrame(rotation=rotation, translation=np.array([0.0, HEIGHT, 0.0]), fitted=True)


def standing(floor: FloorFrame, ahead: float = 4.0) -> np.ndarray:
    """(2, 3) camera-space feet and head of a 1.7 m person standing ``ahead`` m in front of the camera."""
    on_floor = np.array([[0.3, 0.0, -ahead], [0.3, 1.7, -ahead]])
    return (on_floor - floor.translation) @ floor.rotation  # the inverse of FloorFrame.to_floor


def test_a_person_stands_upright_on_the_grid_of_a_pitched_camera():
    from ui.skeleton_view import to_scene

    floor = pitched_floor()
    feet, head = to_scene(standing(floor), floor)
    np.testing.assert_allclose(feet, [0.3, 4.0, 0.0], atol=1e-9)  # on the grid (Z = 0), 4 m away
    np.testing.assert_allclose(head - feet, [0.0, 0.0, 1.7], atol=1e-9)  # upright
    tilted = np.subtract(*to_scene(standing(floor))[::-1])  # the camera's axes: leaning by the pitch
    assert np.degrees(np.arctan2(abs(tilted[1]), tilted[2])) == pytest.approx(22.0, abs=1e-6)
    turn = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(0.1), -np.sin(0.1)], [0.0, np.sin(0.1), np.cos(0.1)]])
    seen = standing(floor) @ turn  # a frame whose camera turned: its turn undoes it
    np.testing.assert_allclose(to_scene(seen, floor, turn), to_scene(standing(floor), floor), atol=1e-9)


def test_a_finished_result_sets_the_3d_views_floor_and_live_poses_clear_it(qtbot):
    from ui.main_window import MainWindow
    from ui.services import Services

    window = MainWindow(Services(make_session=lambda choice: FakeSession(people=1), list_cameras=lambda: []))
    qtbot.addWidget(window)
    spec = FakeSession().spec
    floor = pitched_floor()
    world = np.zeros((1, spec.num_joints, 3))
    world[0, :, 2] = 4.0
    frames = [PoseFrame(i, i / 30, np.zeros((1, spec.num_joints, 3), np.float32), np.ones((1, spec.num_joints),
                                                                                          np.float32),
                        np.ones(1, np.float32), np.zeros(1, np.int64), (640, 480), world.copy()) for i in range(3)]
    seq = PoseSequence(frames, fps=30.0, skeleton=spec,
                       metadata={"feet": {"floor": floor_as_dict(floor), "num_frames": 3, "phases": {}}})
    window.set_result(seq)
    view = window.skeleton_view
    assert view._ground is not None and np.allclose(view._ground.rotation, floor.rotation)
    np.testing.assert_allclose(view._scene(frames[1], 0)[0], to_floor_scene(world[0, 0], floor), atol=1e-9)
    window.forget_result()
    assert view._ground is None
    window.set_result(PoseSequence(frames, fps=30.0, skeleton=spec))  # never finished (an old file): camera axes
    assert view._ground is None


def to_floor_scene(point: np.ndarray, floor: FloorFrame) -> np.ndarray:
    from ui.skeleton_view import to_scene

    return to_scene(point, floor)
