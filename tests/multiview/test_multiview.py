"""posetracker.multiview: calibration reading, robust triangulation and track matching on synthetic cameras;
the multi-view reference scores (evaluation.multiview_reference); the real Pose2Sim calibration when shared/ is here."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_path

from posetracker.evaluation.multiview_reference import ANGLES, block_bootstrap, joint_angles, pa_per_frame
from posetracker.multiview.calibration import CalibrationError, CameraCalibration, read_calibration, read_qca
from posetracker.multiview.match import ViewTrack, match_tracks, person_views
from posetracker.multiview.triangulate import triangulate

NAMES = ("nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder", "left_elbow",
         "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle",
         "right_ankle")
# a standing person, world metres, Z up, facing -y
BODY = np.array([[0, -0.1, 1.65], [0.03, -0.08, 1.68], [-0.03, -0.08, 1.68], [0.07, -0.02, 1.66], [-0.07, -0.02, 1.66],
                 [0.18, 0, 1.45], [-0.18, 0, 1.45], [0.25, 0, 1.17], [-0.25, -0.05, 1.17], [0.28, -0.1, 0.93],
                 [-0.3, -0.2, 1.0], [0.1, 0, 0.95], [-0.1, 0, 0.95], [0.12, -0.05, 0.52], [-0.1, -0.15, 0.55],
                 [0.12, 0, 0.08], [-0.1, 0.0, 0.1]])


def look_at(name: str, centre, target=(0, 0, 1.0), dist=(-0.05, 0.01, 0.0005, -0.0003, 0.0)) -> CameraCalibration:
    """A 1000 x 1200 camera at ``centre`` looking at ``target`` (world Z up, image y down)."""
    centre, target = np.asarray(centre, float), np.asarray(target, float)
    z = (target - centre) / np.linalg.norm(target - centre)
    x = np.cross(z, [0, 0, 1.0])
    x /= np.linalg.norm(x)
    r = np.stack([x, np.cross(z, x), z])
    k = np.array([[900.0, 0, 500], [0, 900, 600], [0, 0, 1]])
    return CameraCalibration(name, (1000, 1200), k, np.array(dist), r, -r @ centre)


CAMERAS = [look_at(f"cam{i}", (4 * np.cos(a), 4 * np.sin(a), 1.6)) for i, a in enumerate(np.radians([0, 80, 170, 260]))]


def moving_body(frames: int, shift=(0.0, 0.0, 0.0)) -> np.ndarray:
    """(T, 17, 3) the body walking along x, plus ``shift``."""
    return BODY[None] + np.asarray(shift) + np.linspace(0, 0.3, frames)[:, None, None] * [1, 0, 0]


def project(body: np.ndarray, rng: np.random.Generator, noise_px: float = 0.5) -> np.ndarray:
    """(T, K, 3) world -> (V, T, K, 2) px with Gaussian noise."""
    xy = np.stack([c.project(body) for c in CAMERAS])
    return xy + rng.normal(0, noise_px, xy.shape)


def test_projection_matches_opencv_and_undistort_inverts_it():
    import cv2

    cam, pts = CAMERAS[1], moving_body(3).reshape(-1, 3)
    ref, _ = cv2.projectPoints(pts, cv2.Rodrigues(cam.R)[0], cam.t, cam.K, cam.dist)
    assert np.allclose(cam.project(pts), ref.reshape(-1, 2), atol=1e-6)
    local = cam.to_camera(pts)
    assert np.allclose(cam.undistort(cam.project(pts)), local[:, :2] / local[:, 2:], atol=1e-7)
    assert np.isnan(cam.project(np.array([[np.nan, 0, 0]]))).all()


@pytest.mark.parametrize("exhaustive_views", [6, 2])  # every subset / worst view dropped one at a time
def test_triangulation_recovers_the_body_and_drops_the_wrong_view(exhaustive_views):
    rng = np.random.default_rng(0)
    body = moving_body(6)
    xy = project(body, rng)
    xy[2] += [45.0, -30.0]  # one view off by 54 px (a wrong reading, a bad calibration)
    xy[1, 1, 3] = np.nan  # a joint that view 1 does not see
    conf = rng.uniform(0.5, 1.0, xy.shape[:3])
    tri = triangulate(CAMERAS, xy, conf, max_error_px=10.0, exhaustive_views=exhaustive_views)
    assert tri.xyz.shape == (6, 17, 3) and tri.used.shape == tri.error.shape == (6, 17, 4)
    assert tri.found.all()
    assert np.abs(tri.xyz - body).max() < 0.01  # within 1 cm
    assert not tri.used[..., 2].any() and tri.used[..., [0, 3]].all()
    assert tri.used[..., 1].sum() == 6 * 17 - 1 and not tri.used[1, 3, 1]
    assert np.nanmin(tri.error[..., 2]) > 40 and np.nanmax(np.where(tri.used, tri.error, np.nan)) < 5


def test_triangulation_needs_two_agreeing_views():
    rng = np.random.default_rng(1)
    xy = project(moving_body(2), rng)
    xy[1:] = np.nan  # one view only
    assert not triangulate(CAMERAS, xy).found.any()
    xy = project(moving_body(2), rng)
    xy[[2, 3]] = np.nan
    xy[1] += 80.0  # two views that disagree
    assert not triangulate(CAMERAS, xy, max_error_px=10.0).found.any()
    low = np.full(xy.shape[:3], 0.1)  # all under min_confidence
    assert not triangulate(CAMERAS, project(moving_body(2), rng), low, min_confidence=0.2).found.any()


def _tracks(xy_a: np.ndarray, xy_b: np.ndarray, ids: list[tuple[int, int]]) -> list[dict[int, ViewTrack]]:
    """Per view {track id: ViewTrack}: person A and B under the given (id of A, id of B) in each view."""
    out = []
    for v, (ia, ib) in enumerate(ids):
        conf = np.full(xy_a.shape[1:3], 0.9)
        out.append({ia: ViewTrack(v, ia, xy_a[v], conf), ib: ViewTrack(v, ib, xy_b[v], conf)})
    return out


def test_matching_pairs_the_tracks_of_each_person_across_views():
    rng = np.random.default_rng(2)
    a, b = moving_body(30), moving_body(30, shift=(0.4, 1.2, -0.1))
    xy_a, xy_b = project(a, rng, 1.0), project(b, rng, 1.0)
    tracks = _tracks(xy_a, xy_b, [(0, 1), (7, 3), (2, 5), (4, 9)])
    # view 3 loses person A at frame 15 and finds them again under a new id
    first, later = xy_a[3].copy(), xy_a[3].copy()
    first[15:], later[:15] = np.nan, np.nan
    conf = np.full((30, 17), 0.9)
    tracks[3][4] = ViewTrack(3, 4, first, conf)
    tracks[3][11] = ViewTrack(3, 11, later, conf)
    people = match_tracks(CAMERAS, tracks, max_cost_px=20.0)
    assert {p.tracks for p in people} == {((0, 0), (1, 7), (2, 2), (3, 4), (3, 11)), ((0, 1), (1, 3), (2, 5), (3, 9))}
    person_a = next(p for p in people if (0, 0) in p.tracks)
    assert person_a.track_ids(3) == (4, 11) and person_a.cost_px < 5
    xy, _ = person_views(person_a, tracks)
    assert xy.shape == (4, 30, 17, 2) and np.isfinite(xy).all()
    assert np.abs(triangulate(CAMERAS, xy).xyz - a).max() < 0.02


def test_matching_leaves_out_a_track_nobody_else_sees():
    rng = np.random.default_rng(3)
    a, b = moving_body(20), moving_body(20, shift=(0.5, 1.0, 0))
    tracks = _tracks(project(a, rng), project(b, rng), [(0, 1), (0, 1), (0, 1), (0, 1)])
    stray = project(moving_body(20, shift=(-2.0, -3.0, 0)), rng)[0]  # seen by view 0 only
    tracks[0][6] = ViewTrack(0, 6, stray, np.full((20, 17), 0.9))
    people = match_tracks(CAMERAS, tracks, max_cost_px=20.0)
    assert len(people) == 2 and all((0, 6) not in p.tracks for p in people)


QCA = """<?xml version='1.0' encoding='ASCII'?>
<calibration><cameras>
  <camera active="1" serial="camA">
    <fov_video bottom="1199" left="8" right="1007" top="0"/>
    <transform {transform}/>
    <intrinsic centerPointU="{cu}" centerPointV="{cv}" focalLengthU="57600" focalLengthV="57600"
      radialDistortion1="-3.2" radialDistortion2="0.64" radialDistortion3="0"
      tangentalDistortion1="0.064" tangentalDistortion2="0"/>
  </camera>
  <camera active="0" serial="camOff"/>
