"""Calibration boards: a ChArUco board or a plain checkerboard, found in an image.

A :class:`Board` is described as it is printed: ``squares`` (columns, rows) of the chessboard, each
``square_m`` metres wide; a ChArUco board also has its markers' side ``marker_m`` and ArUco ``dictionary``
(OpenCV's ``cv2.aruco`` names, default ``DICT_4X4_50``, anipose's). Board coordinates (metres) follow OpenCV's
boards: origin at the printed image's top-left corner, x along the columns (right), y along the rows (down),
z = x cross y into the board (away from someone looking at the printed side). Corner ``n`` of a checkerboard
is inner corner (n % (C - 1), n // (C - 1)) at ((i + 1) s, (j + 1) s, 0); a ChArUco board numbers its corners
the same way and names each by its id.

A checkerboard's corners could be numbered from either end (half a turn apart): where C + R is odd the
corner squares differ in colour and OpenCV starts from the same one in every view (the dark top-left square
of :func:`board_image`; ``tests/calibration/test_calibrate_board.py`` checks it on a view turned upside down), where it is
even nothing tells them apart (:attr:`Board.oriented`). A ChArUco board's markers always tell.

Shapes: N corners found in one image.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

KINDS = ("charuco", "checkerboard")
DEFAULT_DICTIONARY = "DICT_4X4_50"
MIN_CORNERS = 6  # fewer corners than this in an image: the board is not taken as found there


class BoardError(ValueError):
    """A board description that cannot be a printed board (or names an unknown ArUco dictionary)."""


@dataclass(frozen=True)
class Board:
    """A printed calibration board (module docstring).

    kind:       "charuco" or "checkerboard"
    squares:    (columns, rows) of chessboard squares, each at least 2 (3 for a checkerboard)
    square_m:   side of a square, metres
    marker_m:   side of a ChArUco marker, metres (< square_m; None for a checkerboard)
    dictionary: ArUco dictionary name of a ChArUco board (``cv2.aruco.DICT_*``)
    """

    kind: str
    squares: tuple[int, int]
    square_m: float
    marker_m: float | None = None
    dictionary: str = DEFAULT_DICTIONARY

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise BoardError(f"board kind {self.kind!r}: choose one of {', '.join(KINDS)}")
        cols, rows = (int(v) for v in self.squares)
        least = 3 if self.kind == "checkerboard" else 2
        if min(cols, rows) < least:
            raise BoardError(f"a {self.kind} needs at least {least} x {least} squares, got {cols} x {rows}")
        object.__setattr__(self, "squares", (cols, rows))
        if not (np.isfinite(self.square_m) and self.square_m > 0):
            raise BoardError(f"square side {self.square_m!r} m: must be a positive length")
        if self.kind == "charuco":
            if self.marker_m is None:
                raise BoardError(f"a ChArUco board needs the side of its markers as printed (--marker-mm), smaller "
                                 f"than its squares' {1000 * self.square_m:g} mm")
            if not (0 < self.marker_m < self.square_m):
                raise BoardError(f"a ChArUco board's markers ({1000 * self.marker_m:g} mm) must be smaller than its "
                                 f"squares ({1000 * self.square_m:g} mm)")
            if not hasattr(cv2.aruco, self.dictionary):
                raise BoardError(f"unknown ArUco dictionary {self.dictionary!r} (e.g. DICT_4X4_50, DICT_5X5_100)")
            need = (cols * rows) // 2
            size = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.dictionary)).bytesList.shape[0]
            if size < need:
                raise BoardError(f"{self.dictionary} has {size} markers; a {cols} x {rows} board needs {need}")

    @property
    def corners_m(self) -> np.ndarray:
        """(M, 3) every inner corner in board metres, index = corner id (module docstring)."""
        cols, rows = self.squares
        j, i = np.mgrid[1:rows, 1:cols]
        pts = np.stack([i.ravel(), j.ravel(), np.zeros(i.size)], axis=1) * self.square_m
        return pts.astype(np.float64)

    @property
    def oriented(self) -> bool:
        """Whether a view tells the board's corners apart from their half-turn (ChArUco, or C + R odd): needed
        for several cameras and for a floor whose axes mean the same in every view."""
        return self.kind == "charuco" or sum(self.squares) % 2 == 1

    def opencv_board(self):
        """The ``cv2.aruco.CharucoBoard`` of a ChArUco board (None for a checkerboard)."""
        if self.kind != "charuco":
            return None
        dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.dictionary))
        return cv2.aruco.CharucoBoard(self.squares, float(self.square_m), float(self.marker_m), dictionary)

    def describe(self) -> str:
        cols, rows = self.squares
        text = f"{self.kind} {cols}x{rows}, squares {1000 * self.square_m:g} mm"
        return text + (f", markers {1000 * self.marker_m:g} mm, {self.dictionary}" if self.kind == "charuco" else "")


@dataclass(frozen=True)
class BoardView:
    """The board's corners found in one image.

    ids:   (N,) corner ids (rows of :attr:`Board.corners_m`)
    image: (N, 2) pixel positions (x right, y down)
    """

    ids: np.ndarray
    image: np.ndarray

    @property
    def count(self) -> int:
        return len(self.ids)


def board_image(board: Board, px_per_square: int = 80, margin_px: int = 0) -> np.ndarray:
    """(H, W) uint8 image of the board as printed (H = rows x px_per_square + 2 margin, W likewise), the top-left
    square dark; for tests and for printing."""
    cols, rows = board.squares
    w, h = cols * px_per_square + 2 * margin_px, rows * px_per_square + 2 * margin_px
    if board.kind == "charuco":
        return board.opencv_board().generateImage((w, h), marginSize=margin_px)
    img = np.full((h, w), 255, np.uint8)
    for j in range(rows):
        for i in range(cols):
            if (i + j) % 2 == 0:
                y0, x0 = margin_px + j * px_per_square, margin_px + i * px_per_square
                img[y0:y0 + px_per_square, x0:x0 + px_per_square] = 0
    return img


def _gray(image: np.ndarray) -> np.ndarray:
    if image.ndim == 3:
        return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    return np.ascontiguousarray(image)


def find_board(image: np.ndarray, board: Board, detector=None) -> BoardView | None:
    """The board's corners in ``image`` ((H, W, 3) RGB or (H, W) gray uint8), or None where fewer than
    MIN_CORNERS (or only corners on one line) are found. ``detector``: a ``cv2.aruco.CharucoDetector`` of the
    board to reuse over many images (made here when None)."""
    gray = _gray(image)
    if board.kind == "charuco":
        cv_board = board.opencv_board() if detector is None else detector.getBoard()
        detector = detector or cv2.aruco.CharucoDetector(cv_board)
        corners, ids, _, _ = detector.detectBoard(gray)
        if ids is None or len(ids) < MIN_CORNERS:
            return None
        ids = np.asarray(ids, np.int64).ravel()
        if cv_board.checkCharucoCornersCollinear(ids.reshape(-1, 1).astype(np.int32)):
            return None
        return BoardView(ids, np.asarray(corners, np.float64).reshape(-1, 2))
    cols, rows = board.squares
    pattern = (cols - 1, rows - 1)
    flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_FAST_CHECK
    found, corners = cv2.findChessboardCorners(gray, pattern, flags=flags)
    if not found:
        return None
    corners = cv2.cornerSubPix(gray, corners.astype(np.float32), (5, 5), (-1, -1),
                               (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_MAX_ITER, 40, 1e-3))
    return BoardView(np.arange(len(corners)), np.asarray(corners, np.float64).reshape(-1, 2))


__all__ = ["Board", "BoardError", "BoardView", "KINDS", "board_image", "find_board"]
