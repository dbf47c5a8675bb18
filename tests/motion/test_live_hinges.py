"""motion.live_hinges: live knees and elbows bend the body's way and keep their side; heads turn at most a quarter
turn from the shoulders (issue #46). A synthetic person 3 m from a camera of focal length 500 px, facing it
(camera space: x right, y down, z away from the camera; the person's left on the image's right), 30 fps."""

from __future__ import annotations

import numpy as np

from posetracker.motion.live_hinges import LiveHinges, hinge_references
from posetracker.motion.live_solve import LiveSolve
from posetracker.skeletons import load_skeleton
from posetracker.tracking import PoseSmoother
from posetracker.types import PoseFrame

SPEC = load_skeleton("human18")
J = {n: i for i, n in enumerate(SPEC.joint_names)}
FPS, F, C = 30.0, 500.0, np.array([320.0, 240.0])
KNEE, HIP, ANKLE = J["left_knee"], J["left_hip"], J["left_ankle"]


def _body() -> np.ndarray:
    """(K, 3) metres: standing, facing the camera, knees bent 40 degrees forward, arms hanging, elbows bent."""
    w = np.zeros((SPEC.num_joints, 3))
    for side, x in (("left", 1.0), ("right", -1.0)):
        w[J[f"{side}_hip"]] = [0.12 * x, 0.0, 3.0]
        w[J[f"{side}_knee"]] = [0.12 * x, 0.40, 2.85]
        w[J[f"{side}_ankle"]] = [0.12 * x, 0.80, 3.0]
        w[J[f"{side}_shoulder"]] = [0.2 * x, -0.5, 3.0]
        w[J[f"{side}_elbow"]] = [0.22 * x, -0.22, 3.0]
        w[J[f"{side}_wrist"]] = [0.22 * x, 0.02, 2.88]
        w[J[f"{side}_eye"]] = [0.03 * x, -0.72, 2.92]
        w[J[f"{side}_ear"]] = [0.08 * x, -0.70, 3.0]
    w[J["nose"]] = [0.0, -0.68, 2.9]
    w[J["centre"]] = [0.0, 0.0, 3.0]
    return w


def _on_ray(w: np.ndarray, z: float) -> np.ndarray:
    """The point of ``w``'s camera ray at depth ``z`` (its image position kept)."""
    return w * (z / w[2])


def _frame(i: int, world: np.ndarray) -> PoseFrame:
    xy = F * world[:, :2] / world[:, 2:] + C
    kp = np.concatenate([xy, world[:, 2:]], -1)
    return PoseFrame(index=i, timestamp=i / FPS, keypoints=kp[None].astype(np.float32),
                     confidence=np.full((1, SPEC.num_joints), 0.9, np.float32), scores=np.ones(1, np.float32),
                     track_ids=np.array([0], np.int64), image_size=(640, 480), world=world[None].astype(np.float32))


def _flexion(world: np.ndarray, limb: int = 0) -> float:
    """Degrees the limb bends about the body's hinge axis (hinge_references; positive: the body's way)."""
    ref, _ = hinge_references(world[None].astype(np.float64), J)
    a, b, c = [(HIP, KNEE, ANKLE), (J["right_hip"], J["right_knee"], J["right_ankle"])][limb]
    d1, d2 = world[b] - world[a], world[c] - world[b]
    return float(np.degrees(np.arctan2(np.cross(d1, d2) @ ref[0, limb], d1 @ d2)))


def _live(track: list[np.ndarray]) -> list[PoseFrame]:
    solve = LiveSolve(PoseSmoother(SPEC, "live"))
    return [solve.update(_frame(i, w)) for i, w in enumerate(track)]


def test_a_knee_read_bent_backwards_comes_out_bent_forwards() -> None:
    """The left knee's depth reading jumps behind the hip-ankle line from frame 20 (30 cm further, the image the
    same): the smoother follows it and the knee bends 38 degrees backwards (it failed so before the hinges); now
    it stays bent forwards in every frame, by 30-45 degrees, and x, y are the smoother's, untouched."""
    body = _body()
    back = body.copy()
    back[KNEE] = _on_ray(body[KNEE], 3.15)
    assert _flexion(body) > 30 and _flexion(back) < -30
    track = [body] * 20 + [back] * 40
    out = _live(track)
    bends = np.array([_flexion(f.world[0].astype(np.float64)) for f in out])
    assert bends.min() > 10.0, bends.round(1)
    assert 30.0 < bends[-1] < 45.0
    plain = PoseSmoother(SPEC, "live")
    ref = [plain.update(_frame(i, w)) for i, w in enumerate(track)]
    for a, b in zip(out, ref):  # the image positions are the smoother's whatever the depth
        np.testing.assert_array_equal(a.keypoints[..., :2], b.keypoints[..., :2])
    knee_px = F * out[-1].world[0, KNEE, :2] / out[-1].world[0, KNEE, 2] + C
    np.testing.assert_allclose(knee_px, out[-1].keypoints[0, KNEE, :2], atol=0.05)  # moved along its ray


