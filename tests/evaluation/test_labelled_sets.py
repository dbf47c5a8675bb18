"""posetracker.evaluation's labelled sets and runner on synthetic files (no ../shared needed): loading
``normalized*.json``, decoding video frames, scoring a set end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from posetracker.evaluation import (
    HUMAN18_JOINTS,
    FrameCache,
    LabelledSetError,
    evaluate_set,
    human18_from_set,
    load_labelled_set,
    read_image,
)
from posetracker.types import PoseFrame


def _write_video(path, n=24, size=(64, 48)):
    av = pytest.importorskip("av")
    with av.open(str(path), "w") as out:
        st = out.add_stream("mpeg4", rate=24)
        st.width, st.height, st.pix_fmt = size[0], size[1], "yuv420p"
        st.options = {"qscale": "2"}
        for i in range(n):
            img = np.full((size[1], size[0], 3), 8 * i + 20, np.uint8)
            for pkt in st.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(pkt)
        for pkt in st.encode():
            out.mux(pkt)


def test_video_frames_are_decoded_once_in_order(tmp_path):
    video = tmp_path / "clip.mp4"
    _write_video(video)
    with FrameCache() as cache:
        levels = [float(cache.frame(video, i).mean()) for i in (0, 3, 4, 10, 23)]
        assert cache.decoded == 24  # forward only: every frame decoded once
        assert float(cache.frame(video, 2).mean()) == pytest.approx(36, abs=3)  # backwards: seek
    assert levels == pytest.approx([20, 44, 52, 100, 204], abs=3)
    with FrameCache(max_skip=2) as cache:  # far jump ahead: seek instead of decoding every frame
        assert float(cache.frame(video, 20).mean()) == pytest.approx(180, abs=3)
        assert cache.decoded < 20
        with pytest.raises(IndexError):
            cache.frame(video, 99)


def _synthetic_set(tmp_path):
    """Two still images + two frames of one video, COCO-17 names, one person each (bbox null in one)."""
    import cv2

    video = tmp_path / "clip.mp4"
    _write_video(video)
    cv2.imwrite(str(tmp_path / "a.png"), np.zeros((48, 64, 3), np.uint8))
    names = list(HUMAN18_JOINTS[:17])

    def inst(x0, y0, bbox=True):
        kp = [[x0 + (i % 5) * 4, y0 + i * 2, 2] for i in range(17)]
        kp[3][2] = 0  # one unlabelled joint
        return {"keypoints": kp, "bbox": [x0, y0, 16, 32] if bbox else None, "category": "person"}

    data = {
        "dataset": "synthetic", "kind": "human", "keypoint_names": names, "skeleton": [],
        "images": [
            {"file": "a.png", "width": 64, "height": 48, "instances": [inst(2, 4)]},
            {"file": "a.png", "width": 64, "height": 48, "instances": [inst(30, 8, bbox=False), inst(5, 5)]},
            {"file": "clip.mp4", "video": "clip.mp4", "frame_idx": 5, "width": 64, "height": 48,
             "instances": [inst(10, 3)]},
            {"file": "clip.mp4", "video": "clip.mp4", "frame_idx": 9, "width": 64, "height": 48, "instances": []},
        ],
    }
    path = tmp_path / "normalized.json"
    path.write_text(json.dumps(data))
    return path


def oracle(ls):
    """A predictor that returns each item's ground truth (items are visited in order)."""
    items = iter(ls.items)

    def predict(rgb):
        item = next(items)
        kps = [human18_from_set(i.keypoints, ls.keypoint_names) for i in item.instances]
        kps = [k for k in kps if (k[:, 2] > 0).any()]
        a = np.asarray(kps, dtype=np.float32).reshape(-1, 18, 3)
        xyz = a.copy()
        xyz[..., 2] = np.nan
        p = len(a)
        return PoseFrame(index=0, timestamp=0.0, keypoints=xyz, confidence=(a[..., 2] > 0).astype(np.float32),
                         scores=np.ones(p, np.float32), track_ids=np.full(p, -1, np.int64),
                         image_size=(rgb.shape[1], rgb.shape[0]))

    return predict


