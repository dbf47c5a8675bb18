"""Camera calibration from clips of a printed board (ChArUco or checkerboard).

- :mod:`.board`: ``Board`` (what is printed), ``find_board`` (its corners in an image), ``board_image``
- :mod:`.bundle`: cameras placed from the board poses they share, then bundle adjustment
- :mod:`.solve`: ``calibrate_board(videos, board) -> BoardCalibration``: intrinsics per camera, poses, the floor

The result is written with :func:`posetracker.multiview.calibration.write_toml` (Pose2Sim / anipose TOML) and
read back by every front end's ``--calibration``.
"""

from __future__ import annotations

from posetracker.calibration.board import Board, BoardError, BoardView, board_image, find_board
from posetracker.calibration.solve import BoardCalibration, BoardCalibrationError, calibrate_board, calibrate_views

__all__ = ["Board", "BoardCalibration", "BoardCalibrationError", "BoardError", "BoardView", "board_image",
           "calibrate_board", "calibrate_views", "find_board"]
