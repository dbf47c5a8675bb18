"""Calibrated cameras: intrinsics, lens distortion and pose in a shared world, and the readers of calibration files.

A :class:`CameraCalibration` follows OpenCV's pinhole model: a world point X (metres) is seen in camera
coordinates as ``R @ X + t`` (x right, y down, z forward), divided by z, distorted with
(k1, k2, p1, p2, k3) and mapped to pixels by K.

Readers are keyed by format name in :data:`READERS`; :func:`read_calibration` picks one from the file name:
Qualisys ``*.qca.txt``, Pose2Sim / anipose / FreeMoCap ``*.toml`` (cameras with a Rodrigues rotation), OpenCV
``FileStorage`` ``*.yml`` / ``*.yaml`` / ``*.xml`` (one camera a file; :func:`read_calibrations` joins files).
:func:`write_toml` writes cameras as Pose2Sim / anipose TOML (``posetracker calibrate``);
:func:`calibration_floor` gives the calibration's z = 0 plane as a sequence carries it (``metadata["floor"]``).
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import cv2
import numpy as np


class CalibrationError(ValueError):
    """A calibration file that cannot be read, or a camera that is not in it."""


@dataclass(frozen=True)
class CameraCalibration:
    """One calibrated camera.

    name:       camera name (Qualisys serial, file stem of its video, ...)
    image_size: (width, height) px
    K:          (3, 3) intrinsic matrix (fx, fy, cx, cy in px)
    dist:       (5,) OpenCV distortion k1, k2, p1, p2, k3
    R:          (3, 3) rotation world -> camera
    t:          (3,) translation world -> camera, metres
    unit:       the unit its file's translations were in: "m", or "mm" where they were read as millimetres
                (:func:`in_metres`) and divided by 1000
    """

    name: str
    image_size: tuple[int, int]
    K: np.ndarray
    dist: np.ndarray
    R: np.ndarray
    t: np.ndarray
    unit: str = "m"

    def __post_init__(self) -> None:
        for field, shape in (("K", (3, 3)), ("dist", (5,)), ("R", (3, 3)), ("t", (3,))):
            value = np.asarray(getattr(self, field), np.float64)
            if value.shape != shape or not np.isfinite(value).all():
                raise CalibrationError(f"camera {self.name!r}: {field} must be a finite {shape} array, "
                                       f"got {value.shape}")
            object.__setattr__(self, field, value)
        if abs(np.linalg.det(self.R) - 1.0) > 1e-3:
            raise CalibrationError(f"camera {self.name!r}: R is not a rotation (det {np.linalg.det(self.R):.4f})")

    @property
    def center(self) -> np.ndarray:
        """(3,) the camera's optical centre in world metres."""
        return -self.R.T @ self.t

    @property
    def extrinsic(self) -> np.ndarray:
        """(3, 4) [R | t]: the projection matrix of normalised (undistorted) image coordinates."""
        return np.hstack([self.R, self.t[:, None]])

    def to_camera(self, xyz: np.ndarray) -> np.ndarray:
        """(..., 3) world metres -> (..., 3) camera metres."""
        return np.asarray(xyz, np.float64) @ self.R.T + self.t

    def project(self, xyz: np.ndarray) -> np.ndarray:
        """(..., 3) world metres -> (..., 2) distorted pixel coordinates (nan behind the camera or for nan input)."""
        cam = self.to_camera(xyz)
        z = cam[..., 2]
        with np.errstate(invalid="ignore", divide="ignore"):
            x, y = np.where(z > 1e-9, cam[..., 0] / z, np.nan), np.where(z > 1e-9, cam[..., 1] / z, np.nan)
        k1, k2, p1, p2, k3 = self.dist
        r2 = x * x + y * y
        radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
        xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
        yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
        fx, fy, cx, cy = self.K[0, 0], self.K[1, 1], self.K[0, 2], self.K[1, 2]
        return np.stack([fx * xd + self.K[0, 1] * yd + cx, fy * yd + cy], axis=-1)

    def undistort(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) distorted pixels -> (..., 2) normalised undistorted coordinates (x/z, y/z); nan stays nan."""
        xy = np.asarray(xy, np.float64)
        flat = xy.reshape(-1, 2)
        ok = np.isfinite(flat).all(axis=1)
        out = np.full_like(flat, np.nan)
        if ok.any():
            pts = np.ascontiguousarray(flat[ok]).reshape(-1, 1, 2)
            criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 20, 1e-9)
            try:  # OpenCV 5 takes the iteration criteria; 4.x names that call undistortPointsIter
                found = cv2.undistortPoints(pts, self.K, self.dist, criteria=criteria)
            except (TypeError, cv2.error):
                found = cv2.undistortPointsIter(pts, self.K, self.dist, None, None, criteria)
            out[ok] = found.reshape(-1, 2)
        return out.reshape(xy.shape)


def _rot_x_pi() -> np.ndarray:
    return np.diag([1.0, -1.0, -1.0])


def _qca_camera(cam: ET.Element) -> CameraCalibration:
    """One ``<camera>`` of a Qualisys .qca.txt, converted as Pose2Sim's calibration.py does (binning 1)."""
    name = cam.get("serial") or "camera"
    fov, intr, tr = cam.find("fov_video"), cam.find("intrinsic"), cam.find("transform")
    if fov is None or intr is None or tr is None:
        raise CalibrationError(f"qca camera {name!r}: needs fov_video, intrinsic and transform")
    g = lambda el, key: float(el.get(key, "0"))  # noqa: E731
    left, top = g(fov, "left"), g(fov, "top")
    size = (int(round(g(fov, "right") - left + 1)), int(round(g(fov, "bottom") - top + 1)))
    # intrinsics (and, as Pose2Sim reads them, the distortion terms) are in 1/64 pixel sensor units
    K = np.array([[g(intr, "focalLengthU") / 64, 0, g(intr, "centerPointU") / 64 - left],
                  [0, g(intr, "focalLengthV") / 64, g(intr, "centerPointV") / 64 - top], [0, 0, 1]])
    dist = np.array([g(intr, "radialDistortion1"), g(intr, "radialDistortion2"), g(intr, "tangentalDistortion1"),
                     g(intr, "tangentalDistortion2"), g(intr, "radialDistortion3")]) / 64
    # transform: the camera's pose in the world (mm); r11..r33 are written by column
    rq = np.array([[g(tr, f"r{i}{j}") for i in (1, 2, 3)] for j in (1, 2, 3)])
    position = np.array([g(tr, "x"), g(tr, "y"), g(tr, "z")]) / 1000.0
    R = _rot_x_pi() @ rq.T
    return CameraCalibration(name, size, K, dist, R, _rot_x_pi() @ (-rq.T @ position))


