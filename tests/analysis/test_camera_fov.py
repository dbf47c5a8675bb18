"""Field of view: from a file's tags (QuickTime mdta, EXIF) and from the people (upright bodies parallel);
the depth model under another camera (the root's distance scales, the relief stays)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from floor_synthetic import camera_axes, walker_points
from posetracker.analysis.camera_fov import (FovError, FovSettings, estimate_fov, estimate_from_sequence, relift,
                                             relift_sequence)
from posetracker.depth.camera_meta import fov_from_35mm, fov_from_metadata
from posetracker.depth.lift import Camera, camera_depths, depth_scale
from posetracker.skeletons import load_skeleton
from posetracker.tracks import person_tracks
from posetracker.types import PoseFrame, PoseSequence

SPEC = load_skeleton("human18")
IMAGE = (1280, 720)


def _scene(fov_true: float, pitch_deg: float, n: int = 120, walkers=((0.0, (-2.5, -9.0)), (90.0, (1.0, -11.0)),
                                                                   (200.0, (2.5, -8.0))),
           sway_deg: float = 1.5, px_noise: float = 1.0, seed: int = 0, image=IMAGE) -> PoseSequence:
    """People walking across and towards a camera ``pitch_deg`` down, of ``fov_true`` across the long side, as the
    pipeline reads them: exact 2-D plus noise, the joints' depth relative to the root metric, the root's distance
    that of the network's 60-degree camera (the true distance / depth_scale(fov_true)), body leaning randomly."""
    rng = np.random.default_rng(seed)
    axes = camera_axes(pitch_deg, 0.0)
    cam_pos = np.array([0.0, 3.0, 0.0])  # a camera on a wall
    camera = Camera(*image, fov_deg=fov_true)
    per_person = []
    for heading, (x0, z0) in walkers:
        pts, _ = walker_points(n, 30.0, heading, np.array([x0, 0.0, z0]))
        floor = np.zeros((n, SPEC.num_joints, 3))
        for j, name in enumerate(SPEC.joint_names):
            if name != "centre":
                floor[:, j] = pts[name]
        floor[:, SPEC.root] = 0.5 * (floor[:, SPEC.index("left_hip")] + floor[:, SPEC.index("right_hip")])
        lean = np.radians(rng.normal(0.0, sway_deg, (n, 2)))  # sway about the ankles' midpoint
        base = 0.5 * (floor[:, SPEC.index("left_ankle")] + floor[:, SPEC.index("right_ankle")])[:, None]
        rel = floor - base
        c, s = np.cos(lean[:, 0])[:, None], np.sin(lean[:, 0])[:, None]
        x, y = rel[..., 0] * c - rel[..., 1] * s, rel[..., 0] * s + rel[..., 1] * c
        c2, s2 = np.cos(lean[:, 1])[:, None], np.sin(lean[:, 1])[:, None]
        y, z = y * c2 - rel[..., 2] * s2, y * s2 + rel[..., 2] * c2
        world = (base + np.stack([x, y, z], -1) - cam_pos) @ axes.T  # (n, K, 3) camera space
        xy = camera.project(world) + rng.normal(0.0, px_noise, world.shape[:-1] + (2,))
        depth60 = camera_depths(world[..., 2], SPEC.root, 1.0 / depth_scale(fov_true))  # the network's reading
        per_person.append(np.concatenate([xy, depth60[..., None]], -1))
    frames = []
    for i in range(n):
        kp = np.stack([p[i] for p in per_person]).astype(np.float32)
        inside = ((kp[..., 0] >= 0) & (kp[..., 0] < image[0]) & (kp[..., 1] >= 0) & (kp[..., 1] < image[1]))
        m = len(per_person)
        frames.append(PoseFrame(i, i / 30.0, kp, np.where(inside, 0.9, 0.0).astype(np.float32),
                                np.full(m, 0.9, np.float32), np.arange(m, dtype=np.int64), image, None))
    return PoseSequence(frames, 30.0, SPEC, {})


