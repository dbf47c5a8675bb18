"""posetracker.importers and ``posetracker import-labels``: SLEAP / DeepLabCut projects -> normalized.json,
a skeleton YAML and a training config. Fixtures are tiny projects written here (SLEAP ones with
sleap-io's own API); the last tests import the real projects in ../shared (skipped when absent)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
from conftest import shared_path

from posetracker.cli import main
from posetracker.evaluation import FrameCache, load_labelled_set, read_image
from posetracker.evaluation.datasets import joint_columns
from posetracker.importers import LabelImportError, import_project, read_project
from posetracker.importers.skeleton import build_skeleton, mirror_pairs, unpaired_sided
from posetracker.skeletons import load_skeleton, spec_from_dict


def _png(path: Path, w: int, h: int, value: int = 90) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), np.full((h, w, 3), value, np.uint8))


def _write_csv(path: Path, rows: list[list]) -> None:
    path.write_text("\n".join(",".join("" if c is None else str(c) for c in r) for r in rows) + "\n")


# --- DeepLabCut fixtures -------------------------------------------------------------------------

MOUSE = ["snout", "leftear", "rightear", "tailbase"]


def make_dlc(root: Path) -> Path:
    """Single-animal project, 3 header rows, one index column; frame 2 has an empty cell, frame 3 none labelled."""
    proj = root / "openfield-me-2024"
    proj.mkdir()
    cfg = {"Task": "openfield", "scorer": "me", "multianimalproject": False, "bodyparts": MOUSE,
           "skeleton": [["snout", "leftear"], ["snout", "rightear"], ["leftear", "rightear"], ["snout", "tailbase"]]}
    (proj / "config.yaml").write_text(yaml.safe_dump(cfg))
    for i in range(4):
        _png(proj / "labeled-data" / "m1" / f"img{i:03d}.png", 64, 48)
    rows = [["scorer"] + ["me"] * 8,
            ["bodyparts"] + [p for p in MOUSE for _ in range(2)],
            ["coords"] + ["x", "y"] * 4,
            ["labeled-data/m1/img000.png", 10.5, 20.25, 12, 18, 9, 18, 30, 40],
            ["labeled-data/m1/img001.png", 11, 21, 13, 19, 10, 19, 31, 41],
            ["labeled-data/m1/img002.png", 12, 22, None, None, 11, 20, 32, 42],
            ["labeled-data/m1/img003.png"] + [None] * 8]
    _write_csv(proj / "labeled-data" / "m1" / "CollectedData_me.csv", rows)
    return proj


MA_PARTS = ["nose", "earL", "earR", "tail"]


def make_madlc(root: Path) -> Path:
    """Multi-animal project (DeepLabCut >= 2.2 layout): 4 header rows, three index columns, a 'single' landmark."""
    proj = root / "pair-me-2024"
    proj.mkdir()
    cfg = {"Task": "pair", "scorer": "me", "multianimalproject": True, "bodyparts": "MULTI!",
           "individuals": ["m1", "m2"], "uniquebodyparts": ["landmark"], "multianimalbodyparts": MA_PARTS,
           "skeleton": [["nose", "earL"], ["nose", "earR"], ["earL", "tail"], ["earR", "tail"]]}
    (proj / "config.yaml").write_text(yaml.safe_dump(cfg))
    for i in range(2):
        _png(proj / "labeled-data" / "vid" / f"img{i}.png", 80, 60)
    inds = ["m1"] * 8 + ["m2"] * 8 + ["single"] * 2
    parts = [p for p in MA_PARTS for _ in range(2)] * 2 + ["landmark"] * 2
    rows = [["scorer", "", ""] + ["me"] * 18,
            ["individuals", "", ""] + inds,
            ["bodyparts", "", ""] + parts,
            ["coords", "", ""] + ["x", "y"] * 9,
            ["labeled-data", "vid", "img0.png", 1, 2, 3, 4, 5, 6, 7, 8, 41, 42, 43, 44, "NaN", "NaN", 47, 48, 70, 50],
            ["labeled-data", "vid", "img1.png", 2, 3, 4, 5, 6, 7, 8, 9] + [None] * 8 + [70, 50]]
    _write_csv(proj / "labeled-data" / "vid" / "CollectedData_me.csv", rows)
    return proj


# --- SLEAP fixtures ------------------------------------------------------------------------------

FLY = ["head", "thorax", "abdomen", "wingL", "wingR"]


def _mp4(path: Path, frames: int = 5, size: tuple[int, int] = (64, 48)) -> None:
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, size)
    for i in range(frames):
        w.write(np.full((size[1], size[0], 3), 40 * i, np.uint8))
    w.release()


def make_slp(root: Path, user: bool = True, embed: bool = False) -> Path:
    """A video (frames 1 and 3 labelled) and an image list (its image 1 labelled); tracks male / female.

    Frame 1: a user 'male' corrected from a prediction, plus a predicted 'female'. Frame 3: predictions
    only. Image 1: a user instance without a track, one point missing."""
    sio = pytest.importorskip("sleap_io")
    _mp4(root / "clip.mp4")
    imgs = []
    for i in range(3):
        _png(root / "imgs" / f"f{i}.png", 30, 20, 50 * i)
        imgs.append(str(root / "imgs" / f"f{i}.png"))
    sk = sio.Skeleton(nodes=[sio.Node(n) for n in FLY],
                      edges=[("thorax", "head"), ("thorax", "abdomen"), ("thorax", "wingL"), ("thorax", "wingR"),
                             ("head", "abdomen")])
    vid, ivid = sio.Video.from_filename(str(root / "clip.mp4")), sio.Video.from_filename(imgs)
    male, female = sio.Track("male"), sio.Track("female")
    pts = np.array([[10, 5], [10, 10], [10, 20], [5, 12], [15, 12]], float)

    def pred(offset: float, track, score: float):
        return sio.PredictedInstance.from_numpy(pts + offset, skeleton=sk, track=track, score=score)

    p_male = pred(0.5, male, 0.9)
    frames = [sio.LabeledFrame(video=vid, frame_idx=3, instances=[pred(1, male, 0.7), pred(20, female, 0.6)])]
    if user:
        corrected = pts.copy()
        corrected[2] = np.nan  # abdomen not labelled
        frames.insert(0, sio.LabeledFrame(video=vid, frame_idx=1, instances=[
            sio.Instance.from_numpy(corrected, skeleton=sk, track=male, from_predicted=p_male), p_male,
            pred(30, female, 0.8)]))
        frames.append(sio.LabeledFrame(video=ivid, frame_idx=1, instances=[
            sio.Instance.from_numpy(pts * 1.5, skeleton=sk)]))
    labels = sio.Labels(labeled_frames=frames, skeletons=[sk], videos=[vid, ivid], tracks=[male, female])
    path = root / ("flies.pkg.slp" if embed else "flies.slp")
    sio.save_slp(labels, str(path), embed="user" if embed else False, verbose=False)
    return path


# --- skeleton builder ----------------------------------------------------------------------------


def test_mirror_pairs_by_name():
    names = ["wingL", "wingR", "leftear", "rightear", "forelegL4", "forelegR4", "L_eye", "R_eye", "FL_paw",
             "FR_paw", "ear_l", "ear_r", "LeftHand", "RightHand", "tail", "Lip", "thorax", "TAIL"]
    pairs = mirror_pairs(names)
    expect = [("wingL", "wingR"), ("leftear", "rightear"), ("forelegL4", "forelegR4"), ("L_eye", "R_eye"),
              ("FL_paw", "FR_paw"), ("ear_l", "ear_r"), ("LeftHand", "RightHand")]
    for a, b in expect:
        assert pairs[a] == b and pairs[b] == a
    assert not {"tail", "Lip", "thorax", "TAIL"} & set(pairs)
    assert unpaired_sided(["left_paw", "nose", "earL", "tail", "Lip"], {}) == ["left_paw", "earL"]


def test_tree_from_the_most_connected_keypoint():
    names = ["head", "thorax", "abdomen", "wingL", "wingR", "antenna", "tip", "lone"]
    edges = [(1, 0), (1, 2), (1, 3), (1, 4), (0, 2), (5, 6)]  # thorax is the hub; head-abdomen closes a cycle
    data = build_skeleton(names, edges, "bug")
    spec = spec_from_dict(data)
    parent = {j["name"]: j["parent"] for j in data["joints"]}
    assert parent == {"head": "thorax", "thorax": "centre", "abdomen": "thorax", "wingL": "thorax",
                      "wingR": "thorax", "antenna": "centre", "tip": "antenna", "lone": "centre", "centre": None}
    assert data["extra_edges"] == [["head", "abdomen"]]
    assert spec.virtual == {spec.index("centre"): "bbox_centre"} and spec.root == spec.index("centre")
    assert spec.mirror_index[spec.index("wingL")] == spec.index("wingR")
    assert data["sigmas"] == [0.1] * 8 + [None]
    # a path: the middle keypoint is the hub (ties broken towards the middle)
    chain = build_skeleton(["a", "b", "c"], [(0, 1), (1, 2)], "chain")
    assert [j["parent"] for j in chain["joints"]] == ["b", "centre", "b", None]
    # a keypoint already called centre: the virtual root takes another name
    taken = build_skeleton(["centre", "nose"], [], "x")
    assert taken["joints"][-1] == {"name": "body_centre", "parent": None, "virtual": "bbox_centre"}


# --- DeepLabCut ----------------------------------------------------------------------------------


def test_dlc_single_animal(tmp_path):
    proj = make_dlc(tmp_path)
    out = tmp_path / "out"
    s = import_project(proj, out)
    assert (s["frames"], s["instances"], s["keypoints"], s["labelled_points"]) == (3, 3, 4, 11)
    assert s["skeleton"] == out / "openfield.yaml" and any("1 frames without" in w for w in s["warnings"])
    doc = json.loads((out / "normalized.json").read_text())
    assert doc["keypoint_names"] == MOUSE and doc["kind"] == "animal"
    assert doc["skeleton"] == [[0, 1], [0, 2], [1, 2], [0, 3]]
    first = doc["images"][0]
    assert first["file"] == "../openfield-me-2024/labeled-data/m1/img000.png"
    assert (first["width"], first["height"]) == (64, 48) and "video" not in first
    assert first["instances"][0]["keypoints"] == [[10.5, 20.25, 2], [12, 18, 2], [9, 18, 2], [30, 40, 2]]
    assert doc["images"][2]["instances"][0]["keypoints"][1] == [0, 0, 0]  # empty cells -> v=0
    assert "track" not in first["instances"][0]

    ls = load_labelled_set(out / "normalized.json")
    assert [it.image for it in ls.items] == [(proj / f"labeled-data/m1/img00{i}.png").resolve() for i in range(3)]
    assert read_image(ls.items[0]).shape == (48, 64, 3)
    spec = load_skeleton(s["skeleton"])
    assert spec.name == "openfield" and spec.joint_names == (*MOUSE, "centre")
    assert spec.mirror_index[spec.index("leftear")] == spec.index("rightear")
    assert spec.parents[spec.index("snout")] == spec.root  # snout: 3 edges, the hub
    assert all(spec.parents[spec.index(n)] == spec.index("snout") for n in ("leftear", "rightear", "tailbase"))
    assert [tuple(spec.joint_names[j] for j in e) for e in spec.extra_edges] == [("leftear", "rightear")]
    assert joint_columns(ls.keypoint_names, spec).tolist() == [0, 1, 2, 3, -1]

    cfg = yaml.safe_load((out / "train.yaml").read_text())
    assert cfg["skeleton"] == str(out / "openfield.yaml") and cfg["data"] == "normalized.json"
    assert cfg["data_root"] == str(out) and cfg["val_fraction"] == 0.2 and cfg["augment"]["flip"] is True
    assert cfg["out"] == str(out / "posenet-openfield.safetensors")


def test_dlc_multi_animal(tmp_path):
    proj = make_madlc(tmp_path)
    s = import_project(proj / "config.yaml", tmp_path / "out", name="two mice")
    assert s["name"] == "two_mice" and s["tracks"] == ["m1", "m2"] and (s["frames"], s["instances"]) == (2, 3)
    assert any("landmark" in w for w in s["warnings"])
    doc = json.loads((tmp_path / "out" / "normalized.json").read_text())
    assert doc["keypoint_names"] == MA_PARTS
    f0 = doc["images"][0]
    assert f0["file"] == "../pair-me-2024/labeled-data/vid/img0.png" and (f0["width"], f0["height"]) == (80, 60)
    m1, m2 = f0["instances"]
    assert (m1["track"], m2["track"]) == ("m1", "m2")
    assert m1["keypoints"] == [[1, 2, 2], [3, 4, 2], [5, 6, 2], [7, 8, 2]]
    assert m2["keypoints"] == [[41, 42, 2], [43, 44, 2], [0, 0, 0], [47, 48, 2]]  # NaN -> v=0
    assert [i["track"] for i in doc["images"][1]["instances"]] == ["m1"]  # m2 not labelled there: left out
    spec = load_skeleton(tmp_path / "out" / "two_mice.yaml")
    assert spec.mirror_index[spec.index("earL")] == spec.index("earR")
    assert len(load_labelled_set(tmp_path / "out" / "normalized.json").items) == 2


def test_dlc_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(LabelImportError, match="no config.yaml"):
        read_project(tmp_path / "empty")
    (tmp_path / "nolabels").mkdir()
    (tmp_path / "nolabels" / "config.yaml").write_text("Task: x\nbodyparts: [a]\n")
    with pytest.raises(LabelImportError, match="labeled-data"):
        read_project(tmp_path / "nolabels")
    (tmp_path / "nolabels" / "labeled-data" / "v").mkdir(parents=True)
    (tmp_path / "nolabels" / "labeled-data" / "v" / "CollectedData_x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(LabelImportError, match="not a DeepLabCut CSV"):
        read_project(tmp_path / "nolabels")


# --- SLEAP ---------------------------------------------------------------------------------------


def test_sleap_user_instances(tmp_path):
    slp = make_slp(tmp_path)
    out = tmp_path / "out"
    s = import_project(slp, out)
    assert (s["frames"], s["instances"], s["keypoints"]) == (2, 2, 5) and not s["predicted"]
    doc = json.loads((out / "normalized.json").read_text())
    assert doc["keypoint_names"] == FLY and doc["skeleton"] == [[1, 0], [1, 2], [1, 3], [1, 4], [0, 2]]
    video, still = doc["images"]
    assert video["video"] == video["file"] == "../clip.mp4" and video["frame_idx"] == 1
    assert (video["width"], video["height"]) == (64, 48)
    (inst,) = video["instances"]  # the user's male; its prediction and the predicted female left out
    assert inst["track"] == "male" and "score" not in inst
    assert inst["keypoints"] == [[10, 5, 2], [10, 10, 2], [0, 0, 0], [5, 12, 2], [15, 12, 2]]
    assert still["file"] == "../imgs/f1.png" and "video" not in still and (still["width"], still["height"]) == (30, 20)
    assert "track" not in still["instances"][0] and still["instances"][0]["keypoints"][0] == [15, 7.5, 2]

    ls = load_labelled_set(out / "normalized.json")
    assert ls.items[0].video == (tmp_path / "clip.mp4").resolve() and ls.items[0].frame_idx == 1
    with FrameCache() as cache:
        assert abs(read_image(ls.items[0], cache).mean() - 40) < 8  # frame 1 of the clip (value 40)
    assert read_image(ls.items[1]).mean() == pytest.approx(50, abs=1)

    spec = load_skeleton(s["skeleton"])
    assert spec.parents[spec.index("thorax")] == spec.root
    assert spec.mirror_index[spec.index("wingL")] == spec.index("wingR")
    assert [tuple(spec.joint_names[j] for j in e) for e in spec.extra_edges] == [("head", "abdomen")]


def test_sleap_include_predicted(tmp_path):
    slp = make_slp(tmp_path)
    s = import_project(slp, tmp_path / "out", include_predicted=True)
    assert s["predicted"] and (s["frames"], s["instances"]) == (3, 5) and s["tracks"] == ["female", "male"]
    doc = json.loads((tmp_path / "out" / "normalized.json").read_text())
    f1 = doc["images"][0]["instances"]
    assert [(i["track"], "score" in i) for i in f1] == [("male", False), ("female", True)]  # corrected one dropped
    assert f1[1]["score"] == pytest.approx(0.8) and f1[1]["keypoints"][0] == [40, 35, 2]
    assert [im.get("frame_idx") for im in doc["images"]] == [1, 3, None]
    assert "PREDICTED" in doc["visibility_note"] and "PREDICTED" in (tmp_path / "out" / "train.yaml").read_text()


def test_sleap_predictions_only_are_refused(tmp_path):
    slp = make_slp(tmp_path, user=False)
    with pytest.raises(LabelImportError, match="no user-labelled instances.*--include-predicted"):
        read_project(slp)


def test_sleap_embedded_frames(tmp_path):
    slp = make_slp(tmp_path, embed=True)
    (tmp_path / "clip.mp4").unlink()  # a .pkg.slp carries its labelled frames
    s = import_project(slp, tmp_path / "out")
    doc = json.loads((tmp_path / "out" / "normalized.json").read_text())
    assert s["frames"] == 2 and all("video" not in im for im in doc["images"])
    assert doc["images"][0]["file"].startswith("frames/") and (doc["images"][0]["width"], doc["images"][0]["height"]) == (64, 48)
    ls = load_labelled_set(tmp_path / "out" / "normalized.json")
    assert abs(read_image(ls.items[0]).mean() - 40) < 8


def test_train_config_loads_for_training(tmp_path):
    """What ``posetracker train detector --config <out>/train.yaml`` does before training."""
    from posetracker.train.detector import load_detector_config
    from posetracker.train.detector_samples import load_split

    import_project(make_dlc(tmp_path), tmp_path / "out")
    cfg = load_detector_config(tmp_path / "out" / "train.yaml")
    spec = load_skeleton(cfg.skeleton)
    assert cfg.data_path == tmp_path / "out" / "normalized.json" and cfg.out_path.parent == tmp_path / "out"
    train, val, cols = load_split(str(cfg.data_path), spec, cfg.val_fraction)
    assert (len(train), len(val)) == (2, 1) and cols.tolist() == [0, 1, 2, 3, -1]


# --- command line --------------------------------------------------------------------------------


def test_cli_import_labels(tmp_path, capsys):
    proj = make_dlc(tmp_path)
    out = tmp_path / "out"
    assert main(["import-labels", str(proj), "--out", str(out), "--name", "mouse"]) == 0
    text = capsys.readouterr().out
    assert "3 frames" in text and f"--config {out / 'train.yaml'}" in text
    assert (out / "mouse.yaml").is_file() and (out / "train.yaml").is_file()
    assert main(["import-labels", str(proj), "--out", str(out), "--name", "mouse"]) == 1
    assert "--force" in capsys.readouterr().err
    assert main(["import-labels", str(proj), "--out", str(out), "--name", "mouse", "--force"]) == 0


def test_cli_errors_exit_2_without_a_traceback(tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    junk = tmp_path / "junk.slp"
    junk.write_bytes(b"not hdf5 at all")
    cases = [(tmp_path / "missing.slp", "not found"), (tmp_path / "folder", "no config.yaml"),
             (junk, "cannot read" if _has_sleap_io() else "needs sleap-io"), (tmp_path / "notes.txt", "not found")]
    (tmp_path / "other.txt").write_text("x")
    cases.append((tmp_path / "other.txt", "not a SLEAP .slp file"))
    if _has_sleap_io():
        (tmp_path / "p").mkdir()
        cases.append((make_slp(tmp_path / "p", user=False), "no user-labelled instances"))
    for path, msg in cases:
        assert main(["import-labels", str(path), "--out", str(tmp_path / "out")]) == 2, path
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err, err
    assert main(["import-labels", str(tmp_path / "folder"), "--out", str(tmp_path / "o"), "--name", "train"]) == 2


def _has_sleap_io() -> bool:
    try:
        import sleap_io  # noqa: F401
    except ImportError:
        return False
    return True


# --- the real projects in ../shared --------------------------------------------------------------


def _points(ls) -> dict:
    return {(str(it.path), it.frame_idx): [(i.track, i.keypoints.tolist()) for i in it.instances] for it in ls.items}


@pytest.mark.shared
def test_shared_dlc_openfield_mouse(tmp_path):
    proj = shared_path("data", "animal", "dlc_openfield_mouse")
    s = import_project(proj, tmp_path / "mouse")
    assert (s["frames"], s["instances"], s["keypoints"]) == (116, 116, 4)
    mine, ref = load_labelled_set(s["data"]), load_labelled_set(proj / "normalized.json")
    assert mine.keypoint_names == ref.keypoint_names == ("snout", "leftear", "rightear", "tailbase")
    assert [(it.width, it.height) for it in mine.items] == [(it.width, it.height) for it in ref.items]
    a, b = _points(mine), _points(ref)
    assert a.keys() == b.keys()
    for k in a:
        for (_, p), (_, q) in zip(a[k], b[k], strict=True):
            assert np.allclose(p, q), k
    spec = load_skeleton(s["skeleton"])
    assert spec.mirror_index[spec.index("leftear")] == spec.index("rightear")
    assert all(spec.parents[j] == spec.root for j in spec.labelled_joints)  # the project has no skeleton edges


@pytest.mark.shared
def test_shared_sleap_predictions(tmp_path):
    pytest.importorskip("sleap_io")
    folder = shared_path("data", "animal", "video_sleap_flies_centered_pair")
    slp = folder / "centered_pair_predictions.slp"
    with pytest.raises(LabelImportError, match="no user-labelled instances"):
        import_project(slp, tmp_path / "fly")
    s = import_project(slp, tmp_path / "fly", include_predicted=True)
    assert s["predicted"] and (s["frames"], s["instances"], s["keypoints"]) == (1100, 2274, 24)
    mine, ref = load_labelled_set(s["data"]), load_labelled_set(folder / "normalized_predicted_NOT_GT.json")
    assert mine.keypoint_names == ref.keypoint_names
    a, b = _points(mine), _points(ref)
    assert a.keys() == b.keys()
    for k in a:
        assert [t for t, _ in a[k]] == [t for t, _ in b[k]]
        for (_, p), (_, q) in zip(a[k], b[k], strict=True):
            assert np.allclose(p, q), k
    spec = load_skeleton(s["skeleton"])
    assert spec.parents[spec.index("thorax")] == spec.root and spec.num_joints == 25
    assert spec.parents[spec.index("forelegL3")] == spec.index("forelegL2")
    assert spec.mirror_index[spec.index("hindlegL2")] == spec.index("hindlegR2")
    assert not math.isnan(spec.sigmas[0]) and len(spec.extra_edges) == 0