def read_qca(path: str | Path) -> list[CameraCalibration]:
    """Every active camera of a Qualisys ``.qca.txt`` calibration (XML), in file order.

    Units and conventions as ``shared/data/video/multiview_pose2sim_multiperson/SOURCE.md`` states them: focal
    lengths, principal point and distortion divided by 64 (the principal point shifted by ``fov_video``'s
    left / top); the camera transform (mm, rotation by column) inverted to world -> camera and turned by pi
    about x (Qualisys cameras look down their -z). World metres.
    """
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise CalibrationError(f"cannot read Qualisys calibration {path}: {exc}") from exc
    cams = [c for c in root.iter("camera") if c.get("active", "1") != "0"]
    if not cams:
        raise CalibrationError(f"no active <camera> in {path}")
    return [_qca_camera(c) for c in cams]


def _toml_camera(section: str, cam: dict, source: str) -> CameraCalibration:
    """One camera table of a Pose2Sim / anipose (aniposelib ``CameraGroup.dump``, FreeMoCap) TOML file."""
    if cam.get("fisheye"):
        raise CalibrationError(f"{source}: camera {section!r} is a fisheye calibration; only the pinhole model with "
                               "k1, k2, p1, p2, k3 is read")
    missing = [key for key in TOML_CAMERA_KEYS if key not in cam]
    if missing:
        raise CalibrationError(f"{source}: camera {section!r} has no {' and no '.join(missing)} (a camera table "
                               "needs name, size, matrix, distortions, rotation (Rodrigues) and translation)")
    try:
        dist = np.zeros(5)
        d = np.asarray(cam.get("distortions", []), np.float64).ravel()[:5]
        dist[: len(d)] = d
        R = cv2.Rodrigues(np.asarray(cam["rotation"], np.float64).reshape(3, 1))[0]
        return CameraCalibration(str(cam.get("name", section)), tuple(int(round(v)) for v in cam["size"]),
                                 np.asarray(cam["matrix"], np.float64), dist, R,
                                 np.asarray(cam["translation"], np.float64).ravel())
    except (KeyError, ValueError, TypeError, cv2.error) as exc:
        raise CalibrationError(f"{source}: camera {section!r} needs name, size, matrix, distortions, rotation "
                               f"(Rodrigues) and translation: {exc}") from None


