"""Training data: cache keys, feature cache, augmentations with labels, depth solve, label tracking."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posetracker.skeletons import load_skeleton
from posetracker.train import cache
from posetracker.train.augment import ClipAugment
from posetracker.train.clip_labels import ClipLabels, PersonLabel, augment_labels, label_clip
from posetracker.types import Frame

SPEC = load_skeleton("human18")


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POSETRACKER_CACHE", str(tmp_path / "cache"))


def write_clip(path, n=6, size=(96, 64), fps=30):
    av = pytest.importorskip("av")
    with av.open(str(path), "w") as out:
        st = out.add_stream("mpeg4", rate=fps)
        st.width, st.height, st.pix_fmt = size[0], size[1], "yuv420p"
        for i in range(n):
            img = np.zeros((size[1], size[0], 3), np.uint8)
            img[10:40, 10 + 4 * i:30 + 4 * i] = 200
            for pkt in st.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(pkt)
        for pkt in st.encode():
            out.mux(pkt)
    return path


def one_person_labels(t_len=4, size=(96, 64)) -> ClipLabels:
    k = SPEC.num_joints
    rng = np.random.default_rng(0)
    xy = np.repeat(rng.uniform(10, 50, (1, 1, k, 2)), t_len, 0).astype(np.float32)
    world = np.repeat(rng.normal(0, 0.3, (1, 1, k, 3)), t_len, 0).astype(np.float32)
    return ClipLabels(xy, xy.copy(), np.ones((t_len, 1, k), bool), np.ones((t_len, 1, k), np.float32),
                      np.full((t_len, 1, k), 3.0, np.float32), world, np.arange(t_len) / 30.0,
                      np.arange(t_len), size)


def test_cache_keys_are_stable(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"hello")
    k1 = cache.file_hash(f)
    g = tmp_path / "b.bin"
    g.write_bytes(b"hello")
    assert cache.file_hash(g) == k1 and len(k1) == 16  # content, not name
    assert cache.combine_key("x", 1, [2]) == cache.combine_key("x", 1, [2]) != cache.combine_key("x", 2, [2])
    assert str(cache.cache_dir("features")).startswith(str(tmp_path / "cache"))


def test_feature_cache_round_trip(tmp_path):
    from posetracker.model.network import PoseNet
    from posetracker.train.features import FeatureExtractor, FrameSelection

    torch.manual_seed(0)
    clip = write_clip(tmp_path / "clip.mp4", n=5)
    ex = FeatureExtractor(PoseNet(SPEC).eval(), runtime="torch", batch=4)
    sel = FrameSelection(step=2)
    cf = ex.clip_features(clip, "orig", sel)
    assert cf.feats.shape == (3, 24, 64, 64) and cf.feats.dtype == np.float16
    assert cf.frame_ids.tolist() == [0, 2, 4] and cf.size == (96, 64)
    assert cf.scales == pytest.approx([256 / 96] * 3)
    again = ex.clip_features(clip, "orig", sel)  # a hit: same key, same data
    assert again.key == cf.key and np.array_equal(np.asarray(again.feats), np.asarray(cf.feats))
    flipped = ex.clip_features(clip, "flip", sel)
    assert flipped.key != cf.key and not np.array_equal(np.asarray(flipped.feats), np.asarray(cf.feats))


def test_flip_swaps_left_and_right():
    labels = one_person_labels()
    plan = ClipAugment.parse("flip").plan(4, labels.size, "ab12cd34")
    out = augment_labels(labels, plan, SPEC)
    ls, rs = SPEC.index("left_shoulder"), SPEC.index("right_shoulder")
    w = labels.size[0]
    assert out.xy[0, 0, ls, 0] == pytest.approx(w - 1 - labels.xy[0, 0, rs, 0])
    assert out.xy[0, 0, rs, 1] == pytest.approx(labels.xy[0, 0, ls, 1])
    assert out.world[0, 0, ls, 0] == pytest.approx(-labels.world[0, 0, rs, 0], abs=1e-6)
    twice = augment_labels(out, plan, SPEC)
    assert np.allclose(twice.xy, labels.xy, atol=1e-4)


def test_far_variant_shrinks_people_and_pushes_them_away():
    from posetracker.train.augment import FAR_LIMITS

    labels = one_person_labels(t_len=40)
    labels.depth[:] = 2.0 + np.linspace(-0.2, 0.2, SPEC.num_joints)  # a body 40 cm deep
    assert ClipAugment.parse("flip+far7").flip and ClipAugment.parse("flip+far7").far
    plan = ClipAugment.parse("far7").plan(40, labels.size, "ab12cd34")
    assert FAR_LIMITS.scale[0] <= plan.scales.min() and plan.scales.max() <= FAR_LIMITS.scale[1]
    out = augment_labels(labels, plan, SPEC)
    root = labels.depth[:, 0, SPEC.root]
    assert np.allclose(out.depth[:, 0, SPEC.root], root / plan.scales, rtol=1e-5)  # 1.7-3.3x farther
    # the same body: joint depths relative to the centre do not scale with the distance
    assert np.allclose(out.depth - out.depth[..., [SPEC.root]], labels.depth - labels.depth[..., [SPEC.root]], atol=1e-5)
    size = lambda xy: np.linalg.norm(xy[:, :, 5] - xy[:, :, 12], axis=-1)  # (T, P) shoulder-hip px (any rotation)
    assert np.allclose(size(out.xy), size(labels.xy) * plan.scales[:, None], rtol=1e-3)
    with pytest.raises(ValueError, match="far<seed>"):
        ClipAugment.parse("far")


def test_augmented_world_follows_the_image():
    """Project the augmented camera-space skeleton: it must land on the augmented 2-D points."""
    from posetracker.train.augment import PathLimits

    rng = np.random.default_rng(1)
    f, c = 100.0, (47.5, 31.5)  # principal point = rotation centre of the path
    world = rng.normal(0, 0.2, (SPEC.num_joints, 3))
    cam = world + [0, 0, 50.0]  # far away: weak perspective, so the similarity is exact enough
    xy = f * cam[:, :2] / cam[:, 2:] + c
    labels = one_person_labels(t_len=3)
    labels.xy[:] = xy.astype(np.float32)
    labels.world[:] = world.astype(np.float32)
    plan = ClipAugment.parse("flip+aug3").plan(3, (96, 64), "00ff00ff", PathLimits(shift=0.0))
    out = augment_labels(labels, plan, SPEC)
    for i in range(3):
        cam2 = out.world[i, 0].astype(np.float64) * plan.scales[i] + [0, 0, 50.0]
        proj = f * cam2[:, :2] / cam2[:, 2:] + c
        assert np.abs(proj - out.xy[i, 0]).max() < 0.05


def test_solve_translation_recovers_the_camera_position_and_z_sign():
    from posetracker.train.labellers import focal_from_fov, project, solve_translation

    rng = np.random.default_rng(2)
    world = rng.normal(0, 0.3, (33, 3))
    t = np.array([0.4, -0.2, 2.5])
    f, c = focal_from_fov(640, 60.0), (320.0, 240.0)
    xy = project(world + t, f, c)
    assert solve_translation(world, xy, np.ones(33), f, c) == pytest.approx(t, abs=1e-6)
    # the wrong z sign fits clearly worse (this is how the teacher's axis was checked on real frames)
    bad = solve_translation(world, xy, np.ones(33), f, c, z_sign=-1.0)
    res_bad = np.abs(project(world * [1, 1, -1] + bad, f, c) - xy).mean()
    assert res_bad > 1.0
    assert np.isnan(solve_translation(world, xy, np.zeros(33), f, c)).all()


class _FakeTeacher:
    name = "fake"

    def label_frame(self, rgb):
        x0 = float(rgb[0, 0, 0])  # the frame's position is written in its first pixel
        k = SPEC.num_joints
        noise = np.random.default_rng(int(x0)).normal(0, 1.0, (k, 2))
        xy = np.stack([np.linspace(x0, x0 + 40, k), np.linspace(20, 90, k)], 1) + noise
        return [PersonLabel(xy, np.ones(k, bool), np.full(k, 3.0), np.full((k, 3), np.nan), np.ones(k))]


def test_label_clip_tracks_and_smooths():
    frames = []
    for i in range(20):
        img = np.zeros((100, 120, 3), np.uint8)
        img[0, 0] = 10 + 2 * i
        frames.append(Frame(i, i / 30.0, img))
    labels = label_clip(_FakeTeacher(), frames, SPEC)
    assert labels.xy.shape == (20, 1, SPEC.num_joints, 2) and labels.present().all()
    from posetracker.train.metrics import jitter

    assert jitter(labels.xy, labels.visible) < 0.5 * jitter(labels.raw_xy, labels.visible)
    back = ClipLabels.from_npz(labels.to_npz())
    assert np.array_equal(back.xy, labels.xy, equal_nan=True) and back.size == labels.size


def test_virtual_camera_clip_moves_labels_with_the_image():
    from posetracker.train.clips import still_labels, virtual_camera_clip

    img = np.zeros((64, 96, 3), np.uint8)
    k = SPEC.num_joints
    xy = np.full((k, 2), np.nan)
    xy[0] = (40, 30)
    img[29:32, 39:42] = 255
    lab = still_labels([PersonLabel(xy, np.isfinite(xy).all(1), np.full(k, 2.0), np.full((k, 3), np.nan), np.ones(k))],
                       k, (96, 64))
    frames, out = virtual_camera_clip(img, lab, 6, np.random.default_rng(0), SPEC)
    assert len(frames) == 6 and out.xy.shape == (6, 1, k, 2)
    for f, p in zip(frames, out.xy[:, 0, 0]):
        yy, xx = np.unravel_index(f.image[..., 0].argmax(), f.image.shape[:2])
        assert abs(xx - p[0]) <= 2 and abs(yy - p[1]) <= 2
    assert np.all(np.diff(out.xy[:, 0, 0], axis=0) ** 2 < 100)  # smooth path, no jumps


def test_split_is_by_whole_clip():
    from posetracker.train.clips import split_clips

    train, val = split_clips(["a.mp4", "b.mp4", "c.mp4"], ["b.mp4"], exclude=["c.mp4"])
    assert train == ["a.mp4"] and val == ["b.mp4"]
    with pytest.raises(ValueError):
        split_clips(["a.mp4"], ["z.mp4"])