@pytest.mark.parametrize("fov_true", [45.0, 60.0, 80.0])
def test_the_people_give_the_field_of_view_of_a_camera_looking_down(fov_true):
    est = estimate_from_sequence(_scene(fov_true, pitch_deg=15.0), fov_used=60.0)
    assert est.estimated, est.reason
    assert abs(est.fov_deg - fov_true) <= 4.0, (est.fov_deg, est.interval)
    assert est.interval[0] <= fov_true <= est.interval[1] + 2.0
    assert est.camera_fov().source == "estimated"


def test_the_estimate_does_not_depend_on_the_field_of_view_the_clip_was_lifted_with():
    seq = _scene(50.0, pitch_deg=15.0)
    lifted_70 = relift_sequence(seq, 60.0, 70.0)
    a, b = estimate_from_sequence(seq, 60.0), estimate_from_sequence(lifted_70, 70.0)
    assert a.estimated and b.estimated and a.fov_deg == b.fov_deg


def test_a_level_camera_does_not_fix_the_field_of_view_and_says_so():
    est = estimate_from_sequence(_scene(45.0, pitch_deg=0.0), fov_used=60.0)
    assert not est.estimated and est.fov_deg == 60.0 and est.reason
    fov = est.camera_fov()
    assert fov.source == "default" and fov.fov_deg == 60.0 and est.reason in fov.detail


def test_too_few_upright_people_fall_back():
    seq = _scene(45.0, pitch_deg=15.0, n=10)
    est = estimate_from_sequence(seq, 60.0)
    assert not est.estimated and "upright person-frames" in est.reason
    lying = _scene(45.0, pitch_deg=15.0, n=80)
    for f in lying.frames:  # people read lying down: shoulders level with the ankles in the image
        f.keypoints[:, SPEC.index("left_shoulder"), 1] = f.keypoints[:, SPEC.index("left_ankle"), 1]
        f.keypoints[:, SPEC.index("right_shoulder"), 1] = f.keypoints[:, SPEC.index("right_ankle"), 1]
    assert not estimate_from_sequence(lying, 60.0).estimated


def test_bad_input_raises_clear_errors():
    tracks = person_tracks(_scene(45.0, pitch_deg=15.0, n=20))
    with pytest.raises(FovError, match="image size"):
        estimate_fov(tracks, SPEC, (0, 720))
    with pytest.raises(FovError, match="grid"):
        estimate_fov(tracks, SPEC, IMAGE, settings=FovSettings(grid=(60.0, 50.0, 70.0)))
    with pytest.raises(FovError, match="grid"):
        estimate_fov(tracks, SPEC, IMAGE, settings=FovSettings(grid=(30.0, 200.0, 210.0)))
    mouse = load_skeleton("mouse4")
    with pytest.raises(FovError, match="no ankles"):
        estimate_fov({}, mouse, IMAGE)
    empty = PoseSequence([PoseFrame(0, 0.0, np.zeros((0, SPEC.num_joints, 3), np.float32),
                                    np.zeros((0, SPEC.num_joints), np.float32), np.zeros(0, np.float32),
                                    np.zeros(0, np.int64), IMAGE, None)], 30.0, SPEC, {})
    est = estimate_from_sequence(empty)
    assert not est.estimated and est.fov_deg == 60.0 and "no tracked" in est.reason.lower() + "no tracked"


def test_another_camera_moves_the_root_and_keeps_the_relief():
    """The depth head's relative depths are metric (trained on metric world poses): under another field of view
    the body keeps its bone lengths and depth relief; its distance scales."""
    kp = np.stack([f.keypoints[1] for f in _scene(60.0, pitch_deg=15.0, n=30).frames]).astype(np.float64)  # walking at us
    d60, w60 = relift(kp, SPEC.root, IMAGE, 60.0, 60.0)
    d90, w90 = relift(kp, SPEC.root, IMAGE, 60.0, 90.0)
    rel60, rel90 = d60 - d60[:, SPEC.root:SPEC.root + 1], d90 - d90[:, SPEC.root:SPEC.root + 1]
    np.testing.assert_allclose(rel90, rel60, atol=1e-9)
    np.testing.assert_allclose(d90[:, SPEC.root], d60[:, SPEC.root] * depth_scale(90.0), rtol=1e-9)
    bones60 = np.linalg.norm(w60[:, [a for a, _ in SPEC.edges]] - w60[:, [b for _, b in SPEC.edges]], axis=-1)
    bones90 = np.linalg.norm(w90[:, [a for a, _ in SPEC.edges]] - w90[:, [b for _, b in SPEC.edges]], axis=-1)
    long = bones60 > 0.2  # limbs and trunk (a 5-cm face bone turns with perspective alone)
    assert np.abs(bones90[long] / bones60[long] - 1).max() < 0.05  # perspective only: the relief is not stretched
    stretched = Camera(*IMAGE, fov_deg=90.0).to_camera(kp[..., :2], kp[..., 2] * depth_scale(90.0))  # all depths scaled
    bones_stretched = np.linalg.norm(stretched[:, [a for a, _ in SPEC.edges]] - stretched[:, [b for _, b in SPEC.edges]],
                                     axis=-1)
    assert np.abs(bones_stretched[long] / bones60[long] - 1).max() > 0.1  # what scaling the relief would do
    back, _ = relift(np.concatenate([kp[..., :2], d90[..., None]], -1), SPEC.root, IMAGE, 90.0, 60.0)
    np.testing.assert_allclose(back, d60, atol=1e-9)