TOML_CAMERA_KEYS = ("size", "matrix", "rotation", "translation")  # a camera table must have these


def read_toml(path: str | Path) -> list[CameraCalibration]:
    """Every camera of a Pose2Sim ``Calib*.toml`` or anipose / FreeMoCap calibration TOML, in file order: tables
    with ``matrix`` (K), ``distortions`` (k1 k2 p1 p2 [k3]), ``rotation`` (Rodrigues, world -> camera),
    ``translation`` (world -> camera, the calibration's unit: Pose2Sim's metres, anipose's and FreeMoCap's the
    board's, often millimetres: :func:`in_metres`) and ``size`` (width, height
    px); the ``metadata`` table, and any table with none of those keys, is skipped (a camera table missing one of
    them is a CalibrationError, not a camera left out)."""
    import tomllib

    try:
        doc = tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CalibrationError(f"cannot read calibration TOML {path}: {exc}") from exc
    cams = [_toml_camera(k, v, str(path)) for k, v in doc.items()
            if isinstance(v, dict) and k != "metadata" and any(key in v for key in TOML_CAMERA_KEYS)]
    if not cams:
        raise CalibrationError(f"no camera in {path}: a calibration TOML has a table per camera with size, matrix, "
                               "rotation and translation")
    return cams


_OPENCV_KEYS = {"K": ("camera_matrix", "cameraMatrix", "K", "intrinsic", "mtx"),
                "dist": ("distortion_coefficients", "dist_coeffs", "distCoeffs", "D", "dist"),
                "R": ("R", "rotation_matrix"), "rvec": ("rvec", "rotation"), "t": ("T", "t", "tvec", "translation")}


def read_opencv(path: str | Path) -> list[CameraCalibration]:
    """One camera from an OpenCV ``FileStorage`` YAML / XML file (``cv2.calibrateCamera``'s results as usually
    saved): camera_matrix, distortion_coefficients, image_width / image_height, and the pose world -> camera as
    R (3 x 3) or rvec, and T / tvec (a camera without a pose sits at the world's origin); named after the file."""
    fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_READ)
    if not fs.isOpened():
        raise CalibrationError(f"cannot read OpenCV calibration {path}")
    try:
        def get(kind: str) -> np.ndarray | None:
            for key in _OPENCV_KEYS[kind]:
                node = fs.getNode(key)
                if not node.empty():
                    return np.asarray(node.mat(), np.float64)
            return None

        K, d = get("K"), get("dist")
        w, h = fs.getNode("image_width"), fs.getNode("image_height")
        if K is None or w.empty() or h.empty():
            raise CalibrationError(f"{path}: needs camera_matrix, image_width and image_height")
        R, rvec, t = get("R"), get("rvec"), get("t")
        if R is None:
            R = cv2.Rodrigues(rvec.reshape(3, 1))[0] if rvec is not None else np.eye(3)
        dist = np.zeros(5)
        if d is not None:
            dist[: min(5, d.size)] = d.ravel()[:5]
        return [CameraCalibration(Path(path).name.split(".")[0], (int(w.real()), int(h.real())), K, dist, R,
                                  np.zeros(3) if t is None else t.ravel())]
    finally:
        fs.release()


MIN_CAMERA_HEIGHT_M = 0.1  # a calibration whose z = 0 plane passes closer to a camera has no floor there
#: a z-up world (x, y, z) -> Y up (X = x, Y = z, Z = -y), as Pose2Sim turns its world for OpenSim
Z_UP_TO_Y_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def calibration_floor(cameras: list[CameraCalibration], source: str, people_on_it: bool,
                      on_floor_m: float | None = None) -> dict | None:
    """The calibration's floor, its world's z = 0 plane, as a sequence in ``cameras[0]``'s frame carries it
    (``metadata["floor"]``, read by ``analysis.ground``), or None where the calibration has none (a camera
    within MIN_CAMERA_HEIGHT_M of z = 0, e.g. a world that is the first camera's frame; cameras on both sides).

    Up is the side the cameras are on (+z for Qualisys, Pose2Sim's board on the floor and ``posetracker
    calibrate``). ``rotation`` (3, 3) and ``translation`` (3,) m map the first camera's coordinates to the
    calibration's world turned Y up (X = x, Y = z, Z = -y: what a TRC with ``origin="floor"`` is written in);
    ``people_on_it``: the people are in the calibration's metres (triangulated), so this is their floor where
    their stance feet stand on it (``analysis.ground``); False (one view: a monocular depth moves a person along
    the camera's rays) keeps each person's own floor along its normal, measured from their stance feet.
    ``on_floor_m``: how near their stance feet must be to stand on it (None: ``analysis.ground.ON_FLOOR_M``; 0:
    everyone on their own floor, in the calibration's metres still, as two live views give them: their ankles'
    height is read to a few cm, and a person put on the floor is moved along the first camera's ray)."""
    heights = np.array([c.center[2] for c in cameras])
    if (np.abs(heights) < MIN_CAMERA_HEIGHT_M).any() or len(set(np.sign(heights))) > 1:
        return None
    up = 1.0 if heights[0] > 0 else -1.0
    cam = cameras[0]
    R = Z_UP_TO_Y_UP @ np.diag([1.0, up, up]) @ cam.R.T  # camera -> world (z up the cameras' side) -> Y up
    return {"source": source, "up": "+z" if up > 0 else "-z", "camera_height_m": round(float(abs(heights[0])), 4),
            "rotation": R.round(9).tolist(), "translation": (-R @ cam.t).round(9).tolist(),
            "people_on_it": bool(people_on_it), **({} if on_floor_m is None else {"on_floor_m": float(on_floor_m)}),
            "axes": "X = x, Y = z (up), Z = -y of the calibration's world, metres"}