</cameras></calibration>"""


def test_read_qca_converts_a_camera_pose_to_opencv(tmp_path):
    cam = CAMERAS[1]
    flip = np.diag([1.0, -1.0, -1.0])
    rq = cam.R.T @ flip  # Qualisys: camera -> world rotation of a camera looking down its -z
    position = cam.center * 1000
    entries = " ".join(f'r{i}{j}="{float(rq[j - 1, i - 1])!r}"' for i in (1, 2, 3) for j in (1, 2, 3))  # by column
    transform = entries + " " + " ".join(f'{k}="{float(v)!r}"' for k, v in zip("xyz", position))
    path = tmp_path / "calib.qca.txt"
    path.write_text(QCA.format(transform=transform, cu=(500 + 8) * 64, cv=600 * 64))
    (got,) = read_calibration(path)
    assert got.name == "camA" and got.image_size == (1000, 1200)
    assert np.allclose(got.K, cam.K)
    assert np.allclose(got.dist, [-0.05, 0.01, 0.001, 0, 0])
    assert np.allclose(got.R, cam.R) and np.allclose(got.t, cam.t)
    assert np.allclose(got.project(np.array([0, 0, 1.0])), [500, 600])
    (tmp_path / "calib.json").write_text("{}")
    with pytest.raises(CalibrationError, match="not a calibration file this reads"):
        read_calibration(tmp_path / "calib.json")
    bad = tmp_path / "bad.qca.txt"
    bad.write_text("<calibration><cameras>")
    with pytest.raises(CalibrationError):
        read_qca(bad)


def test_reference_scores():
    body = BODY[None].repeat(3, 0)
    turn = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    moved = 1.3 * body @ turn.T + [1, 2, 3]
    joints = np.ones(17, bool)
    assert np.allclose(pa_per_frame(moved, body, joints), 0, atol=1e-9)
    bent = body.copy()
    bent[1, 15] += [0, 0.1, 0]  # one ankle moved: one frame's error only
    err = pa_per_frame(bent, body, joints)
    assert err[0] < 1e-9 < err[1] and err[2] < 1e-9
    right = np.zeros((17, 3))
    names = list(NAMES)
    for n, p in (("left_hip", (0, 0, 1)), ("left_knee", (0, 0, 0.5)), ("left_ankle", (0.5, 0, 0.5))):
        right[names.index(n)] = p
    assert joint_angles(right, names)[list(ANGLES).index("left_knee")] == pytest.approx(90)
    mean, lo, hi = block_bootstrap(np.r_[np.full(40, 2.0), np.full(40, 4.0), [np.nan] * 5], block=10)
    assert mean == pytest.approx(3.0) and 2.0 <= lo < mean < hi <= 4.0


def test_cli_eval_multiview_parses_and_plain_eval_still_needs_data():
    from posetracker.cli import build_parser

    args = build_parser().parse_args(["eval", "multiview", "--calibration", "c.qca.txt", "--views", "cam01.mp4",
                                      "cam02.mp4", "--out", "x.json"])
    assert args.func.__name__ == "cmd_eval_multiview" and args.views == ["cam01.mp4", "cam02.mp4"]
    plain = build_parser().parse_args(["eval"])
    with pytest.raises(SystemExit):
        plain.func(plain)


def test_real_pose2sim_calibration_is_sane():
    cams = read_qca(shared_path("data", "video", "multiview_pose2sim_multiperson", "calibration.qca.txt"))
    assert [c.name for c in cams] == ["cam01", "cam02", "cam03", "cam04"]
    people_area = np.array([[0.0, -0.3, 0.05], [0, -0.3, 1.2], [-1.0, 0, 1.6], [-1.0, 0.3, 0.1]])  # where the two stand
    for c in cams:
        assert c.image_size == (1088, 1920) and 1600 < c.K[0, 0] < 1750
        assert 1.5 < c.center[2] < 2.3  # phones on tripods, Z up, metres
        assert (c.to_camera(people_area)[:, 2] > 1.5).all()
        uv = c.project(people_area)
        assert ((uv >= 0) & (uv < c.image_size)).all()
        assert uv[1, 1] < uv[0, 1]  # up in the world is up in the image
    xy = np.stack([c.project(people_area) for c in cams])[:, None]
    tri = triangulate(cams, xy)
    assert np.abs(tri.xyz[0] - people_area).max() < 1e-6 and np.nanmax(tri.error) < 1e-3


def _toml(cameras, fisheye: bool = False) -> str:
    """A Pose2Sim-style Calib.toml of ``cameras`` (rotation as a Rodrigues vector, 4 distortion terms)."""
    import cv2

    out = []
    for c in cameras:
        r = cv2.Rodrigues(c.R)[0].ravel()
        row = lambda v: "[ " + ", ".join(repr(float(x)) for x in np.asarray(v, float).ravel()) + ",]"  # noqa: E731
        out += [f"[{c.name}]", f'name = "{c.name}"', f"size = {row(c.image_size)}",
                "matrix = [ " + ", ".join(row(k) for k in c.K) + ",]", f"distortions = {row(c.dist[:4])}",
                f"rotation = {row(r)}", f"translation = {row(c.t)}", f"fisheye = {'true' if fisheye else 'false'}",
                ""]
    return "\n".join(out + ["[metadata]", "adjusted = false", "error = 0.0", ""])


def test_pose2sim_toml_and_opencv_yaml_read_the_same_cameras(tmp_path):
    import cv2

    from posetracker.multiview.calibration import read_calibrations

    cams = [replace_dist(c) for c in CAMERAS[:2]]
    (tmp_path / "Calib.toml").write_text(_toml(cams))
    got = read_calibration(tmp_path / "Calib.toml")
    body = moving_body(3)
    for a, b in zip(cams, got):
        assert a.name == b.name and a.image_size == b.image_size
        np.testing.assert_allclose(b.project(body), a.project(body), atol=1e-6)
    for c in cams:  # OpenCV FileStorage, one file per camera
        fs = cv2.FileStorage(str(tmp_path / f"{c.name}.yml"), cv2.FILE_STORAGE_WRITE)
        fs.write("image_width", c.image_size[0]), fs.write("image_height", c.image_size[1])
        fs.write("camera_matrix", c.K), fs.write("distortion_coefficients", c.dist.reshape(1, 5))
        fs.write("rvec", cv2.Rodrigues(c.R)[0]), fs.write("tvec", c.t.reshape(3, 1))
        fs.release()
    both = read_calibrations([tmp_path / f"{c.name}.yml" for c in cams])
    for a, b in zip(cams, both):
        assert a.name == b.name
        np.testing.assert_allclose(b.project(body), a.project(body), atol=1e-6)
    with pytest.raises(CalibrationError, match="share a name"):
        read_calibrations([tmp_path / "Calib.toml", tmp_path / f"{cams[0].name}.yml"])
    (tmp_path / "fish.toml").write_text(_toml(cams, fisheye=True))
    with pytest.raises(CalibrationError, match="fisheye"):
        read_calibration(tmp_path / "fish.toml")
    (tmp_path / "bad.toml").write_text("[cam]\nmatrix = 3\n")
    with pytest.raises(CalibrationError, match="needs name, size, matrix"):
        read_calibration(tmp_path / "bad.toml")


def replace_dist(camera):
    """The camera with a k3 of 0 (Pose2Sim writes four distortion terms)."""
    from dataclasses import replace

    return replace(camera, dist=np.r_[camera.dist[:4], 0.0])


def test_the_real_trial_reads_the_same_from_its_toml(tmp_path):
    """The 4-view trial's Qualisys calibration written as a Pose2Sim TOML reads back to the same cameras."""
    qca = read_calibration(shared_path("data", "video", "multiview_pose2sim_multiperson", "calibration.qca.txt"))
    cams = [replace_dist(c) for c in qca]
    (tmp_path / "Calib_qualisys.toml").write_text(_toml(cams))
    for a, b in zip(cams, read_calibration(tmp_path / "Calib_qualisys.toml")):
        np.testing.assert_allclose(b.K, a.K)
        np.testing.assert_allclose(b.R, a.R, atol=1e-9)
        np.testing.assert_allclose(b.t, a.t, atol=1e-12)


def test_a_view_near_the_limit_is_weighed_in_smoothly_and_one_far_off_not_at_all():
    rng = np.random.default_rng(3)
    body = np.repeat(BODY[None], 60, axis=0)  # standing still: every change of a bone's length is noise
    xy = project(body, rng, noise_px=2.0)
    xy[3] += [30.0, 0.0]  # one view a little off: its points about max_error_px (15) from the solution
    thigh = lambda tri: np.linalg.norm(tri.xyz[:, 11] - tri.xyz[:, 13], axis=-1)  # noqa: E731  (T,) m
    hard, soft = triangulate(CAMERAS, xy, soft_px=None), triangulate(CAMERAS, xy)
    assert soft.found.all() and hard.found.all()
    assert 0.2 < hard.used[..., 3].mean() < 0.8  # the subset alone takes the view in some frames, not in others
    assert thigh(soft).std() < 0.85 * thigh(hard).std()  # weighed in smoothly: steadier (8.1 -> 6.2 mm here)
    far = xy.copy()
    far[3] += [120.0, 0.0]  # far off: weighs nothing
    without = xy.copy()
    without[3] = np.nan
    assert np.abs(triangulate(CAMERAS, far).xyz - triangulate(CAMERAS, without).xyz).max() < 1e-6