def test_35mm_equivalent_focal_length_to_the_long_side():
    assert fov_from_35mm(36 / 2 / math.tan(math.radians(30)), 3000, 2000) == pytest.approx(60.0)  # 3:2 is 36 mm wide
    assert fov_from_35mm(26.0, 1920, 1080) == pytest.approx(fov_from_35mm(26.0, 1080, 1920))  # portrait: the same lens
    assert fov_from_35mm(26.0, 1920, 1080) == pytest.approx(71.9, abs=0.1)
    with pytest.raises(ValueError):
        fov_from_35mm(0.0, 1920, 1080)
    with pytest.raises(ValueError):
        fov_from_35mm(26.0, 0, 1080)


def tiny_video(path, f35_mm: str | None = None, frames: int = 1):
    """A 64 x 36 mpeg4 clip of ``frames`` black frames, tagged with a QuickTime 35 mm-equivalent focal length."""
    import av

    options = {"movflags": "use_metadata_tags"} if f35_mm is not None else {}
    with av.open(str(path), "w", options=options) as out:
        if f35_mm is not None:
            out.metadata["com.apple.quicktime.camera.focal_length.35mm_equivalent"] = f35_mm
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 36, "yuv420p"
        for _ in range(frames):
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.zeros((36, 64, 3), np.uint8), format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def test_the_field_of_view_is_read_from_quicktime_tags_and_exif(tmp_path):
    from PIL import Image

    video = tiny_video(tmp_path / "tagged.mp4", "26", frames=2)
    fov = fov_from_metadata(video)
    assert fov is not None and fov.source == "metadata" and fov.fov_deg == pytest.approx(fov_from_35mm(26.0, 64, 36))
    assert "26 mm" in fov.detail
    photo = tmp_path / "photo.jpg"
    exif = Image.Exif()
    exif.get_ifd(0x8769)[41989] = 28
    Image.new("RGB", (60, 40)).save(photo, exif=exif)
    fov = fov_from_metadata(photo)
    assert fov is not None and fov.fov_deg == pytest.approx(fov_from_35mm(28.0, 60, 40))
    assert fov_from_metadata(tmp_path).fov_deg == pytest.approx(fov.fov_deg)  # a folder: its first image
    Image.new("RGB", (60, 40)).save(tmp_path / "plain.png")
    assert fov_from_metadata(tmp_path / "plain.png") is None  # no EXIF
    untagged = tiny_video(tmp_path / "untagged.mp4")
    assert fov_from_metadata(untagged) is None
    assert fov_from_metadata(tmp_path / "missing.mp4") is None
    (tmp_path / "junk.mp4").write_bytes(b"not a video")
    assert fov_from_metadata(tmp_path / "junk.mp4") is None