def write_toml(cameras: list[CameraCalibration], path: str | Path, metadata: dict | None = None) -> Path:
    """Write ``cameras`` as a Pose2Sim / anipose calibration TOML (what :func:`read_toml` reads): one table per
    camera (name, size, matrix, distortions k1 k2 p1 p2 k3, rotation Rodrigues and translation world -> camera,
    metres, fisheye false), then ``[metadata]`` (``adjusted``, ``error`` as Pose2Sim writes them, plus any
    ``metadata`` given: strings, numbers and booleans). Returns the path."""
    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, (list, tuple, np.ndarray)):
            return "[ " + ", ".join(value(x) for x in v) + "]"
        return repr(float(v)) if isinstance(v, (float, np.floating)) else str(int(v))

    lines = []
    for cam in cameras:
        rvec = cv2.Rodrigues(cam.R)[0].ravel()
        lines += [f"[{value(cam.name)}]", f"name = {value(cam.name)}", f"size = {value([float(v) for v in cam.image_size])}",
                  f"matrix = {value(cam.K.tolist())}", f"distortions = {value(cam.dist.tolist())}",
                  f"rotation = {value(rvec.tolist())}", f"translation = {value(cam.t.tolist())}", "fisheye = false", ""]
    meta = {"adjusted": False, "error": 0.0, **(metadata or {})}
    lines += ["[metadata]"] + [f"{k} = {value(v)}" for k, v in meta.items()]
    path = Path(path)
    path.write_text("\n".join(lines) + "\n")
    return path


KNOWN_FILES = "Qualisys .qca.txt, Pose2Sim / anipose / FreeMoCap .toml, OpenCV .yml / .yaml / .xml"
READERS: dict[str, Callable[[str | Path], list[CameraCalibration]]] = {
    "qca": read_qca, "toml": read_toml, "opencv": read_opencv}


def read_calibration(path: str | Path, fmt: str | None = None) -> list[CameraCalibration]:
    """Cameras from a calibration file; ``fmt`` one of :data:`READERS`, else from the name: ``*.qca.txt`` /
    ``*.qca`` Qualisys, ``*.toml`` Pose2Sim / anipose / FreeMoCap, ``*.yml`` / ``*.yaml`` / ``*.xml`` OpenCV."""
    name = Path(path).name.lower()
    by_suffix = {".qca.txt": "qca", ".qca": "qca", ".toml": "toml", ".yml": "opencv", ".yaml": "opencv",
                 ".xml": "opencv"}
    if not Path(path).exists():
        raise CalibrationError(f"{path}: no such file")
    if Path(path).is_dir():
        raise CalibrationError(f"{path} is a folder: choose the calibration file in it")
    fmt = fmt or next((f for suffix, f in by_suffix.items() if name.endswith(suffix)), None)
    if fmt is None:
        raise CalibrationError(f"{path} is not a calibration file this reads: {KNOWN_FILES}")
    if fmt not in READERS:
        raise CalibrationError(f"unknown calibration format {fmt!r}; known: {sorted(READERS)}")
    return READERS[fmt](path)


