"""Cameras calibrated from clips of a board (issue #48): synthetic clips of known cameras, calibrated, compared
with the truth; and the messages for clips a calibration cannot be made from."""

from __future__ import annotations

import numpy as np
import pytest

from board_clips import FLOOR_AT, board_poses, rig, write_clips
from posetracker.calibration import Board, BoardCalibrationError, BoardView, calibrate_board, calibrate_views
from posetracker.calibration.board import BoardError
from posetracker.cli import main
from posetracker.multiview.calibration import read_calibration


def _angle_deg(A: np.ndarray, B: np.ndarray) -> float:
    return float(np.degrees(np.arccos(np.clip((np.trace(A.T @ B) - 1) / 2, -1, 1))))


def _check_against_truth(got, truth, focal_rel=0.01, centre_m=0.02, angle_deg=0.5):
    """Focal length, principal point, camera centre (the world's origin at the floor board's corner) and
    orientation against the true camera."""
    assert got.name == truth.name
    assert got.K[0, 0] == pytest.approx(truth.K[0, 0], rel=focal_rel)
    assert got.K[1, 1] == pytest.approx(truth.K[1, 1], rel=focal_rel)
    assert np.abs(got.K[:2, 2] - truth.K[:2, 2]).max() < 5.0
    assert np.linalg.norm(got.center - (truth.center - FLOOR_AT)) < centre_m
    assert _angle_deg(got.R, truth.R) < angle_deg


@pytest.fixture(scope="module")
def charuco_clips(tmp_path_factory):
    board = Board("charuco", (7, 5), 0.08, 0.06)
    cams = rig(3)
    return board, cams, write_clips(tmp_path_factory.mktemp("charuco"), cams, board, frames=40, still=6)


def test_charuco_clips_give_the_cameras_and_the_floor(charuco_clips):
    board, cams, paths = charuco_clips
    result = calibrate_board(paths, board, step=1)
    assert result.floor is not None and "frames 34-39" in result.floor
    for got, truth in zip(result.cameras, cams):
        _check_against_truth(got, truth)
        info = result.report["cameras"][got.name]
        assert info["frames_with_board"] >= 30 and info["poses_rms_px"] < 0.6
    # the floor: z = 0 is where the board lay, z up (the cameras are 1.7 m above it)
    assert all(abs(c.center[2] - 1.7) < 0.02 for c in result.cameras)


def test_a_barrel_distorted_lens_is_calibrated(tmp_path):
    """k1 -0.25, k2 0.0625 on every lens: focal lengths, k1 and the projection of points across the image (the
    world's origin at the floor board's corner) against the truth."""
    board = Board("charuco", (7, 5), 0.08, 0.06)
    cams = rig(3, k1=-0.25)
    result = calibrate_board(write_clips(tmp_path, cams, board, frames=40, still=6), board, step=1)
    grid = np.stack(np.meshgrid(np.linspace(-1.5, 1.5, 31), np.linspace(-1.5, 1.5, 31), np.linspace(0, 2, 11)),
                    -1).reshape(-1, 3)
    for got, truth in zip(result.cameras, cams):
        _check_against_truth(got, truth, centre_m=0.02, angle_deg=0.5)
        assert got.dist[0] == pytest.approx(-0.25, abs=0.05)  # k1 trades a little with k2 where the board never went
        px = truth.project(grid)
        w, h = truth.image_size
        inside = (px[:, 0] > 0.05 * w) & (px[:, 0] < 0.95 * w) & (px[:, 1] > 0.05 * h) & (px[:, 1] < 0.95 * h)
        off = np.linalg.norm(got.project(grid[inside] - FLOOR_AT) - px[inside], axis=1)
        assert np.median(off) < 1.5


def test_cli_checkerboard_two_cameras_writes_a_calibration_process_reads(tmp_path):
    board = Board("checkerboard", (7, 6), 0.08)
    cams = rig(3, upside_down=2)[1:]  # the upside-down camera finds the corners in the other order
    paths = write_clips(tmp_path / "clips", cams, board, frames=30, still=5, seed=3)
    out = tmp_path / "calibration.toml"
    rc = main(["calibrate", "--board", "checkerboard", "--squares", "7x6", "--square-mm", "80",
               *map(str, paths), "--out", str(out)])
    assert rc == 0
    read = read_calibration(out)
    assert [c.name for c in read] == ["cam2", "cam3"]
    for got, truth in zip(read, cams):
        _check_against_truth(got, truth)


def test_known_intrinsics_and_a_board_only_lying_on_the_floor_give_the_poses(tmp_path, capsys):
    """The board never moves (lying on the floor throughout): refused without intrinsics (no focal length from
    it), calibrated with the cameras' intrinsics given (--intrinsics, a TOML of them without their poses)."""
    from posetracker.multiview.calibration import write_toml

    board = Board("charuco", (7, 5), 0.08, 0.06)
    cams = rig(3)[1:]
    paths = write_clips(tmp_path / "clips", cams, board, frames=6, still=6)
    args = ["calibrate", "--board", "charuco", "--squares", "7x5", "--square-mm", "80", "--marker-mm", "60",
            *map(str, paths), "--out", str(tmp_path / "c.toml")]
    assert main(args) == 1 and "tilt" in capsys.readouterr().err
    bare = [type(c)(c.name, c.image_size, c.K, c.dist, np.eye(3), np.zeros(3)) for c in cams]
    write_toml(bare, tmp_path / "intrinsics.toml")
    assert main([*args, "--intrinsics", str(tmp_path / "intrinsics.toml")]) == 0
    for got, truth in zip(read_calibration(tmp_path / "c.toml"), cams):
        _check_against_truth(got, truth, focal_rel=1e-9, centre_m=0.03, angle_deg=0.5)


