"""Rigid bones kept on their camera rays (tracking.ray_bones): an arm swung through the camera's ray with too
little depth read stays on its image positions and turns as it truly did."""

from __future__ import annotations

import numpy as np

from posetracker.skeletons import load_skeleton
from posetracker.tracking import bone_lengths, rigidify
from posetracker.tracking.ray_bones import EASE, rigid_on_rays

SPEC = load_skeleton("human18")
E = SPEC.num_edges
SHOULDER, ELBOW, WRIST = (SPEC.index(n) for n in ("left_shoulder", "left_elbow", "left_wrist"))
UPPER = next(e for e, (p, c) in enumerate(SPEC.edges.tolist()) if (p, c) == (SHOULDER, ELBOW))


def _swing_track(frames: int = 31, step_deg: float = 6.0, depth_read: float = 0.1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(true (T, K, 3), read (T, K, 3), lengths (E,)): a still person 2.5 m from the camera whose left upper arm
    (0.3 m) swings from straight up, through pointing at the camera, to straight down, ``step_deg`` a frame (the
    forearm held level); read with every joint on its true ray, the elbow's depth difference to the shoulder
    ``depth_read`` of the true one (the network's too-small depth of a bone along the ray)."""
    rng = np.random.default_rng(3)
    lengths = rng.uniform(0.1, 0.4, E)
    lengths[UPPER] = 0.3
    base = np.zeros((SPEC.num_joints, 3))
    base[SPEC.root] = (0.1, 0.0, 2.5)
    for e, (p, c) in enumerate(SPEC.edges.tolist()):
        d = rng.normal(size=3)
        base[c] = base[p] + lengths[e] * d / np.linalg.norm(d)
    fore = base[WRIST] - base[ELBOW]
    lengths[next(e for e, (p, c) in enumerate(SPEC.edges.tolist()) if (p, c) == (ELBOW, WRIST))] = np.linalg.norm(fore)
    theta = np.radians(step_deg * np.arange(frames))
    arm = np.stack([np.zeros(frames), -np.cos(theta), -np.sin(theta)], -1)  # y down, z away from the camera
    true = np.repeat(base[None], frames, 0)
    true[:, ELBOW] = true[:, SHOULDER] + 0.3 * arm
    true[:, WRIST] = true[:, ELBOW] + fore
    read = true.copy()
    depth = true[:, SHOULDER, 2] + depth_read * (true[:, ELBOW, 2] - true[:, SHOULDER, 2])
    read[:, ELBOW] = true[:, ELBOW] * (depth / true[:, ELBOW, 2])[:, None]  # same ray, too little depth
    return true, read, lengths


def _steps(world: np.ndarray) -> np.ndarray:
    d = world[:, ELBOW] - world[:, SHOULDER]
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    return np.degrees(np.arccos(np.clip(np.sum(d[1:] * d[:-1], -1), -1, 1)))


def _off_ray_deg(world: np.ndarray, true: np.ndarray, joint: int) -> np.ndarray:
    a, b = world[:, joint], true[:, joint]
    cos = np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


def test_an_arm_swung_through_the_ray_passes_it_without_a_jump_and_stays_on_its_image() -> None:
    true, read, lengths = _swing_track(frames=61, step_deg=3.0)
    old = rigidify(read, np.broadcast_to(lengths, (len(read), E)), SPEC)
    assert _steps(old).max() > 25  # stretched along the read direction: a jump as the arm passes the ray
    assert _off_ray_deg(old, true, ELBOW).max() > 2  # ... and the elbow off its image position
    new = rigid_on_rays(read, lengths, SPEC)
    np.testing.assert_allclose(bone_lengths(new, SPEC)[:, UPPER], 0.3, atol=1e-6)
    assert _steps(new).max() < 10  # the true swing is 3 degrees a frame
    short = np.linalg.norm(read[:, ELBOW] - read[:, SHOULDER], axis=-1) < 0.5 * 0.3  # read under half its length:
    assert short.sum() >= 8
    assert _off_ray_deg(new, true, ELBOW)[short].max() < 0.3  # on its image position (~1 px at 2.5 m, 60 deg)
    np.testing.assert_allclose(new[short, ELBOW], true[short, ELBOW], atol=0.01)  # on the side read (the camera's)
    fore = next(e for e, (p, c) in enumerate(SPEC.edges.tolist()) if (p, c) == (ELBOW, WRIST))
    read_whole = np.linalg.norm(read[:, WRIST] - read[:, ELBOW], axis=-1) >= 0.8 * lengths[fore]
    assert read_whole.sum() >= 40  # the forearm, read near its length: its measured direction, as rigidify
    np.testing.assert_allclose((new[:, WRIST] - new[:, ELBOW])[read_whole], (old[:, WRIST] - old[:, ELBOW])[read_whole], atol=1e-9)
    whole = np.linalg.norm(read[:, ELBOW] - read[:, SHOULDER], axis=-1) > 0.8 * 0.3
    near = np.convolve(~whole, np.ones(2 * EASE + 1), mode="same") > 0  # eased onto the ray path and off it
    assert (whole & ~near).sum() >= 4
    np.testing.assert_allclose(new[whole & ~near], old[whole & ~near], atol=1e-9)  # read whole: placed as by rigidify


def test_a_flat_reading_is_scaled_as_rigidify_does() -> None:
    _, read, lengths = _swing_track()
    flat = read.copy()
    flat[..., :2] *= (2.5 / flat[..., 2])[..., None]  # every joint at the root's depth on its own ray
    flat[..., 2] = 2.5
    np.testing.assert_allclose(rigid_on_rays(flat, lengths, SPEC),
                               rigidify(flat, np.broadcast_to(lengths, (len(flat), E)), SPEC), atol=1e-9)


def test_unread_joints_stay_unread_and_unknown_lengths_stay_as_read() -> None:
    _, read, lengths = _swing_track(frames=8)
    read[3, ELBOW] = np.nan
    lengths = lengths.copy()
    lengths[0] = np.nan
    new = rigid_on_rays(read, lengths, SPEC)
    assert np.isnan(new[3, ELBOW]).all() and np.isfinite(new[3, SHOULDER]).all()
    p, c = SPEC.edges[0]
    np.testing.assert_allclose(new[:, c] - new[:, p], read[:, c] - read[:, p], atol=1e-12)
