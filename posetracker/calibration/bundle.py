"""Board poses seen by several cameras -> the cameras' poses: a first guess from pairs, then bundle adjustment.

Poses are 4 x 4 rigid transforms ``T_a_b`` taking b's coordinates to a's (metres). The first camera is the
reference (``T_0_0 = I``). :func:`chain_extrinsics` gives each camera's ``T_c_0`` from the frames in which it and a
camera already placed both see the board (robust rotation and translation averages), camera by camera, the best
connected first. :func:`bundle_adjust` then refines every camera's pose and every shared frame's board pose
together with each camera's focal lengths, principal point and radial distortion, minimising the corners'
reprojection error in pixels (``scipy.optimize.least_squares``, soft-L1 loss, sparse Jacobian).

Shapes: V cameras, F frames, N corners of one view, M corners of the board.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from posetracker.multiview.calibration import CameraCalibration


def to_pose(rvec: np.ndarray, tvec: np.ndarray) -> np.ndarray:
    """(4, 4) from a Rodrigues (3,) rotation and a (3,) translation."""
    T = np.eye(4)
    T[:3, :3] = cv2.Rodrigues(np.asarray(rvec, np.float64).reshape(3, 1))[0]
    T[:3, 3] = np.asarray(tvec, np.float64).ravel()
    return T


def inverse(T: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


def mean_pose(poses: Sequence[np.ndarray], max_angle_deg: float = 3.0) -> np.ndarray:
    """The robust mean of rigid transforms (4, 4): rotations averaged (chordal, SVD) over those within
    ``max_angle_deg`` (or 3 x their median angle, if larger) of the first mean, translations by median."""
    Ts = np.asarray(poses, np.float64)
    R = _project_rotation(Ts[:, :3, :3].sum(0))
    angles = np.array([_angle(R, Ri) for Ri in Ts[:, :3, :3]])
    keep = angles <= max(max_angle_deg, 3 * float(np.median(angles)))
    out = np.eye(4)
    out[:3, :3] = _project_rotation(Ts[keep, :3, :3].sum(0))
    out[:3, 3] = np.median(Ts[keep, :3, 3], axis=0)
    return out


def _project_rotation(M: np.ndarray) -> np.ndarray:
    u, _, vt = np.linalg.svd(M)
    d = np.sign(np.linalg.det(u @ vt))
    return u @ np.diag([1.0, 1.0, d]) @ vt


def _angle(A: np.ndarray, B: np.ndarray) -> float:
    return float(np.degrees(np.arccos(np.clip((np.trace(A.T @ B) - 1) / 2, -1.0, 1.0))))


def chain_extrinsics(board_poses: list[dict[int, np.ndarray]], min_shared: int = 3) -> list[np.ndarray | None]:
    """Each camera's ``T_c_0`` (4, 4) from ``board_poses[c][frame] = T_c_board``; None for a camera that shares
    fewer than ``min_shared`` frames with the cameras placed (directly or through others)."""
    v = len(board_poses)
    placed: list[np.ndarray | None] = [None] * v
    placed[0] = np.eye(4)
    while True:
        best = None
        for c in range(v):
            if placed[c] is not None:
                continue
            for a in range(v):
                if placed[a] is None:
                    continue
                shared = sorted(set(board_poses[c]) & set(board_poses[a]))
                if len(shared) >= min_shared and (best is None or len(shared) > len(best[2])):
                    best = (c, a, shared)
        if best is None:
            return placed
        c, a, shared = best
        T_c_a = mean_pose([board_poses[c][f] @ inverse(board_poses[a][f]) for f in shared])
        placed[c] = T_c_a @ placed[a]


def _rodrigues(r: np.ndarray) -> np.ndarray:
    """(n, 3) rotation vectors -> (n, 3, 3) matrices."""
    theta = np.linalg.norm(r, axis=1)[:, None, None]
    small = theta < 1e-12
    k = r / np.where(small[:, :, 0], 1.0, theta[:, :, 0])
    Kx = np.zeros((len(r), 3, 3))
    Kx[:, 0, 1], Kx[:, 0, 2], Kx[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    Kx[:, 1, 0], Kx[:, 2, 0], Kx[:, 2, 1] = k[:, 2], -k[:, 1], k[:, 0]
    s, c = np.sin(theta), np.cos(theta)
    return np.eye(3) + s * Kx + (1 - c) * Kx @ Kx


def bundle_adjust(cameras: Sequence[CameraCalibration], extrinsics: list[np.ndarray],
                  observations: list[tuple[int, int, np.ndarray, np.ndarray]], board_corners: np.ndarray,
                  board_poses: dict[int, np.ndarray], refine_intrinsics: bool = True
                  ) -> tuple[list[CameraCalibration], list[np.ndarray], dict[int, np.ndarray], np.ndarray]:
    """Refine each camera's intrinsics (fx, fy, cx, cy, k1, k2; its p1, p2, k3 stay 0; with
    ``refine_intrinsics`` False they stay as given, every term used), ``extrinsics`` (each camera's ``T_c_0``;
    camera 0 stays at I) and ``board_poses`` ({frame: ``T_0_board``}) to the ``observations`` (camera, frame,
    ids (N,), pixels (N, 2)) of the board's ``board_corners`` (M, 3)
    -> (cameras with the refined intrinsics, extrinsics, board poses, residuals (sum N, 2) px after)."""
    from scipy.optimize import least_squares
    from scipy.sparse import lil_matrix

    v = len(cameras)
    frames = sorted(board_poses)
    fidx = {f: i for i, f in enumerate(frames)}
    intr0 = np.concatenate([[c.K[0, 0], c.K[1, 1], c.K[0, 2], c.K[1, 2], c.dist[0], c.dist[1]] for c in cameras])
    x0 = np.concatenate([intr0] + [_vec(extrinsics[c]) for c in range(1, v)] + [_vec(board_poses[f]) for f in frames])
    if not refine_intrinsics:
        x0 = x0[6 * v:]
    ni, ne = (6 * v if refine_intrinsics else 0), 6 * (v - 1)
    posed = [CameraCalibration(c.name, c.image_size, c.K, c.dist, np.eye(3), np.zeros(3)) for c in cameras]
    cam_of = np.concatenate([np.full(len(ids), c) for c, _, ids, _ in observations])
    frame_of = np.concatenate([np.full(len(ids), fidx[f]) for _, f, ids, _ in observations])
    obj = np.concatenate([board_corners[ids] for _, _, ids, _ in observations])  # (n, 3)
    seen = np.concatenate([xy for *_, xy in observations])  # (n, 2)
    n = len(obj)

    def residuals(x: np.ndarray) -> np.ndarray:
        ext = x[ni:ni + ne].reshape(-1, 6)
        cam_r = np.vstack([np.zeros((1, 3)), ext[:, :3]])
        cam_t = np.vstack([np.zeros((1, 3)), ext[:, 3:]])
        b = x[ni + ne:].reshape(-1, 6)
        Rb, Rc = _rodrigues(b[:, :3]), _rodrigues(cam_r)
        p0 = np.einsum("nij,nj->ni", Rb[frame_of], obj) + b[frame_of, 3:]
        pc = np.einsum("nij,nj->ni", Rc[cam_of], p0) + cam_t[cam_of]
        if not refine_intrinsics:
            uv = np.empty((n, 2))
            for c in range(v):
                uv[cam_of == c] = posed[c].project(pc[cam_of == c])
            return np.nan_to_num(uv - seen, nan=1e3).ravel()
        q = x[:ni].reshape(v, 6)[cam_of]  # (n, 6) fx fy cx cy k1 k2
        z = np.where(pc[:, 2] > 1e-6, pc[:, 2], np.nan)
        xy = pc[:, :2] / z[:, None]
        r2 = (xy ** 2).sum(1)
        radial = 1 + r2 * (q[:, 4] + r2 * q[:, 5])
        uv = xy * radial[:, None] * q[:, :2] + q[:, 2:4]
        return np.nan_to_num(uv - seen, nan=1e3).ravel()  # a corner behind a camera: far off, not a nan

    sparsity = lil_matrix((2 * n, len(x0)), dtype=int)
    rows = np.arange(n)
    moving = cam_of > 0
    for r in (2 * rows, 2 * rows + 1):
        for k in range(6):
            if refine_intrinsics:
                sparsity[r, 6 * cam_of + k] = 1
            sparsity[r[moving], ni + 6 * (cam_of[moving] - 1) + k] = 1
            sparsity[r, ni + ne + 6 * frame_of + k] = 1
    fit = least_squares(residuals, x0, jac_sparsity=sparsity, loss="soft_l1", f_scale=2.0, x_scale="jac",
                        method="trf", ftol=1e-6, xtol=1e-6, max_nfev=100)
    x = fit.x
    cams = list(cameras)
    if refine_intrinsics:
        q = x[:ni].reshape(v, 6)
        cams = [CameraCalibration(c.name, c.image_size, np.array([[q[i, 0], 0, q[i, 2]], [0, q[i, 1], q[i, 3]],
                                                                  [0, 0, 1]]),
                                  np.array([q[i, 4], q[i, 5], 0, 0, 0]), c.R, c.t) for i, c in enumerate(cameras)]
    ext = x[ni:ni + ne].reshape(-1, 6)
    poses = [np.eye(4)] + [to_pose(e[:3], e[3:]) for e in ext]
    b = x[ni + ne:].reshape(-1, 6)
    boards = {f: to_pose(b[i, :3], b[i, 3:]) for i, f in enumerate(frames)}
    return cams, poses, boards, residuals(x).reshape(-1, 2)


def _vec(T: np.ndarray) -> np.ndarray:
    return np.concatenate([cv2.Rodrigues(T[:3, :3])[0].ravel(), T[:3, 3]])


__all__ = ["bundle_adjust", "chain_extrinsics", "inverse", "mean_pose", "to_pose"]
