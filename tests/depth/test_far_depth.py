import numpy as np
import pytest

from posetracker.depth import Camera, FarDepthBlend
from posetracker.depth.scale_depth import TORSO_M
from posetracker.session import DepthSettings, SessionConfig
from posetracker.types import PoseFrame

SIZE = (1280, 720)


def person(spec, scale_depth_m: float, head_depth_m: float, x: float = 640.0) -> tuple[np.ndarray, np.ndarray]:
    """(K, 3) keypoints whose torso length puts the body scale at ``scale_depth_m``; depths from a 'head'
    that says ``head_depth_m`` at the root with +-0.1 m per joint."""
    focal = Camera(*SIZE, fov_deg=60.0).focal
    torso_px = focal * TORSO_M / scale_depth_m
    kp = np.zeros((spec.num_joints, 3))
    kp[:, 0], kp[:, 1] = x, 360.0
    for name, dx, dy in (("left_shoulder", 8, -torso_px / 2), ("right_shoulder", -8, -torso_px / 2),
                         ("left_hip", 6, torso_px / 2), ("right_hip", -6, torso_px / 2)):
        kp[spec.index(name), :2] = x + dx, 360.0 + dy
    kp[:, 2] = head_depth_m + 0.1 * np.sin(np.arange(spec.num_joints))
    kp[spec.root, 2] = head_depth_m
    return kp, np.full(spec.num_joints, 0.9)


def frame(spec, people, ids, t=0) -> PoseFrame:
    kps = np.stack([p[0] for p in people]).astype(np.float32)
    return PoseFrame(index=t, timestamp=t / 30, keypoints=kps, confidence=np.stack([p[1] for p in people]).astype(np.float32),
                     scores=np.ones(len(people), np.float32), track_ids=np.asarray(ids, np.int64), image_size=SIZE)


def test_far_people_move_to_their_body_scale_near_people_stay(human18):
    blend = FarDepthBlend(human18, fov_deg=60.0)
    near, far = person(human18, 2.5, 2.0, x=300), person(human18, 11.0, 8.0, x=900)
    outs = [blend.update(frame(human18, [near, far], [1, 2], t)) for t in range(15)]
    first, last = outs[0], outs[-1]
    root = human18.root
    np.testing.assert_array_equal(last.keypoints[0], near[0].astype(np.float32))  # 2 m: untouched
    assert 8.0 < first.keypoints[1, root, 2] < 8.5  # one sample: a tenth of the way
    assert last.keypoints[1, root, 2] == pytest.approx(11.0, rel=1e-3)  # 8 m is beyond far_m: all the way
    rel = last.keypoints[1, :, 2] - last.keypoints[1, root, 2]  # the body keeps its shape in depth
    np.testing.assert_allclose(rel, far[0][:, 2] - far[0][root, 2], atol=1e-5)
    cam = Camera(*SIZE, fov_deg=60.0)
    np.testing.assert_allclose(last.world[1], cam.to_camera(last.keypoints[1, :, :2].astype(np.float64),
                                                            last.keypoints[1, :, 2].astype(np.float64)), atol=1e-3)


def test_ratio_is_capped_and_untracked_people_pass(human18):
    blend = FarDepthBlend(human18, fov_deg=60.0, max_ratio=1.5)
    wild = person(human18, 40.0, 8.0)  # a torso 4x too short for the head's depth (e.g. bent over)
    for t in range(12):
        out = blend.update(frame(human18, [wild], [5], t))
    assert out.keypoints[0, human18.root, 2] == pytest.approx(12.0, rel=1e-3)
    untracked = frame(human18, [wild], [-1])
    assert blend.update(untracked) is untracked


def test_blend_is_on_by_default_and_can_be_switched_off(human18):
    assert SessionConfig().depth.far_depth and not SessionConfig(depth=DepthSettings(far_depth=False)).depth.far_depth
    with pytest.raises(ValueError, match="near_m"):
        FarDepthBlend(human18, 60.0, near_m=5.0, far_m=4.0)