def test_cli_says_why_when_the_board_is_never_found(tmp_path, capsys):
    board = Board("charuco", (7, 5), 0.08, 0.06)
    other = Board("charuco", (5, 4), 0.08, 0.06, "DICT_5X5_100")  # another board is printed in the clip
    paths = write_clips(tmp_path, rig(2), other, frames=8, still=0)
    rc = main(["calibrate", "--board", "charuco", "--squares", "7x5", "--square-mm", "80", "--marker-mm", "60",
               *map(str, paths), "--out", str(tmp_path / "c.toml")])
    err = capsys.readouterr().err
    assert rc == 1 and "found in 0 frame(s)" in err and "Traceback" not in err
    assert not (tmp_path / "c.toml").exists()
    assert board.squares == (7, 5)
    rc = main(["calibrate", "--board", "charuco", "--squares", "7x5", "--square-mm", "40", "--marker-mm", "50",
               str(paths[0]), "--out", str(tmp_path / "c.toml")])
    assert rc == 2 and "markers (50 mm) must be smaller than its squares (40 mm)" in capsys.readouterr().err
    rc = main(["calibrate", "--board", "charuco", "--squares", "7x5", "--square-mm", "40",  # no --marker-mm
               str(paths[0]), "--out", str(tmp_path / "c.toml")])
    err = capsys.readouterr().err  # was "a ChArUco board's markers (None m) must be smaller than its squares (0.04 m)"
    assert rc == 2 and "needs the side of its markers as printed (--marker-mm)" in err and "None" not in err
    rc = main(["calibrate", "--board", "charuco", "--squares", "7x5", "--square-mm", "80", "--marker-mm", "60",
               str(tmp_path / "nothere.mp4"), "--out", str(tmp_path / "c.toml")])
    assert rc == 2 and "not found" in capsys.readouterr().err


def test_checkerboard_corners_are_numbered_from_the_same_square_in_a_view_turned_upside_down():
    import cv2

    from posetracker.calibration import board_image, find_board

    for squares, same in (((7, 6), True), ((7, 5), False)):  # C + R odd: oriented; even: not
        board = Board("checkerboard", squares, 0.08)
        img = cv2.copyMakeBorder(board_image(board, 40, 20), 30, 30, 30, 30, cv2.BORDER_CONSTANT, value=255)
        upright, turned = find_board(img, board), find_board(img[::-1, ::-1].copy(), board)
        h, w = img.shape
        back = np.array([w - 1, h - 1]) - turned.image  # the turned view's corners in the upright image
        assert board.oriented == same
        assert (np.abs(back - upright.image).max() < 0.5) == same


def _views(cam, board, poses) -> dict[int, BoardView]:
    """Corners projected by ``cam`` at each world-from-board pose (those in front of it and in the image)."""
    out = {}
    for f, T in enumerate(poses):
        pts = board.corners_m @ T[:3, :3].T + T[:3, 3]
        xy = cam.project(pts)
        w, h = cam.image_size
        ok = np.isfinite(xy).all(1) & (xy[:, 0] >= 0) & (xy[:, 1] >= 0) & (xy[:, 0] < w) & (xy[:, 1] < h)
        if ok.sum() >= 6:
            out[f] = BoardView(np.flatnonzero(ok), xy[ok])
    return out


def test_views_that_cannot_give_a_calibration_are_refused_with_the_reason():
    board = Board("charuco", (7, 5), 0.08, 0.06)
    cams = rig(2)
    poses = board_poses(board, 30, 0)
    views = [_views(c, board, poses) for c in cams]
    sizes = [c.image_size for c in cams]
    ok = calibrate_views(views, sizes, board, ["cam1", "cam2"])
    assert ok.floor is None  # no still run: the first camera's frame
    np.testing.assert_allclose(ok.cameras[0].R, np.eye(3), atol=1e-9)
    # the cameras never see the board at the same time
    apart = [{f: v for f, v in views[0].items() if f < 15}, {f: v for f, v in views[1].items() if f >= 15}]
    with pytest.raises(BoardCalibrationError, match="never see"):
        calibrate_views(apart, sizes, board, ["cam1", "cam2"])
    # too few views
    with pytest.raises(BoardCalibrationError, match=r"^camera cam1: the .* found in 3 frame\(s\)"):
        calibrate_views([dict(list(views[0].items())[:3])], sizes[:1], board, ["cam1"])
    # the board always faces the camera the same way: no focal length
    flat = [poses[0].copy() for _ in range(10)]
    for i, T in enumerate(flat):
        T[:3, 3] += [0.05 * i, 0.0, 0.02 * i]
    with pytest.raises(BoardCalibrationError, match="tilt"):
        calibrate_views([_views(cams[0], board, flat)], sizes[:1], board, ["cam1"])
    # a checkerboard that looks the same turned half a turn, for several cameras
    even = Board("checkerboard", (7, 5), 0.08)
    with pytest.raises(BoardCalibrationError, match="half a turn"):
        calibrate_views(views, sizes, even, ["cam1", "cam2"])
    with pytest.raises(BoardError, match="at least"):
        Board("checkerboard", (2, 5), 0.08)
