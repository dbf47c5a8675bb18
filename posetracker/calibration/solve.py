"""Cameras calibrated from clips of a board: intrinsics per camera, poses in a world whose floor is the board's.

``posetracker calibrate --board charuco --squares 7x5 --square-mm 40 --marker-mm 30 cam1.mp4 cam2.mp4 ...``
runs :func:`calibrate_board`; the app calls the same function. The clips are synchronised (frame i of each is
the same instant) and each is named after its camera (the file's stem).

1. **Found**: the board's corners in every ``step``-th frame of each clip (:func:`.board.find_board`).
2. **Intrinsics** per camera: ``cv2.calibrateCamera`` on up to ``max_views`` of its views spread over the clip
   (k1, k2; p1, p2, k3 fixed at 0); refused where the views do not tilt the board enough to give a focal length.
   Intrinsics already known (``intrinsics``, ``calibrate --intrinsics FILE``) are kept instead.
3. **Poses** (several cameras): the board's pose in each view (``cv2.solvePnP``), each camera placed against
   the others from the frames both see the board in, then every camera and board pose refined together by
   bundle adjustment (:mod:`.bundle`).
4. **Floor**: the board lying on the floor defines the world: origin at its top-left corner, x along its
   columns, y against its rows, z up out of its printed side (metres), so that z = 0 is the floor. Its pose is
   taken at ``floor_frame`` when given, else over the longest run of frames in which the board lies still in a
   view (put it down on the floor at the start or the end of the clip). With neither, the world is the first
   camera's frame and the calibration has no floor (``BoardCalibration.floor`` None).

:func:`calibrate_views` is steps 2-4 on corners already found (the app or a test may find them itself).
Errors a user can act on raise :class:`BoardCalibrationError` with what to do.

Shapes: V cameras, N corners of one view, M corners of the board.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from posetracker.calibration.board import Board, BoardView, find_board
from posetracker.calibration.bundle import bundle_adjust, chain_extrinsics, inverse, mean_pose, to_pose
from posetracker.multiview.calibration import CameraCalibration

MIN_VIEWS = 5  # frames with the board a camera needs for its intrinsics
MIN_TILT_DEG = 10.0  # least spread of the board's orientations over a camera's views for a focal length
STILL_PX = 1.0  # a board whose corners move less than this between searched frames lies still
MIN_STILL = 3  # searched frames in a row of a board lying still, to be taken as the floor
#: board coordinates (x right, y down, z into the board) -> world (x right, y up the board, z out of it: up)
BOARD_TO_WORLD = np.diag([1.0, -1.0, -1.0, 1.0])


class BoardCalibrationError(ValueError):
    """Clips a calibration cannot be made from (board never found, too few views, cameras that never see it
    together, a flat set of views); the message says what to change."""


@dataclass(frozen=True)
class BoardCalibration:
    """Cameras calibrated from a board.

    cameras: one per clip, named after it; world -> camera poses in metres, the world z up from the floor
             board (or the first camera's frame where ``floor`` is None)
    floor:   how the floor was set (e.g. "board lying still in frames 240-300 of cam1"), None without one
    report:  JSON-ready: the board, per camera the frames the board was found in and the reprojection errors
             (intrinsics; poses after bundle adjustment) in px, the frames shared
    """

    cameras: list[CameraCalibration]
    floor: str | None
    report: dict[str, Any] = field(default_factory=dict)


def find_in_video(path: str | Path, board: Board, step: int | None = None, max_frames: int = 200,
                  progress: Callable[[int, int | None], None] | None = None, also: Sequence[int] = ()
                  ) -> tuple[dict[int, BoardView], tuple[int, int], int]:
    """The board in every ``step``-th frame of a clip (None: as many frames as spread ``max_frames`` over it)
    and in the frames ``also`` -> ({frame index: corners found}, (width, height) px, frames read). Raises
    CaptureError for a bad file."""
    from posetracker.capture import open_source

    found: dict[int, BoardView] = {}
    detector = cv2.aruco.CharucoDetector(board.opencv_board()) if board.kind == "charuco" else None
    with open_source(str(path)) as source:
        total = source.frame_count
        step = step or max(1, math.ceil((total or max_frames) / max_frames))
        read = 0
        for frame in source:
            read += 1
            if frame.index % step == 0 or frame.index in also:
                view = find_board(frame.image, board, detector)
                if view is not None:
                    found[frame.index] = view
            if progress is not None:
                progress(read, total)
        return found, source.size, read


def calibrate_board(videos: Sequence[str | Path], board: Board, *, step: int | None = None, max_frames: int = 200,
                    floor_frame: int | None = None, intrinsics: Sequence[CameraCalibration] | None = None,
                    progress: Callable[[str, int, int | None], None] | None = None) -> BoardCalibration:
    """Calibrate the cameras of synchronised clips of ``board`` (module docstring); ``intrinsics``: each clip's
    camera already calibrated (:func:`calibrate_views`); ``progress(name, frames read, total)`` after each frame.
    Raises BoardCalibrationError (and CaptureError for a file that cannot be read)."""
    names = [Path(v).stem for v in videos]
    _check_oriented(board, len(videos))  # before reading any clip
    if len({n.lower() for n in names}) != len(names):
        raise BoardCalibrationError(f"two clips share a name ({names}): each camera is named after its clip")
    found, sizes = [], []
    for video, name in zip(videos, names):
        update = (lambda done, total, name=name: progress(name, done, total)) if progress else None
        views, size, _ = find_in_video(video, board, step, max_frames, update,
                                       () if floor_frame is None else (floor_frame,))
        found.append(views)
        sizes.append(size)
    return calibrate_views(found, sizes, board, names, floor_frame=floor_frame, intrinsics=intrinsics)


def calibrate_views(found: Sequence[dict[int, BoardView]], sizes: Sequence[tuple[int, int]], board: Board,
                    names: Sequence[str], *, floor_frame: int | None = None, max_views: int = 40,
                    max_shared: int = 150, intrinsics: Sequence[CameraCalibration] | None = None
                    ) -> BoardCalibration:
    """Steps 2-4 of the module docstring on the corners found in each camera ({frame: BoardView} per camera,
    in the order of ``names``; frames the same instants in every camera), image ``sizes`` (width, height).
    ``intrinsics``: each camera's K and distortion already known (one per name, in order; their poses are not
    used): step 2 is skipped, they are kept through the bundle adjustment, and a board that never tilts (lying
    on the floor throughout) is enough."""
    _check_oriented(board, len(found))
    cams, rms, poses = [], {}, []
    least = 1 if intrinsics else MIN_VIEWS
    for n, (views, size, name) in enumerate(zip(found, sizes, names)):
        if len(views) < least:
            raise BoardCalibrationError(f"camera {name}: the {board.describe()} was found in {len(views)} frame(s) "
                                        f"(need {least}): check the board's size and kind, and that it is whole and "
                                        "sharp in the frames")
        if intrinsics:
            K, dist = intrinsics[n].K, intrinsics[n].dist
        else:
            K, dist, rms[name] = _intrinsics(views, size, board, name, max_views)
        cam = CameraCalibration(name, tuple(size), K, dist, np.eye(3), np.zeros(3))
        cams.append(cam)
        poses.append({f: _board_pose(cam, v, board) for f, v in views.items()})
    report: dict[str, Any] = {"board": board.describe(), "cameras": {
        n: {"frames_with_board": len(v), "intrinsics_rms_px": round(rms[n], 3) if n in rms else "given"}
        for n, v in zip(names, found)}}
    extr = [np.eye(4)]
    board_in_0: dict[int, np.ndarray] = {}
    if len(cams) > 1:
        extr, board_in_0 = _poses(cams, found, poses, board, names, max_shared, report, refine=not intrinsics)
    floor, T_0_board = _floor(found, poses, extr, board_in_0, names, floor_frame)
    T_0_w = np.eye(4) if T_0_board is None else T_0_board @ BOARD_TO_WORLD
    out = []
    for cam, T_c_0 in zip(cams, extr):
        T = T_c_0 @ T_0_w
        out.append(CameraCalibration(cam.name, cam.image_size, cam.K, cam.dist, T[:3, :3], T[:3, 3]))
    report["floor"] = floor or "none: no frame of the board lying still (the world is the first camera's frame)"
    return BoardCalibration(out, floor, report)


def _check_oriented(board: Board, cameras: int) -> None:
    if cameras > 1 and not board.oriented:
        cols, rows = board.squares
        raise BoardCalibrationError(f"a {cols} x {rows} checkerboard looks the same turned by half a turn, so the "
                                    "cameras cannot agree on its corners: use a ChArUco board, or a checkerboard with "
                                    "an odd number of squares one way and an even number the other (e.g. 7 x 6)")


def _intrinsics(views: dict[int, BoardView], size: tuple[int, int], board: Board, name: str, max_views: int
                ) -> tuple[np.ndarray, np.ndarray, float]:
    """(K (3, 3), dist (5,), rms px) of one camera from up to ``max_views`` of its views spread over the clip."""
    frames = sorted(views)
    pick = [frames[i] for i in np.unique(np.linspace(0, len(frames) - 1, min(max_views, len(frames))).round()
                                           .astype(int))]
    obj = [board.corners_m[views[f].ids].astype(np.float32) for f in pick]
    img = [views[f].image.astype(np.float32).reshape(-1, 1, 2) for f in pick]
    flags = cv2.CALIB_FIX_K3 | cv2.CALIB_ZERO_TANGENT_DIST
    try:
        rms, K, dist, rvecs, _ = cv2.calibrateCamera(obj, img, tuple(int(v) for v in size), None, None, flags=flags)
    except cv2.error as exc:
        raise BoardCalibrationError(f"camera {name}: OpenCV could not calibrate from the board's views: "
                                    f"{exc}") from None
    normals = np.array([cv2.Rodrigues(r)[0][:, 2] for r in rvecs])
    spread = float(np.degrees(np.arccos(np.clip(normals @ normals.T, -1, 1))).max())
    if spread < MIN_TILT_DEG:
        raise BoardCalibrationError(f"camera {name}: the board faces the camera the same way in every view (its tilt "
                                    f"varies by {spread:.1f} degrees; need {MIN_TILT_DEG:g}): the focal length cannot "
                                    "be told from its distance; tilt the board towards and away from the camera as "
                                    "you move it")
    d = np.zeros(5)
    d[:min(5, dist.size)] = np.asarray(dist, np.float64).ravel()[:5]
    return np.asarray(K, np.float64), d, float(rms)


def _board_pose(cam: CameraCalibration, view: BoardView, board: Board) -> np.ndarray:
    """``T_cam_board`` (4, 4) of one view (``cv2.solvePnP`` with the camera's intrinsics)."""
    ok, rvec, tvec = cv2.solvePnP(board.corners_m[view.ids], view.image, cam.K, cam.dist)
    return to_pose(rvec, tvec) if ok else np.full((4, 4), np.nan)


def _poses(cams, found, poses, board, names, max_shared, report, refine: bool = True
           ) -> tuple[list[np.ndarray], dict[int, np.ndarray]]:
    """Every camera's ``T_c_0`` and the shared frames' ``T_0_board`` after bundle adjustment (module step 3)."""
    poses = [{f: T for f, T in p.items() if np.isfinite(T).all()} for p in poses]
    first = chain_extrinsics(poses)
    lost = [n for n, T in zip(names, first) if T is None]
    if lost:
        raise BoardCalibrationError(f"{', '.join(lost)}: never see(s) the board at the same time as {names[0]} or a "
                                    "camera placed from it (need 3 frames in common): show the board to two cameras "
                                    "at once, all cameras recording together")
    counts: dict[int, int] = {}
    for p in poses:
        for f in p:
            counts[f] = counts.get(f, 0) + 1
    shared = sorted(f for f, n in counts.items() if n >= 2)
    shared = [shared[i] for i in np.unique(np.linspace(0, len(shared) - 1, min(max_shared, len(shared))).round()
                                           .astype(int))]
    start = {}
    obs = []
    for f in shared:
        best = max((c for c in range(len(cams)) if f in poses[c]), key=lambda c: found[c][f].count)
        start[f] = inverse(first[best]) @ poses[best][f]
        obs += [(c, f, found[c][f].ids, found[c][f].image) for c in range(len(cams)) if f in poses[c]]
    cams[:], extr, boards, res = bundle_adjust(cams, first, obs, board.corners_m, start, refine_intrinsics=refine)
    cam_of = np.concatenate([np.full(len(ids), c) for c, _, ids, _ in obs])
    err = np.linalg.norm(res, axis=1)
    for c, n in enumerate(names):
        report["cameras"][n]["poses_rms_px"] = round(float(np.sqrt(np.mean(err[cam_of == c] ** 2))), 3)
        report["cameras"][n]["poses_median_px"] = round(float(np.median(err[cam_of == c])), 3)
    report["shared_frames"] = len(shared)
    return extr, boards


def _floor(found, poses, extr, board_in_0, names, floor_frame) -> tuple[str | None, np.ndarray | None]:
    """(how the floor was set, ``T_0_board`` of the board on the floor) or (None, None) (module step 4)."""
    if floor_frame is not None:
        seen = [c for c in range(len(found)) if floor_frame in found[c] and np.isfinite(poses[c][floor_frame]).all()]
        if not seen:
            raise BoardCalibrationError(f"--floor-frame {floor_frame}: the board was not found in that frame of any "
                                        f"clip (frames searched with the board, first clip: "
                                        f"{_ranges(sorted(found[0]))})")
        if floor_frame in board_in_0:
            return f"board in frame {floor_frame}", board_in_0[floor_frame]
        c = max(seen, key=lambda c: found[c][floor_frame].count)
        return f"board in frame {floor_frame} of {names[c]}", inverse(extr[c]) @ poses[c][floor_frame]
    best = None
    for c, views in enumerate(found):
        for run in _still_runs(views):
            key = (len(run), sum(views[f].count for f in run))
            if len(run) >= MIN_STILL and (best is None or key > best[0]):
                best = (key, c, run)
    if best is None:
        return None, None
    _, c, run = best
    where = f"board lying still in frames {run[0]}-{run[-1]} of {names[c]}"
    adjusted = [board_in_0[f] for f in run if f in board_in_0]  # seen by several cameras: bundle-adjusted
    if adjusted:
        return where, mean_pose(adjusted)
    good = [poses[c][f] for f in run if np.isfinite(poses[c][f]).all()]
    return where, inverse(extr[c]) @ mean_pose(good)


def _still_runs(views: dict[int, BoardView]) -> list[list[int]]:
    """Runs of searched frames (in order) in which the corners found move less than STILL_PX from one to the next
    (the same corners found; frames searched at a regular step: the commonest gap)."""
    frames = sorted(views)
    if len(frames) < 2:
        return []
    gap = int(np.bincount(np.diff(frames)).argmax())
    runs, run = [], [frames[0]]
    for a, b in zip(frames, frames[1:]):
        va, vb = views[a], views[b]
        still = b - a == gap and np.array_equal(va.ids, vb.ids) and \
            float(np.abs(va.image - vb.image).max()) < STILL_PX
        if still:
            run.append(b)
        else:
            runs.append(run)
            run = [b]
    return runs + [run]


def _ranges(frames: list[int]) -> str:
    if not frames:
        return "none"
    return f"{len(frames)} between {frames[0]} and {frames[-1]}"


__all__ = ["BoardCalibration", "BoardCalibrationError", "calibrate_board", "calibrate_views", "find_in_video"]