def read_calibrations(paths: list[str | Path]) -> list[CameraCalibration]:
    """The cameras of several calibration files (e.g. one OpenCV file per camera), in order, in metres
    (:func:`in_metres`); names must differ."""
    twice = [p for i, p in enumerate(paths) if Path(p).resolve() in [Path(q).resolve() for q in paths[:i]]]
    if twice:
        raise CalibrationError(f"{twice[0]} is given twice: give each calibration file once")
    cams = [c for p in paths for c in read_calibration(p)]
    names = [c.name.lower() for c in cams]
    if len(set(names)) != len(names):
        shared = sorted({c.name for c in cams if names.count(c.name.lower()) > 1})
        raise CalibrationError(f"two cameras share a name ({', '.join(shared)}) in {', '.join(map(str, paths))}: "
                               "each camera once")
    return in_metres(cams)


MAX_RIG_EXTENT_M = 200.0  # cameras further apart, or from the world's origin: the translations are millimetres


def rig_extent(cameras: list[CameraCalibration]) -> float:
    """The largest distance between two cameras' centres, or from one to the world's origin, in the file's unit."""
    centres = np.array([c.center for c in cameras])
    apart = np.linalg.norm(centres[:, None] - centres[None], axis=-1).max() if len(centres) > 1 else 0.0
    return float(max(apart, np.linalg.norm(centres, axis=1).max()))


def in_metres(cameras: list[CameraCalibration]) -> list[CameraCalibration]:
    """``cameras`` with translations in metres. Pose2Sim, Qualisys (converted here) and ``posetracker calibrate``
    write metres; anipose and FreeMoCap write the unit the board was measured in, often millimetres, and OpenCV
    files the unit of the board's squares: cameras further than MAX_RIG_EXTENT_M apart (or from the world's
    origin) are no room's or rig's metres, so such translations are read as millimetres (divided by 1000; the
    cameras' ``unit`` "mm"). A calibration in metres is returned as it is."""
    if not cameras or rig_extent(cameras) <= MAX_RIG_EXTENT_M:
        return list(cameras)
    return [dataclasses.replace(c, t=c.t / 1000.0, unit="mm") for c in cameras]


def unit_note(cameras: list[CameraCalibration]) -> str:
    """What to tell the user about the calibration's unit: "" in metres, else that it was read as millimetres."""
    if not any(c.unit == "mm" for c in cameras):
        return ""
    return (f"the calibration's camera positions are read as millimetres and divided by 1000 (its cameras are up to "
            f"{1000 * rig_extent(cameras):.0f} units from each other or its origin: no room's metres)")


def camera_of_video(cameras: list[CameraCalibration], video: str | Path) -> CameraCalibration:
    """The camera whose name ``video``'s file name contains (:func:`camera_named`); a CalibrationError that says how
    to name the file where none does."""
    try:
        return camera_named(cameras, Path(video).stem)
    except CalibrationError:
        raise CalibrationError(f"{Path(video).name} names no camera of the calibration "
                               f"({', '.join(c.name for c in cameras)}): its file name must contain its camera's name, "
                               f"e.g. {cameras[0].name}{Path(video).suffix}") from None


def cameras_by_name(cameras: Sequence[CameraCalibration], names: Sequence[str], count: int,
                    what: str) -> list[CameraCalibration]:
    """The cameras ``names`` names (``--cameras cam03 cam01``: exact names, any case), one per each of ``count``
    ``what``s (sources, videos), each a different camera; CalibrationError that says what is wrong otherwise."""
    if len(names) != count:
        raise CalibrationError(f"{len(names)} camera names for {count} {what}s: name one per {what}")
    exact = {c.name.lower(): c for c in cameras}
    missing = [n for n in names if n.lower() not in exact]
    if missing:
        raise CalibrationError(f"no camera {missing[0]!r} in the calibration; cameras: "
                               f"{', '.join(c.name for c in cameras)}")
    if len({n.lower() for n in names}) != len(names):
        raise CalibrationError(f"a camera is named for two {what}s ({', '.join(names)}): each {what} needs its own")
    return [exact[n.lower()] for n in names]


def camera_named(cameras: list[CameraCalibration], name: str) -> CameraCalibration:
    """The camera called ``name`` (case-insensitive), or one whose name is contained in it (``cam01`` in
    ``cam01.mp4``'s stem); the error lists the cameras."""
    key = name.lower()
    exact = [c for c in cameras if c.name.lower() == key]
    inside = [c for c in cameras if c.name.lower() in key]
    found = exact or (inside if len(inside) == 1 else [])
    if not found:
        raise CalibrationError(f"no camera {name!r} in the calibration; cameras: {', '.join(c.name for c in cameras)}")
    return found[0]