def test_a_new_track_read_backwards_is_mirrored_at_once() -> None:
    """Read bent backwards from its first frame: mirrored in that frame (the body's left decides alone), the knee
    moved along its ray only, and its depth in the keypoints moved with it."""
    back = _body()
    back[KNEE] = _on_ray(back[KNEE], 3.15)
    out = LiveHinges(SPEC).update(_frame(0, back))
    w = out.world[0].astype(np.float64)
    assert _flexion(w) > 30.0
    assert abs(w[KNEE, 2] - 2.85) < 0.03  # the mirror: as far in front of the line as it was read behind it
    assert np.isclose(out.keypoints[0, KNEE, 2], w[KNEE, 2], atol=1e-5)
    np.testing.assert_allclose(np.cross(w[KNEE], back[KNEE]), 0.0, atol=1e-6)  # on its ray


def test_a_normal_bend_is_untouched() -> None:
    """Knees bent forwards, elbows bent forwards, head facing as the shoulders: nothing moves, in any frame."""
    hinges = LiveHinges(SPEC)
    rng = np.random.default_rng(0)
    for i in range(30):
        w = _body() + rng.normal(0, 0.005, (SPEC.num_joints, 3))
        f = _frame(i, w)
        out = hinges.update(f)
        np.testing.assert_array_equal(out.world, f.world)
        np.testing.assert_array_equal(out.keypoints, f.keypoints)


def test_the_side_stays_while_the_body_left_is_unread() -> None:
    """The hips and shoulders read at one depth and one x (the body's left collapsed: unread) while the knee's
    depth reading jumps to the other side of the line at frame 20: the knee keeps the side it had, so the bend
    does not flip between frames (before: the hinge axis turned by 180 degrees at frame 20)."""
    body = _body()
    body[[HIP, J["right_hip"]], 0] = 0.0
    body[[J["left_shoulder"], J["right_shoulder"]], 0] = 0.0
    body[KNEE, 0] = body[ANKLE, 0] = 0.0
    back = body.copy()
    back[KNEE] = _on_ray(body[KNEE], 3.15)
    hinges = LiveHinges(SPEC)
    axes = []
    for i, w in enumerate([body] * 20 + [back] * 20):
        out = hinges.update(_frame(i, w)).world[0].astype(np.float64)
        axes.append(np.cross(out[KNEE] - out[HIP], out[ANKLE] - out[KNEE]))
    axes = np.array(axes) / np.linalg.norm(axes, axis=-1, keepdims=True)
    assert (np.sum(axes[1:] * axes[:-1], -1) > 0.9).all()


def test_a_bend_the_image_shows_is_kept() -> None:
    """Seen from the side (the person's left towards the camera), a knee drawn bent backwards in the image itself:
    no depth moves it to the other side, so it stays as read (the image demands it)."""
    w = _body()
    turn = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # the body turned a quarter about y
    side = (w - [0, 0, 3.0]) @ turn.T + [0, 0, 3.0]
    side[KNEE] = side[HIP] + np.array([-0.15, 0.40, 0.0])  # the knee behind the hip-ankle line, in the image
    assert _flexion(side) < -10.0
    f = _frame(0, side)
    out = LiveHinges(SPEC).update(f)
    np.testing.assert_array_equal(out.world[0, KNEE], f.world[0, KNEE])


def test_ears_read_turned_past_the_shoulders_are_mirrored_in_depth() -> None:
    """The body turned 60 degrees; the ears' depths read the wrong way round (the head turned 120 degrees from the
    shoulders): mirrored about their mean depth, so the head turns less than 90 from the shoulders, each ear on its
    ray."""
    w = _body()
    a = np.radians(60.0)
    turn = np.array([[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0], [-np.sin(a), 0.0, np.cos(a)]])
    w = (w - [0, 0, 3.0]) @ turn.T + [0, 0, 3.0]
    le, re = J["left_ear"], J["right_ear"]
    mid = 0.5 * (w[le, 2] + w[re, 2])
    read = w.copy()
    read[le], read[re] = _on_ray(w[le], 2 * mid - w[le, 2]), _on_ray(w[re], 2 * mid - w[re, 2])

    def head_cos(x: np.ndarray) -> float:
        e, s = x[le] - x[re], x[J["left_shoulder"]] - x[J["right_shoulder"]]
        return float(e[[0, 2]] @ s[[0, 2]] / np.linalg.norm(e[[0, 2]]) / np.linalg.norm(s[[0, 2]]))

    assert head_cos(read) < 0
    out = LiveHinges(SPEC).update(_frame(0, read)).world[0].astype(np.float64)
    assert head_cos(out) > 0.5
    np.testing.assert_allclose(np.cross(out[le], read[le]), 0.0, atol=1e-6)
