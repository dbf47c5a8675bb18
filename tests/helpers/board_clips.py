"""Synthetic clips of a calibration board seen by known cameras, for the calibration tests.

World metres, z up; the board is waved in front of the cameras (facing them, tilted up to ~40 degrees) and
then laid face up on the floor with its top-left corner at ``FLOOR_AT`` for the last ``still`` frames. Each
camera's frames are the printed board (:func:`posetracker.calibration.board_image`) warped by its true
homography onto a grey, slightly noisy background; no lens distortion.
"""

from __future__ import annotations

from pathlib import Path

import av
import cv2
import numpy as np

from posetracker.calibration import Board, board_image
from posetracker.multiview.calibration import CameraCalibration

FLOOR_AT = np.array([-0.25, 0.2, 0.0])  # world position of the floor board's origin (its top-left corner)
PX_PER_SQUARE = 60


def look_at(name: str, centre, target, f: float, size=(960, 720), roll_deg: float = 0.0,
            dist=(0.0, 0.0, 0.0, 0.0, 0.0)) -> CameraCalibration:
    """A pinhole camera at ``centre`` looking at ``target`` (world z up; image y down), focal ``f`` px, turned
    ``roll_deg`` about its optical axis (180: mounted upside down), lens distortion ``dist`` (k1 k2 p1 p2 k3)."""
    centre, target = np.asarray(centre, float), np.asarray(target, float)
    z = (target - centre) / np.linalg.norm(target - centre)
    x = np.cross(z, [0, 0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    a = np.radians(roll_deg)
    x, y = np.cos(a) * x + np.sin(a) * y, -np.sin(a) * x + np.cos(a) * y
    R = np.stack([x, y, z])
    K = np.array([[f, 0, size[0] / 2 - 3.5], [0, f, size[1] / 2 + 2.5], [0, 0, 1]])
    return CameraCalibration(name, size, K, np.asarray(dist, float), R, -R @ centre)


def rig(n: int = 3, upside_down: int | None = None, k1: float = 0.0) -> list[CameraCalibration]:
    """``n`` cameras 2.3 m from the middle, 1.7 m up, spread over 80 degrees, focal lengths 700-860 px; camera
    number ``upside_down`` (from 0) mounted upside down; radial distortion ``k1`` (k2 = -k1 / 4) on every lens."""
    out = []
    for i, az in enumerate(np.radians(np.linspace(-40, 40, n))):
        c = [2.3 * np.sin(az), -2.3 * np.cos(az), 1.7]
        out.append(look_at(f"cam{i + 1}", c, [0, 0, 0.5], 700 + 80 * i, roll_deg=180.0 * (i == upside_down),
                           dist=(k1, -k1 / 4, 0.0, 0.0, 0.0)))
    return out


def board_poses(board: Board, frames: int, still: int, seed: int = 0) -> list[np.ndarray]:
    """(4, 4) world-from-board poses: ``frames - still`` waved in front of the cameras, then ``still`` lying on
    the floor (board z, into the board, pointing down)."""
    rng = np.random.default_rng(seed)
    cols, rows = board.squares
    half = 0.5 * np.array([cols * board.square_m, rows * board.square_m, 0])
    out = []
    for i in range(frames - still):
        phase = 2 * np.pi * i / max(frames - still, 1)
        d = np.array([0.6 * np.sin(2 * phase) + rng.normal(0, 0.1), -1.0, 0.2 + 0.8 * (0.5 + 0.5 * np.cos(3 * phase))])
        d /= np.linalg.norm(d)  # the printed side faces this way
        v = -d
        right = np.cross(v, [0, 0, 1.0])
        right /= np.linalg.norm(right)
        down = np.cross(v, right)
        a = np.radians(25 * np.sin(3 * phase))  # turned in its plane
        xb, yb = np.cos(a) * right + np.sin(a) * down, -np.sin(a) * right + np.cos(a) * down
        R = np.stack([xb, yb, v], axis=1)
        centre = np.array([0.6 * np.sin(phase), 0.2 * np.cos(phase), 0.9 + 0.4 * np.sin(2 * phase + 0.5)])
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R, centre - R @ half
        out.append(T)
    floor = np.eye(4)
    floor[:3, :3], floor[:3, 3] = np.diag([1.0, -1.0, -1.0]), FLOOR_AT
    return out + [floor] * still


def render(cam: CameraCalibration, board: Board, T_w_b: np.ndarray, printed: np.ndarray, margin: int,
           rng: np.random.Generator, maps=None) -> np.ndarray:
    """(H, W, 3) uint8 RGB: the board at pose ``T_w_b`` as ``cam`` sees it (blank where it faces away); ``maps``:
    :func:`_pinhole_maps` of a camera with lens distortion."""
    w, h = cam.image_size
    img = np.full((h, w), 110, np.uint8)
    T_c_b = np.vstack([np.hstack([cam.R, cam.t[:, None]]), [0, 0, 0, 1]]) @ T_w_b
    centre_b = np.array([*(0.5 * np.array(board.squares) * board.square_m), 0, 1])
    facing = T_c_b[:3, 2] @ (T_c_b @ centre_b)[:3] > 0  # board z (into it) points away from the camera
    if facing and (T_c_b @ centre_b)[2] > 0.2:
        s = board.square_m / PX_PER_SQUARE
        A = np.array([[s, 0, (0.5 - margin) * s], [0, s, (0.5 - margin) * s], [0, 0, 1]])  # printed px -> board m
        H = cam.K @ T_c_b[:3, [0, 1, 3]] @ A
        img = cv2.warpPerspective(printed, H, (w, h), dst=img, flags=cv2.INTER_AREA,
                                  borderMode=cv2.BORDER_TRANSPARENT)
        if np.any(cam.dist):  # each pixel of the distorted image reads the pinhole image where its ray lands
            img = cv2.remap(img, *maps, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    noisy = img.astype(np.int16) + rng.integers(-3, 4, img.shape)
    return np.repeat(np.clip(noisy, 0, 255).astype(np.uint8)[..., None], 3, axis=2)


def _pinhole_maps(cam: CameraCalibration) -> tuple[np.ndarray, np.ndarray]:
    """(H, W) float32 maps x, y: for each pixel of ``cam``'s distorted image, where the pinhole image has it."""
    w, h = cam.image_size
    u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    normal = cam.undistort(np.stack([u, v], axis=-1))  # (H, W, 2) x/z, y/z
    px = normal @ cam.K[:2, :2].T + cam.K[:2, 2]
    return px[..., 0].astype(np.float32), px[..., 1].astype(np.float32)


def write_clips(folder: Path, cams: list[CameraCalibration], board: Board, frames: int = 40, still: int = 6,
                seed: int = 0) -> list[Path]:
    """One MPEG-4 clip per camera (``folder/NAME.mp4``, 30 fps) of the board's poses; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    margin = PX_PER_SQUARE // 2
    printed = board_image(board, PX_PER_SQUARE, margin)
    poses = board_poses(board, frames, still, seed)
    rng = np.random.default_rng(seed + 1)
    paths = []
    for cam in cams:
        path = folder / f"{cam.name}.mp4"
        with av.open(str(path), "w") as out:
            st = out.add_stream("mpeg4", rate=30)
            st.width, st.height = cam.image_size
            st.pix_fmt = "yuv420p"
            st.bit_rate = 8_000_000
            maps = _pinhole_maps(cam) if np.any(cam.dist) else None
            for T in poses:
                im = render(cam, board, T, printed, margin, rng, maps)
                out.mux(st.encode(av.VideoFrame.from_ndarray(im, format="rgb24")))
            out.mux(st.encode())
        paths.append(path)
    return paths
