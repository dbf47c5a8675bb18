"""BlazePose teacher: parity of the PyTorch rebuild with LiteRT (stored fixture), pipeline checks.

tests/data/blazepose_parity.npz comes from tools/blazepose_reference/make_fixture.py (LiteRT
runs the .tflite files). Real frames are referenced by path + sha256 and decoded again here;
the tests that need the .tflite files or the videos skip when ../shared is absent.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from conftest import shared_path
from posetracker.train.teachers import blazepose_geometry as geo
from posetracker.train.teachers.layers import depth_to_space

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "blazepose_parity.npz"
VARIANTS = ("full", "heavy")
XY_TOL_PX = 1e-3  # landmark x, y in 256x256 crop pixels
WORLD_TOL_M = 1e-4


@pytest.fixture(scope="module")
def fx() -> dict:
    with np.load(FIXTURE) as d:
        data = {k: d[k] for k in d.files}
    data["meta"] = json.loads(str(data["meta"]))
    return data


def _frames(fx: dict) -> list[dict]:
    return fx["meta"]["frames"]


def _read_frame(entry: dict) -> np.ndarray:
    import av

    path = shared_path(*entry["path"].split("/"))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["file_sha256"], f"{path} changed"
    with av.open(str(path)) as c:
        for i, frame in enumerate(c.decode(video=0)):
            if i == entry["frame"]:
                return frame.to_ndarray(format="rgb24")
    raise IndexError(entry)


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def nets():
    from posetracker.train.teachers.blazepose_nets import PoseDetectorNet, PoseLandmarkNet

    torch.set_num_threads(1)
    d = shared_path("pretrained", "blazepose")
    out = {v: PoseLandmarkNet(d / f"pose_landmark_{v}.tflite").eval() for v in VARIANTS}
    out["detector"] = PoseDetectorNet(d / "pose_detection.tflite").eval()
    return out


def _landmarks(net, crop_u8: np.ndarray, heatmap: bool = False) -> dict[str, np.ndarray]:
    x = torch.from_numpy(crop_u8.astype(np.float32) * np.float32(1 / 255)).permute(2, 0, 1)[None]
    with torch.no_grad():
        return {k: v[0].numpy() for k, v in net(x.contiguous(), heatmap=heatmap).items()}


def _check_landmarks(ours: dict, fx: dict, key: str) -> None:
    ref = fx[f"{key}/landmarks"].reshape(39, 5)
    got = ours["landmarks"].reshape(39, 5)
    xy = np.abs(got[:, :2] - ref[:, :2]).max()
    assert xy < XY_TOL_PX, f"{key}: landmark x, y differ by {xy:.2e} px"
    assert np.abs(got[:, 2] - ref[:, 2]).max() < 1e-2, f"{key}: z"  # z is in crop px too, ~100s
    assert np.abs(got[:, 3:] - ref[:, 3:]).max() < 1e-3, f"{key}: visibility/presence logits"
    w = np.abs(ours["world"] - fx[f"{key}/world"]).max()
    assert w < WORLD_TOL_M, f"{key}: world landmarks differ by {w:.2e} m"
    assert abs(float(ours["flag"][0]) - float(fx[f"{key}/flag"][0])) < 1e-5


# -- parity with the reference runtime --------------------------------------------------------
@pytest.mark.shared
@pytest.mark.parametrize("variant", VARIANTS)
def test_landmark_parity_synthetic(nets, fx, variant):
    _check_landmarks(_landmarks(nets[variant], fx["syn/crop"]), fx, f"syn/{variant}")


@pytest.mark.shared
@pytest.mark.parametrize("variant", VARIANTS)
def test_landmark_parity_real_crops(nets, fx, variant):
    for entry in _frames(fx):
        rgb = _read_frame(entry)
        crop = geo.warp(rgb, fx[f"{entry['name']}/crop_matrix"], geo.LANDMARK_SIZE, cv2.BORDER_REPLICATE)
        assert _sha(crop) == entry["crop_sha256"], f"{entry['name']}: the rebuilt crop differs (decoder/OpenCV?)"
        ours = _landmarks(nets[variant], crop, heatmap=True)
        _check_landmarks(ours, fx, f"{entry['name']}/{variant}")
        hkey = f"{entry['name']}/{variant}/heatmap"
        if hkey in fx:
            diff = np.abs(ours["heatmap"].transpose(1, 2, 0) - fx[hkey]).max()
            assert diff < 5e-3, f"{hkey}: {diff:.2e}"


def _check_detector(nets, fx, key: str, x: np.ndarray) -> None:
    with torch.no_grad():
        boxes, scores = nets["detector"](torch.from_numpy(x).permute(2, 0, 1)[None].contiguous())
    db = np.abs(boxes[0].numpy() - fx[f"{key}/det_boxes"]).max()
    ds = np.abs(scores[0].numpy() - fx[f"{key}/det_scores"]).max()
    assert db < 5e-3 and ds < 5e-3, f"{key}: detector boxes differ by {db:.2e}, score logits by {ds:.2e}"


@pytest.mark.shared
def test_detector_parity(nets, fx):
    _check_detector(nets, fx, "syn", fx["syn/det_input"].astype(np.float32) * np.float32(2 / 255) - 1)
    for entry in _frames(fx):
        rgb = _read_frame(entry)
        x, _ = geo.detector_input(rgb)
        u8 = geo.warp(rgb, geo.crop_matrix(geo.letterbox_roi(*rgb.shape[:2]), 224), 224, cv2.BORDER_CONSTANT)
        assert _sha(u8) == entry["det_input_sha256"]
        _check_detector(nets, fx, entry["name"], x)


@pytest.fixture(scope="module")
def teacher_full():
    from posetracker.train.teachers.blazepose import BlazePoseTeacher

    torch.set_num_threads(1)
    return BlazePoseTeacher("full", model_dir=shared_path("pretrained", "blazepose"))


@pytest.mark.shared
@pytest.mark.parametrize("variant", VARIANTS)
def test_end_to_end_matches_reference_pipeline(teacher_full, fx, variant):
    """Whole pipeline in torch vs the same pipeline with LiteRT as the runtime (stored).

    The ROI comes from our detector outputs, so the crop can differ from the reference one by
    bilinear-resampling steps; measured: ROI 1e-4, image landmarks <= 0.02 px, world 2e-4 m.
    """
    from posetracker.train.teachers.blazepose import BlazePoseTeacher

    teacher = teacher_full if variant == "full" else BlazePoseTeacher(variant, model_dir=teacher_full.model_dir)
    for entry in _frames(fx):
        people = teacher.predict(_read_frame(entry))
        assert len(people) == 1
        p, key = people[0], f"{entry['name']}/{variant}"
        np.testing.assert_allclose(p.roi.as_array(), fx[f"{entry['name']}/roi"], atol=5e-3)
        ref = fx[f"{key}/e2e_landmarks"]
        assert np.abs(p.landmarks[:, :2] - ref[:, :2]).max() < 0.1, key
        assert np.abs(p.landmarks[:, 3:] - ref[:, 3:]).max() < 5e-3, key
        assert np.abs(p.world - fx[f"{key}/e2e_world"]).max() < 2e-3, key


@pytest.mark.shared
def test_landmarks_land_on_the_person(teacher_full, fx):
    entry = _frames(fx)[0]  # pose_1.mp4 frame 0: one woman, standing, facing the camera
    rgb = _read_frame(entry)
    (p,) = teacher_full.predict(rgb)
    lm, h, w = p.landmarks, rgb.shape[0], rgb.shape[1]
    assert p.presence > 0.9 and p.score > 0.5
    assert np.all((lm[:, 0] > 0) & (lm[:, 0] < w) & (lm[:, 1] > 0) & (lm[:, 1] < h))
    nose, sh, hip, knee, ankle = lm[0, 1], lm[[11, 12], 1].mean(), lm[[23, 24], 1].mean(), \
        lm[[25, 26], 1].mean(), lm[[27, 28], 1].mean()
    assert nose < sh < hip < knee < ankle
    assert lm[11, 0] > lm[12, 0] and lm[23, 0] > lm[24, 0]  # facing the camera: her left is image right
    det = teacher_full.detect(rgb)[0]
    assert det.box[0] < lm[0, 0] < det.box[2] and det.box[1] < lm[0, 1] < det.box[3]  # face box holds the nose
    assert np.all(lm[[0, 11, 12, 23, 24], 3] > 0.9)
    hips = p.world[[23, 24]]
    assert np.abs(hips.mean(0)).max() < 0.05  # hip-centred
    assert 0.2 < np.linalg.norm(p.world[11] - p.world[12]) < 0.5  # shoulder width in metres
    assert p.world[0, 1] < p.world[23, 1] < p.world[27, 1]  # y down: nose above hips above ankles


@pytest.mark.shared
def test_predict_crops_and_tracking(teacher_full, fx):
    entry = _frames(fx)[0]
    rgb = _read_frame(entry)
    (ref,) = teacher_full.predict(rgb)
    xy = ref.landmarks[:, :2]
    box = np.array([*xy.min(0), *xy.max(0)])
    (p,) = teacher_full.predict_crops(rgb, box[None])
    assert np.isnan(p.score) and p.roi.angle == 0.0
    assert np.median(np.linalg.norm(p.landmarks[:, :2] - xy, axis=1)) < 8.0
    teacher_full.reset()
    first = teacher_full.track(rgb)
    second = teacher_full.track(rgb)  # from the auxiliary-landmark ROI
    assert len(first) == len(second) == 1
    assert np.median(np.linalg.norm(second[0].landmarks[:, :2] - xy, axis=1)) < 8.0
    teacher_full.reset()
    assert teacher_full.predict(np.zeros((64, 96, 3), np.uint8)) == []


@pytest.mark.shared
def test_tflite_reader_lists_ops_and_densifies():
    from collections import Counter

    from posetracker.train.teachers.tflite import TfliteGraph

    g = TfliteGraph(shared_path("pretrained", "blazepose", "pose_detection.tflite"))
    assert Counter(op.name for op in g.ops) == {
        "DEQUANTIZE": 144, "CONV_2D": 45, "DENSIFY": 38, "DEPTHWISE_CONV_2D": 28, "ADD": 15, "PAD": 8,
        "RESHAPE": 6, "DEPTH_TO_SPACE": 3, "RESIZE_BILINEAR": 2, "CONCATENATION": 2}
    assert g.tensors[g.inputs[0]].shape == (1, 224, 224, 3)
    assert [g.tensors[t].shape for t in g.outputs] == [(1, 2254, 12), (1, 2254, 1)]
    sparse = [t for t in g.tensors if t.sparsity is not None]
    assert len(sparse) == 38
    dense = g.constant(sparse[0].index)
    assert dense.shape == sparse[0].shape and np.count_nonzero(dense) == g.raw(sparse[0].index).size
    resize = [op for op in g.ops if op.name == "RESIZE_BILINEAR"]
    assert all(op.options == {"align_corners": False, "half_pixel_centers": True} for op in resize)


# -- geometry, no model files needed ----------------------------------------------------------
def test_fixture_is_small_and_has_no_real_pixels(fx):
    assert FIXTURE.stat().st_size < 3e6
    big = [k for k, v in fx.items() if isinstance(v, np.ndarray) and v.dtype == np.uint8]
    assert sorted(big) == ["syn/crop", "syn/det_input"]


def test_anchors():
    a = geo.ssd_anchors()
    assert a.shape == (2254, 2)
    np.testing.assert_allclose(a[0], [0.5 / 28, 0.5 / 28])
    np.testing.assert_allclose(a[1], a[0])  # two anchors per cell
    np.testing.assert_allclose(a[1568], [0.5 / 14, 0.5 / 14])
    np.testing.assert_allclose(a[1568 + 392:1568 + 392 + 6], np.full((6, 2), 0.5 / 7))
    np.testing.assert_allclose(a[-1], [6.5 / 7, 6.5 / 7])


def test_weighted_nms_merges_overlaps():
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10], [50, 50, 60, 60]], np.float64)
    kps = np.zeros((3, 4, 2))
    kps[1] += 1.0
    out = geo.weighted_nms(np.array([0.9, 0.6, 0.8]), boxes, kps)
    assert [round(s, 3) for s, _, _ in out] == [0.9, 0.8]
    np.testing.assert_allclose(out[0][1], [0.4, 0, 10.4, 10])  # (0.9*0 + 0.6*1) / 1.5
    np.testing.assert_allclose(out[0][2], np.full((4, 2), 0.4))


def test_roi_and_crop_geometry():
    up = geo.roi_from_points(np.array([100.0, 200.0]), np.array([100.0, 120.0]))
    assert up.angle == 0.0 and up.size == pytest.approx(2 * 80 * 1.25)
    right = geo.roi_from_points(np.array([0.0, 0.0]), np.array([10.0, 0.0]))  # body lying, head right
    assert right.angle == pytest.approx(math.pi / 2)
    roi = geo.Roi(300.0, 200.0, 150.0, 0.7)
    m = geo.crop_matrix(roi, 256)
    pts = np.array([[0.0, 0.0], [256.0, 0.0], [128.0, 128.0], [10.0, 200.0]])
    back = geo.to_image(pts, roi, 256)
    np.testing.assert_allclose(back @ m[:, :2].T + m[:, 2], pts, atol=1e-9)
    np.testing.assert_allclose(back[2], [300.0, 200.0])
    assert np.linalg.norm(back[1] - back[0]) == pytest.approx(150.0)
    w = geo.rotate_world(np.array([[1.0, 0.0, 0.5]]), math.pi / 2)
    np.testing.assert_allclose(w, [[0.0, 1.0, 0.5]], atol=1e-12)


def test_heatmap_refinement():
    hm = np.full((64, 64, 2), -10.0, np.float32)
    hm[20, 30, 0] = hm[20, 31, 0] = 10.0  # confident: two equal peaks
    out = geo.refine_from_heatmap(np.array([[30.5 / 64, 20.2 / 64], [0.5, 0.5]]), hm)
    np.testing.assert_allclose(out[0], [30.5 / 64, 20 / 64], atol=2e-4)
    np.testing.assert_allclose(out[1], [0.5, 0.5])  # not confident: unchanged


def test_depth_to_space_matches_tflite_channel_order():
    x = torch.arange(2 * 8 * 3 * 3, dtype=torch.float32).reshape(2, 8, 3, 3)
    y = depth_to_space(x, 2)  # TFLite: out[h*2+dy, w*2+dx, c] = in[h, w, (dy*2+dx)*C + c]
    assert y.shape == (2, 2, 6, 6)
    for dy in range(2):
        for dx in range(2):
            for c in range(2):
                torch.testing.assert_close(y[:, c, dy::2, dx::2], x[:, (dy * 2 + dx) * 2 + c])