def test_load_and_evaluate_synthetic_set(tmp_path):
    ls = load_labelled_set(_synthetic_set(tmp_path))
    assert ls.name == "synthetic" and len(ls) == 4 and ls.num_people == 4
    it = ls.items[2]
    assert it.image is None and it.video == (tmp_path / "clip.mp4").resolve() and it.frame_idx == 5
    assert it.key == "clip.mp4#5"
    assert ls.items[1].instances[0].bbox is None
    assert all(it.every_person_labelled for it in ls.items)
    assert ls.items[1].instances[0].box().tolist() == [30, 8, 16, 32]  # keypoint bbox
    rgb = read_image(it)
    assert rgb.shape == (48, 64, 3) and rgb.dtype == np.uint8 and abs(rgb.mean() - 60) < 3
    assert read_image(ls.items[0]).shape == (48, 64, 3)

    seen = []
    res = evaluate_set(ls, oracle(ls), progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert res["pck@0.1"] == 1.0 and res["pck@0.2"] == 1.0
    assert res["ap"] == pytest.approx(1.0) and res["ap50"] == pytest.approx(1.0) and res["recall"] == 1.0
    assert res["images"] == 4 and res["people"] == 4 and res["layout"] == "coco17"
    assert res["mapped_joints"] == list(HUMAN18_JOINTS[:17])
    preds = res["predictions"]
    assert [p["image"] for p in preds] == ["a.png", "a.png", "clip.mp4", "clip.mp4"]
    assert preds[2]["frame_idx"] == 5 and len(preds[1]["people"]) == 2 and preds[3]["people"] == []
    person0 = preds[0]["people"][0]
    assert len(person0["keypoints"]) == 18 and person0["keypoints"][0][2] is None and person0["score"] == 1.0
    json.dumps(preds, allow_nan=False)  # JSON-ready


def test_mpii_centre_and_scale_mark_an_image_labelled_one_person_at_a_time(tmp_path):
    path = _synthetic_set(tmp_path)
    data = json.loads(path.read_text())
    data["images"][0]["instances"][0].update(center=[10, 20], scale=0.2)  # MPII's single-person annotation
    path.write_text(json.dumps(data))
    ls = load_labelled_set(path)
    assert [it.every_person_labelled for it in ls.items] == [False, True, True, True]
    from posetracker.cli.evaluate import format_table

    res = evaluate_set(ls, oracle(ls))
    assert res["every_person_labelled"] is False
    assert "synthetic: one person labelled an image" in format_table({"synthetic": res})


def test_evaluate_set_rejects_wrong_sizes_and_skeletons(tmp_path):
    ls = load_labelled_set(_synthetic_set(tmp_path))
    with pytest.raises(ValueError, match="labels are for 64x48"):
        evaluate_set(ls, oracle(ls), reader=lambda it: np.zeros((10, 10, 3), np.uint8))
    with pytest.raises(ValueError, match="18 joints"):
        evaluate_set(ls, lambda rgb: PoseFrame.empty(0, 0.0, 17))


def test_load_rejects_bad_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"keypoint_names": ["a", "b"], "images": [
        {"file": "x.png", "width": 4, "height": 4, "instances": [{"keypoints": [[0, 0, 2]], "bbox": None}]}]}))
    with pytest.raises(LabelledSetError, match="keypoints must be"):
        load_labelled_set(p)
    ls_path = tmp_path / "ok.json"
    ls_path.write_text(json.dumps({"keypoint_names": ["a"], "images": [
        {"file": "missing.png", "width": 4, "height": 4, "instances": []}]}))
    with pytest.raises(FileNotFoundError):
        read_image(load_labelled_set(ls_path).items[0])