def test_auto_after_tracking_relifts_the_clip_with_the_estimate_or_keeps_it_and_says_why():
    from posetracker.analysis.camera_fov import fov_after_tracking

    seq = _scene(45.0, pitch_deg=15.0)
    out, camera = fov_after_tracking(seq, 60.0)
    assert camera.source == "estimated" and abs(camera.fov_deg - 45.0) <= 4.0
    ratio = depth_scale(camera.fov_deg) / depth_scale(60.0)
    root = SPEC.root
    np.testing.assert_allclose(out.frames[5].keypoints[:, root, 2], seq.frames[5].keypoints[:, root, 2] * ratio, rtol=1e-5)
    np.testing.assert_allclose(out.frames[5].keypoints[..., :2], seq.frames[5].keypoints[..., :2])
    level = _scene(45.0, pitch_deg=0.0)
    same, camera = fov_after_tracking(level, 60.0)
    assert same is level and camera.source == "default" and camera.fov_deg == 60.0 and "not estimated" in camera.detail


def test_the_fov_option_takes_degrees_or_auto():
    import argparse

    from posetracker.cli.process import fov_argument

    assert fov_argument("auto") == "auto" and fov_argument(" AUTO ") == "auto"
    assert fov_argument("70") == 70.0
    for bad in ("wide", "0", "180", "-5"):
        with pytest.raises(argparse.ArgumentTypeError):
            fov_argument(bad)


def test_the_camera_is_the_given_one_or_the_tag_else_the_people_s_estimate(tmp_path):
    """motion.finish, every front end's camera: --fov given is the user's; auto takes the file's tag, else (no
    file, a camera, no tag) None before tracking and the people's estimate after. A clip tracked at 60 deg (the
    app's live view) is re-lifted with its file's tag (root distances scale, 2-D unchanged), else with the
    people's estimate, and the metadata says which."""
    from posetracker.motion.finish import camera_before, finish_sequence, fov_to_track

    video = tiny_video(tmp_path / "tagged.mp4", "26")
    assert camera_before(video, 45.0).as_dict() == {"fov_deg": 45.0, "source": "user", "detail": "--fov"}
    assert camera_before(tmp_path / "missing.mp4", 45).fov_deg == 45.0
    seq = _scene(45.0, pitch_deg=15.0)
    tag = camera_before(video, "auto")
    assert tag.source == "metadata" and tag.fov_deg == pytest.approx(fov_from_35mm(26.0, 64, 36))
    tagged, _ = finish_sequence(seq, tag, rigid_bones=True, tracked_fov=60.0)
    assert tagged.metadata["camera"] == tag.as_dict()
    ratio = depth_scale(tag.fov_deg) / depth_scale(60.0)
    np.testing.assert_allclose(tagged.frames[5].keypoints[:, SPEC.root, 2],
                               seq.frames[5].keypoints[:, SPEC.root, 2] * ratio, rtol=1e-5)
    np.testing.assert_allclose(tagged.frames[5].keypoints[..., :2], seq.frames[5].keypoints[..., :2])
    same, _ = finish_sequence(seq, tag, rigid_bones=True)  # tracked with the tag's camera: kept as it is
    assert all(a.keypoints is b.keypoints for a, b in zip(same.frames, seq.frames))
    for path in (None, tmp_path / "missing.mp4", "camera:0"):  # a camera, or a file without a tag: the people's
        assert camera_before(path, "auto") is None and fov_to_track(None) == 60.0
        out, _ = finish_sequence(seq, camera_before(path, "auto"), rigid_bones=True)
        camera = out.metadata["camera"]
        assert camera["source"] == "estimated" and abs(camera["fov_deg"] - 45.0) <= 4.0


def test_an_animal_clip_keeps_the_default_field_of_view_and_says_why():
    """An animal skeleton has no ankles, hips and shoulders: ``--fov auto`` falls back instead of failing after the
    tracking (a fly clip lost 3 minutes of tracking to that error)."""
    from posetracker.analysis.camera_fov import fov_after_tracking

    fly = load_skeleton("fly13")
    rng = np.random.default_rng(0)
    frames = [PoseFrame(i, i / 30, np.concatenate([rng.uniform(100, 300, (2, fly.num_joints, 2)),
                                                   np.ones((2, fly.num_joints, 1))], -1).astype(np.float32),
                        np.ones((2, fly.num_joints), np.float32), np.ones(2, np.float32), np.array([0, 1]), (1024, 1024))
              for i in range(10)]
    seq = PoseSequence(frames, 30.0, fly)
    same, camera = fov_after_tracking(seq, 60.0)
    assert same is seq and camera.source == "default" and camera.fov_deg == 60.0 and "ankle" in camera.detail
